"""`make notebooks-html` pages read offline (notebooks/html/export.py and its template offline/).

A small notebook made here, with the outputs a run leaves (a plotly figure as PLOTLY_RENDERER=notebook
writes it, printed text), is rendered without running it: the page loads one MathJax, the copy beside it,
and nothing from the network; a cell tagged "solution" is folded in a <details>. Chromium, with the network
cut, then typesets the page's formulas and draws its figure. The project's notebooks are not run here
(`make notebooks-html` runs them; nbmake runs them in `make test`).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from plotly.offline import get_plotlyjs

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=\"([^\"]*)\"", re.IGNORECASE)


def load_export():
    spec = importlib.util.spec_from_file_location("notebooks_html_export", ROOT / "notebooks" / "html" / "export.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


export = load_export()


def figure_html() -> str:
    """A figure with a TeX title as plotly's notebook renderer writes it (it loads MathJax from a CDN)."""
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 4, 9]), layout_title_text="$x^2$ grows")
    html = pio.renderers["notebook"].to_mimebundle(fig.to_dict())["text/html"]
    assert re.search(r"https://[^\"]*mathjax", html), "plotly's renderer no longer loads MathJax from a CDN"
    return html


def html_output(html: str):
    return new_output("display_data", data={"text/html": html})


def widget_state() -> dict:
    """The widget state a run of ``widgets.interact(f, m=IntSlider(...))`` saves: a box of a slider and an Output."""
    model = {"model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0"}
    return {
        "box": {**model, "model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_slider", "IPY_MODEL_out"]}},
        "slider": {
            **model,
            "model_name": "FloatSliderModel",
            "state": {
                "description": "rank ρ",
                "min": 0.5,
                "max": 2.0,
                "step": 0.1,
                "value": 1.5,
                "readout_format": ".1f",
            },
        },
        "out": {
            "model_module": "@jupyter-widgets/output",
            "model_name": "OutputModel",
            "state": {"outputs": [{"output_type": "stream", "name": "stdout", "text": "printed_by_the_widget 1.5\n"}]},
        },
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The page of a small notebook, already run, rendered as `make notebooks-html` renders one."""
    folder = tmp_path_factory.mktemp("notebooks-html")
    plotly_js = f"<script>window.PlotlyConfig = {{MathJaxConfig: 'local'}};</script><script>{get_plotlyjs()}</script>"
    nb = new_notebook(
        cells=[
            new_markdown_cell(r"Inline $a^2 + b^2$ and shown $$\sum_i x_i = \boldsymbol{1}^\top x$$"),
            new_code_cell("plain_cell_marker = 1", outputs=[html_output(plotly_js), html_output(figure_html())]),
            new_code_cell(
                "solution_cell_marker = 42\nprint(solution_cell_marker)",
                metadata={"jupyter": {"source_hidden": True}, "tags": ["solution"]},
                outputs=[new_output("stream", name="stdout", text="printed_by_the_solution\n")],
            ),
            new_markdown_cell("After the solution, $c$."),
            new_code_cell(
                "widgets.interact(f, rho=widgets.FloatSlider(1.5, min=0.5, max=2.0))",
                outputs=[
                    new_output(
                        "display_data",
                        data={
                            export.WIDGET_VIEW: {"model_id": "box", "version_major": 2, "version_minor": 0},
                            "text/plain": "interactive(children=(FloatSlider(value=1.5)))",
                        },
                    )
                ],
            ),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "widgets": {export.WIDGET_STATE: {"state": widget_state(), "version_major": 2, "version_minor": 0}},
        },
    )
    notebook = folder / "small.ipynb"
    nbformat.write(nb, notebook)
    (page,) = export.export([notebook], folder / "html", execute=False)
    return page, page.read_text()


def test_page_loads_only_the_local_mathjax(built):
    page, html = built
    assert SCRIPT_SRC.findall(html) == [export.MATHJAX_URL] == ["mathjax/tex-svg.js"]  # plotly.js is in the page
    assert not re.search(r"(https?:)?//[^\"'\s]*mathjax", html, re.IGNORECASE)  # not even in a figure's script
    assert not re.search(r"<link\b[^>]*\bhref=\"(https?:)?//", html, re.IGNORECASE)
    assert "text/x-mathjax-config" not in html and "MathJax.Hub.Queue" not in html  # nbconvert's MathJax 2 set-up
    assert 'class="plotly-graph-div"' in html and "Plotly.newPlot" in html  # the figure itself is kept


def test_widgets_are_drawn_from_their_saved_state_without_a_manager(built):
    _, html = built
    assert "html-manager" not in html and "embed-amd" not in html and "unpkg" not in html  # no widget manager
    assert export.WIDGET_STATE not in html  # the state is drawn, not shipped for a manager to draw
    (slider,) = re.findall(r'<label class="fm-slider">rank ρ (<input [^>]*>) <output>1.5</output></label>', html)
    for attribute in ('type="range"', 'min="0.5"', 'max="2.0"', 'step="0.1"', 'value="1.5"', "disabled"):
        assert attribute in slider
    assert "printed_by_the_widget 1.5" in html and export.MOVE_NOTE in html


def test_mathjax_copy_lies_beside_the_page(built):
    page, _ = built
    mathjax = page.parent / "mathjax"
    assert 'VERSION="3.2.2"' in (mathjax / "tex-svg.js").read_text()  # the version plotly's renderer would load
    assert (mathjax / "input" / "tex" / "extensions" / "boldsymbol.js").is_file()  # loaded on demand (autoload)
    assert "Apache License" in (mathjax / "LICENSE").read_text()


def test_solution_is_folded_in_details(built):
    _, html = built
    folded = re.findall(r"<details class=\"jp-Solution\">\s*<summary>Solution</summary>(.*?)</details>", html, re.S)
    assert len(folded) == 1
    assert "solution_cell_marker" in folded[0] and "printed_by_the_solution" in folded[0]  # code and output
    assert "plain_cell_marker" not in folded[0]
    assert "<details open" not in html


def test_notebooks_tag_their_hidden_cells_solution():
    """What JupyterLab folds (source_hidden) is what the HTML folds (tag "solution"), and only that."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            hidden = bool(cell["metadata"].get("jupyter", {}).get("source_hidden"))
            tagged = "solution" in cell["metadata"].get("tags", [])
            assert hidden == tagged, f"{path.name} cell {i}: source_hidden={hidden} but tag solution={tagged}"


