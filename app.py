"""fmlib explainer: the Streamlit frame. Pages are listed in app_pages/_ui.py (PAGES)."""

import streamlit as st
import torch

from app_pages._classroom import class_in_sidebar, run_picker, training_in_sidebar
from app_pages._lesson import arrive
from app_pages._ui import DATASETS, PAGES, load_data, starter_status, warm_up
from app_pages._view import (
    SIDEBAR,
    error,
    link_notes,
    one_of,
    projector,
    projector_style,
    sidebar_follows_projector,
    without_paths,
)

torch.set_num_threads(1)  # minibatches of small tensors: one thread is as fast, and robust
st.set_page_config(
    page_title="fmlib explainer",
    page_icon="🧮",  # an emoji is drawn in the page: a Material icon here is fetched from the internet
    layout="wide",
    initial_sidebar_state="collapsed" if projector() else "auto",
)
warm_up()
page = st.navigation(
    [st.Page(path, title=title, icon=icon, default=(i == 0)) for i, (path, title, icon, _) in enumerate(PAGES)]
)

with st.sidebar:
    SIDEBAR.widget(
        "projector",
        st.toggle,
        "Projector mode",
        help="For a class: the sidebar collapsed, larger text and charts, side notes hidden.",
    )
    SIDEBAR.widget(
        "dataset",
        st.selectbox,
        "Dataset",
        DATASETS,
        check=(one_of(DATASETS), "one of " + ", ".join(DATASETS)),
        help="MovieLens is fetched on first use; 'synthetic' has a planted field-interaction matrix.",
    )
    try:
        st.caption(f"Served by: {without_paths(load_data(st.session_state['dataset']).source)}")
    except Exception as err:  # the data error says how to get the data, then lists every source tried
        error(err)
    starter_status()
    class_in_sidebar()
    training_in_sidebar()
    run_picker()
projector_style()
sidebar_follows_projector()
arrive()
link_notes()

page.run()
