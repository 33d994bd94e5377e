"""Time limits of the tests: each guards against a hang, never against a slow or busy machine.

A limit is written for an idle machine, generously (several times what the wait takes there), and stretched by
``slowdown()``, measured when the wait begins: how many runnable processes share each core (the 1-minute load
average over the cores, at least 1). On two cores with six other busy processes a 60 s limit becomes about 240 s.
pytest-timeout's per-test limit is stretched the same way at each test's start (conftest.py). A test never asserts
how long something took; the derivation checker's own limit counts CPU time (fmlib.derivations.checker).
"""

from __future__ import annotations

import os
import time


def slowdown() -> float:
    """How much slower than idle this machine is now: runnable processes per core, at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def limit(seconds: float) -> float:
    """``seconds`` of an idle machine, in seconds of this machine now."""
    return seconds * slowdown()


def ms(seconds: float) -> float:
    """``limit(seconds)`` in milliseconds, as Playwright takes its timeouts."""
    return 1000 * limit(seconds)


def wait_until(predicate, seconds: float, what: str = "the condition", poll: float = 0.005, between=None):
    """Call ``predicate`` until it returns something true, and return that; fail after ``limit(seconds)``.
    ``between`` (if given) is called after each false answer instead of sleeping ``poll`` s (e.g. an AppTest's
    rerun)."""
    deadline = time.monotonic() + limit(seconds)
    while not (answer := predicate()):
        assert time.monotonic() < deadline, f"{what} did not happen within {limit(seconds):.0f} s"
        between() if between else time.sleep(poll)
    return answer
