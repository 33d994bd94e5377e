import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_pages_table1 import fake_table

from fmlib.experiments import dplr, scorecard, tables
from fmlib.experiments.claims import measure_all
from fmlib.experiments.verdict import OUTCOMES, outcome
from fmlib.results import replace_block

ROOT = Path(__file__).resolve().parent.parent


def test_scorecard_rows_come_from_the_result_table(tmp_path):
    card = scorecard.scorecard("ml-100k", "rating", tmp_path / "none", tmp_path / "none")
    assert card.empty and list(card.columns) == scorecard.COLUMNS + scorecard.DETAILS
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    row = card.set_index("claim").loc["DPLR beats the FwFM pruned to the same budget at ρ = 2"]
    assert row["verdict"] == "holds" and "5 seeds, vs Pruned ρ=2" in row["measured"] and row["task"] == "rating"
    assert row["page"].startswith("Field interactions")
    assert "| DPLR |" in scorecard.markdown(card, "ml-100k")


def test_replace_block():
    block = (scorecard.BEGIN, scorecard.END)
    text = f"a\n{scorecard.BEGIN}\nold\n{scorecard.END}\nb\n"
    assert replace_block(text, "new\n", *block) == f"a\n{scorecard.BEGIN}\nnew\n{scorecard.END}\nb\n"
    with pytest.raises(ValueError, match="no such block"):
        replace_block("a\n", "new\n", *block)


def fake_click_table(path):
    """Table 1 of the click task: log loss and AUC per seed, DPLR a little better than the rest."""
    rng = np.random.default_rng(1)
    rows = []
    for seed in range(5):
        for model, rank in [("FM", 0), ("FwFM", 0)] + [(m, r) for r in (1, 2) for m in ("DPLR", "Pruned")]:
            logloss = 0.55 - 0.01 * (model == "DPLR") + 0.001 * rng.standard_normal()
            rows.append({"seed": seed, "model": model, "rank": rank, "logloss": logloss, "auc": 1.3 - logloss})
    return tables.write(pd.DataFrame(rows), path, "python -m fmlib reproduce dplr --task click --seeds 5")


def test_the_click_tables_claims_are_on_the_scorecard_beside_the_ratings(tmp_path):
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    fake_click_table(tmp_path / "dplr_ml-100k_click.csv")
    card = scorecard.scorecard("ml-100k", artifacts=tmp_path, committed=tmp_path / "none")
    assert list(card["task"].unique()) == ["rating", "click"]
    click = card[card["task"] == "click"].set_index("claim")
    frame, _ = tables.read(tmp_path / "dplr_ml-100k_click.csv", columns=("seed", "model", "rank"))
    expected = measure_all(frame, dplr.claims("click", [1, 2])).set_index("claim")
    assert list(click.index) == list(expected.index) and list(click["verdict"]) == list(expected["verdict"])
    assert "LOGLOSS, 5 seeds" in click.loc["DPLR beats the FwFM pruned to the same budget at ρ = 2", "measured"]
    assert click["table"].str.startswith(f"{tmp_path.name}/dplr_ml-100k_click.csv").all()
    only = scorecard.scorecard("ml-100k", "click", tmp_path, tmp_path / "none")
    assert set(only["task"]) == {"click"} and len(only) == len(click)


def test_the_committed_click_table_is_measured_on_the_readme_scorecard(tmp_path):
    card = scorecard.scorecard("ml-100k", artifacts=tmp_path / "no-artifacts")
    click = card[card["task"] == "click"]
    path = tables.committed_root() / dplr.table_name("ml-100k", "click")
    frame, _ = tables.read(path, columns=("seed", "model", "rank"))
    expected = measure_all(frame, dplr.claims("click", sorted(int(r) for r in frame["rank"].unique() if r > 0)))
    assert list(click["claim"]) == list(expected["claim"]) and list(click["verdict"]) == list(expected["verdict"])
    assert list(click["measured"]) == list(expected["measured"])


