"""Derivations you can step through, each line checked by sympy (fmlib.derivations)."""

import streamlit as st

from app_pages._intuition import block
from app_pages._keys import step_keys
from app_pages._measured import fmgrad_verdicts
from app_pages._ui import notebook_link
from app_pages._view import (
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    in_range,
    one_of,
    projector,
    secondary,
    title_bar,
)
from fmapp.notation import unicode_math
from fmapp.worked import rendle_example
from fmlib.derivations import catalog, check_derivations, check_step, get, run_check
from fmlib.derivations.display import Line, outcome, summary
from fmlib.plots.derivations import s3_slack_figure
from fmlib.references import with_titles

BADGES = {
    "passed": ("green", "✓ passed"),
    "failed": ("red", "✗ failed"),
    "slip": ("orange", "slip in the paper"),
    "not-checked": ("gray", "not checked"),
}
S3_KEY = "rafm-proposition-s3"
DELTAS = [1.05, 1.2, 1.5, 2.0, 4.0, 10.0]  # the δ of Proposition S3's slack chart
BOOLEAN = ("true", "false")  # a toggle's values in a link


@st.cache_data(show_spinner=False)
def step_results(key: str, size: int | None = None):
    return check_derivations([get(key)], size=size)


@st.cache_data(show_spinner=False)
def one_step(key: str, index: int, size: int | None):
    """The step's corrected and printed lines; its wrong variants are checked when one is shown."""
    return check_step(get(key), index, size=size, with_wrong=False)


@st.cache_data(show_spinner=False)
def wrong_outcome(key: str, index: int, label: str):
    [variant] = [w for w in get(key).steps[index].wrong if w.label == label]
    return run_check(variant.check)


def show(lines: list[Line]):
    """A check's summary: its prose as markdown, its formulas typeset."""
    for line in lines:
        if line.kind == "latex":
            st.latex(line.text)
        else:
            st.markdown(line.text)


def math(text: str) -> str:
    """Prose of a derivation with its ASCII sub- and superscripts as math (``a_i`` → ``aᵢ``)."""
    return unicode_math(text, markdown=True)


def badge(status: str) -> str:
    colour, label = BADGES[status]
    return f":{colour}-badge[{label}]"


def own_size():
    """Another step: its size field starts at that step's own size, not at the size the last step was checked at
    (else the page, whose expander runs though closed, would check every later step at that size too)."""
    st.session_state.pop("deriv_size", None)
    st.query_params.pop("deriv_size", None)


def reset_step():
    st.session_state.deriv_step = VIEW["deriv_step"].default
    own_size()


def move(delta: int, last: int):
    st.session_state.deriv_step = min(last, max(1, st.session_state.deriv_step + delta))
    own_size()


def go_to(step: int):
    st.session_state.deriv_step = step
    own_size()


QUESTION = "Does each line of a paper really follow from the one before?"
NUMBERS_SEED = 4  # Rendle's identity on numbers: this seed's three features have no zero vector and mixed x_i


def number(value: float) -> str:
    return f"{value:g}"


def rendle_in_numbers(container) -> None:
    """Rendle's identity evaluated on three features with small integers, before any line is checked."""
    ex = rendle_example(seed=NUMBERS_SEED)
    x, V = ex["x"], ex["V"]
    vectors = ", ".join(f"$v_{i} = ({', '.join(number(c) for c in v)})$" for i, v in enumerate(V, 1))
    squares = " + ".join(f"{number(v @ v)} \\cdot {number(xi)}^2" for v, xi in zip(V, x))
    with block("derivations", "Rendle's identity on three features, in numbers", ["x_i", "v_i", "k"], container):
        st.markdown(
            f"$x = ({', '.join(number(v) for v in x)})$, {vectors} ($k = {V.shape[1]}$; Rendle's derivation below "
            "writes the embeddings $\\boldsymbol w_i$, as [DPLR] eq. 1 does).\n"
            f"* Pair by pair: $\\sum_{{i<j}} \\langle v_i, v_j\\rangle x_i x_j = "
            + " + ".join(f"({number(t)})" if t < 0 else number(t) for _, _, t in ex["pairs"])
            + f" = {number(ex['pair_sum'])}$, one inner product per pair.\n"
            f"* Rendle's identity: $s = \\sum_i v_i x_i = ({', '.join(number(c) for c in ex['s'])})$ and "
            f"$\\tfrac12\\big(\\lVert s\\rVert^2 - \\sum_i \\lVert v_i\\rVert^2 x_i^2\\big) = \\tfrac12"
            f"\\big({number(ex['square_of_sum'])} - ({squares})\\big) = {number(ex['identity'])}$.\n\n"
            f"The same number: {ex['pair_products']} pair products against {ex['identity_products']} squared norms "
            "here; with n features, n(n − 1)/2 against n + 1. The steps below show why this holds for every n, each "
            "line checked by sympy."
        )


