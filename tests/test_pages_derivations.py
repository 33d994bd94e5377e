"""AppTest for app_pages/derivations.py: Next/Back, the step slider, slips, the check's summary and the wrong-variant
toggle."""

import json

import pytest
from apptest import app_page
from page_order import in_order, position, starts
from test_derivations import katex_problems

from fmapp.notation import unicode_math
from fmapp.worked import rendle_example
from fmlib.derivations import catalog

PAGE = "app_pages/derivations.py"
pytestmark = pytest.mark.usefixtures("derivation_results")  # every step already checked, once per session (conftest)


@pytest.fixture
def at():
    app = app_page(PAGE)
    app.run()
    assert not app.exception
    return app


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_next_and_back_move_one_step(at):
    assert at.session_state["deriv_step"] == 1
    assert "Step 1 of" in step_line(at)
    at.button(key="deriv_next").click().run()
    at.button(key="deriv_next").click().run()
    assert at.session_state["deriv_step"] == 3 and at.slider(key="deriv_step").value == 3
    assert "Step 3 of" in step_line(at)
    at.button(key="deriv_back").click().run()
    assert at.session_state["deriv_step"] == 2 and "Step 2 of" in step_line(at)
    assert not at.exception


def test_next_and_back_name_the_n_and_b_keys_and_the_picker_shows_titles(at):
    """The keys themselves are counted in the browser (``_keys.step_keys``; the browser test presses them)."""
    helps = (at.button(key="deriv_next").help, at.button(key="deriv_back").help)
    assert helps == ("or press N", "or press B")
    assert [b.label for b in at.button if b.key in ("deriv_back", "deriv_next")] == ["◀ Back", "Next ▶"]
    picker = at.selectbox(key="deriv_derivation")
    assert picker.value == "rendle" and picker.options[0] == unicode_math(catalog()[0].title)
    assert not any("-" in option and " " not in option for option in picker.options)  # no code name like fm-gradient
    picker.set_value("fm-gradient").run()
    assert at.session_state["deriv_derivation"] == "fm-gradient"  # the key, as the link carries it


@pytest.mark.parametrize(
    "derivation, step",
    [("rendle", 3), ("fm-gradient", 7), ("r-fm", 2), ("rafm-proposition-s3", 7), ("fm-gradient", 9)],
)
def test_the_check_is_a_short_summary_that_typesets(at, derivation, step):
    """An algebraic line, a slip, a general-size line, an inequality on a grid and a numeric slip."""
    at.selectbox(key="deriv_derivation").set_value(derivation).run()
    at.slider(key="deriv_step").set_value(step).run()
    before = (len(at.markdown), len(at.latex))
    at.toggle(key="deriv_show_check").set_value(True).run()
    assert not at.exception
    text = markdown(at)
    assert "**Claim.**" in text and "**Compared.**" in text and "**Result.**" in text
    assert len(at.markdown) - before[0] + len(at.latex) - before[1] <= 8  # a few lines, the printed line's included
    for latex in at.latex:
        assert not katex_problems(latex.value), (latex.value, katex_problems(latex.value))


def test_slider_jumps_and_back_is_disabled_on_first_step(at):
    at.slider(key="deriv_step").set_value(4).run()
    assert "Step 4 of" in step_line(at)
    at.slider(key="deriv_step").set_value(1).run()
    assert at.button(key="deriv_back").disabled
    assert not at.button(key="deriv_next").disabled


def test_every_step_shows_latex_rule_source_and_a_passed_badge(at):
    for i in range(1, 5):
        at.slider(key="deriv_step").set_value(i).run()
        assert at.latex and "Rule." in markdown(at) and at.caption
        assert ":green-badge[✓ passed]" in markdown(at)


def test_wrong_variant_toggle_shows_a_failing_check(at):
    at.slider(key="deriv_step").set_value(3).run()  # Rendle's identity has "dropped the factor ½"
    assert not at.error
    at.toggle(key="deriv_wrong").set_value(True).run()
    assert not at.exception
    assert any("dropped the factor ½" in e.value and "the check fails" in e.value for e in at.error)
    [error] = at.error
    assert "not equal" in error.value and error.value.count("*") == 4  # the bold label; no raw sympy product
    at.toggle(key="deriv_wrong").set_value(False).run()
    assert not at.error


def test_slip_in_the_fm_note_is_shown_with_printed_line(at):
    at.selectbox(key="deriv_derivation").set_value("fm-gradient").run()
    assert at.session_state["deriv_step"] == 1
    at.slider(key="deriv_step").set_value(7).run()
    assert ":orange-badge[slip in the paper]" in markdown(at)
    assert any("Slip in the paper" in w.value for w in at.warning)
    latex = [x.value for x in at.latex]
    assert any("- P_{i,j}X_j^2" in x for x in latex) and any("2P_{i,j}X_j^2" in x for x in latex)


