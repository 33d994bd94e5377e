"""The floor of a visit: a Streamlit app with nothing of fmlib's, its two pages in the sidebar as the app's are.
The visits browser test times it beside the app, in the same run and with the same clock: "Bare" (a title alone)
is what opening any Streamlit app costs this machine, "Chart" (a title and one small plotly chart) what a browser
tab's first chart costs, which waits for plotly.js to be evaluated."""

import plotly.graph_objects as go
import streamlit as st


def bare() -> None:
    st.title("Bare")


def chart() -> None:
    st.title("Chart")
    st.plotly_chart(go.Figure(go.Scatter(x=[0, 1, 2], y=[1, 3, 2])))


st.set_page_config(layout="wide")  # as the app's
st.navigation([st.Page(bare, title="Bare", default=True), st.Page(chart, title="Chart")]).run()
