"""The teacher's chart of the class's answers: one bar per choice, in the lesson's order, labels that fit."""

from fmlib.plots.lesson import HIDDEN, LABEL_WIDTH, LINE, OTHER, RIGHT, class_answers_figure

CHOICES = ["those of the last epoch", "those of the epoch with the best validation RMSE", "the average over all epochs"]


def choice_and_count(label: str) -> tuple[str, str]:
    """A bar's label as (its choice on one line, its count line)."""
    *choice, count = label.split("<br>")
    return " ".join(choice), count


def test_one_horizontal_bar_per_choice_first_on_top_with_its_count_and_share():
    fig = class_answers_figure(CHOICES, [11, 9, 10])
    [bars] = fig.data
    assert bars.orientation == "h" and list(bars.x) == [11, 9, 10]
    labels = [choice_and_count(label) for label in bars.y]
    assert [choice for choice, _ in labels] == CHOICES, "every choice, whole, in the lesson's order"
    assert [count for _, count in labels] == ["<b>11 (37 %)</b>", "<b>9 (30 %)</b>", "<b>10 (33 %)</b>"]
    assert fig.layout.yaxis.autorange == "reversed", "the first choice on top, as the students read them"
    assert fig.layout.title.text == "30 answers so far"


def test_long_choices_are_wrapped_and_no_bar_has_a_colour_before_the_reveal():
    [bars] = class_answers_figure(CHOICES, [1, 2, 3]).data
    assert all(len(line) <= LABEL_WIDTH for label in bars.y for line in label.split("<br>")[:-1])
    assert bars.y[1].count("<br>") >= 2, "the long choice takes two lines, then its count"
    lines = sum(label.count("<br>") + 1 for label in bars.y)
    assert class_answers_figure(CHOICES, [1, 2, 3]).layout.height >= LINE * lines, "a line of height for each line"
    assert list(bars.marker.color) == [HIDDEN] * 3


def test_after_the_reveal_the_right_choice_is_green_and_the_others_red():
    [bars] = class_answers_figure(CHOICES, [1, 2, 3], right=CHOICES[1]).data
    assert list(bars.marker.color) == [OTHER, RIGHT, OTHER]


def test_no_answers_yet_shows_zero_for_every_choice_without_dividing_by_zero():
    fig = class_answers_figure(CHOICES, [0, 0, 0])
    assert [choice_and_count(label)[1] for label in fig.data[0].y] == ["<b>0</b>"] * 3
    assert fig.layout.title.text == "0 answers so far"
