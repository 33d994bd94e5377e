"""Weight averaging over epochs (TrainConfig.average_from) and its place in presets and tuning."""

from __future__ import annotations

import pytest
import torch

from fmlib import presets
from fmlib.experiments import search_space
from fmlib.models import build_model
from fmlib.train import TrainConfig, WeightAverage, evaluate, fit


def test_weight_average_is_the_mean_of_the_snapshots():
    torch.manual_seed(0)
    snapshots = [{"w": torch.randn(4, 3), "b": torch.randn(1), "steps": torch.tensor(i)} for i in range(5)]
    average = WeightAverage()
    for s in snapshots:
        average.update(s)
    assert average.count == 5
    torch.testing.assert_close(average.mean["w"], torch.stack([s["w"] for s in snapshots]).mean(0))
    torch.testing.assert_close(average.mean["b"], torch.stack([s["b"] for s in snapshots]).mean(0))
    assert int(average.mean["steps"]) == 4, "integer entries are the latest snapshot's"


def test_fit_keeps_the_average_of_the_end_of_epoch_weights(small_split):
    """With averaging from epoch 2 and no early stop, the kept weights are the mean of the
    weights after epochs 2..E, which a callback records; the reported metrics are theirs."""
    config = TrainConfig(epochs=4, lr=0.02, weight_decay=0.0, patience=10, average_from=2, seed=1)
    torch.manual_seed(1)
    model = build_model("fm", small_split.schema, dim=3)
    snapshots = []

    def record(_):
        snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    # the callback runs after the epoch's evaluation: model.state_dict() is then the trained weights
    run = fit(model, small_split.train, small_split.valid, config, record)
    valid = [r["valid_rmse"] for r in run.history]
    assert valid[-1] == min(valid[1:]), "precondition: the last average is the best one, so it is kept"
    for key, value in run.model.state_dict().items():
        torch.testing.assert_close(value, torch.stack([s[key] for s in snapshots[1:]]).mean(0))
    assert run.metrics["valid"]["rmse"] == pytest.approx(valid[-1], rel=1e-5)
    assert evaluate(run.model, small_split.valid, "rating")["rmse"] == pytest.approx(valid[-1], rel=1e-5)


def test_average_from_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"average_from must be 0 \(off\) or an epoch >= 1, got -1"):
        TrainConfig(average_from=-1)


def test_presets_carry_average_from_when_present():
    preset = {
        "task": "rating",
        "train": {"lr": 0.02, "weight_decay": 1e-4, "batch_size": 64, "epochs": 9, "patience": 2},
    }
    assert presets.train_config(preset).average_from == 0, "older presets: no averaging"
    preset["train"]["average_from"] = 3
    assert presets.train_config(preset).average_from == 3


def test_tuning_draws_average_from_as_a_training_setting():
    assert "average_from" in search_space.SEARCH_SPACES["fm"]
    train, hp = search_space.split_params("fm", {"lr": 0.01, "weight_decay": 1e-4, "dim": 8, "average_from": 3}, {})
    assert train == {"lr": 0.01, "weight_decay": 1e-4, "average_from": 3} and hp == {"dim": 8}
