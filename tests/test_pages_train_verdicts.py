"""AppTest of the Train page's lesson section: its verdicts are the scorecard's, its Bayesian FM numbers measured."""

import pandas as pd
import pytest
from apptest import app_page

from app_pages._measured import scorecard_rows
from fmlib.experiments import bfm, fm_ablation, tables
from fmlib.experiments.claims import Threshold


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path / "artifacts"))


def train_page():
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert not at.exception
    return at


def markdown(at) -> str:
    return " ".join(m.value for m in at.markdown)


def write_bfm_table(tmp_path, bfm_rmse, adam_rmse):
    """A Bayesian FM table (newer than the committed one) with these per-split test RMSEs."""
    rows = []
    for seed, (b, a) in enumerate(zip(bfm_rmse, adam_rmse)):
        for model, rmse, rank, epochs in ((bfm.ADAM, a, 8, 60), (bfm.BFM, b, 10, 200)):
            rows.append(
                {
                    "seed": seed,
                    "model": model,
                    "rank": rank,
                    "valid_rmse": rmse + 0.02,
                    "rmse": rmse,
                    "mae": 0.7,
                    "epochs": epochs,
                    "train_seconds": 10.0,
                    "cpu_seconds": 9.0,
                }
            )
    frame = pd.DataFrame(rows, columns=bfm.COLUMNS)
    tables.write(frame, tmp_path / "artifacts" / bfm.table_name("ml-100k"), "python -m fmlib reproduce bfm")


def test_the_target_sentence_is_the_scorecards_verdict():
    at = train_page()
    _, claims = fm_ablation.claims(pd.DataFrame(columns=fm_ablation.COLUMNS))
    (target,) = [c.text for c in claims if isinstance(c, Threshold)]
    row = scorecard_rows("train").set_index("claim").loc[target]
    text = markdown(at)
    assert f"the scorecard says *{row['verdict']}* ({row['measured']})" in text
    assert "meets the target" not in text and "misses the target" not in text
    shown = at.dataframe[-1].value.set_index("claim")
    assert shown.loc[target, "verdict"] == row["verdict"]
    sources = [c.value for c in at.caption if c.value.startswith("From `")]
    assert len(sources) == 2 and all("From `results/" in c for c in sources), f"a server path is shown: {sources}"


@pytest.mark.parametrize(
    ("bfm_rmse", "wins", "verdict"),
    [
        ((0.870, 0.875, 0.872), True, "holds"),
        ((0.900, 0.905, 0.902), False, "does not hold"),
    ],
)
def test_the_bayesian_fm_section_says_what_its_table_measured(tmp_path, bfm_rmse, wins, verdict):
    adam = (0.886, 0.891, 0.886)
    write_bfm_table(tmp_path, bfm_rmse, adam)
    at = train_page()
    (heading,) = [e.label for e in at.expander if e.label.startswith("The Bayesian FM")]
    assert ("wins" in heading) == wins
    text = markdown(at)
    mean = sum(bfm_rmse) / 3
    assert f"test RMSE **{mean:.4f}**" in text and f"**{sum(adam) / 3:.4f}**" in text
    assert "rank 10, 200 Gibbs sweeps" in text and f"*{verdict}*" in text
    shown = at.dataframe[-1].value.set_index("claim")
    (claim,) = [c.text for c in bfm.claims(pd.DataFrame(columns=bfm.COLUMNS))[1]]
    assert shown.loc[claim, "verdict"] == verdict
