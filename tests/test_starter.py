import json
import threading

from fmapp import starter
from fmapp.jobs import JobQueue
from fmlib import presets
from fmlib.runs import RunStore
from fmlib.train import quick_model_settings, quick_settings


def test_starter_runs_are_quick_and_the_tuned_presets_one_choice_away(tmp_path, monkeypatch, small_split):
    """The starter runs train ahead of every student's first training, so by default the FM and the
    DPLR take the quick settings (a few epochs on MovieLens), not a preset's epoch budget; the FwFM,
    whose R the app shows, takes its tuned preset; ``tuned=True`` (the teacher's rebuild) trains the
    tuned presets of all."""
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    for model, size, hp in [("fm", None, {"dim": 3}), ("fwfm", 8, {"dim": 3}), ("dplr", 2, {"dim": 3, "rank": 2})]:
        preset = {
            "model": model,
            "dataset": "synthetic",
            "task": "rating",
            "rank": size,
            "hp": hp,
            "train": {"lr": 0.03, "weight_decay": 1e-5, "batch_size": 256, "epochs": 2, "patience": 2},
            "min_count": 1,
            "tuning": {},
        }
        presets.save(preset, presets.preset_path("synthetic", model, size, root=tmp_path / "presets"))
    store = RunStore(tmp_path / "runs")
    quick = starter.Starter(store, lambda: small_split, "synthetic")
    for model, size in starter.STARTERS:
        config, hp, source = quick.settings(model, size)
        if model == "fwfm":
            assert (config.lr, source) == (0.03, "tuned preset")
        else:
            assert (config, source) == (quick_model_settings("synthetic", model)[0], "quick settings")
    assert quick.settings("dplr", 2)[1] == {"dim": quick_settings("synthetic")[1]["dim"], "rank": 2}
    config, hp, _ = starter.Starter(store, None).settings("fm", None)  # MovieLens 100K, the app's
    assert config.epochs <= 4 and hp == {"dim": 8}

    job = starter.Starter(store, lambda: small_split, "synthetic", tuned=True)
    job.run()
    assert job.done and job.error is None
    assert sorted(store.ids()) == ["dplr-synthetic-starter", "fm-synthetic-starter", "fwfm-synthetic-starter"]
    fm = json.loads((tmp_path / "runs" / "fm-synthetic-starter" / "run.json").read_text())
    assert fm["config"]["hp"]["dim"] == 3 and fm["config"]["train"]["lr"] == 0.03  # the tuned preset
    assert "ready" in job.status


def test_starter_needs_an_empty_store_and_reports_errors(tmp_path, small_split):
    store = RunStore(tmp_path / "runs")

    def broken():
        raise OSError("no data source reachable")

    job = starter.Starter(store, broken, "synthetic")
    job.run()
    assert job.done and "no data source reachable" in job.error
    queue = JobQueue(workers=1)
    job = starter.start(store, lambda: small_split, queue.submit, "synthetic")
    assert job is not None
    import time

    deadline = time.monotonic() + 120
    while not job.job.done:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job.job.state == "done" and job.job.result == job.saved
    assert starter.start(store, lambda: small_split, queue.submit, "synthetic") is None  # runs exist: nothing to do


def test_starter_runs_wait_in_the_queue_and_a_rebuild_replaces_them(tmp_path, monkeypatch, small_split):
    from fmlib.train import TrainConfig

    monkeypatch.setattr(starter.Starter, "settings", lambda self, model, size: (TrainConfig(epochs=1), {}, "test"))
    store, queue = RunStore(tmp_path / "runs"), JobQueue(workers=1)
    gate = threading.Event()
    blocker = queue.submit(lambda job: gate.wait(60))
    first = starter.start(store, lambda: small_split, queue.submit, "synthetic")
    assert queue.position(first.job) == 1 and "waiting" in first.status, "behind the running job"
    gate.set()
    wait(first.job)

    def stamp():
        return {i: (tmp_path / "runs" / i / "run.json").stat().st_mtime_ns for i in store.ids()}

    before = stamp()
    rebuild = starter.Starter(store, lambda: small_split, "synthetic", replace=True)
    wait(queue.submit(lambda job: rebuild.run(job.report)))
    assert rebuild.error is None and sorted(store.ids()) == sorted(before)
    assert all(stamp()[i] != before[i] for i in before), "each run was saved again"
    assert blocker.state == "done"


def test_a_cancelled_starter_job_stops_and_says_so(tmp_path, small_split):
    store, queue = RunStore(tmp_path / "runs"), JobQueue(workers=1)
    job = starter.Starter(store, lambda: small_split, "synthetic")

    def cancel_at_once(own, record):  # the job's own handle: ``running`` may not be bound yet
        queue.cancel(own)
        own.report(record)

    running = queue.submit(lambda own: job.run(lambda record: cancel_at_once(own, record)))
    wait(running)
    assert running.state == "cancelled" and job.status == "starter runs cancelled" and store.ids() == []


def wait(job, timeout: float = 120):
    import time

    deadline = time.monotonic() + timeout
    while not job.done:
        assert time.monotonic() < deadline, "the job did not end in time"
        time.sleep(0.1)


def test_app_trains_starter_runs_on_first_start_and_shows_progress(monkeypatch):
    import time

    from apptest import app_page

    from fmlib.train import TrainConfig

    monkeypatch.setenv("FMLIB_STARTER_RUNS", "1")
    monkeypatch.setattr(starter.Starter, "settings", lambda self, model, size: (TrainConfig(epochs=1), {}, "test"))
    at = app_page("app.py", dataset="synthetic")
    at.run()
    assert not at.exception
    assert any("starter" in i.value.lower() for i in at.sidebar.info)  # training in the background, visibly
    deadline = time.monotonic() + 240
    while len(RunStore().ids()) < 3:
        assert time.monotonic() < deadline, "the starter runs did not finish in time"
        time.sleep(0.5)
    time.sleep(0.5)  # the thread marks itself done after the last save
    at.run()
    assert not at.exception
    assert sorted(RunStore().ids()) == ["dplr-ml-100k-starter", "fm-ml-100k-starter", "fwfm-ml-100k-starter"]
