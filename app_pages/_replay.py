"""Watch it learn: a run replayed epoch by epoch, and a running training paused and stepped.

Not a page. ``replay(run, what)`` draws one replay of a finished run (its R, its movie map or its
curves; ``fmlib.plots.replay``) with Play, Pause, one-epoch steps and an epoch slider, all in the
browser — or one line on why the run has nothing to replay. ``training_controls(job)`` is the live
side, for the Train page's running training: Pause after this epoch, One more epoch, Resume, and
while paused a replay of the epochs so far.
"""

from __future__ import annotations

import streamlit as st

from app_pages._view import cached, chart
from fmapp.jobs import Job
from fmlib import snapshots
from fmlib.plots.replay import replay_figure

LABELS = {"R": "the field interaction matrix R", "movies": "the movie map", "curves": "the learning curves"}
WHAT_IT_SHOWS = {
    "R": "how the field interaction matrix R moves away from the FM's R = 11ᵀ − I (where an FwFM starts) as it learns",
    "movies": "the most rated movies' embeddings unfold from their small random start into the final map "
    "(every epoch on the final epoch's two principal axes, so nothing flips between frames)",
    "curves": "the training loss and the validation metric grow epoch by epoch",
}


def replay(run, what: str = "R", key: str | None = None) -> None:
    """Watch ``run`` learn: ``what`` ("R", "movies" or "curves") replayed from epoch 0 with Play, Pause,
    Step and an epoch slider (all client-side), under a one-line heading; or one line on why ``run``
    has nothing of that kind to replay (an old run, a model without R)."""
    why = snapshots.absent(run, what)
    if why is not None:
        st.caption(f"**Watch it learn** ({LABELS[what]}): {why}")
        return
    st.markdown(f"**Watch it learn:** press ▶ Play, or step epoch by epoch, to see {WHAT_IT_SHOWS[what]}.")
    chart(cached(replay_figure, run.snapshots, run.history, what), key=key or f"replay_{what}")


def replayable(run) -> list[str]:
    """What ``run`` can replay, in the order ``replay_choice`` offers it."""
    return [what for what in ("curves", "movies", "R") if snapshots.absent(run, what) is None]


def replay_choice(run, key: str = "replay_what") -> None:
    """``replay`` with a choice of what to watch among what ``run`` has (curves, movie map, R)."""
    kinds = replayable(run)
    missing = [w for w in ("movies", "R") if w not in kinds]
    if len(kinds) > 1:
        if st.session_state.get(key) not in kinds:
            st.session_state[key] = kinds[-1]
        what = st.radio("Watch", kinds, key=key, horizontal=True, format_func=LABELS.get)
    else:
        what = kinds[0] if kinds else "R"
    replay(run, what, key=f"{key}_figure")
    for other in missing:  # say once why the others are not offered
        why = snapshots.absent(run, other)
        if why and why != snapshots.absent(run, what):
            st.caption(f"No replay of {LABELS[other]}: {why}")


def training_controls(job: Job, key: str = "training") -> None:
    """A running training's Pause / One more epoch / Resume, and while it is held, a replay of its epochs
    so far (``job.live``: the ``Snapshots`` it fills; ``job.records``: its history so far)."""
    if job.done or not job.started:
        return
    if job.gave_way:
        st.info("Your pause ended by itself: other trainings were waiting in line for this server's worker.")
    last = job.records[-1]["epoch"] if job.records else 0
    if job.held:
        st.success(f"Paused after epoch {last}. Step one epoch at a time, or resume.")
    elif job.paused:
        st.caption(f"Pausing after epoch {last + 1} ends ...")
    left, middle, right = st.columns(3)
    if not job.paused:
        left.button("Pause after this epoch", key=f"{key}_pause", on_click=job.pause)
    else:
        left.button("One more epoch", key=f"{key}_step", on_click=job.step, disabled=not job.held)
        middle.button("Resume", key=f"{key}_resume", on_click=job.resume)
    live = job.live
    if job.held and isinstance(live, snapshots.Snapshots) and live.count:
        shown = live.count
        records = list(job.records)
        kinds = [w for w, ok in (("R", live.has_R), ("movies", live.has_movies)) if ok]
        if kinds:
            what = right.radio("Show", kinds, key=f"{key}_show", horizontal=True, format_func=LABELS.get)
            chart(replay_figure(live, records, what, upto=shown), key=f"{key}_live_replay")
