"""A small job queue: at most ``workers`` jobs run at once, the rest wait in line.

    queue = JobQueue(workers=1)
    job = queue.submit(lambda job: train_model(..., progress=job.report))
    queue.position(job)   # 1, 2, ... while waiting; 0 once it runs
    queue.cancel(job)     # a waiting job never starts; a running one stops at its next report
    job.state             # queued | running | done | failed | cancelled

A job's function gets the ``Job`` itself; calling ``job.report(record)`` publishes progress
(``job.records``) and is where a cancelled job stops (it raises ``Cancelled``).

A running job can be paused between reports (a training: between epochs): ``job.pause()`` holds it
at its next ``report`` (``job.held`` is then True), ``job.step()`` lets it run to the report after
and hold again (one more epoch), ``job.resume()`` lets it run on. A held job still ends when it is
cancelled, and so by the orphan rule below; and it gives way by itself (it resumes) once it has been
held ``orphan_seconds`` while other jobs wait in line, so a pause never keeps a class's worker.
``submit(fn, live=...)`` attaches what the job's function fills while it runs (``job.live``: a
training's snapshots so far), for whoever follows it.

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
        self.live: Any = None  # what the job's function shares while it runs (``submit(live=...)``)
        self.gave_way = False  # a pause ended by itself because other jobs waited in line
        self._cancel = threading.Event()
        self._turn = threading.Condition()  # guards the pause state below; notified on pause, step, resume, cancel
        self._pause = False
        self._steps = 0
        self._held_since: float | None = None
        self._hold_limit = float("inf")  # held this long while others wait: resume (set by JobQueue.submit)
        self._others_waiting: Callable[[], int] = lambda: 0

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

    @property
    def paused(self) -> bool:
        """A pause is asked for: the job holds (or will hold) at its next report until ``step``/``resume``."""
        return self._pause

    @property
    def held(self) -> bool:
        """The job sits at a report, paused: it holds its worker but computes nothing."""
        return self._held_since is not None

    def pause(self) -> None:
        """Hold the job at its next report (after the current epoch of a training)."""
        with self._turn:
            if not self.done:
                self._pause, self._steps, self.gave_way = True, 0, False
                self._turn.notify_all()

    def step(self) -> None:
        """While paused: run to the next report (one more epoch), then hold again."""
        with self._turn:
            if self._pause:
                self._steps += 1
                self._turn.notify_all()

    def resume(self) -> None:
        """Run on without holding."""
        with self._turn:
            self._pause, self._steps = False, 0
            self._turn.notify_all()

    def _request_cancel(self) -> None:
        with self._turn:
            self._cancel.set()
            self._turn.notify_all()

    def report(self, record) -> None:
        """Publish one progress record; stop here if the job was cancelled; hold here while paused."""
        if self._cancel.is_set():
            raise Cancelled
        self.records.append(record)
        self._hold()

    def _hold(self) -> None:
        with self._turn:
            if not self._pause:
                return
            if self._steps:  # a step asked for before this report: it is this one
                self._steps -= 1
                return
            self._held_since = time.monotonic()
            try:
                while self._pause and not self._steps and not self._cancel.is_set():
                    self._turn.wait(0.25)
                    held = time.monotonic() - self._held_since
                    if held > self._hold_limit and self._others_waiting():
                        self._pause, self.gave_way = False, True
                if self._cancel.is_set():
                    raise Cancelled
                if self._steps:
                    self._steps -= 1
            finally:
                self._held_since = None


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
        self._running: set[Job] = set()

    def submit(self, fn: Callable[[Job], Any], watched: bool = False, live: Any = None) -> Job:
        """Queue ``fn(job)``; ``watched``: cancel it once nobody has called ``job.seen()`` for ``orphan_seconds``.
        ``live``: kept as ``job.live`` for followers (what ``fn`` fills while it runs)."""
        with self._lock:
            job = Job(next(self._numbers), fn)
            job.live = live
            job._hold_limit, job._others_waiting = self.orphan_seconds, self.waiting
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
            self._running.add(job)
        try:
            job.result, state = job.fn(job), "done"
        except Cancelled:
            state = "cancelled"
        except Exception as err:  # the job's own error, kept for whoever shows it
            job.error, state = str(err) or type(err).__name__, "failed"
        job.finished = time.monotonic()
        job.state = state
        with self._lock:
            self._running.discard(job)

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
        job._request_cancel()

    def shutdown(self) -> None:
        """Cancel everything and wait for the running jobs to stop (each at its next report; a held one at once)."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
            self._watched.clear()  # the watchdog stops at its next look
            for job in waiting:
                job.state = "cancelled"
            running = list(self._running)
        for job in running:
            job._request_cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
