"""A small job queue: at most ``workers`` jobs run at once, the rest wait in line.

    queue = JobQueue(workers=1)
    job = queue.submit(lambda job: train_model(..., progress=job.report))
    queue.position(job)   # 1, 2, ... while waiting; 0 once it runs
    queue.cancel(job)     # a waiting job never starts; a running one stops at its next report
    job.state             # queued | running | done | failed | cancelled

A job's function gets the ``Job`` itself; calling ``job.report(record)`` publishes progress
(``job.records``) and is where a cancelled job stops (it raises ``Cancelled``).

A job submitted with ``watched=True`` belongs to someone who follows it (a browser session):
``queue.find(job.token)`` finds it again (after a reload), each look at it calls ``job.seen()``,
and once nobody has seen it for ``orphan_seconds`` it is cancelled and forgotten, so a job whose
follower is gone for good never holds a worker.
"""

from __future__ import annotations

import itertools
import os
import secrets
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


def default_orphan_seconds() -> float:
    """How long a watched job may go unseen before it is cancelled: ``FMLIB_ORPHAN_SECONDS``, else 120.

    A browser tab in the background looks only about once a minute, so the default leaves it two looks."""
    text = os.environ.get("FMLIB_ORPHAN_SECONDS", "120")
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 86400:
        raise ValueError(f"FMLIB_ORPHAN_SECONDS must be a number of seconds in (0, 86400], got {text!r}")
    return seconds


class Job:
    def __init__(self, number: int, fn: Callable[[Job], Any]):
        self.id = f"job-{number}"
        self.token = secrets.token_urlsafe(16)  # unguessable: whoever holds it may follow and cancel the job
        self.fn = fn
        self.state = "queued"
        self.result: Any = None
        self.error: str | None = None
        self.records: list = []
        self.submitted = time.monotonic()
        self.started: float | None = None
        self.finished: float | None = None
        self.last_seen = time.monotonic()
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

    def seen(self) -> None:
        """Someone follows this job now (a watched job nobody sees for ``orphan_seconds`` is cancelled)."""
        self.last_seen = time.monotonic()

    def report(self, record) -> None:
        """Publish one progress record; stop here if the job was cancelled."""
        if self._cancel.is_set():
            raise Cancelled
        self.records.append(record)


class JobQueue:
    def __init__(self, workers: int | None = None, orphan_seconds: float | None = None):
        self.workers = default_workers() if workers is None else workers
        if not 1 <= self.workers <= 64:
            raise ValueError(f"workers must be in 1..64, got {self.workers}")
        self.orphan_seconds = default_orphan_seconds() if orphan_seconds is None else orphan_seconds
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="fmlib-job")
        self._lock = threading.Lock()
        self._waiting: list[Job] = []
        self._numbers = itertools.count(1)
        self._watched: dict[str, Job] = {}  # token -> watched job, until nobody has seen it for orphan_seconds
        self._watchdog: threading.Thread | None = None

    def submit(self, fn: Callable[[Job], Any], watched: bool = False) -> Job:
        """Queue ``fn(job)``; ``watched``: cancel it once nobody has called ``job.seen()`` for ``orphan_seconds``."""
        with self._lock:
            job = Job(next(self._numbers), fn)
            self._waiting.append(job)
            if watched:
                self._watched[job.token] = job
                if self._watchdog is None:
                    self._watchdog = threading.Thread(target=self._watch, name="fmlib-orphans", daemon=True)
                    self._watchdog.start()
        self._pool.submit(self._run, job)
        return job

    def find(self, token: str) -> Job | None:
        """The watched job with this token (running, waiting or ended), unless it went unseen too long."""
        with self._lock:
            return self._watched.get(token)

    def _watch(self) -> None:
        """Cancel and forget the watched jobs nobody has seen for ``orphan_seconds``; stop when none is left."""
        while True:
            time.sleep(min(1.0, self.orphan_seconds / 4))
            with self._lock:
                now = time.monotonic()
                orphans = [job for job in self._watched.values() if now - job.last_seen > self.orphan_seconds]
                for job in orphans:
                    del self._watched[job.token]
                last = not self._watched
                if last:
                    self._watchdog = None
            for job in orphans:
                if not job.done:
                    self.cancel(job)
            if last:
                return

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
            self._watched.clear()  # the watchdog stops at its next look
            for job in waiting:
                job.state = "cancelled"
        self._pool.shutdown(wait=True, cancel_futures=True)
