"""Verdicts on equal terms: every model takes the same training tools, a pruned FwFM's fine-tune
continues its training, and tuning gives every model the same effort."""

from __future__ import annotations

import json

import numpy as np
import optuna
import pytest
import torch

from fmlib import presets
from fmlib.analysis.interactions import budget, interaction_matrix, pruned_fwfm, pruned_moments
from fmlib.cli import main
from fmlib.experiments import convergence, search_space, tune
from fmlib.experiments import dplr as dplr_experiment
from fmlib.models import build_model
from fmlib.train import TrainConfig, fit, row_decay

ADAM_MODELS = {
    "fm": {"dim": 3},
    "fwfm": {"dim": 3},
    "dplr": {"dim": 3, "rank": 2},
    "rafm": {"ranks": (2, 4)},
    "rfm": {"dim": 4, "hidden": 4, "heads": 1, "mlp_hidden": 8},
}


def build(name, split, seed=0):
    hp = dict(ADAM_MODELS[name])
    if name == "rafm":
        hp["counts"] = split.train.feature_counts()
    torch.manual_seed(seed)
    return build_model(name, split.schema, **hp)


@pytest.mark.parametrize("name", list(ADAM_MODELS))
def test_every_model_takes_grouped_l2_row_by_row(name, small_split):
    """row_decay gives every row of every field table the strength of its feature's field."""
    model = build(name, small_split)
    config = TrainConfig(weight_decay=0.01, field_decay={"f1": 4.0, "f3": 0.0}, linear_decay=0.5)
    field_of = np.repeat(np.arange(small_split.schema.num_fields), [f.cardinality for f in small_split.schema.fields])
    decays = row_decay(model, config)
    assert {id(p) for p, _ in decays} <= {id(p) for p in model.parameters()}, "tables are registered parameters"
    for (table, rate), (_, rows, linear) in zip(decays, model.field_tables()):
        assert rate.shape == (table.shape[0], 1) and len(rows) == table.shape[0]
        names = [small_split.schema.fields[j].name for j in field_of[rows.numpy()]]
        expected = [0.01 * {"f1": 4.0, "f3": 0.0}.get(n, 1.0) * (0.5 if linear else 1.0) for n in names]
        torch.testing.assert_close(rate.squeeze(1), torch.tensor(expected))
    if name == "rafm":  # every level's free and dependent table, and w
        assert len(decays) == 1 + len(model.free) + len(model.dependent)


@pytest.mark.parametrize("name", list(ADAM_MODELS))
def test_every_parameter_learns_under_grouped_l2(name, small_split):
    model = build(name, small_split)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    config = TrainConfig(epochs=1, lr=0.02, weight_decay=1e-3, field_decay={"f0": 3.0}, linear_decay=0.2)
    fit(model, small_split.train, small_split.valid, config)
    for k, v in model.named_parameters():
        assert not torch.equal(v.detach(), start[k]), f"{name}: {k} was not trained"


def test_an_unknown_field_is_named_for_every_model(small_split):
    for name in ADAM_MODELS:
        with pytest.raises(ValueError, match=r"field_decay: no field \['movie_id'\]; fields are \['f0'"):
            row_decay(build(name, small_split), TrainConfig(field_decay={"movie_id": 2.0}))


def test_the_bayesian_fm_refuses_grouped_l2(small_split):
    model = build_model("bfm", small_split.schema, dim=2)
    with pytest.raises(ValueError, match="field_decay and linear_decay apply to the Adam-trained models only"):
        model.fit_gibbs(small_split.train, small_split.valid, TrainConfig(epochs=3, field_decay={"f0": 2.0}))


