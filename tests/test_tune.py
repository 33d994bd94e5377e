import json
from dataclasses import asdict, replace

import optuna
import pytest
import torch

from fmlib import presets
from fmlib.data import load, split
from fmlib.experiments import convergence, search_space, tune
from fmlib.models import hyperparameters
from fmlib.train import TrainConfig


def _study(tmp_path, name="fm-seed0", settings=None):
    return tune.open_study(str(tmp_path / f"{name}.journal"), name, 0, settings or {"epochs": 3})


def test_every_search_space_names_real_hyperparameters():
    for model, space in search_space.SEARCH_SPACES.items():
        model_keys = set(space) - set(search_space.TRAIN_PARAMS)
        assert model_keys <= set(hyperparameters(model)), model


def test_fixed_size_leaves_the_space():
    assert "dim" not in search_space.search_space("fm", {"dim": 32})
    assert "dim" in search_space.search_space("dplr", {"rank": 2})


def test_study_finds_a_config_and_resumes(tmp_path, small_split):
    base = TrainConfig(epochs=3, patience=2)
    study = _study(tmp_path)
    params, value = tune.tune("fm", small_split, 3, base, {}, study, progress=False)
    assert set(params) == {"lr", "weight_decay", "dim", "average_from", "linear_decay"}, "no field_l2: no such fields"
    assert value == study.best_value
    assert len(tune.finished(study)) == 3
    again = _study(tmp_path)  # resumed from its file: only the missing trials run
    tune.tune("fm", small_split, 4, base, {}, again, progress=False)
    assert len(tune.finished(again)) == 4


def test_a_best_seed_is_named_by_the_trial_even_when_the_presets_have_changed_since(tmp_path, small_split):
    base, seed = TrainConfig(epochs=1, patience=1), {"lr": 2e-2, "weight_decay": 1e-6, "dim": 8}
    study = _study(tmp_path)
    tune.seed_study(study, {"fm-8": seed})
    tune.tune("fm", small_split, 1, base, {}, study, progress=False)
    assert tune.seed_of(tune.best_trial(study, 1), {}) == "fm-8", "named by its trial, whatever the seed points are now"
    older = _study(tmp_path, "older-seed0")
    older.enqueue_trial(seed)  # as seed_study did before trials recorded their seed's name
    tune.tune("fm", small_split, 1, base, {}, older, progress=False)
    assert tune.seed_of(tune.best_trial(older, 1), {"fm-8": seed}) == "fm-8", "named by the seed point with its recipe"
    assert tune.seed_of(tune.best_trial(older, 1), {}) == "a recipe seeded when the study began"
    drawn = _study(tmp_path, "drawn-seed0")
    tune.tune("fm", small_split, 1, base, {}, drawn, progress=False)
    assert tune.seed_of(tune.best_trial(drawn, 1), {"fm-8": seed}) is None, "the sampler drew it"
    assert tune.seeds_of(study, {}) == {"fm-8": seed}, "a study's seeds, by the names its trials recorded"
    assert tune.seeds_of(older, {"fm-8": seed}) == {"fm-8": seed}, "an older journal's: by the point with its recipe"
    assert tune.seeds_of(older, {}) == {"trial 0's seed": seed} and tune.seeds_of(drawn, {}) == {}


def test_a_trial_left_running_by_a_dead_worker_is_failed_and_a_seed_queued_again(tmp_path, small_split):
    import os
    import socket
    import subprocess

    import optuna

    study = _study(tmp_path)
    tune.tune("fm", small_split, 1, TrainConfig(epochs=1, patience=1), {}, study, progress=False)
    assert study.trials[0].user_attrs["worker"] == tune.worker_tag(), "each trial names its worker"
    proc = subprocess.Popen(["true"])
    proc.wait()  # a process of this machine that has exited
    seed = {"lr": 2e-2, "weight_decay": 1e-6, "dim": 8}
    study.enqueue_trial(seed)
    host = socket.gethostname()
    tags = [
        f"{host}:{proc.pid}",  # dead, as an older journal names its worker
        f"{tune.this_boot()}:{proc.pid}",  # dead
        f"{host}/an-earlier-boot:{os.getpid()}",  # a process id that runs now, but this one ran before a restart
        tune.worker_tag(),  # alive
        f"another-machine:{proc.pid}",
        f"another-machine/{tune.this_boot().partition('/')[2]}:{proc.pid}",
        None,
    ]
    running = []
    for tag in tags:
        trial = study.ask()
        if tag:
            trial.set_user_attr("worker", tag)
        running.append(trial.number)
    assert tune.fail_orphans(study) == running[:3], "only the dead workers of this machine, this start or an earlier"
    states = {t.number: t.state for t in study.trials}
    assert all(states[n] == optuna.trial.TrialState.FAIL for n in running[:3])
    assert all(states[n] == optuna.trial.TrialState.RUNNING for n in running[3:]), "live, elsewhere, untagged"
    waiting = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in waiting] == [seed], "the seed it held, queued again"
    assert tune.fail_orphans(study) == [], "once"


WORKER = """
import sys, time
from fmlib.experiments import tune

def child(ready):
    tune.exit_with_parent()
    open(ready, "w").close()
    time.sleep(600)
"""

TUNING = """
import multiprocessing, os, pathlib, signal, sys, time
import worker

if __name__ == "__main__":
    ready = pathlib.Path(sys.argv[1])
    proc = multiprocessing.get_context("spawn").Process(target=worker.child, args=(str(ready),))
    proc.start()
    print(proc.pid, flush=True)
    while not ready.exists():
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)  # a tuning killed hard: no handler of its own runs
"""


