import json

import optuna
import pytest

from fmlib import presets
from fmlib.experiments import tune
from fmlib.models import hyperparameters
from fmlib.train import TrainConfig


def _study(tmp_path, name="fm-seed0", settings=None):
    return tune.open_study(tmp_path / f"{name}.sqlite3", name, 0, settings or {"epochs": 3})


def test_every_search_space_names_real_hyperparameters():
    for model, space in tune.SEARCH_SPACES.items():
        model_keys = set(space) - set(tune.TRAIN_PARAMS)
        assert model_keys <= set(hyperparameters(model)), model


def test_fixed_size_leaves_the_space():
    assert "dim" not in tune.search_space("fm", {"dim": 32})
    assert "dim" in tune.search_space("dplr", {"rank": 2})


def test_study_finds_a_config_and_resumes(tmp_path, small_split):
    base = TrainConfig(epochs=3, patience=2)
    study = _study(tmp_path)
    params, value = tune.tune("fm", small_split, 3, base, {}, study, progress=False)
    assert set(params) == {"lr", "weight_decay", "dim"}
    assert value == study.best_value
    assert len(tune.finished(study)) == 3
    again = _study(tmp_path)  # resumed from its file: only the missing trials run
    tune.tune("fm", small_split, 4, base, {}, again, progress=False)
    assert len(tune.finished(again)) == 4


def test_median_pruner_stops_a_bad_trial(tmp_path, small_split):
    study = _study(tmp_path)
    base = TrainConfig(epochs=6, patience=6)
    for _ in range(6):  # good trials first, so the median is low
        study.enqueue_trial({"lr": 2e-2, "weight_decay": 1e-6, "dim": 8})
    study.enqueue_trial({"lr": 1e-3, "weight_decay": 3e-2, "dim": 8})  # barely moves
    tune.tune("fm", small_split, 7, base, {}, study, progress=False)
    assert study.trials[-1].state == optuna.trial.TrialState.PRUNED


def test_other_settings_and_corrupt_database_are_refused(tmp_path):
    _study(tmp_path, settings={"epochs": 3})
    with pytest.raises(ValueError, match="other settings"):
        _study(tmp_path, settings={"epochs": 5})
    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match="corrupt"):
        tune.open_study(bad, "bad", 0, {})


def test_preset_round_trip_and_mismatch(tmp_path, small_split):
    base = TrainConfig(epochs=2, patience=2)
    study = _study(tmp_path)
    params, value = tune.tune("dplr", small_split, 2, base, {"rank": 2, "dim": 4}, study, progress=False)
    preset = tune.make_preset("dplr", "synthetic", "2", base, {"rank": 2, "dim": 4}, params, value, study, 1, "cmd")
    path = presets.save(preset, presets.preset_path("synthetic", "dplr", 2, root=tmp_path))
    assert path.name == "dplr-2.json"
    loaded = presets.load("synthetic", "dplr", 2, root=tmp_path)
    assert presets.hyperparameters(loaded) == {"rank": 2, "dim": 4}
    assert presets.train_config(loaded, seed=3).lr == params["lr"]
    wrong = tmp_path / "synthetic" / "fm.json"
    wrong.write_text(json.dumps(preset))  # a DPLR preset under FM's name
    with pytest.raises(ValueError, match="tuned for model 'dplr'"):
        presets.load("synthetic", "fm", root=tmp_path)
    with pytest.raises(ValueError, match="no tuned preset fwfm on synthetic"):
        presets.load("synthetic", "fwfm", root=tmp_path)
    (tmp_path / "synthetic" / "fwfm.json").write_text("{")
    with pytest.raises(ValueError, match="corrupt"):
        presets.load("synthetic", "fwfm", root=tmp_path)
