"""The notebooks as committed: no outputs, a reading order, exercises, and a page that links back.

(pytest also executes every notebook through nbmake; see pytest.ini.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NAMES = [path.stem for path in NOTEBOOKS]


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def test_there_are_eight_notebooks():
    assert NAMES == [
        "01_fm_from_scratch",
        "02_field_interactions",
        "03_rank_aware_fm",
        "04_rotations_and_gradients",
        "05_derivations",
        "06_attention_inversion",
        "07_feature_sets",
        "08_your_own_model",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_committed_without_outputs(path):
    for i, cell in enumerate(cells(path)):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name} cell {i} has outputs: strip them before committing"
            assert cell["execution_count"] is None, f"{path.name} cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_first_cell_gives_the_reading_order(path):
    first = source(cells(path)[0])
    for word in ("Prerequisites", "Time", "Next", "In the app"):
        assert f"**{word}" in first, f"{path.name}: the first cell names no {word!r}"
    i = NAMES.index(path.stem)
    if i + 1 < len(NAMES):
        assert NAMES[i + 1] in first, f"{path.name}: the next notebook is {NAMES[i + 1]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_ends_with_summary_and_exercises_with_solutions(path):
    """At least four exercises, among them one to predict before running, one that changes the model and one that
    breaks a check and sees it fail; each followed by its solution, code and output hidden until opened."""
    nb = cells(path)
    text = [source(c) for c in nb if c["cell_type"] == "markdown"]
    assert any(re.search(r"^## Summary$", t, re.M) for t in text), f"{path.name}: no '## Summary' section"
    exercises = [i for i, c in enumerate(nb) if c["cell_type"] == "markdown" and source(c).startswith("**Exercise")]
    assert len(exercises) >= 4, f"{path.name}: {len(exercises)} exercises, want at least 4"
    kinds = " ".join(source(nb[i]).split("**")[1] for i in exercises)
    for kind in ("predict, then run", "change the model", "break it and see the check fail"):
        assert kind in kinds, f"{path.name}: no exercise '({kind})'"
    for i in exercises:
        solution = nb[i + 1]
        hidden = solution["metadata"].get("jupyter", {})
        assert solution["cell_type"] == "code" and "solution" in solution["metadata"].get("tags", []), (
            f"{path.name} cell {i + 1}: exercise {source(nb[i])[:20]!r} is not followed by its solution cell"
        )
        assert hidden.get("source_hidden") and hidden.get("outputs_hidden"), f"{path.name} cell {i + 1}: solution shown"
    broken = [source(nb[i + 1]) for i in exercises if "break it" in source(nb[i])]
    assert all(re.search(r"except \w+", code) and "as it must" in code for code in broken), (
        f"{path.name}: the break-it solution must show the check failing"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_states_its_run_time_computed(path):
    """The run time is measured from the first code cell and printed by the last one, never typed in."""
    nb = cells(path)
    code = [source(c) for c in nb if c["cell_type"] == "code"]
    assert "start_wall, start_cpu = time.perf_counter(), time.process_time()" in code[0] + code[1]
    assert "time.perf_counter() - start_wall" in code[-1] and "- start_cpu" in code[-1]
    assert not re.search(r"\d+\s*s to run", source(nb[0])), f"{path.name}: a typed-in run time in the first cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_a_page_links_to_each_notebook(path):
    linked = {
        name
        for page in (ROOT / "app_pages").glob("[!_]*.py")  # pages, not their helpers (_ui.py)
        for name in re.findall(r'notebook_link\("([^"]+)"\)', page.read_text())
    }
    assert path.stem in linked, f"no page calls notebook_link({path.stem!r})"


def test_readme_gives_the_reading_order():
    readme = (ROOT / "README.md").read_text()
    positions = [readme.find(f"{name}.ipynb") for name in NAMES]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_room_to_experiment_and_evidence(path):
    """A marked cell to change, a slider, the glossary's notation, a reference list, the app page's URL."""
    nb = cells(path)
    code = "\n".join(source(c) for c in nb if c["cell_type"] == "code")
    text = "\n".join(source(c) for c in nb if c["cell_type"] == "markdown")
    marked = "# change this and re-run" in code and re.search(r"\*\*Change this and\s+re-run", text)
    assert marked, f"{path.name}: no cell marked 'change this and re-run' with what to look for"
    assert "widgets.interact(" in code and "Slider(" in code, f"{path.name}: no ipywidgets slider"
    assert "markdown_table(" in code, f"{path.name}: no notation cell printing the glossary"
    assert "## References" in text, f"{path.name}: no reference list"
    for key in set(re.findall(r"\[(\w+)\]", text)) & set(__import__("fmlib.references").references.TITLES):
        assert f"**[{key}]**" in text, f"{path.name}: cites [{key}] without listing it under References"
    assert re.search(r"http://localhost:8501/\w+", source(nb[0])), f"{path.name}: the first cell links no app page"