def _ended(pid: int) -> bool:
    """The process ``pid`` has exited (a zombie left for init to reap counts)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_worker_ends_with_the_tuning_that_started_it(tmp_path):
    """A worker (``work``) whose tuning was killed stops drawing trials: it ends with its parent, however the
    parent ended."""
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "tuning.py").write_text(TUNING)
    args = [sys.executable, str(tmp_path / "tuning.py"), str(tmp_path / "ready")]
    with subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, text=True) as tuning:
        pid = int(tuning.stdout.readline())  # not read to its end: the worker holds the pipe while it runs
        tuning.wait(timeout=300)
    assert (tmp_path / "ready").exists(), "the worker started its watch before the tuning was killed"
    deadline = time.monotonic() + 120  # a state, waited for: the worker's watch sees its parent gone
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    ended = _ended(pid)
    if not ended:
        os.kill(pid, signal.SIGKILL)  # leave no worker behind a failed test
    assert ended, "the worker outlived its tuning"


def test_a_studys_own_best_leaves_out_its_seeded_recipe(tmp_path, small_split):
    study = _study(tmp_path)
    study.enqueue_trial({"lr": 2e-2, "weight_decay": 1e-6, "dim": 8})  # a seed (``seed_study``)
    tune.tune("fm", small_split, 3, TrainConfig(epochs=2, patience=2), {}, study, progress=False)
    assert tune.best_drawn(study, 3) == min(t.value for t in study.trials[1:3]), "the sampler's two trials"
    assert tune.best_drawn(study, 1) is None, "the seed alone"
    line = convergence.convergence_line(
        {
            "tuning": {
                "best_valid_rmse": 0.9,
                "tolerance": 0.002,
                "converged": True,
                "studies": [
                    {"study": "s", "best_valid_rmse": 0.9, "best_is_seed": "fm-8", "best_drawn_valid_rmse": 0.91}
                ],
            }
        }
    )
    assert "best is the recipe of fm-8 (its own draws' best: 0.91000)" in line


def test_median_pruner_stops_a_bad_trial(tmp_path, small_split):
    study = _study(tmp_path)
    base = TrainConfig(epochs=8, patience=8)
    for _ in range(8):  # good trials first (the pruner waits for 8), so the median is low
        study.enqueue_trial({"lr": 2e-2, "weight_decay": 1e-6, "dim": 8})
    study.enqueue_trial({"lr": 1e-3, "weight_decay": 3e-2, "dim": 8})  # barely moves
    tune.tune("fm", small_split, 9, base, {}, study, progress=False)
    assert len(study.trials[-1].intermediate_values) < 8  # stopped after its warm-up, before the budget
    assert study.trials[-1].state == optuna.trial.TrialState.PRUNED


def test_without_the_pruner_the_same_bad_trial_runs_to_its_early_stop(tmp_path, small_split):
    study = _study(tmp_path, settings={"prune": False})
    base = TrainConfig(epochs=8, patience=8)
    for _ in range(8):
        study.enqueue_trial({"lr": 2e-2, "weight_decay": 1e-6, "dim": 8})
    study.enqueue_trial({"lr": 1e-3, "weight_decay": 3e-2, "dim": 8})
    tune.tune("fm", small_split, 9, base, {}, study, progress=False)
    assert study.trials[-1].state == optuna.trial.TrialState.COMPLETE
    assert len(study.trials[-1].intermediate_values) == 8


def test_other_settings_and_corrupt_database_are_refused(tmp_path):
    _study(tmp_path, settings={"epochs": 3})
    with pytest.raises(ValueError, match="other settings"):
        _study(tmp_path, settings={"epochs": 5})
    bad = tmp_path / "bad.journal"
    bad.write_bytes(b"this is not a journal" * 100)
    with pytest.raises(ValueError, match="corrupt"):
        tune.open_study(str(bad), "bad", 0, {})


def test_preset_round_trip_and_mismatch(tmp_path, small_split):
    base = TrainConfig(epochs=2, patience=2)
    study = _study(tmp_path)
    params, value = tune.tune("dplr", small_split, 2, base, {"rank": 2, "dim": 4}, study, progress=False)
    studies = [{"study": "s", "sampler_seed": 0, "finished_trials": 2, "best_valid_rmse": value, "epochs": 2}]
    settings = {"space": search_space.stored(search_space.search_space("dplr", {"rank": 2, "dim": 4}))}
    fixed = {"rank": 2, "dim": 4}
    preset = convergence.make_preset("dplr", "synthetic", "2", base, fixed, params, value, studies, 1, "cmd", settings)
    path = presets.save(preset, presets.preset_path("synthetic", "dplr", 2, root=tmp_path))
    assert path.name == "dplr-2.json"
    loaded = presets.load("synthetic", "dplr", 2, root=tmp_path)
    assert presets.hyperparameters(loaded) == {"rank": 2, "dim": 4, "r_l2": params["r_l2"]}
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


@pytest.mark.usefixtures("movielens_sample")
def test_the_time_left_is_the_pace_so_far_times_the_trials_left():
    assert tune.time_left(600.0, 4, 8) == "about 20 min left at this run's pace"  # 150 s a trial
    assert tune.time_left(600.0, 2, 30) == "about 2 h 30 min left at this run's pace"
    assert tune.time_left(10.0, 2, 1) == "under a minute left at this run's pace"
    assert tune.time_left(0.0, 0, 5) == "" and tune.time_left(60.0, 3, 0) == ""  # no pace yet; nothing left


def test_cli_tunes_writes_preset_resumes_and_train_uses_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "8", "--trials", "2", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    path = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    assert result["preset"] == "presets/ml-100k/fm-8.json" and result["finished_trials"] == 2
    preset = json.loads(path.read_text())
    assert preset["hp"] == {"dim": 8} and "--rank 8" in preset["tuning"]["command"]
    assert len(preset["tuning"]["by_seed"]["valid_rmse"]) == 2  # --seeds 2
    first, last = [line for line in err.splitlines() if ": trial " in line]
    assert "trial 1/2" in first and first.endswith("left at this run's pace"), first
    assert "trial 2/2" in last and "left" not in last, last  # none left
    code, out, _ = _cli([*args[:6], "3", *args[7:]], capsys)  # resumes: one more trial
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["finished_trials"] == 3
    code, out, _ = _cli(["train", "--model", "fm", "--dim", "8", "--preset", "tuned", "--seed", "1"], capsys)
    assert code == 0
    config = json.loads(out)["config"]
    assert config["train"]["lr"] == json.loads(path.read_text())["train"]["lr"] and config["train"]["seed"] == 1


@pytest.mark.usefixtures("movielens_sample")
def test_cli_a_resumed_tuning_whose_best_is_the_preset_keeps_its_scores(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "8", "--trials", "2", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, _, err = _cli(args, capsys)
    assert code == 0 and "training the chosen recipe" in err
    path = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    scores = json.loads(path.read_text())["tuning"]["by_seed"]

    def refused(*_):
        raise AssertionError("the recipe was trained again")

    monkeypatch.setattr(tune, "recipe_scores", refused)
    code, _, err = _cli(args, capsys)  # resumed: no trial to run, the same best
    assert code == 0, err
    assert "fm-8 (the preset it replaces)'s: its scores at seeds 0-1 are known, not trained again" in err
    assert json.loads(path.read_text())["tuning"]["by_seed"] == scores
    preset = json.loads(path.read_text())
    contained, settings = {"fm-8": preset}, preset["tuning"]["settings"]
    config, hp = presets.train_config(preset), presets.hyperparameters(preset)
    assert tune.known_scores(contained, "fm", hp, config, "all", settings, "valid_rmse", 2) == (
        "fm-8",
        scores["valid_rmse"],
    )
    other = replace(config, lr=config.lr * 2)
    assert tune.known_scores(contained, "fm", hp, other, "all", settings, "valid_rmse", 2) is None, "another recipe"
    assert tune.known_scores(contained, "fm", {"dim": 4}, config, "all", settings, "valid_rmse", 2) is None
    assert tune.known_scores(contained, "fm", hp, config, "all", settings, "valid_rmse", 3) is None, "other seeds"


def test_cli_bad_input_is_one_line_and_keeps_the_good_preset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    good = tmp_path / "presets" / "ml-100k" / "fm-8.json"
    good.parent.mkdir(parents=True)
    good.write_text(json.dumps({"model": "fwfm", "dataset": "ml-100k", "task": "rating"}))
    code, _, err = _cli(["train", "--model", "fm", "--dim", "8", "--preset", "tuned"], capsys)
    assert code == 2 and "corrupt" in err and len(err.strip().splitlines()) == 1
    before = good.read_text()
    study = tmp_path / "runs" / ".studies" / "ml-100k" / "fm-8-seed0.journal"
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


@pytest.mark.usefixtures("movielens_sample")
def test_cli_keeps_a_preset_that_records_a_better_validation_score(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "8", "--trials", "1", "--epochs", "1", "--studies", "1", "--seeds", "2"]
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


@pytest.mark.usefixtures("movielens_sample")
def test_cli_draws_the_feature_set_and_files_the_preset_under_the_one_drawn(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    sets = ["user_id,movie_id", "user_id,movie_id,rated"]
    args = ["tune", "--model", "rafm", "--draw-features", *sets, "--trials", "2", "--epochs", "1", "--studies", "1"]
    args += ["--seeds", "2"]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    path = json.loads(out.strip().splitlines()[-1])["preset"]  # named from the folder that holds the presets
    preset = json.loads((tmp_path / path).read_text())
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


def _preset(root, model, rank, hp, tuning=None, **train):
    """A minimal preset file as ``tune`` writes it, for the seeding tests."""
    preset = {
        "model": model,
        "dataset": "ml-100k",
        "task": "rating",
        "rank": str(rank),
        "hp": hp,
        "train": {"lr": 0.01, "weight_decay": 1e-4, "batch_size": 1024, "epochs": 200, "patience": 3, **train},
        "min_count": 1,
        "tuning": tuning or {},
    }
    presets.save(preset, presets.preset_path("ml-100k", model, rank, root=root))


def test_a_study_is_seeded_with_the_recipes_of_the_models_it_contains(tmp_path):
    _preset(tmp_path, "fm", 8, {"dim": 8}, average_from=3, linear_decay=0.5, field_decay={"user_id": 2.0})
    _preset(tmp_path, "fm", 32, {"dim": 32})
    for rank in (1, 2, 3):
        _preset(tmp_path, "dplr", rank, {"dim": 8, "rank": rank}, lr=0.02)
    _preset(tmp_path, "dplr", 4, {"dim": 8, "rank": 4}, lr=0.9)  # an lr the space cannot draw

    def seeds(model, fixed):
        contained = convergence.contained_presets(model, fixed, "ml-100k", "rating", tmp_path)
        return convergence.seed_points(model, contained, search_space.search_space(model, fixed))

    fwfm = seeds("fwfm", {"dim": 8})
    assert sorted(fwfm) == ["dplr-1", "dplr-2", "dplr-3", "dplr-4", "fm-8"], "not FM(32): larger than k = 8"
    assert fwfm["fm-8"] == {
        "lr": 0.01,
        "weight_decay": 1e-4,
        "average_from": 3,
        "field_l2.user_id": 2e-4,  # drawn on its own: 2 × the FM's weight_decay 1e-4
        "linear_decay": 0.5,
        "r_l2": 1.0,  # R held at the FM's: the strongest pull of the space
    }
    assert fwfm["dplr-1"]["r_l2"] == 1e-7 and "lr" not in fwfm["dplr-4"]  # R free; lr 0.9 left to the sampler
    dplr = seeds("dplr", {"rank": 3, "dim": 8})
    assert sorted(dplr) == ["dplr-1", "dplr-2", "fm-8"]
    assert dplr["fm-8"]["r_l2"] == 1.0, "a DPLR holds the FM's R = 11ᵀ − I as an FwFM does: the strongest pull"
    assert dplr["dplr-1"]["r_l2"] == 1e-7, "a DPLR preset tuned before r_l2 was drawn: no pull, the space's weakest"
    _preset(tmp_path, "dplr", 2, {"dim": 8, "rank": 2, "r_l2": 0.05}, lr=0.02)
    assert seeds("fwfm", {"dim": 8})["dplr-2"]["r_l2"] == 0.05, "an FwFM at a DPLR's own pull toward the FM"
    assert sorted(seeds("fm", {"dim": 32})) == ["fm-8"] and seeds("fm", {"dim": 8}) == {}
    assert seeds("rfm", {}) == {}


@pytest.mark.usefixtures("movielens_sample")
def test_the_seeded_recipe_is_the_first_trial_of_every_study(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    alike = {"studies": [], "settings": {"seed": 0, "min_count": 1, "task": "rating"}}  # tuned on this split
    good = {"best_valid_rmse": 0.1, "by_seed": {"valid_rmse": [0.1, 0.11]}, **alike}  # too good
    _preset(tmp_path / "presets", "fm", 4, {"dim": 4}, good, lr=0.02)
    args = ["tune", "--model", "fwfm", "--rank", "4", "--trials", "2", "--epochs", "1", "--studies", "2"]
    code, out, err = _cli([*args, "--seeds", "2"], capsys)
    assert code == 0, err
    preset = json.loads((tmp_path / "presets" / "ml-100k" / "fwfm-4.json").read_text())
    assert preset["tuning"]["seeded_from"] == ["fm-4"] and len(preset["tuning"]["by_seed"]["valid_rmse"]) == 2
    assert list(preset["tuning"]["better_inside"]) == ["fm-4"] and not preset["tuning"]["converged"]
    assert "not converged:" in err and "(or the preset it replaces) validate better over 2 seeds: fm-4 by " in err
    storage = str(tmp_path / "runs" / ".studies" / "ml-100k" / "fwfm-4-seed0.journal")
    for s in (0, 1):
        study = optuna.load_study(study_name=f"fwfm-4-seed0-sampler{s}", storage=tune.storage_of(storage))
        assert study.trials[0].params["lr"] == 0.02 and study.trials[0].params["r_l2"] == 1.0


@pytest.mark.usefixtures("movielens_sample")
def test_a_tuning_starts_from_the_preset_it_replaces_and_is_not_converged_while_that_validates_better(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    alike = {"studies": [], "settings": {"seed": 0, "min_count": 1, "task": "rating"}}
    earlier = {"best_valid_rmse": 0.1, "by_seed": {"valid_rmse": [0.1, 0.11]}, **alike}  # better than any new recipe
    _preset(tmp_path / "presets", "fm", 4, {"dim": 4}, earlier, lr=0.02, field_decay={"user_id": 3.0})
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, _, err = _cli(args, capsys)
    assert code == 0, err
    tuning = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    replaced = "fm-4" + convergence.PREVIOUS
    assert tuning["seeded_from"] == [replaced] and list(tuning["better_inside"]) == [replaced]
    assert not tuning["converged"] and f"validate better over 2 seeds: {replaced} by " in err
    assert tuning["studies"][0]["best_is_seed"] == replaced, "its one trial is the seeded recipe"
    assert f"fm-4-seed0-sampler0's best is the recipe of {replaced}" in err
    storage = tune.storage_of(str(tmp_path / "runs" / ".studies" / "ml-100k" / "fm-4-seed0.journal"))
    first = optuna.load_study(study_name="fm-4-seed0-sampler0", storage=storage).trials[0].params
    assert (first["lr"], first["field_l2.user_id"]) == (0.02, pytest.approx(3e-4)), "its recipe, in the space's terms"


@pytest.mark.usefixtures("movielens_sample")
def test_a_study_added_later_starts_from_its_first_studys_seeds_not_from_the_preset_written_since(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    alike = {"studies": [], "settings": {"seed": 0, "min_count": 1, "task": "rating"}}
    _preset(tmp_path / "presets", "fm", 4, {"dim": 4}, alike, lr=0.02)
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "1", "--seeds", "2", "--studies"]
    assert _cli([*args, "1"], capsys)[0] == 0
    _preset(tmp_path / "presets", "fm", 4, {"dim": 4}, alike, lr=0.05)  # as if that tuning had chosen lr 0.05
    code, _, err = _cli([*args, "2"], capsys)
    assert code == 0, err
    storage = tune.storage_of(str(tmp_path / "runs" / ".studies" / "ml-100k" / "fm-4-seed0.journal"))
    firsts = [optuna.load_study(study_name=f"fm-4-seed0-sampler{s}", storage=storage).trials[0] for s in (0, 1)]
    assert [t.params["lr"] for t in firsts] == [0.02, 0.02], "the second study's seed is the first study's"
    assert firsts[1].user_attrs["seed"] == "fm-4" + convergence.PREVIOUS


@pytest.mark.usefixtures("movielens_sample")
def test_a_replaced_preset_without_scores_at_the_seeds_is_scored_and_compared(tmp_path, monkeypatch, capsys):
    """A preset tuned before presets recorded their scores at seeds 0-9 (RaFM(8, 32) on ml-100k, where a tuning
    reported "not compared"): the tuning trains its recipe at the same seeds, so the comparison is made."""
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    alike = {"studies": [], "settings": {"seed": 0, "min_count": 1, "task": "rating"}, "best_valid_rmse": 0.95}
    _preset(tmp_path / "presets", "fm", 4, {"dim": 4}, alike, lr=0.02, epochs=1)
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, _, err = _cli(args, capsys)
    replaced = "fm-4" + convergence.PREVIOUS
    assert code == 0 and f"training {replaced}'s recipe at seeds 0-1 too" in err, err
    tuning = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    assert tuning["studies"][0]["best_is_seed"] == replaced, "its one trial is the seeded recipe"
    assert tuning["better_inside"] == {} and "not compared" not in err, "the same recipe, scored alike: no better"


@pytest.mark.usefixtures("movielens_sample")
def test_two_studies_record_both_bests_and_whether_they_agree(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "2", "--epochs", "2", "--studies", "2", "--seeds", "2"]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    tuning = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    bests = [s["best_valid_rmse"] for s in tuning["studies"]]
    assert [s["sampler_seed"] for s in tuning["studies"]] == [0, 1] and result["studies"] == tuning["studies"]
    assert tuning["best_valid_rmse"] == min(bests) and all(1 <= s["epochs"] <= 2 for s in tuning["studies"])
    assert tuning["converged"] == (max(bests) - min(bests) <= convergence.TOLERANCE)  # two studies: the best matched
    assert ("converged:" if tuning["converged"] else "not converged:") in err
    assert tuning["settings"]["epochs"] == 2 and "2 studies × 2 Optuna trials" in tuning["recipe"]


@pytest.mark.usefixtures("movielens_sample")
def test_a_trial_scored_at_several_seeds_is_their_mean_and_the_preset_says_so(
    tmp_path, small_split, monkeypatch, capsys
):
    base = TrainConfig(epochs=2, patience=2)
    study = _study(tmp_path)
    tune.tune("fm", small_split, 1, base, {}, study, progress=False, trial_seeds=3)
    [trial] = study.trials
    scores = trial.user_attrs["seed_scores"]
    train, hp = search_space.split_params("fm", search_space.nested(trial.params), {})
    alone = tune.seed_scores("fm", small_split, hp, TrainConfig(**{**asdict(base), **train}), 3)  # seeds 0, 1, 2
    assert len(set(scores)) == 3, "three seeds, three different runs"
    assert scores == pytest.approx(alone, abs=1e-5) and trial.value == pytest.approx(sum(scores) / 3)
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, _, err = _cli([*args, "--trial-seeds", "2", "--runs-dir", str(tmp_path / "cli")], capsys)
    assert code == 0, err
    tuning = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    assert tuning["settings"]["trial_seeds"] == 2 and tuning["command"].endswith("--trial-seeds 2")
    assert "prune" not in tuning["settings"], "a pruned tuning records the settings of the studies made before"
    code, _, err = _cli([*args, "--no-prune", "--runs-dir", str(tmp_path / "unpruned")], capsys)
    tuning = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    assert code == 0 and tuning["settings"]["prune"] is False and tuning["command"].endswith("--no-prune"), err


def test_workers_share_one_study(tmp_path, monkeypatch, capsys):
    """On the whole of MovieLens 100K: a spawned worker loads the data set itself (``movielens_sample`` patches
    this process's loader only)."""
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "3", "--epochs", "1", "--studies", "1", "--seeds", "2"]
    code, out, err = _cli([*args, "--workers", "2"], capsys)
    assert code == 0, err
    storage = tune.storage_of(str(tmp_path / "runs" / ".studies" / "ml-100k" / "fm-4-seed0.journal"))
    study = optuna.load_study(study_name="fm-4-seed0-sampler0", storage=storage)
    assert len(tune.finished(study)) >= 3  # a worker may finish its trial after the other reached 3
    assert len({tuple(sorted(t.params.items())) for t in study.trials}) == len(study.trials)  # no replayed point
    preset = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker trains
    try:
        data = split(load("ml-100k"), seed=0, min_count=preset["min_count"])
        alone = tune.seed_scores("fm", data, presets.hyperparameters(preset), presets.train_config(preset), 2)
    finally:
        torch.set_num_threads(threads)
    assert preset["tuning"]["by_seed"]["valid_rmse"] == alone, "the two workers scored the seeds as one process does"
    path = tmp_path / "presets" / "ml-100k" / "fm-4.json"
    assert _cli(["rescore", str(path), "--seeds", "2", "--workers", "2"], capsys)[0] == 0
    assert json.loads(path.read_text())["tuning"]["by_seed"]["valid_rmse"] == alone, "rescore spreads them alike"