def test_make_target_uses_the_export():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nnotebooks-html:", 1)[1].split("\n\n", 1)[0]
    assert "notebooks/html/export.py" in recipe and "nbconvert" not in recipe


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is missing: `make browser-deps` installs it")
def test_page_renders_offline_in_chromium(built, browser):
    page_path, _ = built
    page = browser.new_page()
    network = []

    def no_network(route):
        if route.request.url.startswith(("http:", "https:")):
            network.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", no_network)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_function("window.MathJax && MathJax.version && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
        page.wait_for_selector(".plotly-graph-div .main-svg")
        found = page.evaluate(
            """() => ({
                version: MathJax.version,
                prose: document.querySelectorAll('.jp-RenderedMarkdown mjx-container').length,
                raw: [...document.querySelectorAll('.jp-RenderedMarkdown p')].filter(p => p.innerText.includes('$')).length,
                figures: document.querySelectorAll('.plotly-graph-div .plot-container').length,
                figure_math: document.querySelectorAll('.plotly-graph-div .gtitle-math').length,
                solution_open: document.querySelector('details.jp-Solution').open,
                slider: document.querySelector('.fm-widget input[type=range]').value,
                widget_text: document.querySelector('.fm-widget pre').innerText.trim(),
            })"""
        )
    finally:
        page.close()
    assert network == [] and errors == []
    assert found == {
        "version": "3.2.2",
        "prose": 3,
        "raw": 0,
        "figures": 1,
        "figure_math": 1,
        "solution_open": False,
        "slider": "1.5",
        "widget_text": "printed_by_the_widget 1.5",
    }
