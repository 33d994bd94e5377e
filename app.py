"""fmlib explainer: the Streamlit frame. Pages are listed in app_pages/_ui.py (PAGES)."""

import streamlit as st
import torch

from app_pages._ui import DATASETS, PAGES, load_data, run_store
from fmlib.runs import RunError

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
    store = run_store()
    ids = store.ids()
    if ids:
        run_id = st.selectbox("Saved run", ids, key="run_id")
        try:
            info = store.info(run_id)
            test = info["metrics"].get("test", {})
            st.caption(
                f"{info['config']['model']} on {info['config']['dataset']} · "
                + ", ".join(f"test {k} {v:.4f}" for k, v in test.items())
            )
        except RunError as err:
            st.error(str(err))
    else:
        st.caption("No saved runs yet: train one on the Train page.")

page.run()