def test_bad_workers_and_storage_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    base = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "1"]
    for extra, message in [
        (["--workers", "0"], "--workers"),
        (["--storage", "postgresql://user:secret@127.0.0.1:9/db"], "cannot open the study storage"),
        (["--storage", "nosuch://host/db"], "cannot open the study storage"),
    ]:
        code, _, err = _cli([*base, *extra], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (extra, err)
        assert "secret" not in err
    assert not (tmp_path / "presets").exists()


def test_the_convergence_line_says_which(tmp_path):
    def line(bests):
        studies = [{"study": f"sampler{s}", "best_valid_rmse": b} for s, b in enumerate(bests)]
        return convergence.convergence_line(
            {
                "tuning": {
                    "best_valid_rmse": min(bests),
                    "studies": studies,
                    "converged": convergence.converged(bests, 0.002, {}, [], []),
                    "tolerance": 0.002,
                }
            }
        )

    assert line([0.9, 0.9015]).startswith("converged: the studies' bests (0.90000, 0.90150) agree within 0.0015")
    assert line([0.9, 0.905]).startswith("not converged: the studies' bests (0.90000, 0.90500) differ by 0.0050")
    assert line([0.905, 0.9, 0.9012]) == (
        "converged: the studies' bests (0.90500, 0.90000, 0.90120) – the best two – agree within 0.0012 <= 0.002; "
        "sampler0 settled in a worse region: one study is not enough"
    )
    assert line([0.905, 0.9, 0.9045]).startswith("not converged: the studies' bests (0.90500, 0.90000, 0.90450) – the")
    tuning = {"best_valid_rmse": 0.9, "studies": [{"best_valid_rmse": 0.9}] * 2, "tolerance": 0.002}
    inside = {"fm-8": [0.003, 0.001, 0.005], "fm-4": None}
    said = convergence.convergence_line(
        {"tuning": {**tuning, "converged": False, "better_inside": inside, "by_seed": {"valid_rmse": [0.9] * 3}}}
    )
    assert (
        "validate better over 3 seeds: fm-8 by 0.00300 [0.00100, 0.00500]" in said and "not compared with fm-4" in said
    )
    assert said.endswith("the studies agree, so more trials are unlikely to help: its recipes do not train it to those")


def test_only_scores_measured_alike_make_a_tuning_unconverged():
    settings = {"seed": 0, "min_count": 1, "task": "rating"}

    def preset(**tuning):
        return {"min_count": 1, "tuning": {"by_seed": {"valid_rmse": [0.80, 0.81, 0.79]}, **tuning}}

    contained = {
        "fm-8": preset(studies=[], settings=settings),
        "other-split": preset(studies=[], settings={**settings, "seed": 1}),
        "by-hand": preset(note="a mean over splits 0-2"),  # no studies: seeds, but is no reference
    }

    def inside(scores):
        return convergence.better_inside(contained, "best_valid_rmse", {"valid_rmse": scores}, settings)

    assert list(inside([0.90, 0.91, 0.90])) == ["fm-8"]
    assert inside([0.90, 0.91, 0.90])["fm-8"][0] == pytest.approx(0.10333, abs=1e-5)  # mean, low, high
    assert inside([0.70, 0.71, 0.70]) == {}
    assert inside([0.70, 0.91]) == {"fm-8": None}, "scored at other seeds than fm-8: not compared, not passed"


def test_a_model_that_validates_worse_on_one_seed_only_is_not_worse():
    """The container's best trial lost to the contained model's at seed 0, but over the seeds the
    difference is noise: not a model that validates worse (as FM(16) against FM(8) on ml-100k)."""
    settings = {"seed": 0, "min_count": 1, "task": "rating"}
    fm8 = {"tuning": {"studies": [], "settings": settings, "by_seed": {"valid_rmse": [0.900, 0.905, 0.903, 0.904]}}}
    ours = {"valid_rmse": [0.902, 0.903, 0.906, 0.901]}
    assert convergence.better_inside({"fm-8": fm8}, "best_valid_rmse", ours, settings) == {}


def test_a_recorded_score_equal_after_rounding_is_not_better(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"tuning": {"best_valid_rmse": 0.90289, "settings": {"epochs": 200}}}))
    assert convergence.recorded_better(path, "best_valid_rmse", 0.902893, {"epochs": 200}) is None  # the same trial
    assert convergence.recorded_better(path, "best_valid_rmse", 0.902899, {"epochs": 200}) == 0.90289


