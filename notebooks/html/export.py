"""Executed copies of the notebooks as HTML pages that read offline (`make notebooks-html`).

    .venv/bin/python notebooks/html/export.py --output-dir build/notebooks notebooks/*.ipynb

Each page is nbconvert's lab template changed by offline/index.html.j2 beside this file:
- formulas are typeset by MathJax 3 from a copy written beside the pages (mathjax/, taken from the
  django-static-mathjax package that requirements.txt pins), not from a CDN; plotly's figures use the same
  copy, so a page loads one MathJax (plotly's notebook renderer would load another from a CDN with every
  figure: DropFigureMathJax takes it out);
- a code cell tagged "solution" (its code and its output) is folded in a <details> that the reader opens;
- each figure is HTML with plotly.js embedded in the page (PLOTLY_RENDERER=notebook: plotly's own MIME type,
  the default, is drawn by JupyterLab but dropped by nbconvert), so figures draw without a network;
- each widget (an ipywidgets ``interact``: its sliders and what its function printed) is drawn as plain HTML from the
  state the run saved in the notebook (StaticWidgets): its initial value and output, with a line saying that moving it
  needs a running kernel. No widget manager is loaded (nbconvert would load one from a CDN).
The folder of pages (the .html files and mathjax/) opens from anywhere, file:// included.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import sys
from importlib import resources as package_files
from pathlib import Path

from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets.config import Config

HERE = Path(__file__).resolve().parent
TEMPLATE = "offline"  # the folder offline/ beside this file
MATHJAX_DIR = "mathjax"  # beside the pages
MATHJAX_URL = f"{MATHJAX_DIR}/tex-svg.js"  # relative to a page
# From MathJax's es5 build: the component the pages load (TeX in, SVG out: plotly.js draws its labels as SVG)
# and the folders it loads from on demand: TeX extensions (autoload: \boldsymbol, \color, ...), the menu,
# and its accessibility tools with their speech rules.
MATHJAX_PARTS = ("tex-svg.js", "input", "ui", "a11y", "sre")

# plotly's renderer puts <script src="https://cdnjs.../mathjax/3.2.2/es5/tex-svg.min.js"></script> before each figure.
NETWORK_MATHJAX = re.compile(r'<script\b[^>]*\bsrc="(?:https?:)?//[^"]*mathjax[^"]*"[^>]*>\s*</script>', re.IGNORECASE)


class DropFigureMathJax(Preprocessor):
    """Takes out of each HTML output the MathJax that it loads from the network (plotly's figures do)."""

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                html = data["text/html"]
                data["text/html"] = NETWORK_MATHJAX.sub("", "".join(html) if isinstance(html, list) else html)
        return cell, resources


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MOVE_NOTE = "This page shows the widget as the run left it; move it in a running notebook (<code>make notebook</code>)."


class StaticWidgets(Preprocessor):
    """Replaces each widget view in the outputs by plain HTML drawn from the notebook's saved widget state (sliders as
    disabled range inputs with their value, boxes as their children, an Output widget as what it printed), and drops
    the state itself, so that the page loads no widget manager."""

    def preprocess(self, nb, resources):
        self.models = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
        nb, resources = super().preprocess(nb, resources)
        nb.metadata.pop("widgets", None)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                drawn = self.draw(data[WIDGET_VIEW]["model_id"])
                output["data"] = {
                    "text/html": f'<div class="fm-widget">{drawn}<p class="fm-widget-note">{MOVE_NOTE}</p></div>'
                }
        return cell, resources

    def draw(self, model_id: str) -> str:
        model = self.models.get(model_id)
        if model is None:  # a widget whose state the run did not save
            return "<p>(a widget: its state was not saved with the notebook)</p>"
        name, state = model["model_name"], model["state"]
        if name in ("VBoxModel", "HBoxModel", "BoxModel"):
            direction = "row" if name == "HBoxModel" else "column"
            children = "".join(self.draw(child.removeprefix("IPY_MODEL_")) for child in state.get("children", []))
            return f'<div style="display: flex; flex-direction: {direction}; gap: 4px">{children}</div>'
        if name.endswith("SliderModel"):
            value = state["value"]
            shown = format(value, state.get("readout_format", "")) if name.startswith("Float") else str(value)
            label = html.escape(state.get("description", ""))
            return (
                f'<label class="fm-slider">{label} <input type="range" min="{state["min"]}" max="{state["max"]}" '
                f'step="{state.get("step", 1)}" value="{value}" disabled> <output>{html.escape(shown)}</output></label>'
            )
        if name == "OutputModel":
            return "".join(self.draw_output(output) for output in state.get("outputs", []))
        label = html.escape(str(state.get("description", name)))
        value = html.escape(str(state.get("value", "")))
        return f"<p>{label}: {value}</p>"

    @staticmethod
    def draw_output(output: dict) -> str:
        """One output of an Output widget: printed text, HTML, Markdown (as nbconvert renders it) or plain text."""
        from nbconvert.filters.markdown_mistune import markdown2html_mistune

        if output.get("output_type") == "stream":
            return f'<pre class="fm-widget-text">{html.escape(output.get("text", ""))}</pre>'
        data = output.get("data", {})
        if "text/html" in data:
            return "".join(data["text/html"])
        if "text/markdown" in data:
            return markdown2html_mistune("".join(data["text/markdown"]))
        if "text/plain" in data:
            return f'<pre class="fm-widget-text">{html.escape("".join(data["text/plain"]))}</pre>'
        if output.get("output_type") == "error":
            return f'<pre class="fm-widget-text">{html.escape(output.get("ename", ""))}: {html.escape(output.get("evalue", ""))}</pre>'
        return ""


def mathjax_source() -> Path:
    """MathJax's npm package as django-static-mathjax installs it (the Python package `mathjax`)."""
    try:
        root = Path(str(package_files.files("mathjax"))) / "static" / "mathjax"
    except ModuleNotFoundError:
        root = None
    if root is None or not (root / "es5" / MATHJAX_PARTS[0]).is_file():
        raise SystemExit("MathJax's files are missing: `make venv` installs django-static-mathjax (requirements.txt)")
    return root


def copy_mathjax(output_dir: Path) -> Path:
    """Writes the MathJax files that the pages load to output_dir/mathjax/, with MathJax's license."""
    source = mathjax_source()
    target = output_dir / MATHJAX_DIR
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        if (source / "es5" / part).is_dir():
            shutil.copytree(source / "es5" / part, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(source / "es5" / part, target / part)
    shutil.copy2(source / "LICENSE", target / "LICENSE")
    return target


def exporter(execute: bool = True) -> HTMLExporter:
    config = Config()
    config.HTMLExporter.template_name = TEMPLATE
    config.HTMLExporter.extra_template_basedirs = [str(HERE)]
    config.HTMLExporter.mathjax_url = MATHJAX_URL
    config.ExecutePreprocessor.enabled = execute  # as nbconvert --execute: each notebook runs in its folder
    exporter_ = HTMLExporter(config=config)
    exporter_.register_preprocessor(DropFigureMathJax(), enabled=True)  # after the run, which makes the outputs
    exporter_.register_preprocessor(StaticWidgets(), enabled=True)
    return exporter_


def export(notebooks: list[Path], output_dir: Path, execute: bool = True) -> list[Path]:
    """Writes output_dir/<name>.html for each notebook (run first unless execute is False) and the MathJax copy."""
    if execute:
        os.environ["PLOTLY_RENDERER"] = "notebook"  # read by the kernels this process starts
    output_dir.mkdir(parents=True, exist_ok=True)
    copy_mathjax(output_dir)
    pages_exporter = exporter(execute)
    pages = []
    for notebook in notebooks:
        body, _ = pages_exporter.from_filename(str(notebook))
        page = output_dir / f"{Path(notebook).stem}.html"
        page.write_text(body, encoding="utf-8")
        print(f"{page} ({len(body) / 1e6:.1f} MB)", flush=True)
        pages.append(page)
    return pages


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--output-dir", type=Path, default=Path("build/notebooks"))
    parser.add_argument("--no-execute", action="store_true", help="render the outputs saved in the notebooks")
    args = parser.parse_args(argv)
    export(args.notebooks, args.output_dir, execute=not args.no_execute)


if __name__ == "__main__":
    main(sys.argv[1:])
