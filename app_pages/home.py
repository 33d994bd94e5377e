"""Home: what the explainer covers, with a link to every page."""

import streamlit as st

from app_pages._ui import PAGES

st.title("fmlib explainer")
st.markdown(
    "Factorization machines predict from **pairs of features**: every feature gets a vector, and "
    "two features interact through the dot product of their vectors. This explainer trains real "
    "models on MovieLens and lets you *see* why FMs and their recent variants work — field-weighted "
    "FMs with pruned or diagonal-plus-low-rank interaction matrices, rank-aware FMs, rotative FMs — "
    "with every formula checked against a naive computation or sympy, and every claim of the papers "
    "reproduced on MovieLens or honestly shown not to hold."
)
st.latex(r"\hat y(x) = w_0 + \sum_i w_i x_i + \sum_{i<j} \langle v_i, v_j\rangle x_i x_j")
st.subheader("Pages")
for path, title, icon, blurb in PAGES[1:]:
    st.page_link(path, label=title, icon=icon)
    st.caption(blurb)
st.info(
    "The sidebar picks the dataset (and says which source served it) and a saved run, "
    "which the analysis pages read. Notebooks in `notebooks/` tell the same stories with the same API."
)