@pytest.mark.usefixtures("movielens_sample")
def test_rescore_trains_each_recipe_at_the_seeds_and_judges_it_against_the_models_it_contains(tmp_path, capsys):
    alike = {
        "settings": {"seed": 0, "min_count": 1, "task": "rating", "epochs": 2},
        "tolerance": convergence.TOLERANCE,
        "best_valid_rmse": 0.95,
    }
    studies = [
        {"study": "s0", "best_valid_rmse": 0.95, "epochs": 1},
        {"study": "s1", "best_valid_rmse": 0.951, "epochs": 1},
    ]
    _preset(tmp_path, "fm", 4, {"dim": 4}, {"studies": studies, **alike}, epochs=2)
    _preset(tmp_path, "fm", 8, {"dim": 8}, {"studies": studies, "converged": True, **alike}, epochs=2, lr=1e-4)
    paths = [presets.preset_path("ml-100k", "fm", k, root=tmp_path) for k in (4, 8)]
    code, out, err = _cli(["rescore", *map(str, paths), "--seeds", "3"], capsys)
    assert code == 0, err
    small, large = (json.loads(p.read_text())["tuning"] for p in paths)
    assert len(small["by_seed"]["valid_rmse"]) == 3 and small["converged"] and small["better_inside"] == {}
    # lr 1e-4 for two epochs barely moves FM(8) from its start: FM(4) validates better on every seed
    assert list(large["better_inside"]) == ["fm-4"] and large["converged"] is False
    assert "fm-8.json: not converged:" in out and "fm-4 by" in out and "[2/2] fm-8.json: 3 seeds" in err
    assert _cli(["rescore", str(tmp_path / "nosuch.json")], capsys)[0] == 2


