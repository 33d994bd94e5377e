"""What every page shares: the page registry, cached data and the run store.

Not a page itself (st.navigation lists only PAGES). Pages import it as ``app_pages._ui``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import NoReturn

import streamlit as st

from app_pages._queue import job_queue, submit_in_session, wait_in_session
from app_pages._view import checked_link, error, in_range, secondary, unless_set
from fmapp import starter
from fmlib.data import load, movielens, split
from fmlib.derivations import catalog, check_step
from fmlib.inversion import attack
from fmlib.runs import RunError, RunStore

# (file, title, icon, one line for the home page). Add one line per page.
PAGES = [
    ("app_pages/home.py", "Home", ":material/home:", ""),
    (
        "app_pages/playground.py",
        "Playground",
        ":material/touch_app:",
        "Move a toy FM's embeddings by hand and watch every score and pairwise term change; then edit an FwFM's R and a DPLR's U and e; and a map of what a trained model learned about movies.",
    ),
    (
        "app_pages/lesson.py",
        "Lesson",
        ":material/school:",
        "A 50-minute class in nine stops: goal, a guess before each answer, and a link to the page that shows it.",
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
        "Why rotations keep gradients tame: ‖∂y/∂X‖∞ of a single m-way product term, the FM and an RFM rotation layer as the number of fields grows, and the Theorem 1.1 construction that turns any truth table into attention scores.",
    ),
    (
        "app_pages/attention_inversion.py",
        "Attention inversion",
        ":material/lock_open:",
        "Recover the input of an attention layer from its weights and output (GD vs Newton, the regulariser's trade-off), then hidden first movies of MovieLens users from a tiny transformer.",
    ),
    (
        "app_pages/teacher.py",
        "Teacher",
        ":material/admin_panel_settings:",
        "For the teacher, behind a passcode: the class's saved runs, the store's quota, deleting runs, recomputing the result tables, rebuilding the default runs.",
    ),
]
DATASETS = [*movielens.SPECS, "synthetic"]
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@st.cache_resource(show_spinner="Loading data ...")
def load_data(name: str):
    """The whole data set: MovieLens (first use fetches it) or a small synthetic one (``fmlib.data.load``)."""
    return load(name)


@st.cache_resource(show_spinner="Splitting ...")
def load_split(name: str, seed: int = 0, min_count: int = 1):
    return split(load_data(name), seed=seed, min_count=min_count)


def dataset_name() -> str:
    """The dataset chosen in the sidebar (ml-100k when a page runs on its own)."""
    return st.session_state.get("dataset", "ml-100k")


def notebook_link(name: str) -> None:
    """One caption naming the notebook that tells this page's story, e.g. ``notebook_link("06_attention_inversion")``."""
    if not (NOTEBOOKS / f"{name}.ipynb").is_file():
        raise ValueError(f"no notebook notebooks/{name}.ipynb")
    secondary(
        f"Notebook: `notebooks/{name}.ipynb` tells this page's story step by step, with exercises (`make notebook` opens it)."
    )


def run_store() -> RunStore:
    return RunStore()


def selected_run_id() -> str | None:
    """The run picked in the sidebar, if any."""
    return st.session_state.get("run_id")


def fail(err) -> NoReturn:
    """Show ``err`` as an error (its message, no traceback, no server paths) and stop the page."""
    error(err)
    st.stop()


def times_quick(epochs: int, quick_epochs: int) -> str:
    """``epochs`` as a multiple of the quick training's ``quick_epochs``, as a label writes it: "55", "0.17"
    (two significant digits below 10, whole numbers above: never "5.5e+01")."""
    ratio = epochs / quick_epochs
    return f"{ratio:.0f}" if ratio >= 10 else f"{ratio:.2g}"


def bounded_number(label: str, low, high, value, container=st, **kwargs):
    """A number field whose range is checked here, not by the widget.

    A widget with min/max silently keeps its old value when a number outside them is typed (the
    field shows the new one): the page would run with a value the reader cannot see. Here any
    number is accepted and one out of ``[low, high]`` stops the page with an error naming the field.
    """

    # the field's type (int or float) follows its arguments: without the value (the session holds it), an int's step
    typed = {"step": 1} if isinstance(value, int) and "step" not in kwargs else {}

    def draw():
        given = unless_set(kwargs.get("key"), value=value)
        return container.number_input(label, **given, **({} if given else typed), **kwargs)

    if kwargs.get("bind") == "query-params":  # a linked number out of range: the default, with a note
        ok = in_range(low, high, isinstance(value, int))
        number = checked_link(draw, kwargs["key"], ok, f"{label}: {low:g} to {high:g}", value)
    else:
        number = draw()
    if not low <= number <= high:
        fail(f"{label}: {number:g} is out of range; use {low:g} to {high:g}.")
    return number


@st.cache_resource(show_spinner="Loading the run ...")
def load_run(run_id: str):
    return run_store().load(run_id)


_SIDEBAR = object()  # saved_or_quick_run's default: the run picked in the sidebar


@st.cache_resource
def _quick_runs() -> dict:
    """The quick runs this server has trained, by (``quick_key``, data set): a quick training is seeded, so every
    session would train the same model again. The first one trained is given to every session that asks after it:
    a class at the lesson's stop 4, on a server without starter runs, trains the tuned FwFM once, not once a
    student."""
    return {}


