"""AppTest of a training that outlives its session: a reload (a new session with the same URL) follows it
again, the sidebar of every page shows it, and one that nobody follows any more is cancelled."""

from __future__ import annotations

import threading
import time

import pytest
from apptest import app_page, button, wait_for_training
from patience import limit

from app_pages._classroom import job_queue


@pytest.fixture
def gate(monkeypatch):
    """One training at a time, taken by a job that ends when the test sets the gate (or ends)."""
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "1")
    gate = threading.Event()
    blocker = job_queue().submit(lambda job: gate.wait(60))
    yield gate
    gate.set()
    job_queue().cancel(blocker)


def train_page(training: str | None = None):
    """The Train page in a new session; ``training``: the token a reloaded URL carries."""
    at = app_page("app_pages/train.py", dataset="synthetic")
    if training is not None:
        at.query_params["training"] = training
    at.run()
    assert not at.exception
    return at


def framed_train_page(training: str):
    """The Train page in the frame (whose notes on dropped link values stand above the page), a new session."""
    at = app_page("app.py", dataset="synthetic")
    at.switch_page("app_pages/train.py")
    at.query_params["training"] = training
    at.run()
    assert not at.exception
    return at


def start_training(at, epochs: int = 2) -> str:
    """Press Train with ``epochs``; the token the URL keeps."""
    at.number_input(key="epochs").set_value(epochs)
    button(at, "Train").click().run()
    assert not at.exception
    token = at.query_params["training"]
    assert token == at.session_state["train_job"].token
    return token


def test_a_reload_follows_the_queued_training_again_until_it_ends(gate):
    first = train_page()
    token = start_training(first)
    assert "Queued, position 1" in first.info[0].value
    reloaded = train_page(training=token)
    assert "Queued, position 1" in reloaded.info[0].value and reloaded.button(key="cancel_training")
    gate.set()
    wait_for_training(reloaded)
    assert "Done: 2 epochs" in reloaded.success[0].value and reloaded.session_state["trained"] is not None
    assert "training" not in reloaded.query_params, "the token leaves the URL once the training ended"


def test_a_reload_during_the_run_shows_its_progress(monkeypatch):
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "1")
    token = start_training(train_page(), epochs=200)
    job = job_queue().find(token)
    deadline = time.monotonic() + limit(60)  # a guard against a hang, stretched on a busy machine
    while not job.records:
        assert time.monotonic() < deadline, "no epoch ended in time"
        time.sleep(0.05)
    reloaded = train_page(training=token)
    (progress,) = reloaded.get("progress")
    assert "epoch " in progress.proto.text and "/200 · valid rmse" in progress.proto.text
    reloaded.button(key="cancel_training").click().run()
    wait_for_training(reloaded)
    assert "Training cancelled." in reloaded.info[0].value and job.state == "cancelled"


def test_a_reload_after_the_end_that_the_tab_missed_shows_the_result():
    token = start_training(train_page(), epochs=1)
    job = job_queue().find(token)
    deadline = time.monotonic() + limit(60)  # a guard against a hang, stretched on a busy machine
    while not job.done:
        assert time.monotonic() < deadline, "the training did not end in time"
        time.sleep(0.05)
    reloaded = wait_for_training(train_page(training=token))
    assert "Done: 1 epochs" in reloaded.success[0].value and reloaded.session_state["trained"] is job.result
    assert reloaded.table, "the run's metrics are shown, ready to save"


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("A" * 22, "that training is no longer on the server (it ended, or nobody followed it"),
        ("../../x", "it is not a training's token"),
    ],
)
def test_a_link_whose_training_the_server_does_not_know_is_dropped_with_a_note(token, why):
    at = framed_train_page(token)
    assert f"The link's training = {token!r} was dropped: {why}" in at.info[0].value
    assert "training" not in at.query_params and "train_job" not in at.session_state


@pytest.fixture
def short_grace(monkeypatch):
    """A training nobody has looked at for 2 s is an orphan (set before the queue is made)."""
    monkeypatch.setenv("FMLIB_ORPHAN_SECONDS", "2")


def test_a_training_nobody_follows_is_cancelled_and_the_next_one_gets_the_worker(short_grace, gate):
    follower = train_page()
    token = start_training(train_page())  # then the tab is closed: no more looks at it
    orphan = job_queue().find(token)
    start_training(follower)
    assert "Queued, position 2" in follower.info[0].value
    deadline = time.monotonic() + limit(10)
    while not orphan.done:
        assert time.monotonic() < deadline, "the orphan was not cancelled in time"
        time.sleep(0.1)
        follower.run()  # the follower is seen every time, as its page polls every second
    assert orphan.state == "cancelled" and orphan.started is None
    assert "Queued, position 1" in follower.run().info[0].value, "the line moved up"
    assert "no longer on the server" in framed_train_page(token).info[0].value, "dropped with a note"
    gate.set()
    wait_for_training(follower)
    assert "Done: 2 epochs" in follower.success[0].value


def test_every_pages_sidebar_shows_the_training_with_cancel(gate):
    at = app_page("app.py", dataset="synthetic")
    at.run()
    at.switch_page("app_pages/train.py").run()
    token = start_training(at)
    at.switch_page("app_pages/home.py").run()
    assert not at.exception and at.query_params["training"] == token, "a reload on any page finds it"
    (progress,) = at.sidebar.get("progress")
    assert progress.proto.text == "Your training: queued, position 1"
    at.sidebar.button(key="sidebar_cancel_training").click().run()
    assert not at.exception and job_queue().waiting() == 0
    assert not at.sidebar.get("progress")
    link = at.sidebar.get("page_link")
    assert link and "Your training ended" in link[0].proto.label, "the outcome waits on the Train page"
    at.switch_page("app_pages/train.py").run()
    assert "Training cancelled." in " ".join(i.value for i in at.info)
