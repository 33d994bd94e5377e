"""The teacher's chart of the class's answers: one bar per choice, in the lesson's order, labels that fit."""

from fmlib.plots.lesson import HIDDEN, LABEL_WIDTH, OTHER, RIGHT, class_answers_figure

CHOICES = ["those of the last epoch", "those of the epoch with the best validation RMSE", "the average over all epochs"]


def test_one_horizontal_bar_per_choice_first_on_top_with_its_count_and_share():
    fig = class_answers_figure(CHOICES, [11, 9, 10])
    [bars] = fig.data
    assert bars.orientation == "h" and list(bars.x) == [11, 9, 10]
    assert [label.replace("<br>", " ") for label in bars.y] == CHOICES, "every choice, whole, in the lesson's order"
    assert fig.layout.yaxis.autorange == "reversed", "the first choice on top, as the students read them"
    assert list(bars.text) == ["11 (37 %)", "9 (30 %)", "10 (33 %)"]
    assert fig.layout.title.text == "The class's answers (30 so far)"
    assert fig.layout.xaxis.range[1] > 11, "room for the longest bar's count"


def test_long_choices_are_wrapped_and_no_bar_has_a_colour_before_the_reveal():
    [bars] = class_answers_figure(CHOICES, [1, 2, 3]).data
    assert all(len(line) <= LABEL_WIDTH for label in bars.y for line in label.split("<br>"))
    assert "<br>" in bars.y[1]
    assert list(bars.marker.color) == [HIDDEN] * 3


def test_after_the_reveal_the_right_choice_is_green_and_the_others_red():
    [bars] = class_answers_figure(CHOICES, [1, 2, 3], right=CHOICES[1]).data
    assert list(bars.marker.color) == [OTHER, RIGHT, OTHER]


def test_no_answers_yet_draws_empty_bars_without_dividing_by_zero():
    [bars] = class_answers_figure(CHOICES, [0, 0, 0]).data
    assert list(bars.text) == ["0", "0", "0"]
