"""No page shows raw math (``k_i``, ``D_{k+1}``, ``x^{2}``, ``\\sum``) outside ``$…$``: in prose, labels,
metric names, select-box options, chart titles, axis titles, annotations and legends."""

from __future__ import annotations

import json
import re

import pytest
from apptest import app_page

from fmapp.notation import unicode_math
from fmlib.data import split, synthetic
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model

# x_i, x_ij, x_{…}, x^a, x^(…), \command; a name in capitals or of three letters or more (R_FM, X_true) is a name
RAW = re.compile(r"[\w)\]‖][_^](\{|\(|[a-z0-9][a-z0-9]?(?![A-Za-z0-9])|[A-Z](?![A-Za-z0-9]))|\\[a-z]+\b")
SKIPPED = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<sub>.*?</sub>|<sup>.*?</sup>", re.S)


def raw_math(text: str) -> list[str]:
    """Pieces of ``text`` that look like LaTeX or ASCII sub/superscripts outside math and code."""
    plain = SKIPPED.sub(" ", text)
    return [plain[max(0, m.start() - 25) : m.end() + 15] for m in RAW.finditer(plain)]


def shown_texts(at) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title"):
        out += [e.value for e in at.get(kind)]
    out += [m.label for m in at.get("metric")]
    for kind in ("slider", "select_slider", "number_input", "text_input", "radio", "toggle", "selectbox"):
        for widget in at.get(kind):
            out.append(widget.label)
            out += [str(o) for o in getattr(widget, "options", [])]
    for chart in at.get("plotly_chart"):
        fig = json.loads(chart.proto.spec)
        layout = fig["layout"]
        out += [
            (layout.get(k) or {}).get("title", {}).get("text", "") for k in layout if k.startswith(("xaxis", "yaxis"))
        ]
        out += [(layout.get("title") or {}).get("text", "")]
        out += [a.get("text", "") for a in layout.get("annotations", [])]
        out += [t.get("name", "") for t in fig["data"]]
    return [t for t in out if t]


def test_the_scanner_sees_raw_math_and_passes_rendered_math():
    assert raw_math("thresholds t_k = √(D_k D_{k+1})") and raw_math("σ_i(E)") and raw_math(r"\lambda")
    assert not raw_math("thresholds $t_k = \\sqrt{D_k D_{k+1}}$, see `k_i` and [page](rank_aware_fm)")
    assert not raw_math(unicode_math("B_{1,m}, λ_i, σ_i(E)")) and not raw_math("X<sub>true</sub>")


@pytest.fixture(scope="module")
def fwfm_run():
    data = split(synthetic.make(synthetic.demo_R(), n_samples=2000, cardinality=20, seed=0), seed=0)
    return train_model("fwfm", data, TrainConfig(epochs=1), dim=4)


def check(at):
    assert not at.exception
    found = [piece for text in shown_texts(at) for piece in raw_math(text)]
    assert not found, found


@pytest.mark.parametrize(
    "page",
    [
        "../app.py",  # the frame, on its home page
        "train.py",
        "rank_aware_fm.py",
        "gradient_growth.py",
        "attention_inversion.py",
        "derivations.py",
        "ranking.py",
        "lesson.py",
    ],
)
def test_a_page_shows_math_as_math(page):
    at = app_page(f"app_pages/{page}", timeout=120, dataset="synthetic")
    at.run()
    check(at)


def test_field_interactions_shows_math_as_math(fwfm_run):
    run_id = RunStore().save(fwfm_run)
    at = app_page("app_pages/field_interactions.py", timeout=120, dataset="synthetic", run_id=run_id)
    at.run()
    check(at)


@pytest.mark.usefixtures("derivation_results")  # every step already checked, once per session (conftest.py)
def test_every_derivation_step_shows_math_as_math():
    from fmlib.derivations import catalog

    at = app_page("app_pages/derivations.py", timeout=120)
    at.run()
    for derivation in catalog():
        at.selectbox(key="deriv_derivation").set_value(derivation.key).run()
        for step in range(1, len(derivation.steps) + 1):
            at.slider(key="deriv_step").set_value(step).run()
            check(at)


def test_a_checked_side_is_shown_factored_and_typeset():
    from fmlib.derivations.display import readable_latex

    assert readable_latex("a**2 + 2*a*b + b**2") == r"\left(a + b\right)^{2}"
    assert readable_latex("Matrix([[x**2 - 1, 0]])").count(r"\left(x - 1\right) \left(x + 1\right)") == 1
    assert readable_latex("a 3×3 matrix too large to print").startswith(r"\text{")


@pytest.mark.usefixtures("derivation_results")
def test_a_slip_labels_its_corrected_and_printed_lines_and_the_check_is_an_equation():
    at = app_page("app_pages/derivations.py", timeout=120)
    at.run()
    at.selectbox(key="deriv_derivation").set_value("fm-gradient").run()
    at.slider(key="deriv_step").set_value(7).run()  # the FM note's slip
    at.toggle(key="deriv_show_check").set_value(True).run()
    assert any("Slip in the paper" in w.value for w in at.warning)
    labels = [m.value for m in at.markdown]
    assert "**Corrected line** (sympy accepts it); the line as printed is further down." in labels
    assert "**Printed line** (as in the paper):" in labels
    raw = [c.value for c in at.code if "deriv_step=7" not in c.value]  # the one code block: the link to this view
    assert not raw, "a check is shown as an equation, not as raw code"
    assert any(r"\text{left}" in latex.value for latex in at.latex)
