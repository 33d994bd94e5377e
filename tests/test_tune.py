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
    assert set(params) == {"lr", "weight_decay", "dim", "average_from", "linear_decay"}, (
        "no field_decay: no such fields"
    )
    assert value == study.best_value
    assert len(tune.finished(study)) == 3
    again = _study(tmp_path)  # resumed from its file: only the missing trials run
    tune.tune("fm", small_split, 4, base, {}, again, progress=False)
    assert len(tune.finished(again)) == 4


def test_median_pruner_stops_a_bad_trial(tmp_path, small_split):
    study = _study(tmp_path)
    base = TrainConfig(epochs=8, patience=8)
    for _ in range(8):  # good trials first (the pruner waits for 8), so the median is low
        study.enqueue_trial({"lr": 2e-2, "weight_decay": 1e-6, "dim": 8})
    study.enqueue_trial({"lr": 1e-3, "weight_decay": 3e-2, "dim": 8})  # barely moves
    tune.tune("fm", small_split, 9, base, {}, study, progress=False)
    assert len(study.trials[-1].intermediate_values) < 8  # stopped after its warm-up, before the budget
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
    preset = tune.make_preset("dplr", "synthetic", "2", base, {"rank": 2, "dim": 4}, params, value, study, 1, "cmd", 2)
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
    with pytest.raises(ValueError, match=r"tune --model fm --dataset synthetic --rank 8 --task click --trials 30"):
        presets.load("synthetic", "fm", 8, "click", root=tmp_path)
    (tmp_path / "synthetic" / "fwfm.json").write_text("{")
    with pytest.raises(ValueError, match="corrupt"):
        presets.load("synthetic", "fwfm", root=tmp_path)


def _cli(args, capsys):
    from fmlib.cli import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_tunes_writes_preset_resumes_and_train_uses_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "8", "--trials", "2", "--epochs", "1"]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    path = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    assert result["preset"] == str(path) and result["finished_trials"] == 2
    preset = json.loads(path.read_text())
    assert preset["hp"] == {"dim": 8} and "--rank 8" in preset["tuning"]["command"]
    code, out, _ = _cli([*args[:6], "3", *args[7:]], capsys)  # resumes: one more trial
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["finished_trials"] == 3
    code, out, _ = _cli(["train", "--model", "fm", "--dim", "8", "--preset", "tuned", "--seed", "1"], capsys)
    assert code == 0
    config = json.loads(out)["config"]
    assert config["train"]["lr"] == json.loads(path.read_text())["train"]["lr"] and config["train"]["seed"] == 1


def test_cli_bad_input_is_one_line_and_keeps_the_good_preset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    good = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    good.parent.mkdir(parents=True)
    good.write_text(json.dumps({"model": "fwfm", "dataset": "ml-100k", "task": "rating"}))
    code, _, err = _cli(["train", "--model", "fm", "--dim", "8", "--preset", "tuned"], capsys)
    assert code == 2 and "corrupt" in err and len(err.strip().splitlines()) == 1
    before = good.read_text()
    study = tmp_path / "runs" / ".studies" / "ml-100k" / "fm-8-seed0.sqlite3"
    study.parent.mkdir(parents=True)
    study.write_bytes(b"garbage" * 200)
    code, _, err = _cli(["tune", "--model", "fm", "--rank", "8", "--trials", "2"], capsys)
    assert code == 2 and "corrupt" in err and len(err.strip().splitlines()) == 1
    assert good.read_text() == before
    for args, message in [
        (["tune", "--model", "fm", "--trials", "0"], "--trials"),
        (["tune", "--model", "fm", "--dim", "8", "--trials", "1"], "--dim applies to dplr only"),
        (["tune", "--model", "fm", "--ranks", "8,32", "--trials", "1"], "--ranks does not apply"),
        (["train", "--model", "fm", "--preset", "best"], "--preset"),
        (["train", "--model", "dplr", "--rank", "3", "--preset", "tuned"], "no tuned preset dplr-3"),
    ]:
        code, _, err = _cli(args, capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (args, err)


def test_cli_keeps_a_preset_that_records_a_better_validation_score(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "8", "--trials", "1", "--epochs", "1"]
    code, out, _ = _cli(args, capsys)
    path = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["written"]
    better = json.loads(path.read_text())
    better["tuning"]["best_valid_rmse"] = 0.5
    path.write_text(json.dumps(better))
    code, out, err = _cli([*args[:6], "2", *args[7:]], capsys)
    assert code == 0 and not json.loads(out.strip().splitlines()[-1])["written"]
    assert "kept" in err and "0.5" in err and json.loads(path.read_text()) == better


def test_the_feature_set_is_drawn_per_trial_from_the_given_sets(tmp_path, small_split):
    from fmlib.data.features import with_features

    sets = {text: with_features(small_split, text) for text in ("all", "f0,f1")}
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    params, _ = tune.tune("fm", sets, 6, TrainConfig(epochs=1, patience=1), {"dim": 3}, study, progress=False)
    drawn = {t.params["features"] for t in tune.finished(study)}
    assert drawn == set(sets) and params["features"] in sets


def test_cli_draws_the_feature_set_and_files_the_preset_under_the_one_drawn(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    sets = ["user_id,movie_id", "user_id,movie_id,rated"]
    args = ["tune", "--model", "rafm", "--draw-features", *sets, "--trials", "2", "--epochs", "1"]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    path = json.loads(out.strip().splitlines()[-1])["preset"]
    preset = json.loads(open(path).read())
    assert preset["features"] in sets and path.endswith(
        f"features-{preset['features'].replace(',', '+')}/ml-100k/rafm.json"
    )
    assert (
        preset["tuning"]["space"]["features"] == sets
        and "--draw-features user_id,movie_id" in preset["tuning"]["command"]
    )
    code, _, err = _cli([*args, "--features", "all"], capsys)
    assert code == 2 and "--draw-features takes distinct sets" in err


def test_available_presets_by_model_and_task(tmp_path):
    for stem in ("fm", "fm-8", "fm-32", "fm-8-click", "fmx", "fwfm-8"):
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "d" / f"{stem}.json").write_text("{}")
    assert presets.available("d", "fm", root=tmp_path) == ["fm", "fm-32", "fm-8"]
    assert presets.available("d", "fm", "click", root=tmp_path) == ["fm-8-click"]
    assert presets.available("d", "dplr", root=tmp_path) == []
