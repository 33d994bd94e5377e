"""AppTest of the Lesson page: stops from the URL, Next/Back, guess before reveal, prepared links, bad files."""

from __future__ import annotations

from pathlib import Path

from apptest import app_page

from app_pages._measured import scorecard_rows
from app_pages._ui import PAGES
from fmapp.lessons import lesson_files, load_lesson

LESSON = "app_pages/lesson.py"


def lesson_page(stop: str | None = None, **state):
    """The Lesson page inside the frame (page links need the frame's navigation)."""
    at = app_page("app.py", dataset="synthetic", **state)
    at.run()
    at.switch_page(LESSON)
    if stop is not None:
        at.query_params["stop"] = stop
    at.run()
    assert not at.exception
    return at


def test_the_playground_then_the_lesson_follow_home():
    assert [p[0] for p in PAGES[:3]] == ["app_pages/home.py", "app_pages/playground.py", LESSON]


def test_every_stop_links_to_a_page_of_the_app():
    pages = {Path(p[0]).stem for p in PAGES}
    for path in lesson_files():
        for stop in load_lesson(path).stops:
            assert stop.page in pages, (path, stop.title)


def test_the_stop_comes_from_the_url_and_next_back_move_it():
    at = lesson_page(stop="4")
    assert at.session_state["stop"] == 4 and "Stop 4 of 9" in at.get("progress")[0].proto.text
    at.button(key="lesson_next").click().run()
    assert at.session_state["stop"] == 5 and at.query_params["stop"] == "5"
    at.button(key="lesson_back").click().run()
    at.button(key="lesson_back").click().run()
    assert at.session_state["stop"] == 3 and not at.exception


def test_last_stop_disables_next_and_first_disables_back():
    at = lesson_page(stop="9")
    assert at.button(key="lesson_next").disabled and not at.button(key="lesson_back").disabled
    at = lesson_page()
    assert at.button(key="lesson_back").disabled


def test_reveal_needs_a_guess_then_shows_the_answer_and_a_prepared_link():
    at = lesson_page(stop="4")
    assert at.button(key="reveal_intro_4").disabled, "no guess yet: nothing to reveal"
    assert not [b for b in at.button if b.key == "open_intro_4"], "no link before the reveal"
    at.radio(key="guess_intro_4").set_value(66).run()
    at.button(key="reveal_intro_4").click().run()
    assert not at.exception
    assert "the answer is **26**" in at.warning[0].value
    assert any("ρ(m+1) = 2·13 = 26" in m.value for m in at.markdown), "the answer is computed by fmlib"
    assert at.button(key="open_intro_4").label == "Open the field interactions page, prepared"


def test_a_right_guess_is_confirmed():
    at = lesson_page(stop="5")
    at.radio(key="guess_intro_5").set_value("once").run()
    at.button(key="reveal_intro_5").click().run()
    assert "Your guess, once, is right." in at.success[0].value


def test_a_malformed_lesson_file_shows_a_message_naming_file_and_field(tmp_path, monkeypatch):
    bad = tmp_path / "broken.toml"
    bad.write_text(load_lesson(lesson_files()[0]).path.read_text().replace("minutes = 5", "minutes = -1", 1))
    monkeypatch.setenv("FMLIB_LESSONS", str(tmp_path))
    at = lesson_page()
    assert len(at.error) == 1
    message = at.error[0].value
    assert "broken.toml" in message and "stop 1, field 'minutes'" in message and "1..50" in message


def test_a_stop_out_of_range_in_the_url_falls_back_without_an_exception():
    for stop in ("99", "-3", "x"):
        at = lesson_page(stop=stop)
        assert 1 <= at.session_state["stop"] <= 9


def test_start_over_returns_to_stop_1_and_clears_the_guesses():
    at = lesson_page(stop="5")
    at.radio(key="guess_intro_5").set_value("once").run()
    at.button(key="reveal_intro_5").click().run()
    assert "stop=5" in at.code[0].value, "the link to this view names the stop"
    at.button(key="lesson_reset").click().run()
    assert at.session_state["stop"] == 1 and "guesses" not in at.query_params and "revealed" not in at.query_params
    at.selectbox(key="stop_jump").set_value(5).run()
    assert at.radio(key="guess_intro_5").value is None and at.button(key="reveal_intro_5").disabled


def test_reset_to_defaults_opens_the_first_lesson_at_its_first_stop():
    at = lesson_page(stop="5")
    assert at.session_state["stop"] == 5
    at.button(key="reset_view").click().run()
    assert not at.exception and at.session_state["stop"] == 1
    assert at.session_state["lesson"] == lesson_files()[0].stem and "stop=" not in at.code[0].value


def test_the_fm_gradient_stop_frames_eq_8_as_printed_and_shows_the_scorecards_verdicts():
    number = next(
        i
        for i, s in enumerate(load_lesson("lessons/intro.toml").stops, 1)
        if s.page == "derivations" and s.compute == "fm_gradient_coefficient"
    )
    at = lesson_page(stop=str(number))
    at.radio(key=f"guess_intro_{number}").set_value(2).run()
    at.button(key=f"reveal_intro_{number}").click().run()
    assert not at.exception and "the answer is **1**" in at.warning[0].value
    shown = at.table[0].value  # claim -> measured, verdict
    expected = scorecard_rows("derivations").set_index("claim")
    assert list(shown.index) == list(expected.index) and list(shown["verdict"]) == list(expected["verdict"])
    printed = next(claim for claim in shown.index if "as printed" in claim)
    assert "2 Pᵢⱼ Xⱼ²" in printed and shown.loc[printed, "verdict"] == "does not hold"


def test_a_stop_on_a_page_without_scorecard_rows_shows_none(tmp_path, monkeypatch):
    stop = 'title = "Home"\nminutes = 5\ngoal = "g"\nquestion = "q"\nchoices = ["a", "b"]\nanswer = "a"\n'
    stop += 'reveal = "r"\nnotice = "n"\ntakeaway = "t"\npage = "home"\n'
    (tmp_path / "one.toml").write_text(f'title = "T"\nsummary = "S"\n[[stop]]\n{stop}')
    monkeypatch.setenv("FMLIB_LESSONS", str(tmp_path))
    at = lesson_page()  # one stop: Next and Back disabled
    assert "Stop 1 of 1" in at.get("progress")[0].proto.text and at.button(key="lesson_next").disabled
    at.radio(key="guess_one_1").set_value("a").run()
    at.button(key="reveal_one_1").click().run()
    assert not at.exception and "Your guess, a, is right." in at.success[0].value
    assert not at.table and not any(m.value.startswith("**Measured.**") for m in at.markdown)


def test_rendles_stop_on_the_derivations_page_lists_none_of_the_fm_gradient_notes_claims():
    stops = load_lesson("lessons/intro.toml").stops
    number = next(i for i, s in enumerate(stops, 1) if s.params.get("deriv_derivation") == "rendle")
    at = lesson_page(stop=str(number))
    at.radio(key=f"guess_intro_{number}").set_value(stops[number - 1].choices[0]).run()
    at.button(key=f"reveal_intro_{number}").click().run()
    assert not at.exception and scorecard_rows("derivations")["paper"].eq("FMGrad").any()
    assert not at.table and not any(m.value.startswith("**Measured.**") for m in at.markdown)