def test_cli_names_the_field_and_the_models_fields(capsys):
    code = main(["train", "--model", "rafm", "--dataset", "ml-100k", "--epochs", "1", "--field-decay", "nosuch=2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "nosuch" in err and "user_id" in err and "movie_id" in err


def test_every_search_space_draws_the_same_tools():
    for name in search_space.MODEL_SPACES:
        space = search_space.search_space(name, {})
        assert {k: space[k] for k in search_space.TOOLS} == search_space.TOOLS, name
    fwfm, dplr = search_space.search_space("fwfm", {}), search_space.search_space("dplr", {})
    assert fwfm["r_l2"] == dplr["r_l2"], "an FwFM and a DPLR draw R's pull toward the FM alike"
    assert dplr["r_l2"][0] == search_space.TOOLS["weight_decay"][0], "its lower end is no pull, as every L2's is no L2"
    assert search_space.search_space("dplr", {"dim": 8}, protocol="dplr-paper") == {"lr": (1e-3, 5e-2)}
    with pytest.raises(ValueError, match="unknown protocol"):
        search_space.search_space("fm", {}, protocol="nope")


def test_a_preset_from_other_settings_is_replaced(tmp_path):
    path = tmp_path / "fm-8.json"
    settings = {"space": search_space.stored(search_space.search_space("fm", {"dim": 8})), "epochs": 200}
    path.write_text(json.dumps({"tuning": {"best_valid_rmse": 0.80, "settings": settings}}))
    assert convergence.recorded_better(path, "best_valid_rmse", 0.90, settings) == 0.80  # same settings, better: kept
    assert convergence.recorded_better(path, "best_valid_rmse", 0.70, settings) is None  # worse: replaced
    other_tools = {**settings, "space": {"lr": [0.001, 0.05]}}
    assert convergence.recorded_better(path, "best_valid_rmse", 0.90, other_tools) is None
    other_budget = {**settings, "epochs": 40}
    assert convergence.recorded_better(path, "best_valid_rmse", 0.90, other_budget) is None


def test_the_preset_is_the_best_of_the_first_n_trials(tmp_path, small_split):
    """A study run to 4 trials gives a 2-trial preset the best of its first two trials only."""
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.sqlite3'}")
    study = optuna.create_study(study_name="s", storage=storage, sampler=optuna.samplers.RandomSampler(seed=1))
    base = TrainConfig(epochs=1, patience=1)
    tune.tune("fm", small_split, 4, base, {"dim": 3}, study, progress=False)
    values = [t.value for t in tune.finished(study)]
    _, best2 = tune.tune("fm", small_split, 2, base, {"dim": 3}, study, progress=False)
    assert best2 == min(values[:2]) and len(tune.finished(study)) == 4


def test_the_recipe_names_every_tool():
    preset = {
        "train": {
            "lr": 0.01,
            "weight_decay": 1e-4,
            "epochs": 40,
            "average_from": 3,
            "field_decay": {"movie_id": 8.0},
            "linear_decay": 0.05,
        },
        "tuning": {"finished_trials": 20},
    }
    text = presets.recipe(preset)
    for part in (
        "lr 0.01",
        "L2 0.0001",
        "movie_id ×8",
        "w ×0.05",
        "averaging from epoch 3",
        "≤ 40 epochs",
        "20 Optuna",
    ):
        assert part in text
    assert "scored at" not in text, "a trial scored at one seed says nothing of seeds"
    preset["tuning"]["settings"] = {"trial_seeds": 3}
    assert "20 Optuna trials on validation, each scored at 3 seeds)" in presets.recipe(preset)
    preset["tuning"]["settings"]["prune"] = False
    assert "each scored at 3 seeds and trained to its early stop)" in presets.recipe(preset)
    preset["tuning"]["studies"] = [{"finished_trials": 20}, {"finished_trials": 20}]
    assert "(2 studies × 20 Optuna trials" in presets.recipe(preset)
    preset["tuning"]["studies"][1]["finished_trials"] = 34
    assert "(2 studies of 20 and 34 Optuna trials" in presets.recipe(preset), "each study's count, not the least"
    plain = presets.recipe({"train": {"lr": 0.01, "weight_decay": 1e-4, "epochs": 40}})
    assert "grouped" not in plain and "averaging" not in plain and "by hand" in plain
    assert "R's L2 toward the FM" not in text, "a model without R has no pull on it"
    pulled = presets.recipe({**preset, "hp": {"dim": 8, "rank": 1, "r_l2": 0.013}})
    assert "R's L2 toward the FM 0.013" in pulled, "an FwFM's or a DPLR's λ_R is part of its recipe"


# ---- the pruned FwFM's fine-tune ---------------------------------------------------------------
def trained_fwfm(split):
    torch.manual_seed(0)
    model = build_model("fwfm", split.schema, dim=3, r_l2=1e-3)
    return fit(model, split.train, split.valid, TrainConfig(epochs=3, lr=0.02, seed=0))


def test_a_fine_tune_continues_adams_state(small_split):
    run = trained_fwfm(small_split)
    steps = int(run.optimizer_state["embedding.weight"][2])
    assert steps == len(run.history) * -(-len(small_split.train) // 1024)
    keep = budget(small_split.schema.num_fields, 1)
    pruned = pruned_fwfm(run.model, keep)
    assert pruned.r_l2 == run.model.r_l2, "the pruned copy keeps the FwFM's own hyperparameters"
    state = pruned_moments(run.optimizer_state, run.model, keep)
    tuned = fit(pruned, small_split.train, small_split.valid, TrainConfig(epochs=2, lr=0.02, seed=0), resume=state)
    assert int(tuned.optimizer_state["embedding.weight"][2]) == steps + len(tuned.history) * 3, "steps continue"
    R = interaction_matrix(tuned.model)
    pruned_entries = interaction_matrix(run.model).copy()
    pruned_entries[np.abs(R) > 0] = 0
    assert np.count_nonzero(np.triu(R, 1)) <= keep, "pruned entries stay exactly zero"
    m, v, _ = state["r_upper"]
    assert (m == 0).sum() >= m.numel() - keep and (v == 0).sum() >= v.numel() - keep


def test_a_fine_tune_that_only_hurts_keeps_the_pruned_weights(small_split):
    """The pruned weights are epoch 0 of the fine-tune: with a learning rate that can only
    damage them, fit returns them unchanged instead of the damaged ones."""
    run = trained_fwfm(small_split)
    keep = budget(small_split.schema.num_fields, 2)
    pruned = pruned_fwfm(run.model, keep)
    before = {k: v.clone() for k, v in pruned.state_dict().items()}
    state = pruned_moments(run.optimizer_state, run.model, keep)
    tuned = fit(pruned, small_split.train, small_split.valid, TrainConfig(epochs=2, lr=5.0, seed=0), resume=state)
    for k, v in tuned.model.state_dict().items():
        torch.testing.assert_close(v, before[k], msg=k)
    fresh = fit(pruned_fwfm(run.model, keep), small_split.train, small_split.valid, TrainConfig(epochs=2, lr=5.0))
    assert fresh.metrics["valid"]["rmse"] > tuned.metrics["valid"]["rmse"], "a new fit is free to do worse"


def test_dplr_reads_each_protocols_presets(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path))
    assert dplr_experiment.table_name("ml-100k", "rating") == "dplr_ml-100k_rating.csv"
    assert dplr_experiment.table_name("ml-100k", "rating", "dplr-paper") == "dplr_ml-100k_rating_dplr-paper.csv"
    with pytest.raises(ValueError, match=r"dplr-paper/ml-100k/fm-8.json"):
        dplr_experiment.load_presets("ml-100k", "rating", 8, [1], "dplr-paper")