def test_the_best_matched_by_a_second_study_has_converged_though_a_third_settled_elsewhere():
    assert (
        convergence.runner_up_gap([0.905, 0.9, 0.9012]) == pytest.approx(0.0012)
        and convergence.runner_up_gap([0.9]) == 0
    )
    assert convergence.converged([0.905, 0.9, 0.9012], 0.002, {}, [], []), "two studies found the best"
    assert not convergence.converged([0.905, 0.9, 0.9045], 0.002, {}, [], []), "the best found once"
    assert not convergence.converged([0.9, 0.905], 0.002, {}, [], []), "two studies that disagree"


def test_a_value_at_the_end_of_its_range_is_named_and_the_tuning_has_not_converged():
    space = search_space.stored(search_space.search_space("fm", {"dim": 8}, ["user_id", "movie_id"]))
    inside = {"lr": 0.01, "weight_decay": 1e-4, "average_from": 3, "linear_decay": 0.1}
    inside |= {"field_l2": {"user_id": 1e-4, "movie_id": 1e-3}}
    assert search_space.at_edges(inside, space) == []
    assert search_space.at_edges({**inside, "lr": 0.095, "average_from": 10}, space) == ["lr", "average_from"]
    assert search_space.at_edges({**inside, "lr": 0.00105}, space) == ["lr"], (
        "a learning rate slower still might do better"
    )
    no_l2 = {**inside, "weight_decay": 1.1e-7, "linear_decay": 1e-4, "field_l2": {"user_id": 1e-7, "movie_id": 1e-3}}
    assert search_space.at_edges({**no_l2, "average_from": 1}, space) == [], "the lower end of an L2 is no L2"
    strong = {**inside, "field_l2": {"user_id": 1e-4, "movie_id": 0.09}}
    assert search_space.at_edges(strong, space) == ["field_l2.movie_id"]
    dplr = search_space.stored(search_space.search_space("dplr", {"dim": 8, "rank": 1}, ["user_id", "movie_id"]))
    assert search_space.at_edges({**inside, "r_l2": 1.0}, dplr) == [], "R held at the FM's: the FM, which it contains"
    assert search_space.at_edges({**inside, "r_l2": 1.1e-7}, dplr) == [], "no pull toward the FM"
    assert search_space.at_edges({**inside, "r_l2": 1e-4}, dplr) == [], "inside the range: 1e-4 still pulls a DPLR's R"
    rfm = search_space.stored(search_space.search_space("rfm", {}, ["user_id"]))
    assert search_space.at_edges({**inside, "dim": 16, "dropout": 0.4}, rfm) == [], "a choice has no end"
    studies = [{"study": "s", "sampler_seed": 0, "finished_trials": 1, "best_valid_rmse": 0.9, "epochs": 9}] * 2
    base = TrainConfig(epochs=200)
    preset = convergence.make_preset("fm", "d", "8", base, {"dim": 8}, strong, 0.9, studies, 1, "cmd", {"space": space})
    assert preset["tuning"]["at_edges"] == ["field_l2.movie_id"] and not preset["tuning"]["converged"]
    assert "field_l2.movie_id at the end of the range" in convergence.convergence_line(preset)


