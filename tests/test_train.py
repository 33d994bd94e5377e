"""Training loop, metrics, run store round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fmlib.runs import RunError, RunStore
from fmlib.train import TrainConfig, auc, evaluate, fit, predict, train_model


def test_training_lowers_validation_error_and_is_deterministic(small_split):
    config = TrainConfig(epochs=8, lr=0.02, weight_decay=0.0, seed=4)
    records = []
    a = train_model("fwfm", small_split, config, records.append, dim=3)
    b = train_model("fwfm", small_split, config, dim=3)
    assert [r["epoch"] for r in records] == list(range(1, len(records) + 1))
    assert records[-1]["valid_rmse"] < records[0]["valid_rmse"]
    assert a.metrics == b.metrics, "same seed, same run"
    best = min(r["valid_rmse"] for r in a.history)
    assert a.metrics["valid"]["rmse"] == pytest.approx(best, rel=1e-6), "best weights restored"


def test_early_stopping_respects_patience(small_split):
    run = train_model("fm", small_split, TrainConfig(epochs=60, lr=0.3, patience=2, seed=0), dim=3)
    stale = 0
    for r in run.history:
        stale = 0 if r["best"] else stale + 1
    assert len(run.history) < 60 and stale == 2


def test_click_task_metrics(small_split):
    run = train_model("fm", small_split, TrainConfig(task="click", epochs=3, lr=0.02), dim=3)
    m = run.metrics["test"]
    assert set(m) == {"logloss", "auc"} and 0 < m["logloss"] and 0.5 < m["auc"] <= 1


def test_auc_equals_pairwise_definition():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = rng.integers(0, 10, 200).astype(float)  # many ties
    pos, neg = s[y == 1], s[y == 0]
    naive = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (len(pos) * len(neg))
    assert auc(y, s) == pytest.approx(naive)


def test_rating_predictions_are_clipped(small_split):
    data = small_split.test
    data.rating_range = (2.9, 3.1)
    run = train_model("fm", small_split, TrainConfig(epochs=1), dim=2)
    clipped = predict(run.model, data).clamp(2.9, 3.1)
    assert evaluate(run.model, data, "rating")["mae"] == pytest.approx(float((clipped - data.rating).abs().mean()))


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(task="ranking"), "task must be one of"),
        (dict(epochs=0), "epochs must be a positive"),
        (dict(lr=0), "lr must be > 0"),
        (dict(weight_decay=-1), "weight_decay must be >= 0"),
    ],
)
def test_bad_config_is_named(bad, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**bad)


def test_run_store_round_trip_reproduces_metrics(small_split, tmp_path):
    run = train_model("fwfm", small_split, TrainConfig(epochs=2, lr=0.02), dim=3)
    store = RunStore(tmp_path / "store")
    run_id = store.save(run, "my-run")
    assert store.ids() == ["my-run"]
    loaded = store.load(run_id)
    assert loaded.config == json.loads(json.dumps(run.config)) and loaded.history == run.history
    assert evaluate(loaded.model, small_split.test, "rating") == run.metrics["test"]
    assert torch.equal(loaded.model.R, run.model.R)
    with pytest.raises(ValueError, match="already exists"):
        store.save(run, "my-run")
    assert not [p for p in (tmp_path / "store").iterdir() if p.name.startswith(".")]


def test_corrupt_runs_are_named(small_split, tmp_path):
    store = RunStore(tmp_path)
    run_id = store.save(train_model("fm", small_split, TrainConfig(epochs=1), dim=2))
    (tmp_path / run_id / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(RunError, match="weights cannot be loaded"):
        store.load(run_id)
    (tmp_path / run_id / "run.json").write_text("{not json")
    with pytest.raises(RunError, match="corrupt"):
        store.info(run_id)
    with pytest.raises(RunError, match="missing"):
        store.load("no-such-run")


def test_fit_without_test_split(small_split):
    from fmlib.models import build_model

    torch.manual_seed(0)
    run = fit(build_model("fm", small_split.schema, dim=2), small_split.train, small_split.valid, TrainConfig(epochs=1))
    assert set(run.metrics) == {"valid"} and run.config["model"] == "fm"


def test_param_groups_decay_matrices_only_and_fwfm_R_is_pulled_to_r_fm(small_split):
    from fmlib.models import build_model
    from fmlib.train import param_groups

    model = build_model("fwfm", small_split.schema, dim=2)
    groups = param_groups(model, lr=0.01, weight_decay=0.1)
    by_param = {id(p): g for g in groups for p in g["params"]}
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    assert by_param[id(model.embedding.weight)]["weight_decay"] == 0.1
    assert by_param[id(model.bias)]["weight_decay"] == 0.0
    r = by_param[id(model.r_upper)]
    assert r["weight_decay"] == 0.0 and r["lr"] == 0.01, "R learns at the full rate"
    assert model.extra_loss() == 0, "no penalty at R = R_FM"
    with torch.no_grad():
        model.r_upper.add_(0.5)
    assert model.extra_loss().item() == pytest.approx(model.r_l2 * 0.25 * model.r_upper.numel())
    (grad,) = torch.autograd.grad(model.extra_loss(), model.r_upper)
    assert torch.allclose(grad, torch.full_like(grad, 2 * model.r_l2 * 0.5))


def test_bad_training_input_says_what_to_change(small_split):
    from fmlib.models import build_model

    model = build_model("fm", small_split.schema, dim=2)
    too_big = len(small_split.train) + 1
    with pytest.raises(ValueError, match=f"batch_size {too_big} is larger than the {too_big - 1} training samples"):
        fit(model, small_split.train, small_split.valid, TrainConfig(batch_size=too_big))
    with torch.no_grad():
        model.embedding.weight.fill_(float("nan"))
    with pytest.raises(ValueError, match="training loss became nan in epoch 1.*lower the learning rate lr"):
        fit(model, small_split.train, small_split.valid, TrainConfig(epochs=2))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU.*use device cpu"):
            TrainConfig(device="cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        TrainConfig(device="tpu")
    assert TrainConfig().batch_size == 1024
