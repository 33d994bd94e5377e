"""The job queue: the concurrency limit, positions in line, cancel while waiting and while running."""

from __future__ import annotations

import threading
import time

import pytest

from fmlib.jobs import JobQueue, default_workers


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
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