def test_a_probe_moves_a_value_past_the_end_it_lies_at_and_an_end_binds_unless_the_probe_validates_worse():
    space = search_space.stored(search_space.search_space("fm", {"dim": 8}, ["user_id", "movie_id"]))
    recipe = {"lr": 0.00105, "weight_decay": 1e-4, "average_from": 10, "linear_decay": 0.1}
    recipe |= {"field_l2": {"user_id": 1e-4, "movie_id": 0.09}}
    assert search_space.past_the_end(recipe, "lr", space)["lr"] == pytest.approx(0.000525), "below the lower end"
    assert search_space.past_the_end(recipe, "average_from", space)["average_from"] == 12
    moved = search_space.past_the_end(recipe, "field_l2.movie_id", space)
    assert (
        moved["field_l2"] == {"user_id": 1e-4, "movie_id": pytest.approx(0.18)}
        and recipe["field_l2"]["movie_id"] == 0.09
    )
    by_seed = {"valid_rmse": [0.90, 0.91, 0.92]}
    worse = {"value": 0.000525, "valid_rmse": [0.901, 0.911, 0.919]}  # worse on the mean, better on one seed
    better = {"value": 0.18, "valid_rmse": [0.899, 0.91, 0.92]}
    probes = {"lr": worse, "field_l2.movie_id": better}
    edges = ["lr", "field_l2.movie_id", "average_from"]
    assert convergence.binding(edges, probes, by_seed["valid_rmse"], "valid_rmse") == [
        "field_l2.movie_id",
        "average_from",
    ], "no probe: it binds"
    assert convergence.binding(
        ["lr"], {"lr": {**worse, "valid_rmse": [0.95]}}, by_seed["valid_rmse"], "valid_rmse"
    ) == ["lr"], "not at the same seeds"
    early = {"study": "s", "sampler_seed": 0, "finished_trials": 1, "best_valid_rmse": 0.9, "epochs": 9}
    args = ("fm", "d", "8", TrainConfig(epochs=200), {"dim": 8}, recipe, 0.9, [early, early], 1, "cmd")
    held = {**recipe, "average_from": 5, "field_l2": {"user_id": 1e-4, "movie_id": 1e-3}}
    preset = convergence.make_preset(*args[:5], held, *args[6:], {"space": space}, None, by_seed["valid_rmse"], probes)
    tuning = preset["tuning"]
    assert tuning["at_edges"] == [] and tuning["converged"] and tuning["edge_probes"] == probes
    line = convergence.convergence_line(preset)
    assert (
        "the best recipe's lr lies at the end of its range, and lr 0.000525 past it validates worse by 0.00033" in line
    )
    assert line.startswith("converged:")
    tuning = convergence.make_preset(*args, {"space": space}, None, by_seed["valid_rmse"], probes)["tuning"]
    assert tuning["at_edges"] == ["field_l2.movie_id", "average_from"] and not tuning["converged"]


