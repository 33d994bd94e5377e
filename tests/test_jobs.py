"""The job queue: the concurrency limit, positions in line, cancel while waiting and while running,
watched jobs found by token and cancelled once nobody follows them."""

from __future__ import annotations

import threading
import time

import pytest
from patience import limit

from fmapp.jobs import JobQueue, default_orphan_seconds, default_workers


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + limit(timeout)  # a guard against a hang, stretched on a busy machine
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def queue():
    q = JobQueue(workers=2)
    yield q
    q.shutdown()


def gated(gate: threading.Event, running: list):
    def fn(job):
        running.append(job.id)
        gate.wait(10)
        running.remove(job.id)
        return job.id

    return fn


def test_no_more_than_workers_jobs_run_at_once_and_the_rest_wait_in_order(queue):
    gate, running = threading.Event(), []
    jobs = [queue.submit(gated(gate, running)) for _ in range(5)]
    wait_for(lambda: len(running) == 2)
    time.sleep(0.05)
    assert len(running) == 2
    assert [queue.position(j) for j in jobs] == [0, 0, 1, 2, 3]
    assert [j.state for j in jobs] == ["running", "running", "queued", "queued", "queued"]
    gate.set()
    wait_for(lambda: all(j.done for j in jobs))
    assert [j.result for j in jobs] == [j.id for j in jobs] and all(j.state == "done" for j in jobs)
    assert all(j.wait_seconds >= 0 for j in jobs) and queue.waiting() == 0


def test_a_waiting_job_cancelled_never_starts_and_the_line_moves_up(queue):
    gate, running = threading.Event(), []
    jobs = [queue.submit(gated(gate, running)) for _ in range(4)]
    wait_for(lambda: len(running) == 2)
    queue.cancel(jobs[2])
    assert jobs[2].state == "cancelled" and queue.position(jobs[3]) == 1
    gate.set()
    wait_for(lambda: jobs[3].done)
    assert jobs[2].started is None and jobs[2].result is None


def test_a_running_job_cancelled_stops_at_its_next_report(queue):
    reports = []

    def slow(job):
        for i in range(1000):
            job.report(i)
            reports.append(i)
            time.sleep(0.002)
        return "finished"

    job = queue.submit(slow)
    wait_for(lambda: len(reports) >= 3)
    queue.cancel(job)
    wait_for(lambda: job.done)
    assert job.state == "cancelled" and job.result is None and len(reports) < 1000
    assert job.records == reports[: len(job.records)]


def test_a_failing_job_keeps_its_message(queue):
    def bad(job):
        raise ValueError("dim must be positive")

    job = queue.submit(bad)
    wait_for(lambda: job.done)
    assert job.state == "failed" and job.error == "dim must be positive"


def test_workers_default_to_half_the_cores_and_the_variable_is_checked(monkeypatch):
    monkeypatch.delenv("FMLIB_TRAIN_WORKERS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert default_workers() == 1
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert default_workers() == 8
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "3")
    assert default_workers() == 3
    for bad in ("0", "x", "-1"):
        monkeypatch.setenv("FMLIB_TRAIN_WORKERS", bad)
        with pytest.raises(ValueError, match="FMLIB_TRAIN_WORKERS must be an integer in 1..64"):
            default_workers()


def test_a_watched_job_is_found_by_its_token_and_tokens_are_unguessable(queue):
    jobs = [queue.submit(lambda job: None, watched=True) for _ in range(3)]
    assert [queue.find(j.token) for j in jobs] == jobs
    assert len({j.token for j in jobs}) == 3 and all(len(j.token) >= 20 for j in jobs)
    assert queue.find("job-1") is None and queue.find("") is None
    unwatched = queue.submit(lambda job: None)
    assert queue.find(unwatched.token) is None, "only a watched job is listed by token"


def test_a_running_job_that_is_seen_keeps_running_and_an_unseen_one_is_cancelled_and_forgotten():
    queue = JobQueue(workers=2, orphan_seconds=0.4)
    followed, orphan = (queue.submit(ticking, watched=True) for _ in range(2))
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:  # three grace periods: only one of the two is looked at
        followed.seen()
        time.sleep(0.05)
    wait_for(lambda: orphan.done)
    assert orphan.state == "cancelled" and queue.find(orphan.token) is None
    assert followed.state == "running" and queue.find(followed.token) is followed
    queue.cancel(followed)
    queue.shutdown()


def test_a_waiting_orphan_is_dropped_and_the_next_job_gets_the_worker():
    queue = JobQueue(workers=1, orphan_seconds=0.3)
    gate = threading.Event()
    blocker = queue.submit(lambda job: gate.wait(10))
    orphan = queue.submit(ticking, watched=True)
    after = queue.submit(lambda job: "ran")
    assert queue.position(orphan) == 1 and queue.position(after) == 2
    wait_for(lambda: orphan.done, timeout=3)
    assert orphan.state == "cancelled" and orphan.started is None and queue.position(after) == 1
    gate.set()
    wait_for(lambda: after.done)
    assert after.result == "ran" and blocker.state == "done"
    queue.shutdown()


