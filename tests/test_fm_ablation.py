"""The Adam FM ablation: its configurations, its table, the chart, the lesson's numbers and the scorecard rows."""

from __future__ import annotations

import pandas as pd
import pytest

from fmlib.experiments import fm_ablation, scorecard, tables
from fmlib.plots.fm_ablation import ablation_figure


def fake_frame() -> pd.DataFrame:
    """Three splits; the k 16 FM without averaging is 0.02 worse than with it on every split."""
    rows = []
    for seed in range(3):
        for i, (label, changes) in enumerate(fm_ablation.STEPS):
            rmse = 0.90 - 0.01 * i + 0.001 * seed + (0.03 if label == fm_ablation.LARGE_NO_AVERAGING else 0.0)
            rows.append(
                {
                    "seed": seed,
                    "model": label,
                    "rank": changes.get("dim", 8),
                    "valid_rmse": rmse + 0.01,
                    "rmse": rmse,
                    "mae": rmse * 0.8,
                    "epochs": 30,
                    "train_seconds": 10.0 + i,
                    "cpu_seconds": 5.0 + i,
                }
            )
    return pd.DataFrame(rows, columns=fm_ablation.COLUMNS)


def test_steps_change_the_tuned_preset_one_ingredient_at_a_time():
    steps = fm_ablation.settings("ml-100k")
    assert list(steps) == [label for label, _ in fm_ablation.STEPS]
    base_config, base_hp = steps["preset fm-8"]
    final_config, final_hp = steps[fm_ablation.WINNER]
    large_config, large_hp = steps[fm_ablation.LARGE]
    plain_config, plain_hp = steps[fm_ablation.LARGE_NO_AVERAGING]
    assert base_config.average_from == 0 and base_hp["dim"] == 8
    assert final_config.average_from == 3 and (final_config.lr, final_hp) == (base_config.lr, base_hp)
    assert large_config.average_from == 3 and large_config.lr == 0.02 and large_hp["dim"] == 16
    assert plain_config.average_from == 0 and (plain_config.lr, plain_hp) == (large_config.lr, large_hp)
    assert final_config.weight_decay == base_config.weight_decay, "the L2 stays the tuned preset's"


def test_table_round_trip_findings_and_chart(tmp_path):
    frame = fake_frame()
    path = tables.write(frame, tmp_path / fm_ablation.table_name("ml-100k"), "python -m fmlib reproduce fm-ablation")
    loaded = fm_ablation.load(path)
    found = fm_ablation.findings(loaded)
    final_rmse = frame.loc[frame["model"] == fm_ablation.WINNER, "rmse"].mean()
    assert found["final"]["rmse"] == pytest.approx(final_rmse) and found["met"] == (final_rmse <= 0.890)
    assert found["splits"] == 3 and found["base"]["rmse"] == pytest.approx(0.901)
    fig = ablation_figure(loaded, target=found["target"])
    assert [t.name for t in fig.data] == ["validation RMSE", "test RMSE"]
    assert list(fig.data[1].x) == [label for label, _ in fm_ablation.STEPS]
    assert list(fig.data[1].y) == pytest.approx(list(fm_ablation.summary(loaded)["rmse_mean"]))
    assert fig.layout.title.text and fig.layout.yaxis.title.text == "RMSE (stars)"
    (tmp_path / "bad.csv").write_text("# command: x\n# commit: y\n# date: z\nseed,model\n0,a\n")
    with pytest.raises(ValueError, match="lacks"):
        fm_ablation.load(tmp_path / "bad.csv")


def test_scorecard_gains_the_averaging_rows(tmp_path):
    tables.write(fake_frame(), tmp_path / fm_ablation.table_name("ml-100k"), "python -m fmlib reproduce fm-ablation")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    rows = card[card["paper"] == "fmlib"].set_index("claim")
    averaging = rows.loc["Averaging the end-of-epoch weights improves the Adam FM (k 16, lr 0.02)"]
    assert rows.loc["Averaging the end-of-epoch weights improves the Adam FM (tuned preset fm-8)", "verdict"] == "holds"
    assert (
        averaging["verdict"] == "holds"
        and "+0.0200 [+0.0200, +0.0200] RMSE, 3 seeds, vs k 16, lr 0.02, no averaging" == averaging["measured"]
    )
    assert averaging["page"].startswith("Train")


def test_the_committed_choice_is_the_best_on_validation():
    frame = fm_ablation.load(tables.committed_root() / fm_ablation.table_name("ml-100k"))
    assert fm_ablation.findings(frame)["best_valid"] == fm_ablation.WINNER