@pytest.mark.usefixtures("movielens_sample")
def test_cli_probes_a_best_at_the_end_of_its_range_at_the_recipes_seeds(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    monkeypatch.setitem(search_space.SEARCH_SPACES, "fm", {"lr": (1e-3, 1e-1), "dim": (4,)})
    monkeypatch.setattr(search_space, "EDGE", 0.5)  # every value lies at an end: half the width on each side
    args = ["tune", "--model", "fm", "--rank", "4", "--trials", "1", "--epochs", "2", "--studies", "1", "--seeds", "2"]
    code, _, err = _cli(args, capsys)
    assert code == 0, err
    preset = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())
    tuning, probe = preset["tuning"], preset["tuning"]["edge_probes"]["lr"]
    assert probe["value"] / preset["train"]["lr"] in (pytest.approx(0.5), pytest.approx(2)), "moved past its end"
    assert len(probe["valid_rmse"]) == len(tuning["by_seed"]["valid_rmse"]) == 2
    assert tuning["at_edges"] == convergence.binding(
        ["lr"], tuning["edge_probes"], tuning["by_seed"]["valid_rmse"], "valid_rmse"
    )
    assert "lr lies at the end of its range" in err and "past the end of its range" in err
    code, _, err = _cli(args, capsys)  # resumed, the same best: its probes are read, not trained again
    assert code == 0 and "past the end of its range ..." not in err and "the probes past the ends of its" in err
    again = json.loads((tmp_path / "presets" / "ml-100k" / "fm-4.json").read_text())["tuning"]
    assert again["edge_probes"] == tuning["edge_probes"] and again["at_edges"] == tuning["at_edges"]


