"""AppTest of the Train page's "watch it learn": the opening trace of one rating, the replay of a trained
run (its R and curves, frame by frame), a saved run without snapshots saying why, and a running
training paused after an epoch, stepped one epoch, resumed (also after a reload)."""

from __future__ import annotations

import base64
import json
import time

import numpy as np
import pytest
from apptest import app_page, button, wait_for_training
from patience import limit

from app_pages._classroom import job_queue
from fmlib import toy
from fmlib.data import split, synthetic
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


def chart(at, key: str) -> dict:
    """The page's plotly figure with this widget key, as JSON."""
    (found,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    return json.loads(found.proto.spec)


def values(array) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(array, dict):
        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        shape = [int(n) for n in str(array.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(array, dtype=float)


def train_page(**query):
    at = app_page("app_pages/train.py", dataset="synthetic")
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return at


def start(at, model: str = "fwfm", epochs: int = 3) -> str:
    at.selectbox(key="model").set_value(model).run()
    at.number_input(key="epochs").set_value(epochs)
    button(at, "Train").click().run()
    assert not at.exception
    return at.query_params["training"]


def wait(predicate, timeout: float = 60):
    deadline = time.monotonic() + limit(timeout)  # a guard against a hang, stretched on a busy machine
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_page_opens_with_one_rating_traced_term_by_term():
    fig = chart(train_page(), "trace")
    (waterfall,) = fig["data"]
    terms = waterfall["y"][:-1]
    assert waterfall["measure"][-1] == "total" and len(terms) == 7
    assert np.isclose(sum(terms), toy.score(toy.default_state()["V"], "Ann", "Alien"))
    assert waterfall["x"][-1] == f"ŷ = {sum(terms):.2f}"


def test_a_trained_fwfm_replays_its_R_and_curves_epoch_by_epoch():
    at = train_page()
    start(at, "fwfm", epochs=3)
    wait_for_training(at)
    run = at.session_state["trained"]
    radio = at.radio(key="replay_what")
    assert radio.options == ["the learning curves", "the field interaction matrix R"] and radio.value == "R"
    fig = chart(at, "replay_what_figure")
    epochs = [r["epoch"] for r in run.history]
    assert [f["name"] for f in fig["frames"]] == [str(e) for e in [0, *epochs]]
    for frame, R in zip(fig["frames"], run.snapshots.R):
        assert np.allclose(values(frame["data"][0]["z"]), R, atol=1e-6)
    labels = [b["label"] for b in fig["layout"]["updatemenus"][0]["buttons"]]
    assert labels == ["▶ Play", "❚❚ Pause", "◀ Step", "Step ▶"]
    assert [s["label"] for s in fig["layout"]["sliders"][0]["steps"]] == [str(e) for e in [0, *epochs]]
    assert any("No replay of the movie map" in c.value and "no movie_id field" in c.value for c in at.caption)
    radio.set_value("curves").run()
    fig = chart(at, "replay_what_figure")
    assert [f["name"] for f in fig["frames"]] == [str(e) for e in epochs]
    assert [len(values(f["data"][0]["x"])) for f in fig["frames"]] == list(range(1, len(epochs) + 1))


def test_a_saved_run_without_snapshots_says_why_it_cannot_be_replayed(tmp_path, monkeypatch):
    data = split(synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0), seed=0)
    run = train_model("fwfm", data, TrainConfig(epochs=1, batch_size=256), snapshots=False, dim=2)
    RunStore().save(run, "old-run")
    at = app_page("app_pages/train.py", dataset="synthetic", run_id="old-run")
    at.run()
    assert not at.exception
    assert any("saved before runs kept per-epoch snapshots" in c.value for c in at.caption)
    curves = chart(at, "saved_replay_what_figure")  # the curves need no snapshot: the only replay offered
    assert [f["name"] for f in curves["frames"]] == ["1"] and "saved_replay_what" not in [r.key for r in at.radio]


@pytest.fixture
def one_worker(monkeypatch):
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "1")


def test_a_running_training_pauses_after_an_epoch_steps_one_and_resumes_after_a_reload(one_worker):
    at = train_page()
    token = start(at, "fwfm", epochs=200)
    job = job_queue().find(token)
    wait(lambda: job.records)
    at.run()
    at.button(key="training_pause").click().run()
    wait(lambda: job.held)
    held_at = len(job.records)
    time.sleep(0.3)
    assert len(job.records) == held_at, "a paused training computes nothing"
    at.run()
    assert any(f"Paused after epoch {held_at}." in s.value for s in at.success)
    live = chart(at, "training_live_replay")  # R so far, shown at its last epoch
    assert [f["name"] for f in live["frames"]] == [str(e) for e in range(held_at + 1)]
    assert live["layout"]["sliders"][0]["active"] == held_at

    reloaded = train_page(training=token)  # a reload follows the paused training and its controls
    assert any(f"Paused after epoch {held_at}." in s.value for s in reloaded.success)
    reloaded.button(key="training_step").click().run()
    wait(lambda: len(job.records) == held_at + 1 and job.held)
    time.sleep(0.3)
    assert len(job.records) == held_at + 1, "one step is one epoch"
    reloaded.run()
    reloaded.button(key="training_resume").click().run()
    wait(lambda: len(job.records) > held_at + 2)
    assert not job.paused and not job.held
    reloaded.run().button(key="cancel_training").click().run()
    wait_for_training(reloaded)
    assert job.state == "cancelled"