bar = title_bar("Checked derivations")  # short: one line at 150 % zoom beside the sidebar
# A first visit opens with the question and the identity in numbers; a link to a step (a lesson stop, a shared
# view) or projector mode opens on the step, its formula above the fold, with the numbers one click away beside
# the Back/Next buttons. Decided once per session, so the page does not jump while stepping.
if "deriv_numbers_first" not in st.session_state:
    linked = any(key in st.query_params for key in ("deriv_derivation", "deriv_step"))
    st.session_state["deriv_numbers_first"] = not linked and not projector()
numbers_first = st.session_state["deriv_numbers_first"]
if numbers_first:
    st.markdown(f"**{QUESTION}** First one identity on numbers, then its derivation line by line.")
    rendle_in_numbers(st)

derivations = catalog()
titles = {d.key: unicode_math(d.title) for d in derivations}  # options are plain text
true_or_false = Bound(False, one_of(BOOLEAN), "true or false")
VIEW = UrlState(
    deriv_derivation=Bound(derivations[0].key, one_of(titles), "one of " + ", ".join(titles)),
    deriv_step=Bound(1, fallback=True),  # checked against the chosen derivation's steps where they are known
    deriv_show_check=true_or_false,
    deriv_wrong=true_or_false,  # every step has a wrong variant
    deriv_delta=Bound(2.0, one_of(DELTAS), "one of " + ", ".join(map(str, DELTAS))),
    deriv_label=Bound(1, one_of([1, 0]), "1 or 0"),
    deriv_size=Bound(None, in_range(1, 30, integer=True), "1 to 30"),  # by default the size the step is checked at
)
# The controls and the step come first, the page's prose last: at 1280×720 and 150 % zoom, with the sidebar
# open or on a projector, the step's formula is above the fold.
pick, stepper = st.columns([2, 3])
# The picker shows titles, the link carries the key: a bound selectbox would write the shown title into the
# URL, so this one is kept in the URL by hand.
VIEW.check("deriv_derivation")
if "deriv_derivation" not in st.session_state and st.query_params.get("deriv_derivation") in titles:
    st.session_state["deriv_derivation"] = st.query_params["deriv_derivation"]
key = pick.selectbox(
    "Derivation",
    list(titles),
    format_func=titles.get,
    key="deriv_derivation",
    on_change=reset_step,
    persist_state="session",  # back on this page after another: the same derivation
)
if key == VIEW["deriv_derivation"].default:
    st.query_params.pop("deriv_derivation", None)
else:
    st.query_params["deriv_derivation"] = key
derivation = get(key)
last = len(derivation.steps)
if st.session_state.get("deriv_step", last) > last:  # a step of a longer derivation, kept in the session
    st.session_state.deriv_step = last
VIEW.widget(
    "deriv_step",
    stepper.slider,
    "Step",
    1,
    last,
    persist_state="session",
    on_change=own_size,
    check=(in_range(1, last, integer=True), f"a step from 1 to {last}"),
)
row = st.container(horizontal=True, vertical_alignment="center")  # buttons as wide as their labels, never cut
row.button(
    "◀ Back",
    key="deriv_back",
    help="or press B",
    on_click=move,
    args=(-1, last),
    disabled=st.session_state.deriv_step <= 1,
)
row.button(
    "Next ▶",
    key="deriv_next",
    help="or press N",
    on_click=move,
    args=(1, last),
    disabled=st.session_state.deriv_step >= last,
)
if not numbers_first:  # beside the buttons: no line of its own above the step
    rendle_in_numbers(
        row.popover("In numbers", key="deriv_numbers", help="Rendle's identity on three features, in numbers")
    )
with row:  # beside the buttons: the listener takes no line of its own (the formula stays above the fold)
    step_keys("deriv_keys", st.session_state.deriv_step, 1, last, go_to)  # N/B: every press counts, however quick
row.markdown(f"**{titles[key]}**")  # in full: a narrow picker may cut a long title short

index = st.session_state.deriv_step - 1
step = derivation.steps[index]
with st.spinner("sympy is checking this line…"):  # only the line shown: a derivation opens in about a second
    result = one_step(key, index, None)

