"""`python -m fmlib reproduce rfm`: bad input, the table, the claim and its scorecard row."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fmlib.cli import main
from fmlib.data import synthetic
from fmlib.experiments import rfm as rfm_experiment
from fmlib.experiments import scorecard, tables
from fmlib.experiments.claims import measure_all
from fmlib.train import TrainConfig


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "0"], "--seeds"),
        (["--seeds", "x"], "--seeds"),
        (["--jobs", "0"], "--jobs"),
        (["--dataset", "ml-0"], "--dataset"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, message, capsys):
    assert main(["reproduce", "rfm", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def fake_frame(rfm_gain: float) -> pd.DataFrame:
    """Five seeds; RFM's test MSE is FM's minus ``rfm_gain`` plus a small per-seed wobble."""
    rows = []
    for seed in range(5):
        for model, rank, mse in [("FM", 8, 0.82 + 0.01 * seed), ("RFM", 16, 0.82 + 0.01 * seed - rfm_gain)]:
            mse += 0.001 * (seed % 2) if model == "RFM" else 0.0
            rows.append(
                {
                    "seed": seed,
                    "model": model,
                    "rank": rank,
                    "epochs": 10,
                    "train_seconds_per_epoch": 0.1,
                    "parameters": 100,
                    "valid_mse": mse,
                    "valid_rmse": math.sqrt(mse),
                    "valid_mae": 0.7,
                    "mse": mse,
                    "rmse": math.sqrt(mse),
                    "mae": 0.7,
                }
            )
    return pd.DataFrame(rows, columns=rfm_experiment.COLUMNS)


@pytest.mark.parametrize("gain, verdict", [(0.01, "holds"), (-0.01, "does not hold")])
def test_claim_from_a_small_table(gain, verdict):
    rows = measure_all(*rfm_experiment.claims(fake_frame(gain))).iloc[0]
    assert rows["verdict"] == verdict and rows["other"].startswith("FM") and rows["seeds"] == 5
    # d_s = FM − RFM = gain − 0.001·(s mod 2): mean gain − 0.0004, its interval well away from 0
    assert rows["difference"] == pytest.approx(gain - 0.0004) and rows["low"] < rows["difference"] < rows["high"]
    assert rows["high"] - rows["low"] < abs(gain)


def test_table_round_trip_columns_summary_and_scorecard_row(tmp_path):
    path = tables.write(
        fake_frame(0.01), tmp_path / rfm_experiment.table_name("ml-100k"), "python -m fmlib reproduce rfm"
    )
    frame = rfm_experiment.load(path)
    assert tuple(frame.columns) == rfm_experiment.COLUMNS
    summary = rfm_experiment.summary(frame).set_index("model")
    assert summary.loc["FM", "mse_mean"] == pytest.approx(0.84)
    assert "RFM" in rfm_experiment.format_table(frame)
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    row = card[card["paper"] == "RFM"].iloc[0]
    assert row["verdict"] == "holds" and "MSE, 5 seeds, vs FM" in row["measured"]
    (tmp_path / "bad.csv").write_text("# command: x\n# commit: y\n# date: z\nseed,model\n0,a\n")
    with pytest.raises(ValueError, match="lacks"):
        rfm_experiment.load(tmp_path / "bad.csv")


def test_one_seed_records_every_column_with_equal_budgets():
    data = synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0)
    config = TrainConfig(epochs=2, patience=1, batch_size=64)
    rfm_hp = {"dim": 4, "hidden": 4, "heads": 1, "mlp_hidden": 4}
    models = {"FM": (config, {"dim": 4}, "fm recipe"), "RFM": (config, rfm_hp, "rfm recipe")}
    records = rfm_experiment.run_seed(data, 0, models)
    frame = pd.DataFrame(records, columns=[*rfm_experiment.COLUMNS, "recipe"])
    assert list(frame["model"]) == ["FM", "RFM"] and frame.notna().all().all()
    assert list(frame["recipe"]) == ["fm recipe", "rfm recipe"]
    assert (frame["mse"] - frame["rmse"] ** 2).abs().max() < 1e-9 and (frame["epochs"] <= 2).all()


def test_settings_give_rfm_the_fm_epoch_budget():
    models = rfm_experiment.settings("ml-100k")
    (fm, _, fm_recipe), (rfm, rfm_hp, rfm_recipe) = models["FM"], models["RFM"]
    assert (rfm.epochs, rfm.patience) == (fm.epochs, fm.patience) and "dim" in rfm_hp
    assert f"≤ {fm.epochs} epochs" in fm_recipe and f"≤ {fm.epochs} epochs" in rfm_recipe
