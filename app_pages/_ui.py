"""What every page shares: the page registry, cached data and the run store.

Not a page itself (st.navigation lists only PAGES). Pages import it as ``app_pages._ui``.
"""

from __future__ import annotations

import streamlit as st

from fmlib.data import movielens, split, synthetic
from fmlib.runs import RunStore

# (file, title, icon, one line for the home page). Add one line per page.
PAGES = [
    ("app_pages/home.py", "Home", ":material/home:", ""),
    (
        "app_pages/lesson.py",
        "Lesson",
        ":material/school:",
        "A 50-minute class in eight stops: goal, a guess before each answer, and a link to the page that shows it.",
    ),
    (
        "app_pages/train.py",
        "Train",
        ":material/model_training:",
        "Train an FM or one of its variants on MovieLens and watch it learn, epoch by epoch.",
    ),
    (
        "app_pages/field_interactions.py",
        "Field interactions",
        ":material/grid_on:",
        "FwFM's field interaction matrix R: pruned vs diagonal-plus-low-rank at the same budget, spectra, and the DPLR paper's Table 1 on MovieLens.",
    ),
    (
        "app_pages/rank_aware_fm.py",
        "Rank-aware FM",
        ":material/stacked_bar_chart:",
        "Rare features get few factors, frequent ones many: the feature-frequency histogram, each feature's rank (eq. 17), and RaFM against FMs of every rank.",
    ),
    (
        "app_pages/ranking.py",
        "Ranking",
        ":material/sort:",
        "Score every movie for one user with the context computed once; per-item cost of FM, FwFM and DPLR as fields grow.",
    ),
    (
        "app_pages/derivations.py",
        "Derivations",
        ":material/functions:",
        "Step through the papers' derivations line by line, each line checked by sympy; slips in the papers are shown next to the corrected line.",
    ),
    (
        "app_pages/gradient_growth.py",
        "Gradient growth",
        ":material/trending_up:",
        "Why rotations keep gradients tame: ‖∂y/∂X‖∞ of a product interaction vs an RFM rotation layer as the number of fields grows, and the Theorem 1.1 construction that turns any truth table into attention scores.",
    ),
    (
        "app_pages/attention_inversion.py",
        "Attention inversion",
        ":material/lock_open:",
        "Recover the input of an attention layer from its weights and output (GD vs Newton, the regulariser's trade-off), then hidden first movies of MovieLens users from a tiny transformer.",
    ),
]
DATASETS = [*movielens.SPECS, "synthetic"]


@st.cache_resource(show_spinner="Loading data ...")
def load_data(name: str):
    """The whole data set: MovieLens (first use fetches it) or a small synthetic one."""
    if name == "synthetic":
        return synthetic.make(synthetic.block_R(8), n_samples=4000, cardinality=20, seed=0)
    return movielens.load(name)


@st.cache_resource(show_spinner="Splitting ...")
def load_split(name: str, seed: int = 0, min_count: int = 1):
    return split(load_data(name), seed=seed, min_count=min_count)


def dataset_name() -> str:
    """The dataset chosen in the sidebar (ml-100k when a page runs on its own)."""
    return st.session_state.get("dataset", "ml-100k")


def run_store() -> RunStore:
    return RunStore()


def selected_run_id() -> str | None:
    """The run picked in the sidebar, if any."""
    return st.session_state.get("run_id")
