"""The scorecard and the reproductions behind its rows, for the pages those rows link to: the
scorecard itself (Home), its rows for one page (a lesson's stop), [FMGrad]'s memoised gradient
(Derivations, fm-gradient) and [AttnInv]'s success vs γ (Attention inversion)."""

import copy
import functools
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app_pages._view import cached, chart, error, main_figure, shown_path
from fmlib.data.dataset import TASKS
from fmlib.experiments import fmgrad, inversion, scorecard, tables
from fmlib.experiments.claims import measure_all
from fmlib.plots.inversion import success_figure
from fmlib.plots.verdicts import threshold_figure

# What is read and measured from a version of the result files (their paths and modification times are in the key)
# is kept in a plain per-process cache, not in Streamlit's: it depends on nothing else, and the tests clear Streamlit's
# caches before every test (the scorecard alone takes 0.85 s of CPU to measure). Each caller gets its own copy, as
# from st.cache_data.


def _copied(function: Callable) -> Callable:
    """``function`` computed once per process for equal arguments; every call returns a copy of the result."""
    once = functools.lru_cache(maxsize=64)(function)

    @functools.wraps(function)
    def copy_of(*args):
        return copy.deepcopy(once(*args))

    return copy_of


@_copied
def _measured(path: str, mtime: int, columns: tuple, page: str, name: str, dataset: str, task: str):
    """(table, header with the file's ``path`` and ``mtime``, verdicts) of one version of a result file:
    read and measured once per server, not on every rerun of the page that shows it."""
    frame, header = tables.read(path, columns=columns)
    header = {**header, "path": path, "mtime": mtime}
    return frame, header, measure_all(*claims_of(page, name, dataset, task)(frame, task))


def measured_table(name: str, columns, page: str, dataset: str, task: str):
    """(table, header, verdicts as the scorecard measures them) of the newest result table ``name`` that
    ``page`` shows; None when there is none; a damaged table: ValueError naming the file."""
    path = tables.newest(name)
    if path is None:
        return None
    return _measured(str(path), path.stat().st_mtime_ns, tuple(columns), page, name, dataset, task)


def drawn_once(header: dict, name: str, draw: Callable[[], go.Figure]) -> go.Figure:
    """The figure ``name`` of the result table of ``measured_table``'s ``header``: ``draw()`` runs once per
    version of the file and server (``_view.cached``: its key is the file, its version and ``name``, not
    what ``draw`` closes over), not on every rerun of the page that shows it."""
    return cached(_drawn, header["path"], header["mtime"], name, draw)


def _drawn(path: str, mtime: int, name: str, draw: Callable[[], go.Figure]) -> go.Figure:
    return draw()


def source_caption(header: dict) -> None:
    """Which file a table came from and the command, commit and date that made it."""
    st.caption(
        f"`{shown_path(header['path'])}` · made by `{header['command']}` at commit {header['commit']}, {header['date']}"
    )


def result_table(name: str, columns, command: str):
    """(table, header) of the newest result table ``name``, or (None, None) after saying why not."""
    path = tables.newest(name)
    if path is None:
        st.info(f"No result table yet: run `{command}`.")
        return None, None
    try:
        frame, header = tables.read(path, columns=columns)
    except ValueError as err:
        error(err)
        return None, None
    source_caption({**header, "path": path})
    return frame, header


@_copied
def _scorecard(dataset: str, tasks: tuple, seen: tuple) -> pd.DataFrame:
    """The scorecard, computed once per version of the result tables (``seen``: their paths and times)."""
    return scorecard.scorecard(dataset, tasks)


def scorecard_card(dataset: str = "ml-100k", tasks: tuple = TASKS) -> pd.DataFrame:
    """The scorecard (``fmlib.experiments.scorecard``) of the newest result tables of ``tasks``; a damaged
    table: ValueError."""
    newest = (tables.newest(name(dataset, task)) for _paper, name, *_ in scorecard.SOURCES for task in tasks)
    return _scorecard(
        dataset, tasks, tuple((str(path), path.stat().st_mtime_ns) for path in newest if path is not None)
    )


def scorecard_rows(page: str) -> pd.DataFrame:
    """The scorecard's rows whose claims ``page`` (a page's file name without .py) shows."""
    card = scorecard_card()
    return card[card["page"].str.endswith(f"({page})")]


