"""What a class shares on one server: the training queue, saved runs by author, the teacher's passcode.

Not a page. The Train page submits trainings here, the frame's sidebar shows the run picker, the
Teacher page checks the passcode.
"""

from __future__ import annotations

import hmac
import os

import streamlit as st

from app_pages._queue import job_queue
from app_pages._ui import run_store
from app_pages._view import link_check
from fmlib.plots.training import learning_curves
from fmlib.runs import RunError
from fmlib.train import MONITOR, train_model


def submit_training(model: str, data, config, hp: dict) -> None:
    """Queue this session's training (replacing a pending one of the same session)."""
    previous = st.session_state.get("train_job")
    if previous is not None:
        job_queue().cancel(previous[0])
    st.session_state.pop("train_message", None)
    job = job_queue().submit(lambda job: train_model(model, data, config, job.report, **hp))
    st.session_state["train_job"] = (job, MONITOR[config.task])


def follow_training() -> None:
    """This session's training: its place in line (with Cancel), then live curves; at the end the run
    is kept in ``st.session_state["trained"]`` and a line says how it went."""
    if "train_job" in st.session_state:
        _training_status()
    kind, text = st.session_state.pop("train_message", (None, None))
    if kind:
        getattr(st, kind)(text)


@st.fragment(run_every=1.0)
def _training_status() -> None:
    if "train_job" not in st.session_state:  # ended in another tab's rerun
        return
    job, metric = st.session_state["train_job"]
    queue = job_queue()
    if job.done:
        del st.session_state["train_job"]
        if job.state == "done":
            run = job.result
            best = max(r["epoch"] for r in run.history if r["best"])
            st.session_state["trained"] = run
            st.session_state["train_message"] = (
                "success",
                f"Done: {len(run.history)} epochs in {run.seconds:.1f} s (best epoch {best}) "
                f"after {job.wait_seconds:.1f} s in line.",
            )
        elif job.state == "cancelled":
            st.session_state["train_message"] = ("info", "Training cancelled.")
        else:
            st.session_state["train_message"] = ("error", job.error)
        st.rerun()
    position = queue.position(job)
    if position:
        st.info(f"Queued, position {position}: this server trains {queue.workers} model(s) at a time.")
    elif job.records:
        last = job.records[-1]
        st.progress(
            last["epoch"] / last["epochs"],
            text=f"epoch {last['epoch']}/{last['epochs']} · valid {metric} {last['valid_' + metric]:.4f}",
        )
        st.plotly_chart(learning_curves(list(job.records)), key="live_curves")
    else:
        st.progress(0.0, text="starting ...")
    st.button("Cancel training", key="cancel_training", on_click=queue.cancel, args=(job,))


def author() -> str | None:
    """The name this session saved its runs under, if it saved any."""
    return st.session_state.get("classroom_author")


def save_run(run) -> None:
    """Save button callback: save under the author's name, make it the sidebar's pick, leave a message."""
    name = st.session_state.get("save_name") or None
    who = (st.session_state.get("save_author") or "").strip()
    if not who:
        st.session_state["save_message"] = ("error", "Your name: required, so that your runs are listed as yours.")
        return
    try:
        saved = run_store().save(run, name, author=who)
    except (ValueError, OSError) as err:  # bad name or author, a full store: nothing was written
        st.session_state["save_message"] = ("error", str(err))
        return
    st.session_state["classroom_author"] = who
    st.session_state["run_owner"], st.session_state["run_id"] = who, saved
    st.session_state["save_message"] = ("success", f"Saved as {saved}: it appears in the sidebar under your name.")


def save_message() -> None:
    kind, text = st.session_state.pop("save_message", (None, None))
    if kind:
        getattr(st, kind)(text)


def run_picker() -> None:
    """Sidebar: whose runs (yours, shared, then each author), then one of them, newest first.

    With neither runs of its own nor shared ones, a session picks none: another author's run is
    never its default."""
    store = run_store()
    groups = {"" if a is None else a: ids for a, ids in store.by_author().items()}  # "": shared
    if not groups:
        st.caption("No saved runs yet: train one on the Train page.")
        return
    me = author()
    owners = [a for a in (me, "") if a in groups] + sorted(a for a in groups if a not in (me, ""))
    owner_of = {run_id: a for a, ids in groups.items() for run_id in ids}
    link_check("run_id", owner_of.__contains__, "no saved run has that id", sidebar=True)
    if "run_id" not in st.session_state and st.query_params.get("run_id") in owner_of:  # a linked run: its author
        st.session_state["run_owner"] = owner_of[st.query_params["run_id"]]
    if st.session_state.get("run_owner") not in (None, *owners):  # that author's runs were deleted
        del st.session_state["run_owner"]
    owner = st.selectbox(
        "Whose runs",
        owners,
        index=0 if owners[0] in (me, "") else None,
        key="run_owner",
        placeholder="pick an author",
        format_func=lambda a: "shared" if a == "" else f"{a} (you)" if a == me else a,
    )
    if owner is None:
        st.session_state.pop("run_id", None)
        return
    if st.session_state.get("run_id", groups[owner][0]) not in groups[owner]:
        del st.session_state["run_id"]
    run_id = st.selectbox("Saved run", groups[owner], key="run_id", bind="query-params")
    try:
        info = store.info(run_id)
        test = info["metrics"].get("test", {})
        st.caption(
            f"{info['config']['model']} on {info['config']['dataset']} · "
            + ", ".join(f"test {k} {v:.4f}" for k, v in test.items())
        )
    except RunError as err:
        st.error(str(err))


def teacher_passcode() -> str | None:
    """The passcode from Streamlit secrets (teacher_passcode) or FMLIB_TEACHER_PASSCODE; None: not set."""
    try:
        secret = st.secrets.get("teacher_passcode")
    except Exception:  # no secrets file: Streamlit raises instead of returning None
        secret = None
    return secret or os.environ.get("FMLIB_TEACHER_PASSCODE") or None


def teacher_or_alone() -> bool:
    """Whether this session may run teacher actions: it unlocked the Teacher page, or the server
    has no passcode (one person's own app, not a class)."""
    return teacher_passcode() is None or bool(st.session_state.get("teacher"))


def passcode_ok(given: str) -> bool:
    expected = teacher_passcode()
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())
