"""Lesson: a class walks through the stops of a lesson file, guessing before each answer is revealed."""

from pathlib import Path

import streamlit as st

from app_pages._measured import scorecard_rows, verdict_table
from app_pages._view import copy_link_and_reset, in_range, link_check, one_of
from fmlib.lessons import LessonError, lesson_files, load_lesson

st.title("Lesson")

files = {path.stem: path for path in lesson_files()}
if not files:
    st.error("No lesson files: put one in lessons/ (see the README, 'Writing a lesson').")
    st.stop()


def first_stop():
    st.session_state.stop = 1


link_check("lesson", one_of(files), "one of " + ", ".join(files))
name = st.selectbox("Lesson", list(files), key="lesson", bind="query-params", on_change=first_stop)
try:
    lesson = load_lesson(files[name])
except LessonError as err:
    st.error(f"This lesson cannot be shown: {err}")
    st.stop()
last = len(lesson.stops)

st.markdown(f"**{lesson.title}** · {last} stops · {lesson.minutes} minutes. {lesson.summary}")
with st.expander("Outline"):
    st.markdown("\n".join(f"{i}. {s.title} ({s.minutes} min)" for i, s in enumerate(lesson.stops, 1)))


@st.cache_data(show_spinner=False)
def solve(path: str, modified: float, number: int):
    """The stop's right choice and fmlib's computation, once per lesson file version and stop."""
    return load_lesson(path).stops[number - 1].solve()


def measured_on_the_page(page: str) -> None:
    """The scorecard's rows for the page the stop links to: the verdicts a stop shows are the scorecard's."""
    try:
        rows = scorecard_rows(page)
    except ValueError as err:  # a damaged result table: say which
        st.error(str(err))
        return
    if not rows.empty:
        st.markdown("**Measured.** The scorecard's claims that this page tests, from the committed result tables:")
        verdict_table(rows)


def move(delta: int):
    st.session_state.stop = min(max(st.session_state.stop + delta, 1), last)


link_check("stop", in_range(1, last, integer=True), f"a stop from 1 to {last}")
st.session_state.setdefault("stop", 1)
if st.session_state.stop > last:  # a stale link or another lesson's number
    st.session_state.stop = 1
if last > 1:  # a slider needs two ends; a lesson may have one stop
    st.slider("Stop", 1, last, key="stop", bind="query-params")
back, forward, _ = st.columns([1, 1, 4])
back.button("◀ Back", key="lesson_back", on_click=move, args=(-1,), disabled=st.session_state.stop <= 1, shortcut="B")
forward.button(
    "Next ▶", key="lesson_next", on_click=move, args=(1,), disabled=st.session_state.stop >= last, shortcut="N"
)

number = st.session_state.stop
stop = lesson.stops[number - 1]
elapsed = sum(s.minutes for s in lesson.stops[: number - 1])
st.progress(number / last, text=f"Stop {number} of {last} · minute {elapsed} to {elapsed + stop.minutes}")
st.subheader(stop.title)
st.markdown(f"**Goal.** {stop.goal}")

st.markdown(f"**Predict.** {stop.question}")
tag = f"{name}_{number}"
guess = st.radio("Your guess", stop.choices, index=None, key=f"guess_{tag}", format_func=str)
revealed = f"revealed_{tag}"
if not st.session_state.get(revealed):
    st.button(
        "Reveal",
        key=f"reveal_{tag}",
        type="primary",
        disabled=guess is None,
        on_click=st.session_state.__setitem__,
        args=(revealed, True),
    )
    st.caption("Commit to a guess first; Reveal unlocks once you have one.")
else:
    try:
        with st.spinner("fmlib is computing the answer ..."):
            right, computed = solve(str(lesson.path), lesson.path.stat().st_mtime, number)
    except Exception as err:  # e.g. no data source for a data-dependent answer: say why, no traceback
        st.error(f"The answer could not be computed: {err}")
        st.stop()
    if guess == right:
        st.success(f"Your guess, {guess}, is right.")
    else:
        st.warning(f"Your guess was {guess}; the answer is **{right}**.")
    if computed is not None:
        st.markdown(f"**Computed by fmlib** (`{stop.compute}`): {computed.text}")
    st.markdown(stop.reveal)
    measured_on_the_page(stop.page)
    st.markdown(f"**Notice.** {stop.notice}")
    if (Path(__file__).parent / f"{stop.page}.py").exists():
        st.page_link(
            f"app_pages/{stop.page}.py",
            label=f"Open the {stop.page.replace('_', ' ')} page, prepared",
            query_params=stop.params,
        )
    else:
        st.error(f"{lesson.path}: stop {number}, field 'page': no page named {stop.page!r}")


def start_over():
    """Back to stop 1 with every guess of this lesson cleared."""
    st.session_state.stop = 1
    for key in [k for k in st.session_state if k.startswith((f"guess_{name}_", f"revealed_{name}_"))]:
        del st.session_state[key]


st.divider()
st.button("Start over", key="lesson_reset", on_click=start_over, help="Stop 1, every guess of this lesson cleared")
copy_link_and_reset({"lesson": next(iter(files)), "stop": 1})
st.caption("Keys: **N** next stop, **B** back. The link to this view opens this stop: share it to bring a class here.")
