import re
from pathlib import Path

import pytest
from test_pages_table1 import fake_table

from fmlib.experiments import scorecard

ROOT = Path(__file__).resolve().parent.parent


def test_scorecard_rows_come_from_the_result_table(tmp_path):
    card = scorecard.scorecard("ml-100k", "rating", tmp_path / "none", tmp_path / "none")
    assert card.empty and list(card.columns) == scorecard.COLUMNS
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    row = card.set_index("claim").loc["DPLR beats the FwFM pruned to the same budget at ρ = 2"]
    assert row["verdict"] == "holds" and "5 seeds, vs Pruned ρ=2" in row["measured"]
    assert row["page"].startswith("Field interactions")
    assert "| DPLR |" in scorecard.markdown(card, "ml-100k")


def test_replace_block():
    text = f"a\n{scorecard.BEGIN}\nold\n{scorecard.END}\nb\n"
    assert scorecard.replace_block(text, "new\n") == f"a\n{scorecard.BEGIN}\nnew\n{scorecard.END}\nb\n"
    with pytest.raises(ValueError, match="no scorecard block"):
        scorecard.replace_block("a\n", "new\n")


def test_readme_scorecard_is_the_one_the_committed_results_give(tmp_path):
    card = scorecard.scorecard("ml-100k", "rating", tmp_path / "no-artifacts")
    expected = scorecard.replace_block((ROOT / "README.md").read_text(), scorecard.markdown(card, "ml-100k"))
    assert (ROOT / "README.md").read_text() == expected, "run: python -m fmlib scorecard --readme README.md"


def test_home_page_shows_the_scorecard(tmp_path, monkeypatch):
    from apptest import app_page

    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    at = app_page("app.py", dataset="synthetic")  # home is the frame's default page
    at.run()
    assert not at.exception and not at.error
    every = at.dataframe[0].value  # the section "Every claim", opened
    lines = next(m.value for m in at.markdown if m.value.startswith("- **DPLR**")).splitlines()  # always shown
    counts = lines[0]  # a line a paper
    dplr = every[every["paper"] == "DPLR"]
    assert f"**DPLR**: {len(dplr)} claims under {dplr['protocol'].nunique()} protocols:" in counts
    assert (
        f"holds {(dplr['verdict'] == 'holds').sum()}×" in counts
        and "([Field interactions](field_interactions))" in counts
    )
    assert sum(int(n) for n in re.findall(r" (\d+)×", counts)) == len(dplr), "every verdict is counted"
    assert not app_page("app.py", open_sections=False, dataset="synthetic").run().dataframe, "a visit draws no table"
    card = every[every["protocol"] == scorecard.OURS].set_index("claim")  # the committed paper-protocol rows too
    assert card.loc["DPLR beats the FwFM pruned to the same budget at ρ = 2", "verdict"] == "holds"
    assert any("[Field interactions](field_interactions)" in m.value for m in at.markdown)


def test_scorecard_reads_the_rafm_table_too(tmp_path):
    from test_rafm_experiment import records

    from fmlib.experiments import rafm

    rows = []
    for r in records():
        kind = "rafm" if r["model"].startswith("RaFM(") else "rafm-low" if r["model"] == "RaFM-low" else "fm"
        rank = int(r["model"][3:-1]) if kind == "fm" else 0
        rows.append(
            {**r, "kind": kind, "rank": rank, "test_mse": r["test_rmse"] ** 2, "valid_mse": r["test_rmse"] ** 2}
        )
    result = rafm.as_result("ml-100k", [4, 16], [0, 1], "rating", rows)
    rafm.save(result, tmp_path / rafm.table_name("ml-100k", "rating"), "python -m fmlib reproduce rafm")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    assert list(card["paper"]) == ["RaFM", "RaFM", "RaFM"]  # vs the best FM, vs FM(D_m), RaFM-low vs FM(D_1)
    assert "vs FM(4)" in card["measured"].iloc[0] and card["page"].iloc[0].startswith("Rank-aware FM")
