"""Executed copies of the notebooks as HTML pages that read offline (`make notebooks-html`).

    .venv/bin/python notebooks/html/export.py --output-dir build/notebooks notebooks/*.ipynb

Each page is nbconvert's lab template changed by offline/index.html.j2 beside this file:
- formulas are typeset by MathJax 3 from a copy written beside the pages (mathjax/, taken from the
  django-static-mathjax package that requirements.txt pins), not from a CDN; plotly's figures use the same
  copy, so a page loads one MathJax (plotly's notebook renderer would load another from a CDN with every
  figure: DropFigureMathJax takes it out);
- a code cell tagged "solution" (its code and its output) is folded in a <details> that the reader opens;
- each figure is HTML with plotly.js embedded in the page (PLOTLY_RENDERER=notebook: plotly's own MIME type,
  the default, is drawn by JupyterLab but dropped by nbconvert), so figures draw without a network.
The folder of pages (the .html files and mathjax/) opens from anywhere, file:// included.
"""

from __future__ import annotations

import argparse
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
    html = HTMLExporter(config=config)
    html.register_preprocessor(DropFigureMathJax(), enabled=True)  # after the run, which makes the outputs
    return html


def export(notebooks: list[Path], output_dir: Path, execute: bool = True) -> list[Path]:
    """Writes output_dir/<name>.html for each notebook (run first unless execute is False) and the MathJax copy."""
    if execute:
        os.environ["PLOTLY_RENDERER"] = "notebook"  # read by the kernels this process starts
    output_dir.mkdir(parents=True, exist_ok=True)
    copy_mathjax(output_dir)
    html = exporter(execute)
    pages = []
    for notebook in notebooks:
        body, _ = html.from_filename(str(notebook))
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
