"""The Adam FM ablation: its configurations, its table, the chart, the lesson's numbers and the scorecard rows."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from fmlib.experiments import fm_ablation, scorecard, tables
from fmlib.plots.fm_ablation import ablation_figure


def fake_frame() -> pd.DataFrame:
    """Three splits; each step 0.002 better than the one before, except the two FMs without
    averaging, 0.02 worse than the same FM with averaging on every split."""
    partner = {fm_ablation.LARGE_NO_AVERAGING: fm_ablation.LARGE, fm_ablation.WINNER_NO_AVERAGING: fm_ablation.WINNER}
    order = [label for label, _ in fm_ablation.STEPS]
    rows = []
    for seed in range(3):
        for i, (label, changes) in enumerate(fm_ablation.STEPS):
            j = order.index(partner.get(label, label))
            rmse = 0.90 - 0.002 * j + 0.001 * seed + (0.02 if label in partner else 0.0)
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
    for seed in range(3):  # the ensemble: better than the chosen FM on both parts, never chosen
        winner = next(r for r in rows if r["seed"] == seed and r["model"] == fm_ablation.WINNER)
        better = {k: winner[k] - 0.003 for k in ("valid_rmse", "rmse", "mae")}
        rows.append({**winner, "model": fm_ablation.ENSEMBLE, **better, "cpu_seconds": 3 * winner["cpu_seconds"]})
    return pd.DataFrame(rows, columns=fm_ablation.COLUMNS)


def test_steps_change_the_tuned_fm_one_ingredient_at_a_time():
    steps = fm_ablation.settings()
    assert list(steps) == [label for label, _ in fm_ablation.STEPS]
    base_config, base_hp = steps["tuned FM"]
    averaged, averaged_hp = steps[fm_ablation.AVERAGED]
    final, final_hp = steps[fm_ablation.WINNER]
    plain, plain_hp = steps[fm_ablation.WINNER_NO_AVERAGING]
    large, large_hp = steps[fm_ablation.LARGE]
    large_plain, large_plain_hp = steps[fm_ablation.LARGE_NO_AVERAGING]
    assert base_config.average_from == 0 and not base_config.grouped_decay and base_hp == {"dim": 8}
    assert averaged.average_from == 3 and averaged_hp == base_hp
    assert (averaged.lr, averaged.weight_decay) == (base_config.lr, base_config.weight_decay), "the tuned L2 kept"
    assert final.average_from == 3 and final.grouped_decay and final.weight_decay == base_config.weight_decay
    assert plain.average_from == 0 and (plain.field_decay, plain.linear_decay, plain.epochs, plain_hp) == (
        final.field_decay,
        final.linear_decay,
        final.epochs,
        final_hp,
    )
    assert large.average_from == 3 and large.lr == 0.02 and large_hp["dim"] == 16
    assert large_plain.average_from == 0 and (large_plain.lr, large_plain_hp) == (large.lr, large_hp)
    assert steps["+ averaging, init std 0.05"][1] == {"dim": 8, "init_std": 0.05}


def test_preset_fm_is_the_chosen_configuration():
    from fmlib import presets

    preset = presets.load("ml-100k", "fm")
    config, hp = fm_ablation.settings()[fm_ablation.WINNER]
    assert presets.hyperparameters(preset) == hp
    assert presets.train_config(preset) == config


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
    shown = [label.replace("<br>", " ") for label in fig.data[1].y]  # names wrapped beside their bars
    assert shown == [label for label, _ in fm_ablation.STEPS] + [fm_ablation.ENSEMBLE]
    assert found["best_valid"] == fm_ablation.WINNER, "the ensemble is reported, not chosen"
    assert found["ensemble"]["rmse"] == pytest.approx(final_rmse - 0.003)
    assert list(fig.data[1].x) == pytest.approx(list(fm_ablation.summary(loaded)["rmse_mean"]))
    assert fig.layout.title.text and fig.layout.xaxis.title.text == "RMSE (stars)"
    (tmp_path / "bad.csv").write_text("# command: x\n# commit: y\n# date: z\nseed,model\n0,a\n")
    with pytest.raises(ValueError, match="lacks"):
        fm_ablation.load(tmp_path / "bad.csv")


def test_scorecard_gains_the_averaging_rows(tmp_path):
    tables.write(fake_frame(), tmp_path / fm_ablation.table_name("ml-100k"), "python -m fmlib reproduce fm-ablation")
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    rows = card[card["paper"] == "fmlib"].set_index("claim")
    averaging = rows.loc["Averaging the end-of-epoch weights improves the Adam FM (k 16, lr 0.02)"]
    assert rows.loc["Averaging the end-of-epoch weights improves the Adam FM (tuned FM)", "verdict"] == "holds"
    assert rows.loc["Averaging the end-of-epoch weights improves the Adam FM (with grouped L2)", "verdict"] == "holds"
    assert rows.loc["Grouped L2 improves the averaged Adam FM", "verdict"] == "holds"
    assert rows.loc["The Adam FM (preset fm) reaches test RMSE <= 0.890", "verdict"] == "holds"
    assert (
        averaging["verdict"] == "holds"
        and "+0.0200 [+0.0200, +0.0200] RMSE, 3 seeds, vs k 16, lr 0.02, no averaging" == averaging["measured"]
    )
    assert averaging["page"].startswith("Train")


def test_the_committed_choice_is_the_best_on_validation():
    frame = fm_ablation.load(tables.committed_root() / fm_ablation.table_name("ml-100k"))
    assert fm_ablation.findings(frame)["best_valid"] == fm_ablation.WINNER


def test_mean_prediction_metrics_average_then_clip(small_split):
    from fmlib.models import build_model
    from fmlib.train import evaluate, predict

    torch.manual_seed(0)
    models = [build_model("fm", small_split.schema, dim=2) for _ in range(2)]
    for i, m in enumerate(models):
        torch.nn.init.normal_(m.linear.weight, std=1.0 + i)
    data = small_split.valid
    single = fm_ablation.mean_prediction_metrics(models[:1], data)
    assert single == pytest.approx(evaluate(models[0], data, "rating"))
    score = (predict(models[0], data) + predict(models[1], data)) / 2
    if data.rating_range is not None:
        score = score.clamp(*data.rating_range)
    err = score - data.target("rating")
    both = fm_ablation.mean_prediction_metrics(models, data)
    assert both == pytest.approx({"rmse": float(err.pow(2).mean().sqrt()), "mae": float(err.abs().mean())})
