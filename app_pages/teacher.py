"""Teacher: actions that change what the whole class sees, behind the teacher's passcode."""

import shlex

import pandas as pd
import streamlit as st

from app_pages._classroom import lock_teacher, passcode_ok, teacher_passcode, teacher_unlocked, unlock_teacher
from app_pages._lesson import class_answers
from app_pages._queue import server_job
from app_pages._ui import load_run, run_store, starter_split
from app_pages._view import copy_link_and_reset, title_bar
from fmapp import recompute, starter
from fmlib.cli import TOPIC_COMMANDS
from fmlib.results import results_dir
from fmlib.runs import RunError

bar = title_bar("Teacher")
st.markdown(
    "Students save runs under their own names and cannot remove anyone's. Deleting runs, recomputing the "
    "result tables and rebuilding the default runs are for the teacher, who unlocks this page with the "
    "passcode set on the server."
)
copy_link_and_reset({}, container=bar)  # no settings of its own (the passcode never goes into a link): the sidebar's

if teacher_passcode() is None:
    st.info(
        "Teacher actions are off on this server: set the environment variable FMLIB_TEACHER_PASSCODE, "
        "or `teacher_passcode` in `.streamlit/secrets.toml`, and restart the app."
    )
    st.stop()

if not teacher_unlocked():
    with st.form("unlock"):
        given = st.text_input("Passcode", type="password", key="teacher_given")
        unlocked = st.form_submit_button("Unlock")
    if unlocked and passcode_ok(given):
        unlock_teacher()
        st.rerun()
    if unlocked:
        st.error("Wrong passcode: nothing was changed.")
    st.stop()

store = run_store()
if st.button("Lock", key="teacher_lock", help="Ends the unlock in this browser: a reload no longer keeps it."):
    lock_teacher()
    st.rerun()
st.caption(
    f"Unlocked in this browser for the class's length (FMLIB_CLASS_HOURS), across reloads and pages. "
    f"The class's answers, reveals and pacing are kept in {class_answers().description}."
)

ids = store.ids()
used = sum(store.size(i) for i in ids)
st.caption(
    f"Run store {store.root}: {len(ids)} of {store.quota.runs} runs, {used / 2**20:.1f} of "
    f"{store.quota.bytes / 2**20:.0f} MiB (FMLIB_MAX_RUNS, FMLIB_MAX_RUN_BYTES)."
)
rows = []
for run_id in ids:
    try:
        info = store.info(run_id)
        rows.append({"run": run_id, "author": info.get("author") or "shared", "model": info["config"]["model"]})
    except RunError as err:
        rows.append({"run": run_id, "author": "?", "model": str(err)})
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def delete_chosen():
    deleted, errors = [], []
    for run_id in st.session_state.get("teacher_delete", []):
        try:
            store.delete(run_id)
            deleted.append(run_id)
        except RunError as err:  # deleted meanwhile, or a tampered id
            errors.append(str(err))
    st.session_state["teacher_delete"] = []
    st.session_state["teacher_message"] = (deleted, errors)


chosen = st.multiselect("Runs to delete", ids, key="teacher_delete")
st.button("Delete these runs", key="teacher_delete_button", disabled=not chosen, on_click=delete_chosen)
deleted, errors = st.session_state.pop("teacher_message", ([], []))
if deleted:
    st.success(f"Deleted {len(deleted)} run(s): {', '.join(deleted)}.")
for error in errors:
    st.error(error)


def recompute_results(job) -> list[str]:
    return recompute.recompute(REPRODUCE, job)


def rebuild_default_runs(job, tuned: bool) -> list[str]:
    rebuild = starter.Starter(run_store(), starter_split, replace=True, tuned=tuned)
    try:
        saved = rebuild.run(job.report)
    finally:
        load_run.clear()  # pages must not keep showing the old runs of these names
    if rebuild.error:
        raise RuntimeError(rebuild.error)
    return saved


REPRODUCE = [[group, command] for group, command, _, _ in TOPIC_COMMANDS if group == "reproduce"] + [
    ["reproduce", "dplr", "--protocol", "dplr-paper"],  # the papers' own protocols beside ours
    ["reproduce", "rafm", "--protocol", "rafm-paper"],
    [
        "reproduce",
        "rafm",
        "--dataset",
        "planted-ranks",
        "--ranks",
        "2,8",
        "--variants",
        "40,40+y",
        "--protocol",
        "rafm-paper",
    ],
]
st.subheader("Recompute results")
st.markdown(
    f"Runs {', '.join(f'`python -m fmlib {shlex.join(argv)}`' for argv in REPRODUCE)} again, one after another "
    f"with their default settings, writing to `{results_dir()}`: the pages and the scorecard then show these "
    "tables instead of the committed ones. They take the class's training line (about an hour on 2 cores): "
    "students' trainings wait until they finish, so start them before class."
)
server_job(
    "teacher_recompute",
    "Recompute results",
    "Recompute results",
    recompute_results,
    lambda lines: "Results recomputed: " + " · ".join(lines),
    allowed=True,
)


def rebuild_label(tuned: bool) -> str:
    """A rebuild choice with its cost: the largest epoch budget of the starter runs it trains."""
    probe = starter.Starter(None, None, tuned=tuned)
    budget = max(probe.settings(model, size)[0].epochs for model, size in starter.STARTERS)
    if tuned:
        return f"tuned presets: up to {budget} epochs each, early stopping deciding"
    kept = ", ".join(sorted(starter.TUNED))
    return f"quick settings ({kept} with its tuned preset): up to {budget} epochs, as on a first start"


st.subheader("Rebuild default runs")
st.markdown(
    "Trains the shared starter runs (" + ", ".join(f"{m}-ml-100k-starter" for m, _ in starter.STARTERS) + ") again, "
    "each replacing the old run of its name — after a preset changed, or a run was deleted. A first start trains "
    "the FM and the DPLR with the quick settings, so that students' first trainings need not wait, and the FwFM "
    "with its tuned preset (its learned R is what Field interactions shows); the tuned presets give converged "
    "runs of all (a model without a preset keeps the quick settings). A training this machine ran before with the "
    "same settings, code and data is loaded from its kept trainings (`fmlib.trainings`), not run again."
)
tuned = st.radio("Settings", [False, True], format_func=rebuild_label, key="teacher_rebuild_tuned")
server_job(
    "teacher_rebuild",
    "Rebuild default runs",
    "Rebuild default runs",
    lambda job: rebuild_default_runs(job, tuned),
    lambda saved: f"Default runs rebuilt: {', '.join(saved)}.",
    allowed=True,
)
