"""AppTest of the Lesson in a room: prepared links, guesses that stay, the class's answers for the teacher."""

from __future__ import annotations

from apptest import app_page

from app_pages._lesson import class_answers
from fmapp.lessons import lesson_files, load_lesson

LESSON = "app_pages/lesson.py"
STOPS = load_lesson(lesson_files()[0]).stops


def lesson(stop: int, teacher: bool = False, voter: str = "s1", **params):
    """The Lesson page in the frame, at ``stop``, as a student (``voter``) or the unlocked teacher."""
    at = app_page("app.py", dataset="synthetic", lesson_voter=voter, **({"teacher": True} if teacher else {}))
    at.run()
    at.switch_page(LESSON)
    at.query_params["stop"] = str(stop)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return at


def number_of(page: str) -> int:
    return next(i for i, s in enumerate(STOPS, 1) if s.page == page)


def test_a_prepared_link_sets_the_sidebar_and_every_value_it_names():
    n = number_of("train")
    at = lesson(n)
    at.radio(key=f"guess_intro_{n}").set_value(STOPS[n - 1].choices[1]).run()
    at.button(key=f"reveal_intro_{n}").click().run()
    at.session_state["lr"] = 0.5  # left from an earlier visit to Train
    at.button(key=f"open_intro_{n}").click().run()
    assert not at.exception and at.title[0].value == "Train a model"
    assert at.session_state["dataset"] == "ml-100k", "the sidebar's synthetic data gave way to the stop's"
    assert (at.session_state["lr"], at.session_state["epochs"]) == (0.02, 30), "the stop's values, not the old ones"


def test_a_prepared_link_keeps_a_named_run_only_where_the_server_has_it(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    from fmlib.data import split, synthetic
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    data = split(synthetic.make(synthetic.demo_R(), n_samples=500, cardinality=10, seed=0), seed=0)
    RunStore(tmp_path).save(train_model("fwfm", data, TrainConfig(epochs=1, batch_size=100), dim=2), "kept")
    monkeypatch.setenv("FMLIB_RUNS", str(tmp_path))

    def script():
        import streamlit as st

        from app_pages._lesson import prepare

        prepare("field_interactions", {"fi_run": "kept", "run_id": "gone", "rho": "2"})
        st.write(repr(st.session_state["lesson_goto"]))

    at = AppTest.from_function(script).run()
    assert not at.exception
    assert at.markdown[0].value == repr(("app_pages/field_interactions.py", {"fi_run": "kept", "rho": "2"}))


def test_a_guess_survives_another_page_and_a_reload():
    at = lesson(4)
    at.radio(key="guess_intro_4").set_value(66).run()
    assert at.query_params["guesses"] == ",,,2"
    at.switch_page("app_pages/home.py").run()
    at.switch_page(LESSON).run()
    assert at.radio(key="guess_intro_4").value == 66, "back from another page"
    reloaded = lesson(4, voter="s2", guesses=",,,2", revealed="4")  # a fresh session on the same URL
    assert reloaded.radio(key="guess_intro_4").value == 66
    assert "Your guess was 66; the answer is **26**." in reloaded.warning[0].value


def test_bad_guesses_in_the_url_are_ignored():
    at = lesson(4, guesses="x,9,,,", revealed="a,99")
    assert at.radio(key="guess_intro_4").value is None and at.button(key="reveal_intro_4").disabled


def test_the_teacher_sees_the_class_answer_counted_once_per_browser(monkeypatch):
    monkeypatch.setenv("FMLIB_TEACHER_PASSCODE", "pass")
    one, two = lesson(4, voter="a"), lesson(4, voter="b")
    one.radio(key="guess_intro_4").set_value(12).run()
    one.radio(key="guess_intro_4").set_value(26).run()  # changed, not counted twice
    two.radio(key="guess_intro_4").set_value(66).run()
    assert class_answers().counts("intro", 4, 3) == [0, 1, 1]
    teacher = lesson(4, teacher=True)
    bars = teacher.get("plotly_chart")[0].proto.spec
    assert '"2 answers so far"' in bars and '"x":[0,1,1]' in bars  # the teacher's chart: two answers, one each


def test_paced_students_wait_then_see_the_teachers_reveal_and_late_answers_are_not_counted(monkeypatch):
    monkeypatch.setenv("FMLIB_TEACHER_PASSCODE", "pass")
    teacher = lesson(4, teacher=True)
    teacher.toggle(key="paced_intro").set_value(True).run()
    student = lesson(4, voter="a")
    assert not [b for b in student.button if b.key == "reveal_intro_4"], "no own reveal in paced mode"
    student.radio(key="guess_intro_4").set_value(26).run()
    assert any("Waiting for the teacher" in i.value for i in student.info)
    teacher.button(key="class_reveal_intro_4").click().run()
    student.run()
    assert "Your guess, 26, is right." in student.success[0].value
    late = lesson(4, voter="b")
    late.radio(key="guess_intro_4").set_value(12).run()
    assert any("answers are closed" in i.value for i in late.info)
    assert class_answers().counts("intro", 4, 3) == [0, 1, 0]
    teacher.button(key="hide_intro_4").click().run()
    student.run()
    assert any("hidden the answer again" in i.value for i in student.info) and not student.success


def test_the_summary_lists_every_stop_with_its_takeaway():
    at = lesson(5)
    at.radio(key="guess_intro_5").set_value("once").run()
    at.button(key="lesson_summary").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) == len(STOPS) and list(table["what we learned"]) == [s.takeaway for s in STOPS]
    assert table["your guess"].iloc[4] == "once ✓" and table["your guess"].iloc[0] == "—"
