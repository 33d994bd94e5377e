"""Lesson files: the loader's validation messages and the computed answers against naive computations."""

from __future__ import annotations

import pytest
import torch

from fmapp.lessons import ANSWERS, LessonError, closest, lesson_files, load_lesson
from fmapp.lessons.answers import dplr_budget, fm_gradient_coefficient, product_gradient_growth, rendle_gap

STOP = """
[[stop]]
title = "Budget"
minutes = 5
goal = "g"
question = "q"
choices = [12, 26, 66]
compute = "dplr_budget"
compute_args = { m = 12, rank = 2 }
reveal = "r"
notice = "n"
takeaway = "t"
page = "field_interactions"
params = { rho = 2 }
"""
HEAD = 'title = "T"\nsummary = "S"\n'


def write(tmp_path, text: str):
    path = tmp_path / "lesson.toml"
    path.write_text(text)
    return path


def test_the_shipped_lessons_load_and_last_50_minutes_in_6_to_9_stops():
    files = lesson_files()
    assert files, "lessons/ ships at least one lesson"
    for path in files:
        lesson = load_lesson(path)
        assert 6 <= len(lesson.stops) <= 9 and lesson.minutes == 50, path


def test_a_valid_stop_loads_and_its_computed_answer_picks_the_nearest_choice(tmp_path):
    lesson = load_lesson(write(tmp_path, HEAD + STOP))
    (stop,) = lesson.stops
    assert stop.params == {"rho": "2"}
    right, computed = stop.solve()
    assert right == 26 and computed.value == 26


@pytest.mark.parametrize(
    "change, field",
    [
        (("minutes = 5", "minutes = 0"), "minutes"),
        (("minutes = 5", 'minutes = "five"'), "minutes"),
        (('page = "field_interactions"', 'page = "../etc"'), "page"),
        (('compute = "dplr_budget"', 'compute = "nothing"'), "compute"),
        (("rank = 2", "rank = 2, rnak = 3"), "compute_args"),
        (("choices = [12, 26, 66]", 'choices = ["a", "b"]'), "choices"),
        (("choices = [12, 26, 66]", "choices = [12]"), "choices"),
        (('goal = "g"', ""), "goal"),
        (('takeaway = "t"', ""), "takeaway"),
        (('goal = "g"', 'goal = "g"\nanswer = 26'), "answer"),
        (('notice = "n"', 'notice = "n"\ncolour = "red"'), "colour"),
        (("params = { rho = 2 }", "params = { rho = true }"), "params"),
    ],
)
def test_malformed_stops_name_the_file_the_stop_and_the_field(tmp_path, change, field):
    path = write(tmp_path, HEAD + STOP.replace(*change))
    with pytest.raises(LessonError) as err:
        load_lesson(path)
    assert str(path) in str(err.value) and "stop 1" in str(err.value) and f"field '{field}'" in str(err.value)


def test_a_written_answer_must_be_one_of_the_choices(tmp_path):
    stop = STOP.replace('compute = "dplr_budget"\ncompute_args = { m = 12, rank = 2 }', 'answer = "27"')
    stop = stop.replace("choices = [12, 26, 66]", 'choices = ["26", "66"]')
    with pytest.raises(LessonError, match="field 'answer': '27' is not one of the choices"):
        load_lesson(write(tmp_path, HEAD + stop))


@pytest.mark.parametrize(
    "text, message", [("title = [", "not valid TOML"), (STOP, "field 'title'"), (HEAD, "field 'stop'")]
)
def test_malformed_files_name_the_file(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(LessonError, match=message) as err:
        load_lesson(path)
    assert str(path) in str(err.value)


def test_closest_uses_a_log_scale_for_positive_choices():
    assert closest([4, 100, 10000], 2000) == 10000  # log: 2000 is nearer 10000 than 100
    assert closest([0, 0.01, 0.5], 1e-16) == 0


def test_rendle_gap_is_rounding_and_matches_a_naive_double_loop():
    assert rendle_gap(m=5, k=3).value < 1e-12


def test_fm_gradient_coefficient_is_one_as_autograd_says():
    assert fm_gradient_coefficient(m=4, k=3).value == pytest.approx(1.0, abs=1e-12)


def test_dplr_budget_is_rho_times_m_plus_one():
    assert dplr_budget(m=10, rank=3).value == 33


def test_product_gradient_growth_equals_the_ratio_of_autograd_gradients():
    value = product_gradient_growth(m_from=4, m_to=6, d=2, trials=3).value
    X = {}
    for m in (4, 6):  # the page's draws (gradient_growth): seed 100·t + m, |X| in [M − ε, M + ε]; the smallest of 3
        grads = []
        for t in range(3):
            gen = torch.Generator().manual_seed(100 * t + m)
            size = 1.25 + 0.5 * torch.rand(m, 2, generator=gen, dtype=torch.float64)
            sign = torch.where(torch.rand(m, 2, generator=gen) < 0.5, -1.0, 1.0).double()
            x = (sign * size).requires_grad_(True)
            (g,) = torch.autograd.grad(x.prod(0).sum(), x)
            grads.append(float(g.abs().sum(1).max()))
        X[m] = min(grads)
    assert value == pytest.approx(X[6] / X[4], rel=1e-12)


def test_every_registered_answer_has_defaults_that_run():
    for name, fn in ANSWERS.items():
        if name != "rafm_parameter_share":  # loads MovieLens; the page test reveals it
            assert fn().text, name


def test_the_fm_gradient_stop_asks_about_eq_8_as_printed():
    stop = next(s for path in lesson_files() for s in load_lesson(path).stops if s.compute == "fm_gradient_coefficient")
    assert "X_j Z_i - 2\\,P_{ij} X_j^2" in stop.question  # the note's eq. 8 in its own variables, not c·(Z − e_f)
    right, computed = stop.solve()
    assert right == 1 and 2 in stop.choices and "not the printed 2" in computed.text