def saved_or_quick_run(
    usable,
    advice: str,
    quick_name: str,
    quick_key: str,
    train_quick,
    run_id=_SIDEBAR,
    note: str | None = None,
    cost: str = "",
):
    """The run picked in the sidebar if ``usable(run)``, else a quick run trained here on a click.

    ``advice``: what to do instead, shown when the picked run is not usable; ``quick_name``: the
    quick run, e.g. "quick FwFM"; ``train_quick(dataset, split, progress)`` trains it (``split``: the
    dataset's split 0, ``progress``: ``fit``'s per-epoch callback) as a job of the server's queue,
    so the page shows its place in line until it runs; it is kept in ``st.session_state[quick_key]``.
    ``run_id``: a saved run to use instead of the sidebar's pick (None: only the quick run), with
    ``note`` said in place of "No saved run is selected in the sidebar." when it is None. ``cost``: what the
    quick run takes, said on its button (e.g. "about 219 epochs").
    Returns ``(run, source)``, source saying where the run comes from; stops the page until there is a run.
    """
    run_id = selected_run_id() if run_id is _SIDEBAR else run_id
    quick = st.session_state.get(quick_key)
    if run_id is not None:
        try:
            run = load_run(run_id)
        except RunError as err:
            error(err)
        else:
            if usable(run):
                return run, f"saved run **{run_id}** ({run.config['model']} on {run.config['dataset']})"
            if quick is None:  # once the quick run is there, the source line names the picked run instead
                st.warning(f"Run {run_id} is an **{run.config['model']}** model: {advice}")
    if quick is None:
        name = dataset_name()
        trained, key = _quick_runs(), (quick_key, name)
        if run_id is None:
            st.info(
                f"{note or 'No saved run is selected in the sidebar.'} Train a {quick_name} on {name} here, "
                "or train and save a run on the Train page and pick it in the sidebar."
            )
        job_key = f"{quick_key}_job"
        job = wait_in_session(job_key, f"Your {quick_name}")
        if job_key in st.session_state:  # queued or training: its place in line or its progress is shown
            st.stop()
        if job is not None and job.state == "done":
            st.session_state[quick_key] = trained[key] = job.result
            st.rerun()  # draw the page again from the session, without the offer to train
        if job is not None:  # say how it ended, and offer to train again
            if job.state == "cancelled":
                st.info(f"The {quick_name} was cancelled.")
            else:  # bad settings: say why, no traceback
                st.error(job.error)
        label = f"Train a {quick_name} on {name}" + (f" ({cost})" if cost else "")
        if not st.button(label, type="primary", key="quick_train"):
            st.stop()
        if key in trained:  # another session trained it: the same seeded training
            st.session_state[quick_key] = trained[key]
            st.rerun()
        try:
            data = load_split(name, 0)
        except Exception as err:  # no data source: say why, no traceback
            fail(err)
        submit_in_session(job_key, lambda job: train_quick(name, data, job.report))
        st.rerun()  # show its place in line
    unused = "" if run_id is None else f", not the picked run {run_id}"
    return quick, f"a {quick_name} trained here on {quick.config['dataset']} (not saved{unused})"


def starter_split():
    """The starter runs' data: ml-100k, split 0 (read in the job's thread, outside Streamlit's caches)."""
    return split(load("ml-100k"), seed=0)


@st.cache_resource
def starter_runs():
    """Started once per server: queues the starter runs if the run store is empty
    (``FMLIB_STARTER_RUNS=0`` turns this off, as the tests do)."""
    if os.environ.get("FMLIB_STARTER_RUNS", "1") == "0":
        return None
    return starter.start(run_store(), starter_split, job_queue().submit)


@st.cache_resource
def warm_up() -> threading.Thread | None:
    """Started once per server: what every reader would wait for once, computed in the background
    from constants instead of on a reader's first visit to a page (``FMLIB_WARM_UP=0`` turns this off)."""
    if os.environ.get("FMLIB_WARM_UP", "1") == "0":
        return None
    thread = threading.Thread(target=_warm_up, name="warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    attack.warm_up()  # torch.func's first gradient and Hessian: seconds on Attention inversion
    for derivation in catalog():  # fills the checker's cache: a derivation opens on a checked first line
        check_step(derivation, 0)


def starter_status() -> None:
    """The starter runs' place in line, then their progress, in the sidebar, refreshed every 2 s."""
    starting = starter_runs()
    if starting is not None and not st.session_state.get("starter_seen"):
        _starter_progress(starting)


@st.fragment(run_every=2)
def _starter_progress(starting) -> None:
    position = job_queue().position(starting.job)
    if starting.error:
        st.warning(starting.status)
    elif position:
        st.info(f"Starter runs: queued, position {position} in the server's training line.")
    elif not starting.job.done:
        st.info(starting.status)
    else:  # ready: rerun the whole app once, so the run picker lists the new runs
        st.session_state["starter_seen"] = True
        st.rerun(scope="app")


def variant_as_math(name: str) -> str:
    """A RaFM variant's name as its table writes it ("k_i cut at n_i > 40") with its symbols typeset, for markdown."""
    return name.replace("k_i", "$k_i$").replace("n_i", "$n_i$")
