"""The Train page's feature sets: the *Features* box, and the section "an FM is a feature-engineering machine"."""

from __future__ import annotations

import streamlit as st

from app_pages._measured import source_caption
from app_pages._view import cached, chart, unless_set
from fmlib.data.features import parse_features
from fmlib.experiments import features, tables
from fmlib.plots.features import features_figure

EXAMPLES = "user_id,movie_id (matrix factorization) · user_id,movie_id,rated (SVD++) · all,rated,raters (everything)"


def features_box(schema) -> str | None:
    """The *Features* text box (kept in the URL); the set it names, or None after an error saying
    what exists. ``schema()`` gives the dataset's fields (not checked when the data cannot load:
    the sidebar says why, and *Train* will)."""
    text = st.text_input(
        "Features",
        **unless_set("train_features", value="all"),
        key="train_features",
        bind="query-params",
        help="Comma-separated field names; 'all' = every field of the dataset. Add 'rated' (the movies the "
        "user rated in the training split, SVD++) and 'raters' (the users who rated the movie there). "
        f"E.g. {EXAMPLES}.",
    )
    try:
        fields = schema()
    except Exception:  # no data source: nothing to check against
        return text
    try:
        parse_features(text, fields)
    except ValueError as err:
        st.error(str(err))
        return None
    return text


@st.cache_data(show_spinner=False)
def _frame(path: str, mtime_ns: int):
    return features.load(path)


@st.cache_data(show_spinner=False)
def _summary(path: str, mtime_ns: int):
    return features.summary(_frame(path, mtime_ns))


@st.cache_data(show_spinner=False)
def _sentences(path: str, mtime_ns: int) -> list[str]:
    """The table's findings, one markdown line each: every model's gain from MF, every peer beside its step."""
    summary, frame = _summary(path, mtime_ns), _frame(path, mtime_ns)

    def row(step, model):
        return summary[(summary["features"] == step) & (summary["model"] == model)].iloc[0]

    lines = []
    for model in (features.ADAM, features.BFM):
        first, last = row("MF", model), row("context + rated + raters", model)
        whole, blocks = (features.gain(frame, model, start, "context + rated + raters") for start in ("MF", "context"))
        lines.append(
            f"- **{model}**: MF {first['rmse_mean']:.4f} → context + rated + raters **{last['rmse_mean']:.4f}**; "
            f"paired split by split, {whole.mean:.4f} lower [{whole.low:.4f}, {whole.high:.4f}], of which the two "
            f"blocks give {blocks.mean:.4f} [{blocks.low:.4f}, {blocks.high:.4f}] (95 % intervals, {whole.n} splits)."
        )
    for step, peer in features.PEERS.items():
        lines.append(
            f"- **{step}**: the FM {row(step, features.ADAM)['rmse_mean']:.4f}, the Bayesian FM "
            f"{row(step, features.BFM)['rmse_mean']:.4f}, {peer} {row(step, peer)['rmse_mean']:.4f} on the same splits."
        )
    return lines


SECTION = "An FM is a feature-engineering machine: MF, SVD++ and context by input alone"


def features_section() -> None:
    """The committed ``reproduce features`` table as one chart and the sentences it supports (under
    the page's heading ``SECTION``)."""
    st.markdown(
        "The same FM is matrix factorization when its input holds the user and the movie, SVD++ when the "
        "movies the user rated (weighted 1/√n) are added ([Koren2008] eq. 15, [Rendle2012] §III), and a "
        "context-aware model when the other fields are. Type a set in *Features* above to train one."
    )
    path = tables.newest(features.table_name("ml-100k"))
    if path is None:
        st.info("No feature-set table yet: run `python -m fmlib reproduce features --out results`.")
        return
    try:
        summary = _summary(str(path), path.stat().st_mtime_ns)
    except (ValueError, KeyError) as err:  # a damaged or older table: say which
        st.error(f"{path}: {err}")
        return
    chart(cached(features_figure, summary), key="feature_sets")
    lines = _sentences(str(path), path.stat().st_mtime_ns)
    st.markdown("\n".join(lines))
    source_caption({**tables.header(path), "path": path})
    st.caption(
        "The Adam FM uses preset *fm*'s recipe (tuned on the 12 fields) on every set; the Bayesian FM samples its "
        "regularisation. A recipe tuned on all,rated,raters lives in presets/features-all+rated+raters/."
    )
