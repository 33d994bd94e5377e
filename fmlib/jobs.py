"""A small job queue: at most ``workers`` jobs run at once, the rest wait in line.

    queue = JobQueue(workers=1)
    job = queue.submit(lambda job: train_model(..., progress=job.report))
    queue.position(job)   # 1, 2, ... while waiting; 0 once it runs
    queue.cancel(job)     # a waiting job never starts; a running one stops at its next report
    job.state             # queued | running | done | failed | cancelled

A job's function gets the ``Job`` itself; calling ``job.report(record)`` publishes progress
(``job.records``) and is where a cancelled job stops (it raises ``Cancelled``).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable


class Cancelled(Exception):
    """Raised inside a running job at its next report after ``cancel``."""


def default_workers() -> int:
    """Jobs that run at once: ``FMLIB_TRAIN_WORKERS``, else half the cores (at least 1)."""
    text = os.environ.get("FMLIB_TRAIN_WORKERS")
    if text is None:
        return max(1, (os.cpu_count() or 1) // 2)
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise ValueError(f"FMLIB_TRAIN_WORKERS must be an integer in 1..64, got {text!r}")
    return int(text)


class Job:
    def __init__(self, number: int, fn: Callable[[Job], Any]):
        self.id = f"job-{number}"
        self.fn = fn
        self.state = "queued"
        self.result: Any = None
        self.error: str | None = None
        self.records: list = []
        self.submitted = time.monotonic()
        self.started: float | None = None
        self.finished: float | None = None
        self._cancel = threading.Event()

    @property
    def done(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    @property
    def cancel_requested(self) -> bool:
        """True once ``cancel`` was called; a job waiting on something else (a child process) polls it."""
        return self._cancel.is_set()

    @property
    def wait_seconds(self) -> float | None:
        """Time in line, from submit to start (None while still waiting or if it never started)."""
        return None if self.started is None else self.started - self.submitted

    def report(self, record) -> None:
        """Publish one progress record; stop here if the job was cancelled."""
        if self._cancel.is_set():
            raise Cancelled
        self.records.append(record)


class JobQueue:
    def __init__(self, workers: int | None = None):
        self.workers = default_workers() if workers is None else workers
        if not 1 <= self.workers <= 64:
            raise ValueError(f"workers must be in 1..64, got {self.workers}")
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="fmlib-job")
        self._lock = threading.Lock()
        self._waiting: list[Job] = []
        self._numbers = itertools.count(1)

    def submit(self, fn: Callable[[Job], Any]) -> Job:
        with self._lock:
            job = Job(next(self._numbers), fn)
            self._waiting.append(job)
        self._pool.submit(self._run, job)
        return job

    def _run(self, job: Job) -> None:
        with self._lock:
            if job.state == "cancelled":
                return
            self._waiting.remove(job)
            job.state, job.started = "running", time.monotonic()
        try:
            job.result, state = job.fn(job), "done"
        except Cancelled:
            state = "cancelled"
        except Exception as err:  # the job's own error, kept for whoever shows it
            job.error, state = str(err) or type(err).__name__, "failed"
        job.finished = time.monotonic()
        job.state = state

    def position(self, job: Job) -> int:
        """1-based place in line while waiting; 0 once it has started (or ended)."""
        with self._lock:
            return self._waiting.index(job) + 1 if job in self._waiting else 0

    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def cancel(self, job: Job) -> None:
        """A waiting job is dropped from the line; a running one stops at its next ``report``."""
        with self._lock:
            if job.state == "queued":
                self._waiting.remove(job)
                job.state, job.finished = "cancelled", time.monotonic()
                return
        job._cancel.set()

    def shutdown(self) -> None:
        """Cancel everything and wait for the running jobs to stop."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
            for job in waiting:
                job.state = "cancelled"
        self._pool.shutdown(wait=True, cancel_futures=True)