def test_rescoring_keeps_a_best_at_the_end_of_its_range_unconverged(tmp_path):
    from fmlib.experiments import rescore

    alike = {"seed": 0, "min_count": 1, "task": "rating", "epochs": 200}
    study = {"study": "s", "best_valid_rmse": 0.9, "epochs": 50}
    tuning = {"studies": [study, study], "tolerance": 0.002, "settings": alike, "by_seed": {"valid_rmse": [0.9, 0.91]}}
    preset = {"model": "rfm", "dataset": "ml-100k", "task": "rating", "hp": {}, "tuning": tuning}
    assert rescore.judged(preset, tmp_path)["tuning"]["converged"]
    edged = {**preset, "tuning": {**tuning, "at_edges": ["lr"]}}
    assert not rescore.judged(edged, tmp_path)["tuning"]["converged"]
    capped = {**preset, "tuning": {**tuning, "studies": [study, {**study, "study": "t", "epochs": 200}]}}
    assert rescore.judged(capped, tmp_path)["tuning"]["at_cap"] == ["t"]
    assert not rescore.judged(capped, tmp_path)["tuning"]["converged"]


def test_a_best_trial_that_trained_to_the_epoch_cap_is_named_and_the_tuning_has_not_converged():
    space = search_space.stored(search_space.search_space("fm", {"dim": 8}, ["user_id", "movie_id"]))
    recipe = {"lr": 0.01, "weight_decay": 1e-4, "average_from": 3, "linear_decay": 0.1}
    recipe |= {"field_l2": {"user_id": 1e-4, "movie_id": 1e-3}}
    early = {"study": "s0", "sampler_seed": 0, "finished_trials": 1, "best_valid_rmse": 0.9, "epochs": 199}
    studies = [early, {**early, "study": "s1", "sampler_seed": 1, "epochs": 200}]
    settings = {"space": space, "epochs": 200}
    base = TrainConfig(epochs=200)
    preset = convergence.make_preset("fm", "d", "8", base, {"dim": 8}, recipe, 0.9, studies, 1, "cmd", settings)
    assert preset["tuning"]["at_cap"] == ["s1"] and not preset["tuning"]["converged"]
    assert "the best trial of s1 stopped at the 200-epoch cap" in convergence.convergence_line(preset)
    below = convergence.make_preset("fm", "d", "8", base, {"dim": 8}, recipe, 0.9, [early, early], 1, "cmd", settings)
    assert below["tuning"]["at_cap"] == [] and below["tuning"]["converged"]