def test_an_ended_job_stays_findable_while_seen_then_is_forgotten():
    queue = JobQueue(workers=1, orphan_seconds=0.3)
    job = queue.submit(lambda job: "result", watched=True)
    wait_for(lambda: job.done)
    assert queue.find(job.token) is job, "a reload right after the end still finds the result"
    wait_for(lambda: queue.find(job.token) is None, timeout=3)
    assert job.state == "done" and job.result == "result", "forgetting an ended job does not cancel it"
    queue.shutdown()


def ticking(job):
    """A job that reports every 10 ms until cancelled (at most 10 s)."""
    for i in range(1000):
        job.report(i)
        time.sleep(0.01)


def test_the_grace_period_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("FMLIB_ORPHAN_SECONDS", raising=False)
    assert default_orphan_seconds() == 120
    monkeypatch.setenv("FMLIB_ORPHAN_SECONDS", "1.5")
    assert default_orphan_seconds() == 1.5 and JobQueue(workers=1).orphan_seconds == 1.5
    for bad in ("0", "x", "-1", "nan", "inf"):
        monkeypatch.setenv("FMLIB_ORPHAN_SECONDS", bad)
        with pytest.raises(ValueError, match="FMLIB_ORPHAN_SECONDS must be a number of seconds"):
            default_orphan_seconds()


def epochs(n: int, done: list, start: threading.Event | None = None):
    """A job of ``n`` "epochs", each reported when it ends (as ``fit`` does), begun once ``start`` is set."""

    def fn(job):
        if start is not None:
            start.wait(10)
        for epoch in range(1, n + 1):
            done.append(epoch)
            job.report({"epoch": epoch, "epochs": n})
        return "finished"

    return fn


def test_a_paused_job_holds_after_its_epoch_steps_one_epoch_at_a_time_and_resumes(queue):
    done, start = [], threading.Event()
    job = queue.submit(epochs(6, done, start))
    job.pause()  # before its first epoch ends: it holds at its first report
    start.set()
    wait_for(lambda: job.held)
    time.sleep(0.1)
    assert done == [1] and job.state == "running" and [r["epoch"] for r in job.records] == [1]
    job.step()
    wait_for(lambda: len(done) == 2 and job.held)
    time.sleep(0.1)
    assert done == [1, 2] and len(job.records) == 2, "one step runs exactly one more epoch"
    job.step()
    job.step()  # a second step asked for while the first runs: it is the report after
    wait_for(lambda: len(done) == 4 and job.held)
    time.sleep(0.1)
    assert done == [1, 2, 3, 4]
    job.resume()
    wait_for(lambda: job.done)
    assert job.state == "done" and job.result == "finished" and done == list(range(1, 7)) and not job.held


def test_a_held_job_is_cancelled_at_once_and_so_is_a_held_orphan():
    q = JobQueue(workers=1, orphan_seconds=0.3)
    try:
        start = threading.Event()
        held = q.submit(epochs(100, [], start))
        held.pause()
        start.set()
        wait_for(lambda: held.held)
        q.cancel(held)
        wait_for(lambda: held.done, timeout=2)
        assert held.state == "cancelled" and len(held.records) == 1
        start = threading.Event()
        orphan = q.submit(epochs(100, [], start), watched=True)
        orphan.pause()
        start.set()
        wait_for(lambda: orphan.held)
        wait_for(lambda: orphan.done, timeout=5)  # nobody calls seen(): the grace period ends it
        assert orphan.state == "cancelled" and q.find(orphan.token) is None
    finally:
        q.shutdown()


def test_a_held_job_gives_way_when_others_wait_in_line_but_not_when_none_do():
    q = JobQueue(workers=1, orphan_seconds=0.5)
    try:
        done, start = [], threading.Event()
        held = q.submit(epochs(3, done, start), watched=True)
        held.pause()
        start.set()
        wait_for(lambda: held.held)
        for _ in range(8):  # followed, alone on the server: it stays held
            held.seen()
            time.sleep(0.1)
        assert held.held and done == [1]
        later = q.submit(epochs(1, []))
        while not held.done:  # another job waits: after orphan_seconds held, the pause ends by itself
            held.seen()
            time.sleep(0.05)
        wait_for(lambda: later.done)
        assert held.state == "done" and held.gave_way and done == [1, 2, 3] and later.state == "done"
    finally:
        q.shutdown()


def test_live_data_is_attached_and_shutdown_ends_a_held_job():
    q = JobQueue(workers=1)
    live, start = [], threading.Event()
    job = q.submit(lambda job: [start.wait(10), job.live.append(1), job.report({})], live=live)
    job.pause()
    start.set()
    wait_for(lambda: job.held)
    assert job.live is live and live == [1]
    q.shutdown()  # does not hang on the held job
    assert job.state == "cancelled"
