"""Lesson: a class walks through the stops of a lesson file, guessing before each answer is revealed.

A student's guesses stay (session and URL: other pages, Back, reload). On a server with a teacher
(FMLIB_TEACHER_PASSCODE) the answers are counted per browser, without names; the teacher's view of
this page shows them live and can reveal a stop to the whole class at once.
"""

from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages._classroom import teacher_passcode, teacher_unlocked
from app_pages._keys import step_keys
from app_pages._lesson import class_answers, follow_prepared_link, guesses, measured_rows, prepare, voter, write_url
from app_pages._measured import scorecard_rows, verdict_table
from app_pages._view import (
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    error,
    in_range,
    one_of,
    projector,
    secondary,
    title_bar,
)
from fmapp.lessons import LessonError, lesson_files, load_lesson
from fmlib.plots.lesson import class_answers_figure

follow_prepared_link()
bar = title_bar("Lesson")

files = {path.stem: path for path in lesson_files()}
if not files:
    st.error("No lesson files: put one in lessons/ (see the README, 'Writing a lesson').")
    st.stop()


VIEW = UrlState(
    lesson=Bound(next(iter(files)), one_of(files), "one of " + ", ".join(files)),
    stop=Bound(1),  # kept by the session, checked below against the lesson's length
)


def first_stop():
    st.session_state.stop = VIEW["stop"].default


controls = st.columns([2, 4, 3], vertical_alignment="bottom")
steps = controls[2].container(horizontal=True)  # buttons as wide as their labels: never cut at 150 %
name = VIEW.widget("lesson", controls[0].selectbox, "Lesson", list(files), on_change=first_stop)
try:
    lesson = load_lesson(files[name])
except LessonError as err:
    error(f"This lesson cannot be shown: {err}")
    st.stop()
last = len(lesson.stops)

# The stop is kept by the session, not by a widget: a widget's value in the browser lags behind quick
# presses of N, and each press would then move from the lagging value (five presses, one stop).
if "stop" not in st.session_state:
    first = str(VIEW["stop"].default)
    linked = st.query_params.get("stop", first)
    if not in_range(1, last, integer=True)(linked):
        st.warning(f"The link's stop = {linked!r} is not valid (a stop from 1 to {last}); showing stop {first}.")
        linked = first
    st.session_state.stop = int(linked)
st.session_state.stop = min(max(st.session_state.stop, 1), last)  # another lesson's number


def move(delta: int):
    st.session_state.stop = min(max(st.session_state.stop + delta, 1), last)


def go_to(stop: int):
    st.session_state.stop = stop


def jump():
    st.session_state.stop = st.session_state.stop_jump or st.session_state.stop
    st.session_state.stop_jump = None  # a pointer, not a value: the next jump starts from the placeholder


number = st.session_state.stop
st.query_params["stop"] = str(number)
stop = lesson.stops[number - 1]
controls[1].selectbox(
    "Go to stop",
    range(1, last + 1),
    index=None,
    key="stop_jump",
    on_change=jump,
    placeholder=f"{number}. {stop.title}",
    format_func=lambda i: f"{i}. {lesson.stops[i - 1].title}",
)
steps.button("◀ Back", key="lesson_back", help="or press B", on_click=move, args=(-1,), disabled=number <= 1)
steps.button("Next ▶", key="lesson_next", help="or press N", on_click=move, args=(1,), disabled=number >= last)
with steps:  # beside the buttons: the listener takes no line of its own
    step_keys("lesson_keys", number, 1, last, go_to)  # N/B: every press counts, however quick


@st.cache_data(show_spinner=False)
def solve(path: str, modified: float, number: int):
    """The stop's right choice and fmlib's computation, once per lesson file version and stop."""
    return load_lesson(path).stops[number - 1].solve()


def right_choice(number: int):
    return solve(str(lesson.path), lesson.path.stat().st_mtime, number)


answers = class_answers()
collecting = teacher_passcode() is not None  # a class: answers are counted for the teacher
teacher = collecting and teacher_unlocked()
paced = collecting and answers.paced(name)
saved = guesses(name)
write_url(saved)  # every run: after the callbacks below changed them, and after Back or a page visit
tag = f"{name}_{number}"

elapsed = sum(s.minutes for s in lesson.stops[: number - 1])
room = projector()  # on a projector the question and its choices must fit above the fold, even at 150 %
where = f"Stop {number} of {last}" + (f": {stop.title}" if room else "")
st.progress(number / last, text=f"{where} · minute {elapsed} to {elapsed + stop.minutes}")
main, side = st.columns([3, 2]) if teacher else (st.container(), None)
if not room:
    main.subheader(stop.title)
    main.markdown(f"**Goal.** {stop.goal}")
main.markdown(f"**Predict.** {stop.question}")


def record_guess():
    """Radio callback: keep the guess (the run that follows writes it into the URL) and count it for the class."""
    choice = st.session_state[f"guess_{tag}"]
    if choice is None:
        return
    index = stop.choices.index(choice)
    saved["choice"][number] = index
    if collecting and not teacher:
        outcome = answers.answer(name, number, voter(), index)
        if outcome == "closed":
            st.session_state["lesson_note"] = (
                "The teacher has revealed this stop, so answers are closed: yours is kept here, not counted."
            )


index = saved["choice"].get(number)
guess = main.radio(
    "Your guess",
    stop.choices,
    index=index if index is not None and index < len(stop.choices) else None,
    key=f"guess_{tag}",
    format_func=str,
    horizontal=True,
    label_visibility="collapsed" if room else "visible",
    on_change=record_guess,
)
if note := st.session_state.pop("lesson_note", None):
    main.info(note)


