import json

from fmlib import presets
from fmlib.experiments import starter
from fmlib.runs import RunStore


def test_starter_trains_and_saves_the_three_runs(tmp_path, monkeypatch, small_split):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    for model, size, hp in [("fm", None, {"dim": 3}), ("fwfm", 8, {"dim": 3}), ("dplr", 2, {"dim": 3, "rank": 2})]:
        preset = {
            "model": model,
            "dataset": "synthetic",
            "task": "rating",
            "rank": size,
            "hp": hp,
            "train": {"lr": 0.02, "weight_decay": 1e-5, "batch_size": 256, "epochs": 2, "patience": 2},
            "min_count": 1,
            "tuning": {},
        }
        presets.save(preset, presets.preset_path("synthetic", model, size, root=tmp_path / "presets"))
    store = RunStore(tmp_path / "runs")
    job = starter.Starter(store, lambda: small_split, "synthetic")
    job.run()
    assert job.done and job.error is None
    assert sorted(store.ids()) == ["dplr-synthetic-starter", "fm-synthetic-starter", "fwfm-synthetic-starter"]
    fm = json.loads((tmp_path / "runs" / "fm-synthetic-starter" / "run.json").read_text())
    assert fm["config"]["hp"]["dim"] == 3 and fm["config"]["train"]["lr"] == 0.02  # the tuned preset
    assert "ready" in job.status


def test_starter_needs_an_empty_store_and_reports_errors(tmp_path, small_split):
    store = RunStore(tmp_path / "runs")

    def broken():
        raise OSError("no data source reachable")

    job = starter.Starter(store, broken, "synthetic")
    job.run()
    assert job.done and "no data source reachable" in job.error
    job = starter.start(store, lambda: small_split, "synthetic")
    assert job is not None
    import time

    deadline = time.monotonic() + 120
    while not job.done:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert starter.start(store, lambda: small_split, "synthetic") is None  # runs exist: nothing to do


def test_app_trains_starter_runs_on_first_start_and_shows_progress(monkeypatch):
    import time

    from apptest import app_page

    from fmlib.train import TrainConfig

    monkeypatch.setenv("FMLIB_STARTER_RUNS", "1")
    monkeypatch.setattr(starter.Starter, "settings", lambda self, model, size: (TrainConfig(epochs=1), {}, "test"))
    at = app_page("app.py", dataset="synthetic")
    at.run()
    assert not at.exception
    assert any("starter" in i.value for i in at.sidebar.info)  # training in the background, visibly
    deadline = time.monotonic() + 240
    while len(RunStore().ids()) < 3:
        assert time.monotonic() < deadline, "the starter runs did not finish in time"
        time.sleep(0.5)
    time.sleep(0.5)  # the thread marks itself done after the last save
    at.run()
    assert not at.exception
    assert sorted(RunStore().ids()) == ["dplr-ml-100k-starter", "fm-ml-100k-starter", "fwfm-ml-100k-starter"]