def claims_of(page: str, table: str, dataset: str, task: str):
    """The function that turns the result table named ``table`` into (rows, claims) for the scorecard's rows
    of ``page`` (``scorecard.SOURCES``): a page measures its claims with it, so its verdicts are the scorecard's."""
    for source in scorecard.SOURCES:
        _paper, name, claims, source_page = source[:4]
        if source_page == page and name(dataset, task) == table:
            return claims
    raise ValueError(f"the scorecard has no source for {table} on page {page}")


def verdict_table(rows) -> None:
    """The claims with what was measured and the verdict (a static table: the page's data frames stay its own)."""
    columns = ["claim", *(c for c in ("protocol", "task") if c in rows), "measured", "verdict"]
    st.table(rows[columns].set_index("claim"))


def inversion_table():
    """``measured_table`` of [AttnInv]'s success vs γ (synthetic: no dataset or task)."""
    return measured_table(inversion.table_name(), inversion.COLUMNS, "attention_inversion", "", "")


@st.cache_data(show_spinner=False, max_entries=8)
def inversion_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Success and agreement rates per γ and start (``inversion.rates``), once per table."""
    return inversion.rates(frame)


def inversion_verdicts() -> None:
    """Success and agreement vs γ with Wilson intervals, and the verdicts at Theorem 4.2's γ."""
    try:
        found = inversion_table()
    except ValueError as err:
        error(err)
        return
    if found is None:
        st.info("No result table yet: run `python -m fmlib reproduce inversion`.")
        return
    frame, header, rows = found
    source_caption(header)

    def rates_figure() -> go.Figure:
        rates = inversion_rates(frame)
        bound = float(rates.loc[rates["regulariser"] == inversion.BOUND, "gamma"].max())
        by_start = {f"{kind} start": part for kind, part in rates.groupby("start_kind")}
        title = "Newton's attack by regulariser γ<br><sup>rate over instances, 95 % Wilson interval</sup>"
        return success_figure(by_start, {label: bound for label in by_start}, title)

    rates = drawn_once(header, "rates", rates_figure)
    main_figure(rates, key="inversion_committed_rates")  # the stop's figure
    verdicts = drawn_once(header, "verdicts", lambda: threshold_figure(rows, "Theorems 4.2–4.4 at their γ, checked"))
    chart(verdicts, key="inversion_verdicts")
    verdict_table(rows)
    st.caption(
        "Notice: at the theorem's γ every start ends at the same point, as convexity promises, and that "
        "point is not the secret: the regulariser pulls it towards X = 0. Only without a regulariser, from a "
        "start near the secret, does Newton recover it in most instances."
    )


def fmgrad_verdicts() -> None:
    """The memoised gradient against autograd (printed and corrected eq. 8) and its speed-up over the naive sum."""
    st.subheader("Measured: is eq. 8 the gradient, and is it cheaper?")
    frame, _ = result_table(fmgrad.table_name(), fmgrad.COLUMNS, "python -m fmlib reproduce fmgrad")
    if frame is None:
        return
    rows = measure_all(*fmgrad.claims(frame))
    errors, speed = rows[rows["metric"] != "speedup"], rows[rows["metric"] == "speedup"]  # one quantity per axis
    title, x_title = "Is eq. 8 the gradient? (random P and X)", "largest error vs autograd"
    chart(threshold_figure(errors, title, log_x=True, x_title=x_title), key="fmgrad_verdicts")
    title, x_title = "Is the memoised gradient cheaper?", "speed-up (×), 95 % interval"
    chart(threshold_figure(speed, title, x_title=x_title), key="fmgrad_speedups")
    verdict_table(rows)
    numbers = {"error": "{:.1e}", "cpu_seconds": "{:.4f}", "speedup": "{:.2f}×"}
    summary = fmgrad.summary(frame).set_index("fields")
    st.table(
        summary.apply(lambda col: col.map(next((f for k, f in numbers.items() if col.name.startswith(k)), "{}").format))
    )
    st.caption(
        "Notice: eq. 8 as printed misses the gradient by the term $P_{ij}X_j^2$ — an error of the size of the gradient "
        "itself — while the corrected line agrees with autograd to rounding. The memoised gradient's lead over "
        "the naive sum grows with d; at MovieLens' 12 fields it is small. Speed-ups are CPU-time ratios measured "
        "in the same run on a shared machine."
    )