@st.fragment(run_every=2.0)
def wait_for_teacher():
    """A student's view in paced mode: poll the class's reveal; the page runs again when it comes."""
    if answers.revealed(name, number):
        st.rerun(scope="app")
    st.info("Waiting for the teacher to reveal the answer.")


def reveal_mine():
    saved["revealed"].add(number)


class_revealed = answers.revealed(name, number)
if paced and not teacher:
    if number in saved["revealed"] and not class_revealed:  # the teacher hid the answer again
        saved["revealed"].discard(number)
        write_url(saved)
        main.info("The teacher has hidden the answer again: answers are open.")
    if class_revealed:
        saved["revealed"].add(number)
        write_url(saved)
    elif guess is None:
        main.caption("Commit to a guess: the teacher reveals the answer to the whole class.")
    else:
        with main:
            wait_for_teacher()
elif number not in saved["revealed"] and not class_revealed:
    main.button("Reveal", key=f"reveal_{tag}", type="primary", disabled=guess is None, on_click=reveal_mine)
    main.caption("Commit to a guess first; Reveal unlocks once you have one.")
shown = class_revealed or number in saved["revealed"]


def open_prepared(page: str, label: str):
    if (Path(__file__).parent / f"{page}.py").exists():
        main.button(label, key=f"open_{tag}", icon=":material/open_in_new:", on_click=prepare, args=(page, stop.params))
    else:
        main.error(f"{lesson.path.name}: stop {number}, field 'page': no page named {page!r}")


if shown:
    try:
        with st.spinner("fmlib is computing the answer ..."):
            right, computed = right_choice(number)
    except Exception as err:  # e.g. no data source for a data-dependent answer: say why, no traceback
        error(f"The answer could not be computed: {err}", main)
        st.stop()
    if guess is None:
        main.info(f"The answer is **{right}**.")
    elif guess == right:
        main.success(f"Your guess, {guess}, is right.")
    else:
        main.warning(f"Your guess was {guess}; the answer is **{right}**.")
    if computed is not None:
        main.markdown(f"**Computed by fmlib** (`{stop.compute}`): {computed.text}")
    main.markdown(stop.reveal)
    main.markdown(f"**Notice.** {stop.notice}")
    open_prepared(stop.page, f"Open the {stop.page.replace('_', ' ')} page, prepared")
    with main:
        try:
            rows = measured_rows(stop, scorecard_rows(stop.page))
        except ValueError as err:  # a damaged result table: say which
            error(err)
            rows = pd.DataFrame()
        if not rows.empty:
            st.markdown("**Measured.** The scorecard's claims that this page tests, from the committed result tables:")
            verdict_table(rows)


@st.fragment(run_every=2.0)
def live_answers():
    """The teacher's view: the class's answers to this stop, refreshed every 2 s."""
    counts = answers.counts(name, number, len(stop.choices))
    right = right_choice(number)[0] if answers.revealed(name, number) else None
    chart(class_answers_figure(stop.choices, counts, right), key=f"class_answers_{tag}")


if teacher:
    with side:
        live_answers()
        st.toggle(
            "Students wait for my reveal",
            value=paced,
            key=f"paced_{name}",
            on_change=lambda: answers.set_paced(name, st.session_state[f"paced_{name}"]),
            help="On: a student sees the answer only when you reveal it, to everyone at once.",
        )
        if class_revealed:
            st.button("Hide the answer again", key=f"hide_{tag}", on_click=answers.reveal, args=(name, number, False))
        else:
            st.button(
                "Reveal to the class",
                key=f"class_reveal_{tag}",
                type="primary",
                on_click=answers.reveal,
                args=(name, number),
            )
        st.button("Clear the class's answers", key=f"clear_{name}", on_click=answers.clear, args=(name,))
elif collecting:
    secondary("Your answers are counted for the teacher without your name.", show=main.caption)


@st.dialog("What we learned", width="large")
def summary():
    """One screen: each stop's takeaway, its answer, this student's guess, and the class's share right."""
    rows = []
    for i, s in enumerate(lesson.stops, 1):
        right = right_choice(i)[0]
        mine = saved["choice"].get(i)
        mine = None if mine is None or mine >= len(s.choices) else s.choices[mine]
        row = {"stop": f"{i}. {s.title}", "what we learned": s.takeaway, "answer": str(right)}
        row["your guess"] = "—" if mine is None else f"{mine} {'✓' if mine == right else '✗'}"
        if collecting:
            counts = answers.counts(name, i, len(s.choices))
            total = sum(counts)
            share = counts[s.choices.index(right)] / total if total else None
            row["class right"] = "—" if share is None else f"{100 * share:.0f} % of {total}"
        rows.append(row)
    st.dataframe(pd.DataFrame(rows), hide_index=True, row_height=56)


def start_over():
    """Back to stop 1 with every guess of this lesson cleared."""
    st.session_state.stop = 1
    saved["choice"].clear()
    saved["revealed"].clear()
    for key in [k for k in st.session_state if k.startswith(f"guess_{name}_")]:
        del st.session_state[key]


st.divider()
ends = st.container(horizontal=True)  # buttons as wide as their labels: never cut at 150 %
if ends.button("Summary of the lesson", key="lesson_summary", icon=":material/checklist:"):
    summary()
ends.button("Start over", key="lesson_reset", on_click=start_over, help="Stop 1, every guess of this lesson cleared")
copy_link_and_reset(VIEW, container=bar)
secondary(f"**{lesson.title}** · {last} stops · {lesson.minutes} minutes. {lesson.summary}", show=st.markdown)
with st.expander("Outline"):
    st.markdown("\n".join(f"{i}. {s.title} ({s.minutes} min)" for i, s in enumerate(lesson.stops, 1)))
st.caption("Keys: **N** next stop, **B** back. The link to this view opens this stop: share it to bring a class here.")
