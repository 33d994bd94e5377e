"""AppTest for app_pages/gradient_growth.py."""

import base64

import numpy as np
import pytest
from apptest import app_page, figure
from page_order import block_tables, of_type, position, starts

from fmapp.worked import gradient_example
from fmlib.analysis.gradient_growth import ProductBounds

PAGE = "app_pages/gradient_growth.py"


@pytest.fixture
def at():
    app = app_page(PAGE, timeout=60)
    app.run()
    assert not app.exception
    return app


def values(array):
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(array, dict):
        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        return flat.reshape([int(n) for n in str(array.get("shape", len(flat))).split(",")])
    return np.asarray(array)


def errors(at):
    return " | ".join(e.value for e in at.error)


def test_default_page_shows_all_lines(at):
    assert not at.error
    fig = figure(at, 0)
    names = [t["name"] for t in fig["data"]]
    assert len(names) == 7 and any("C₁·m" in n for n in names) and any("lower bound" in n for n in names)
    assert names[0].startswith("one m-way product term") and names[2] == "FM (autograd)"
    assert fig["layout"]["yaxis"]["type"] == "log"
    rotation = next(t for t in fig["data"] if t["name"].startswith("rotation"))
    bound = next(t for t in fig["data"] if "C₁·m" in t["name"])
    assert values(rotation["x"]).max() == 32
    assert np.all(values(rotation["y"]) <= values(bound["y"]))
    assert any("C₁ = γθ + αζηγθd/2 + βζγηθ/2 = **5.5**" in m.value for m in at.markdown)


def test_the_fm_is_the_third_curve_and_grows_linearly(at):
    """The FM's gradient by autograd lies between d(m−1)(M∓ε) (defaults d = 8, M = 1.5, ε = 0.25), and the
    notice says from the same numbers that it grows linearly while the product term explodes."""
    fig = figure(at, 0)
    fm = next(t for t in fig["data"] if t["name"] == "FM (autograd)")
    m, y = values(fm["x"]).astype(float), values(fm["y"])
    assert np.all(8 * (m - 1) * 1.25 <= y) and np.all(y <= 8 * (m - 1) * 1.75)
    upper = next(t for t in fig["data"] if t["name"].startswith("FM upper bound"))
    assert np.allclose(values(upper["y"]), 8 * (m - 1) * 1.75)
    notice = next(md.value for md in at.markdown if md.value.startswith("**Notice:**"))
    assert f"The FM's grows ×{y[-1] / y[0]:.3g}" in notice and "grows linearly in m" in notice
    assert "exponential" in notice


def test_slider_to_64_and_linear_scale(at):
    at.slider(key="m_max").set_value(64).run()
    at.toggle(key="log_y").set_value(False).run()
    assert not at.exception and not at.error
    fig = figure(at, 0)
    assert values(fig["data"][0]["x"]).max() == 64
    assert fig["layout"]["yaxis"]["type"] == "linear"


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("eta", 0.0, "violates the assumption |X| < η"),
        ("theta", -1.0, "violates the assumption ‖∂y/∂G‖∞"),
        ("d", 0, "embedding size d: 0 is out of range; use 1 to 64."),
        ("M", 0.0, "M > 0"),
        ("eps", 2.0, "ε must be in [0, M)"),
    ],
)
def test_bad_bounds_give_a_clear_error(at, key, value, message):
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert message in errors(at)


def test_product_bound_that_cannot_grow_is_flagged(at):
    at.number_input(key="M").set_value(1.0).run()
    assert not at.exception and not at.error
    assert any("does not grow with m" in w.value for w in at.warning)


def test_construction_reproduces_the_truth_table(at):
    assert float(at.metric[0].value) < 1e-6  # max |α − T| at S = 20
    heat = figure(at, 1)
    assert len(heat["data"]) == 2 and values(heat["data"][0]["z"]).shape == (7, 7)  # N = 2 + 3 + 2
    at.slider(key="S").set_value(3.0).run()
    assert float(at.metric[0].value) == pytest.approx(float(at.metric[1].value), rel=1e-2)
    assert float(at.metric[0].value) > 1e-2


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "features per field: expected comma-separated integers"),
        ("2, x", "features per field: expected comma-separated integers"),
        ("4", "at least 2 fields"),
        ("2, 0", "integer number of features >= 1"),
    ],
)
def test_bad_layout_gives_a_clear_error(at, text, message):
    at.text_input(key="layout").set_value(text).run()
    assert not at.exception
    assert message in errors(at)


def test_the_page_opens_with_one_example_traced_before_the_measured_chart(at):
    """The traced ∂y/∂X₁ and the table of its largest entry are fmapp.worked.gradient_example's (the page's default
    M and ε), and they come after the question and before the slider and the chart."""
    title = "One example, traced: ∂y/∂X₁ as fields are added"
    bounds = ProductBounds()
    example = gradient_example(m_values=(2, 4, 8, 16, 32), d=2, M=bounds.M, eps=bounds.eps)
    [table] = block_tables(at, title)
    assert list(table.columns) == ["m = 2", "m = 4", "m = 8", "m = 16", "m = 32"]
    assert table.iloc[0].tolist() == pytest.approx(example["table"]["fm"].tolist())
    assert table.iloc[1].tolist() == pytest.approx(example["table"]["product"].tolist())
    traced = next(m.value for m in at.markdown if m.value.startswith("Field embeddings $X_j"))
    fm, product = example["fm"][4], example["product"][4]
    assert f"= ({fm[0]:.2f},\\ {fm[1]:.2f})$, a **sum**" in traced
    assert f"= ({product[0]:.2f},\\ {product[1]:.2f})$, a **product**" in traced
    opens = position(at, starts(f"**{title}"))
    assert position(at, starts("**Question.**")) < opens < position(at, of_type("slider"))
    assert opens < position(at, of_type("plotly_chart"))
    assert figure(at, 0)["data"][0]["name"].startswith("one m-way product term")  # the measured chart stays first


def test_the_lesson_stop_and_the_page_state_the_same_rotation_gradient():
    """The stop's numbers come from the page's own table: the rotation layer's gradient at m = 32 and its bound."""
    import re

    from fmapp.lessons import lesson_files, load_lesson
    from fmapp.lessons.answers import product_gradient_growth

    stop = next(s for s in load_lesson(lesson_files()[0]).stops if s.compute == "product_gradient_growth")
    said = product_gradient_growth(**stop.compute_args).text
    gradient, bound = re.search(r"gradient at m = 32 is ([\d.e+-]+), under its bound C₁·m = ([\d.e+-]+)", said).groups()
    app = app_page(PAGE, timeout=60)
    for key, value in stop.params.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception
    (line,) = [m.value for m in app.markdown if m.value.startswith("At m = 32:")]
    assert f"rotation layer **{gradient}** (upper bound C₁·m = {bound})" in line


def test_in_projector_mode_the_main_figure_fits_a_screen_at_150_percent():
    """The figure a lesson's link arrives at (``main_figure``) is at most MAIN_FIGURE_HEIGHT tall in projector mode,
    larger text included: whole under the header on 480 CSS pixels (1280×720 at 150 %); it keeps its height without."""
    from app_pages._view import MAIN_FIGURE_HEIGHT

    heights = {}
    for projector in (True, False):
        app = app_page(PAGE, timeout=60, projector=projector)
        app.run()
        assert not app.exception
        [growth] = [k for k in range(len(app.get("plotly_chart"))) if "number of fields grows" in str(figure(app, k))]
        heights[projector] = figure(app, growth)["layout"]["height"]
    assert heights[True] <= MAIN_FIGURE_HEIGHT < heights[False]