def test_readme_scorecard_is_the_one_the_committed_results_give(tmp_path):
    card = scorecard.scorecard("ml-100k", artifacts=tmp_path / "no-artifacts")
    text = scorecard.markdown(card, "ml-100k")
    expected = replace_block((ROOT / "README.md").read_text(), text, scorecard.BEGIN, scorecard.END)
    assert (ROOT / "README.md").read_text() == expected, "run: python -m fmlib scorecard --readme README.md"


def test_home_page_shows_the_scorecard(tmp_path, monkeypatch):
    from apptest import app_page

    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    fake_click_table(tmp_path / "dplr_ml-100k_click.csv")
    at = app_page("app.py", dataset="synthetic")  # home is the frame's default page
    at.run()
    assert not at.exception and not at.error
    every = at.dataframe[0].value  # the section "Every claim", opened
    lines = next(m.value for m in at.markdown if m.value.startswith("- **DPLR**")).splitlines()  # always shown
    counts = lines[0]  # a line a paper
    dplr = every[every["paper"] == "DPLR"]
    assert set(dplr["task"]) == {"rating", "click"}
    assert f"**DPLR**: {len(dplr)} claims under {dplr['protocol'].nunique()} protocols and 2 tasks:" in counts
    decided = dplr["verdict"].map(outcome)
    for each in OUTCOMES:  # open margin verdicts count as "undecided"
        assert (f"{each} {(decided == each).sum()}×" in counts) == (decided == each).any()
    assert "([Field interactions](field_interactions))" in counts
    assert sum(int(n) for n in re.findall(r" (\d+)×", counts)) == len(dplr), "every verdict is counted"
    assert not app_page("app.py", open_sections=False, dataset="synthetic").run().dataframe, "a visit draws no table"
    ours = (every["protocol"] == scorecard.OURS) & (every["task"] == "rating")  # the committed paper-protocol rows too
    card = every[ours].set_index("claim")
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


def test_paper_sentence_counts_the_outcomes_per_kind_of_data():
    card = pd.DataFrame(
        {
            "paper": ["P"] * 4 + ["Q"],
            "verdict": ["holds", "does not hold", "not shown to be worse, nor to be within 1 %", "holds", "holds"],
            "table": ["results/p_ml-100k.csv"] * 2 + ["results/p_planted-ranks.csv"] * 2 + ["results/q.csv"],
            "task": ["rating"] * 4 + [""],
            "protocol": ["ours"] * 4 + ["synthetic"],
        }
    )
    assert scorecard.paper_sentence(card, "P") == (
        "P: 2 of 4 claims hold — 1 of 2 on MovieLens 100K, 1 of 2 on data planted for it; 1 does not hold, 1 is undecided."
    )
    assert (
        scorecard.paper_sentence(card, "Q")
        == "Q: 1 of 1 claim holds on synthetic inputs; 0 do not hold, 0 are undecided."
    )
    assert scorecard.paper_sentence(card, "R") == "R: no result table yet, so no claim is measured."


def test_how_to_read_a_margin_claim_names_its_line(tmp_path):
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    row = card[card["margin"] > 0].iloc[0]
    text = scorecard.how_to_read(row)
    assert "a positive number favours the claim" in text and f"{row['low']:+.4f}, {row['high']:+.4f}" in text
    assert f"−δ = {-row['margin']:+.4f}" in text and f"Here: **{row['verdict']}**" in text
    plain = scorecard.how_to_read(card[card["margin"] == 0].iloc[0])
    assert "This is a **margin claim**" not in plain and "against 0" in plain


def test_the_feature_sets_claims_are_on_the_scorecard(tmp_path):
    from fmlib.experiments import features

    card = scorecard.scorecard("ml-100k", "rating", artifacts=tmp_path / "no-artifacts")
    rows = card[card["paper"] == "Rendle2012"]
    frame = features.load(tables.committed_root() / features.table_name("ml-100k"))
    expected = measure_all(*features.claims(frame))
    assert len(rows) == 4 and list(rows["verdict"]) == list(expected["verdict"])
    assert rows["page"].str.startswith("Train").all() and (rows["margin"] > 0).sum() == 2
