"""The server's job queue, and how a page shows a job in it: its place in line with Cancel, then its progress.

Not a page. Everything the app trains or recomputes goes through ``job_queue()``, so the server
never runs more than FMLIB_TRAIN_WORKERS (default: half the cores) of them at once, however many
students press a button.
"""

from __future__ import annotations

import threading

import streamlit as st

from fmapp.jobs import Job, JobQueue


@st.cache_resource
def job_queue() -> JobQueue:
    """One queue per server: at most FMLIB_TRAIN_WORKERS (default: half the cores) jobs at once."""
    return JobQueue()


def progress_of(record) -> tuple[float | None, str]:
    """(fraction done or None, text) of a job's last report: a training's epoch record, or a
    ``{"step", "steps", "text"}`` record of a job made of several steps."""
    label = f"{record['label']}: " if "label" in record else ""
    if "epoch" in record:
        return record["epoch"] / record["epochs"], f"{label}epoch {record['epoch']}/{record['epochs']}"
    return (record["step"] - 1) / record["steps"], f"{label}step {record['step']}/{record['steps']}: {record['text']}"


def show_job(job: Job, what: str, cancel_key: str | None) -> None:
    """``what`` (e.g. "your quick FwFM") as it stands: queued (place in line) or running (progress),
    with a Cancel button unless ``cancel_key`` is None. Refreshed every second; when the job ends
    the whole page runs again."""
    _follow(job, what, cancel_key)


@st.fragment(run_every=1.0)
def _follow(job: Job, what: str, cancel_key: str | None) -> None:
    if job.done:
        st.rerun(scope="app")
    queue = job_queue()
    position = queue.position(job)
    if position:
        st.info(f"{what}: queued, position {position}. This server runs {queue.workers} training(s) at a time.")
    elif job.records:
        fraction, text = progress_of(job.records[-1])
        st.progress(fraction or 0.0, text=f"{what}: {text}")
    else:
        st.progress(0.0, text=f"{what}: starting ...")
    if cancel_key is not None:
        st.button("Cancel", key=cancel_key, on_click=queue.cancel, args=(job,))


def wait_in_session(key: str, what: str) -> Job | None:
    """The job this session keeps in ``st.session_state[key]``: drawn with ``show_job`` and None while
    it waits or runs; once it has ended, the job itself, forgotten by the session (read its
    ``state``, ``result``, ``error``)."""
    job = st.session_state.get(key)
    if job is None:
        return None
    if job.done:
        del st.session_state[key]
        return job
    show_job(job, what, f"{key}_cancel")
    return None


def submit_in_session(key: str, fn) -> Job:
    """Queue ``fn(job)`` for this session under ``key`` (a pending job under that key is cancelled)."""
    previous = st.session_state.get(key)
    if previous is not None:
        job_queue().cancel(previous)
    st.session_state[key] = job = job_queue().submit(fn)
    return job


@st.cache_resource
def _server_jobs() -> tuple[dict, threading.Lock]:
    """The server's named jobs (the teacher's, a page's shared result table) and the lock that guards them."""
    return {}, threading.Lock()


def server_job(name: str, what: str, start: str, fn, done_text, allowed: bool) -> None:
    """A job the whole server shares, one at a time: while ``name`` is queued or running, every
    session sees its place in line or progress; otherwise how its last run ended and, where
    ``allowed``, a button ``start`` that queues ``fn(job)``. Only an ``allowed`` session can cancel.
    ``done_text(result)``: the line shown when it finished."""
    jobs, lock = _server_jobs()
    job = jobs.get(name)
    if job is not None and not job.done:
        show_job(job, what, f"{name}_cancel" if allowed else None)
        return
    if job is not None and job.state == "done":
        st.success(done_text(job.result))
    elif job is not None and job.state == "cancelled":
        st.info(f"{what}: cancelled.")
    elif job is not None:
        st.error(f"{what} failed: {job.error}")
    if allowed and st.button(start, key=f"{name}_start"):
        with lock:  # two clicks at once queue it once
            if name not in jobs or jobs[name].done:
                jobs[name] = job_queue().submit(fn)
        st.rerun()  # show its place in line