def test_s3_step_plots_a_nonnegative_slack_and_its_wrong_variant_fails(at):
    at.selectbox(key="deriv_derivation").set_value("rafm-proposition-s3").run()
    at.slider(key="deriv_step").set_value(7).run()
    assert not at.exception
    [chart] = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    low = float(spec["layout"]["title"]["text"].rsplit("min ", 1)[1].rstrip(")"))
    assert low >= 0
    at.toggle(key="deriv_wrong").set_value(True).run()
    assert any("without the + log δ" in e.value and "violated" in e.value for e in at.error)


def test_another_size_falls_back_to_numeric_then_refuses(at):
    at.selectbox(key="deriv_derivation").set_value("identity-1").run()
    at.number_input(key="deriv_size").set_value(8).run()
    assert "checked at n = 8, numeric (4 trials" in markdown(at) and "for algebra" in markdown(at)
    at.number_input(key="deriv_size").set_value(20).run()
    assert ":gray-badge[not checked]" in markdown(at) and "limit" in markdown(at)
    assert not at.exception


def test_each_step_is_checked_at_its_own_size_not_at_the_last_steps(at):
    """The size field follows the step: a size the last step was checked at is not carried to the next (the
    expander runs though closed, so a carried size checked every later step at it too), and a size the reader picks
    stays while the step does."""
    from fmlib.derivations import checker

    before = set(checker._CACHE)  # the lines checked so far in this process, at their sizes
    assert at.number_input(key="deriv_size").value == 6  # Rendle's identity: every step at n = 6
    at.selectbox(key="deriv_derivation").set_value("fm-gradient").run()
    assert at.number_input(key="deriv_size").value == 4
    at.slider(key="deriv_step").set_value(9).run()
    assert at.number_input(key="deriv_size").value == 3
    at.number_input(key="deriv_size").set_value(5).run()
    assert "checked at n = 5" in markdown(at)
    at.button(key="deriv_back").click().run()
    assert at.number_input(key="deriv_size").value == 4 and "checked at n = 5" not in markdown(at)
    steps = catalog()[1].steps  # fm-gradient: nothing checked but its lines at their own sizes and the size picked
    asked = {n for c, n in set(checker._CACHE) - before if any(c is s.check for s in steps)}
    assert asked <= {None, 3, 4, 5}, asked
    assert not at.exception


def step_line(at) -> str:
    """The page's "Step i of n: ..." line (bold text, not a heading: it keeps the formula above the fold)."""
    return next(m.value for m in at.markdown if m.value.startswith("**Step "))


NUMBERS = "**Rendle's identity on three features, in numbers"


def numbers_line(at) -> str:
    return next(m.value for m in at.markdown if "Pair by pair" in m.value)


def test_a_first_visit_opens_with_the_question_and_the_identity_in_numbers(at):
    """No link, no projector: the question and Rendle's identity on fmapp.worked's numbers come before the picker."""
    ex = rendle_example(seed=4)
    line = numbers_line(at)
    assert f"= {ex['pair_sum']:g}$, one inner product per pair" in line
    assert f"\\big) = {ex['identity']:g}$" in line and f"{ex['square_of_sum']:g} - (" in line
    assert f"$x = ({', '.join(f'{v:g}' for v in ex['x'])})$" in line
    order = in_order(at)
    opens = position(at, starts(NUMBERS))
    assert position(at, starts("**Does each line of a paper")) < opens
    assert opens < order.index(at.selectbox(key="deriv_derivation")) < position(at, starts("**Step 1 of"))
    assert not any(getattr(e, "type", None) == "popover" and "In numbers" in str(e.proto) for e in order)
    at.button(key="deriv_next").click().run()  # stepping keeps the page as it opened: nothing jumps
    assert position(at, starts(NUMBERS)) < position(at, starts("**Step 2 of"))


@pytest.mark.parametrize("params", [{"deriv_derivation": "fm-gradient", "deriv_step": "7"}, {"projector": "true"}])
def test_a_step_link_or_projector_mode_opens_on_the_step_with_the_numbers_beside_the_buttons(params):
    """The lesson's links and the projector keep the step's formula above the fold: nothing is added above it; the
    same numbers sit in a popover beside Back and Next."""
    at = app_page(PAGE)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    step = position(at, starts("**Step "))
    assert position(at, starts(NUMBERS)) > position(at, lambda e: getattr(e, "key", None) == "deriv_next")
    assert position(at, starts(NUMBERS)) < step  # inside the button row's popover, drawn before the step
    assert not any(starts("**Does each line of a paper")(e) for e in in_order(at)[:step])
    assert f"= {rendle_example(seed=4)['pair_sum']:g}$" in numbers_line(at)
