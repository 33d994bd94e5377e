"""Recompute result tables: run ``python -m fmlib reproduce …`` commands again, one after another.

Each command runs in a child process at a lower CPU priority (``nice`` 10) with the server's
environment and working folder, so without ``--out`` it writes its table to ``$FMLIB_RESULTS``
(default ./artifacts), where the pages and the scorecard look first (``tables.newest``). Every line
the command prints is reported as ``{"step", "steps", "text"}``; a cancel stops the child within a
second. A command that fails raises ``RuntimeError`` with its last line.
"""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading

from .jobs import Cancelled

NICE = 10


def run_command(argv: list[str], report, cancelled) -> str:
    """Run ``python -m fmlib <argv>``; ``report(line)`` for each line it prints; stop it (and raise
    ``Cancelled``) once ``cancelled()`` is true. Returns its last line."""
    child = subprocess.Popen(
        [sys.executable, "-m", "fmlib", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    os.setpriority(os.PRIO_PROCESS, child.pid, NICE)
    lines: queue.Queue = queue.Queue()

    def pump():  # the child's lines, then None at its end
        for line in child.stdout:
            lines.put(line.rstrip())
        lines.put(None)

    threading.Thread(target=pump, name="recompute-output", daemon=True).start()
    last = ""
    try:
        while (line := _next(lines, cancelled)) is not None:
            if line:
                last = line
                report(line)
    finally:
        if child.poll() is None:
            child.terminate()
        child.wait()
    if child.returncode != 0:
        raise RuntimeError(f"`python -m fmlib {shlex.join(argv)}` failed (exit {child.returncode}): {last}")
    return last


def _next(lines: queue.Queue, cancelled):
    """The child's next line (None: it ended), checking every second whether to stop."""
    while True:
        if cancelled():
            raise Cancelled
        try:
            return lines.get(timeout=1.0)
        except queue.Empty:
            continue


def recompute(commands: list[list[str]], job) -> list[str]:
    """Run ``commands`` in turn as the queue's ``job``; returns each command's last line (where it wrote)."""
    done = []
    for step, argv in enumerate(commands, 1):

        def report(line, step=step, argv=argv):
            job.report({"step": step, "steps": len(commands), "text": f"{shlex.join(argv)}: {line}"})

        done.append(run_command(argv, report, lambda: job.cancel_requested))
    return done
