"""fmlib explainer: the Streamlit frame. Pages are listed in app_pages/_ui.py (PAGES)."""

import streamlit as st
import torch

from app_pages._classroom import run_picker
from app_pages._ui import DATASETS, PAGES, load_data, starter_status

torch.set_num_threads(1)  # minibatches of small tensors: one thread is as fast, and robust
st.set_page_config(page_title="fmlib explainer", page_icon=":material/hub:", layout="wide")
page = st.navigation(
    [st.Page(path, title=title, icon=icon, default=(i == 0)) for i, (path, title, icon, _) in enumerate(PAGES)]
)

with st.sidebar:
    st.selectbox(
        "Dataset",
        DATASETS,
        key="dataset",
        bind="query-params",
        help="MovieLens is fetched on first use; 'synthetic' has a planted field-interaction matrix.",
    )
    try:
        st.caption(f"Served by: {load_data(st.session_state['dataset']).source}")
    except Exception as err:  # the data error lists every source tried
        st.error(str(err))
    starter_status()
    run_picker()

page.run()
