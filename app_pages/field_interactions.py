"""Field interactions: learned R, pruned R vs DPLR at equal budget, spectra, Table 1 (DPLR paper)."""

import re

import streamlit as st

from app_pages._ui import fail, load_split, saved_or_quick_run
from fmlib.analysis.interactions import (
    budget,
    dplr_posthoc,
    interaction_matrix,
    offdiag_error,
    percent_left,
    prune,
    r_fm,
    spectrum,
)
from fmlib.plots.interactions import eigen_spectrum_figure, error_spectra_figure, interaction_heatmaps
from fmlib.results import results_dir
from fmlib.train import TrainConfig, train_model

st.title("Field interactions")
st.markdown(
    "**Question.** An FwFM learns how strongly every pair of fields interacts: the matrix R. "
    "To serve it fast we must simplify R. Is it better to *prune* it (keep its largest entries) "
    "or to write it as *diagonal plus low rank* (DPLR) with the same number of parameters, ρ(m+1)?"
)


@st.cache_data(show_spinner="Approximating R ...")
def approximations(R, rank: int, method: str):
    keep = budget(R.shape[0], rank)
    return prune(R, keep), dplr_posthoc(R, rank, method).R


run, source = saved_or_quick_run(
    lambda run: hasattr(run.model, "R"),
    "it has no field interaction matrix R (an FM is the FwFM with R = 11ᵀ − I fixed). "
    "Pick an fwfm or dplr run in the sidebar, or train a quick FwFM here.",
    "quick FwFM",
    "interactions_quick_run",
    lambda name, progress: train_model(
        "fwfm",
        load_split(name, 0),
        TrainConfig(epochs=8 if name == "synthetic" else 4, lr=1e-2, patience=2),
        progress,
        dim=8,
    ),
)
model = run.model
R = interaction_matrix(model)
m, names = R.shape[0], model.schema.names
is_dplr = hasattr(model, "U")
st.caption(
    f"Showing {source}: m = {m} fields."
    + (
        f" A DPLR-FwFM of rank {model.rank}: R is the matrix it implies (eq. 10), never formed while training."
        if is_dplr
        else ""
    )
)

max_rank = min(m - 1, (m * (m - 1) // 2) // (m + 1))
left, right = st.columns([2, 1])
rank = left.slider("rank ρ (budget ρ(m+1) parameters)", 1, max_rank, min(2, max_rank), key="rho")
method = right.radio(
    "post-hoc DPLR by",
    ["eig", "nuclear"],
    horizontal=True,
    key="method",
    help="eig: truncated eigendecomposition (diagonal filled in); nuclear: minimise the "
    "nuclear norm of the error (App. C)",
)
try:
    pruned, posthoc = approximations(R, rank, method)
except ValueError as err:
    fail(err)
keep = budget(m, rank)
left_pct = percent_left(m, keep)
st.plotly_chart(
    interaction_heatmaps(
        {
            ("R implied by DPLR" if is_dplr else "learned R"): R,
            f"pruned: {keep} kept ({left_pct:.1f}% left)": pruned,
            f"post-hoc DPLR, ρ = {rank}": posthoc,
        },
        names,
    ),
    key="heatmaps",
)
c1, c2, c3 = st.columns(3)
c1.metric("% left = 2ρ(m+1)/(m(m−1))", f"{left_pct:.1f}%")
c2.metric("pruned: relative error off the diagonal", f"{offdiag_error(pruned, R):.3f}")
c3.metric("post-hoc DPLR: relative error", f"{offdiag_error(posthoc, R):.3f}")
st.markdown(
    "**Notice:** pruning keeps the strongest pairs exactly and zeroes the rest; DPLR keeps a "
    "blurred version of *every* pair. Which error matters depends on the embeddings: App. C bounds "
    "the change of the pairwise term by Σ λ_i(VVᵀ) σ_i(E) — so compare the error *spectra* below."
)

st.subheader("Spectra")
left, right = st.columns(2)
with left:
    st.plotly_chart(eigen_spectrum_figure(spectrum(R), spectrum(r_fm(m))), key="eigen")
    st.caption(
        "Eigenvalues of R (bars) and of R_FM = 11ᵀ − I (black ticks: m − 1 once, then −1). "
        "The FM's R is not low rank — its zero diagonal makes it full rank — but it *is* "
        "diagonal plus rank one (eq. 7). A few large eigenvalues and a flat rest is what DPLR exploits."
    )
with right:
    sigma_pruned, sigma_dplr = spectrum(pruned - R, "singular"), spectrum(posthoc - R, "singular")
    st.plotly_chart(
        error_spectra_figure({"pruned": sigma_pruned, f"post-hoc DPLR ({method})": sigma_dplr}), key="errors"
    )
    bigger = "post-hoc DPLR's" if sigma_dplr.max() > sigma_pruned.max() else "pruning's"
    st.caption(
        "Singular values of the approximation errors E = R̃ − R (App. C, Fig. 2). The paper found "
        "the post-hoc DPLR error's *largest* singular values much larger than pruning's on Criteo; "
        "that is why it trains DPLR instead of approximating afterwards. "
        f"Here the largest is {bigger}: σ₁ = {sigma_pruned.max():.3g} (pruned) vs "
        f"{sigma_dplr.max():.3g} (post-hoc DPLR)."
    )

st.subheader("Trained DPLR vs pruned FwFM: Table 1 on MovieLens")
tables = sorted(results_dir().glob("dplr_*.md"))
if tables:
    chosen = st.selectbox("result", tables, format_func=lambda p: p.stem, key="table")
    st.markdown(re.sub(r"^(#+) ", r"###\1 ", chosen.read_text(), flags=re.M))  # file headings below this section's
else:
    st.info(
        "No results yet. Run `python -m fmlib reproduce dplr --dataset ml-100k --seeds 3` "
        f"(about 30 trainings); it writes {results_dir() / 'dplr_ml-100k_rating.md'}, shown here."
    )
