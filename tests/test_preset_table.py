"""The table of every tuned preset (``python -m fmlib presets``): each row read from its preset's tuning record, and
the README's table the one the committed presets give."""

import json
from pathlib import Path

from fmlib.cli import main
from fmlib.experiments import preset_table
from fmlib.results import replace_block

ROOT = Path(__file__).resolve().parents[1]


def tuned(converged=True, bests=(0.9012, 0.9025), epochs=(40, 55), trials=(40, 40), **record) -> dict:
    studies = [
        {"study": f"s{i}", "finished_trials": n, "best_valid_rmse": b, "epochs": e, "best_is_seed": None}
        for i, (b, e, n) in enumerate(zip(bests, epochs, trials))
    ]
    tuning = {
        "studies": studies,
        "converged": converged,
        "tolerance": 0.002,
        "settings": {"epochs": 200},
        "by_seed": {"valid_rmse": [0.90, 0.91, 0.92]},
        **record,
    }
    return {"task": "rating", "tuning": tuning}


def test_a_converged_preset_reads_yes_with_its_studies_epochs_and_seeds():
    preset = tuned()
    preset["tuning"]["studies"][1]["best_is_seed"] = "fm-8 (the preset it replaces)"
    cells = [c.strip() for c in preset_table.row("ml-100k/fm-16.json", preset).strip().strip("|").split("|")]
    assert cells == [
        "ml-100k/fm-16.json",
        "rating",
        "40",
        "0.90120, 0.90250 (seeded: fm-8, the preset it replaces)",
        "40, 55 of 200",
        "0.91000 ± 0.01000 (3 seeds)",
        "yes",
    ]


def test_each_failed_check_is_named():
    apart = tuned(converged=False, bests=(0.9012, 0.9050), trials=(31, 40))
    assert preset_table.verdict(apart) == "no: the best two studies differ by 0.0038"
    assert "| 31, 40 |" in preset_table.row("x", apart)
    edges = tuned(converged=False, at_edges=["lr"], at_cap=["s0"], better_inside={"fm-8": [0.001, 0.0005, 0.0015]})
    assert preset_table.verdict(edges) == (
        "no: fm-8 validates better; lr at the end of its range; a best trial at the epoch cap"
    )
    assert preset_table.verdict(tuned(better_inside={"fm-8": None})) == "no: fm-8 not compared"
    assert preset_table.verdict(tuned(converged=False)) == "no: recorded so"


def test_the_count_is_of_the_rows_that_say_yes():
    text = preset_table.markdown([("a", tuned()), ("b", tuned(converged=False, at_cap=["s1"]))])
    assert text.count("\n| ") == 2 and text.endswith("1 of 2 tuned presets converged by the rule.\n")


def test_only_presets_tuned_by_studies_are_listed_staged_ones_after(tmp_path):
    root, staged = tmp_path / "presets", tmp_path / "staged"
    for folder, name, preset in (
        (root, "ml-100k/fm-8.json", tuned()),
        (root, "ml-100k/fm.json", {"task": "rating", "tuning": {"chosen_by": "an experiment"}}),
        (staged, "ml-100k/dplr-4.json", tuned()),
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(preset))
    names = [name for name, _ in preset_table.tuned_presets(root, staged=None)]
    assert names == ["ml-100k/fm-8.json"]
    assert len(preset_table.tuned_presets(root, staged=staged)) == 2


def test_readme_lists_the_committed_presets():
    expected = preset_table.markdown(preset_table.tuned_presets())
    readme = (ROOT / "README.md").read_text()
    block = (preset_table.BEGIN, preset_table.END)
    assert readme == replace_block(readme, expected, *block), "run: python -m fmlib presets --readme README.md"


def test_cli_writes_the_block_and_a_file_without_one_is_one_line_and_exit_2(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(f"intro\n{preset_table.BEGIN}\nold\n{preset_table.END}\nend\n")
    assert main(["presets", "--readme", str(page)]) == 0
    written = page.read_text()
    assert written.startswith(f"intro\n{preset_table.BEGIN}\n| preset |") and written.endswith(
        f"{preset_table.END}\nend\n"
    )
    plain = tmp_path / "plain.md"
    plain.write_text("no block\n")
    capsys.readouterr()
    code = main(["presets", "--readme", str(plain)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no such block" in err
    assert plain.read_text() == "no block\n"