st.markdown(
    f"**Step {index + 1} of {last}: {math(step.name)}**"
)  # not a heading: the line stays above the fold at 150 %
st.latex(step.latex)
if result.status == "slip":  # said under the line, so that the line itself stays above the fold
    st.markdown("**Corrected line** (sympy accepts it); the line as printed is further down.")
st.markdown(f"**Rule.** {math(step.justification)}")
secondary(f"From: {with_titles(step.source)}")
st.markdown(f"{badge(result.status)} &nbsp; **{result.corrected.how}**")

if result.status == "slip":
    st.warning("**Slip in the paper.** The line as printed fails its check; the corrected line is above.")
    st.markdown("**Printed line** (as in the paper):")
    st.latex(step.printed.latex)
    st.markdown(f"{badge('failed')} printed line — {math(step.printed.note)}")
elif result.status == "failed":
    st.error(f"This line fails its check: {math(result.detail)}")
elif result.status == "not-checked":
    st.info(math(result.detail))

if VIEW.widget("deriv_show_check", st.toggle, "Show the check (what sympy compared)"):
    show(summary(result.corrected))
    if result.printed is not None:
        show(outcome(result.printed, label="The line as printed"))
    st.caption(f"checked in {result.corrected.seconds:.2f} s")

if VIEW.widget("deriv_wrong", st.toggle, "Show a wrong variant prepared for class"):
    labels = [w.label for w in step.wrong]
    choice = (
        st.radio("Wrong variant", labels, key="deriv_variant", horizontal=True, format_func=math)
        if len(labels) > 1
        else labels[0]
    )
    variant = step.wrong[labels.index(choice)]
    st.latex(variant.latex)
    with st.spinner("sympy is checking the wrong line…"):
        checked = wrong_outcome(key, index, variant.label)
    first, *rest = outcome(checked, label=math(variant.label))
    if checked.status == "failed":
        st.error(f"{first.text} So the check fails. Why: {math(variant.explanation)}.")
    else:
        st.warning(f"{first.text} This wrong line was expected to fail but is {checked.status}: {math(checked.detail)}")
    show(rest)

if key == S3_KEY and step.check.relation == ">=" and step.name.startswith("Proposition S3"):
    left, right = st.columns(2)
    delta = VIEW.widget("deriv_delta", left.select_slider, "δ", options=DELTAS)
    y = VIEW.widget("deriv_label", right.radio, "label y", [1, 0], horizontal=True)
    chart(s3_slack_figure(delta=delta, y=y))
    st.write(
        "The slack never drops below 0, and its smallest values sit near ŷ2 = ŷ1: there log δ alone "
        "carries the inequality, which is why dropping it (the wrong variant) breaks it."
    )

if step.check.size is not None:
    with st.expander("Check this line at another size"):
        st.write(
            f"This line is checked at one size, n = {step.check.size}: evidence at that size, not a proof for "
            f"every n. Try another: up to n = {step.check.exact_limit} sympy simplifies the difference, above that "
            f"it compares numbers at random values, and beyond n = {step.check.build_limit} it does not check at all."
        )
        size = VIEW.widget("deriv_size", st.number_input, "size n", min_value=1, max_value=30, default=step.check.size)
        with st.spinner(f"checking at n = {size}…"):
            other = one_step(key, index, int(size))
        st.markdown(f"{badge(other.status)} &nbsp; {other.corrected.how} — {math(other.detail)}")

with st.expander("Assumptions"):
    for assumption in derivation.assumptions:
        if "\\" in assumption:  # LaTeX assumptions carry commands; plain ones are sentences
            st.latex(assumption)
        else:
            st.markdown(f"- {math(assumption)}")
copy_link_and_reset(VIEW, clear=["deriv_size", "deriv_variant"], container=bar)
if st.toggle("Check every step of this derivation", key="deriv_all"):
    with st.spinner("sympy is checking every line of this derivation…"):
        results = step_results(key)
    st.dataframe(
        [{"#": r.index + 1, "step": r.step, "status": r.status, "checked": r.corrected.how} for r in results],
        hide_index=True,
    )

if key == "fm-gradient":  # [FMGrad]'s claims measured, beside the derivation
    fmgrad_verdicts()

st.write(
    "Notice: most lines survive their check, but some printed lines do not — those are marked as slips, "
    "with the corrected line that sympy accepts. A wrong variant always fails, and the badge says where."
)
secondary(
    f"{QUESTION} Step through a derivation: "
    "every line shows the rule that justifies it, where it comes from, and how sympy checked it.",
    st.write,
)
secondary(f"Source of this derivation: {with_titles(derivation.source)}")
notebook_link("05_derivations")
