"""Recomputing result tables: each reproduce command in a child process, its lines as progress, cancel, failure."""

from __future__ import annotations

import time

import pytest
from patience import limit

from fmapp import recompute
from fmapp.jobs import Cancelled, JobQueue


def test_a_command_reports_every_line_and_returns_its_last():
    lines = []
    last = recompute.run_command(["reproduce", "dplr", "--help"], lines.append, lambda: False)
    assert lines[0].startswith("usage: python -m fmlib reproduce dplr") and last == lines[-1]
    assert any("--finetune-epochs" in line for line in lines)


def test_a_failing_command_raises_with_its_last_line():
    with pytest.raises(RuntimeError, match=r"reproduce dplr --seeds 0` failed \(exit 2\): .*--seeds"):
        recompute.run_command(["reproduce", "dplr", "--seeds", "0"], lambda line: None, lambda: False)


def test_a_cancel_stops_the_child_before_it_writes(tmp_path):
    with pytest.raises(Cancelled):
        recompute.run_command(["reproduce", "fm-ablation", "--out", str(tmp_path)], lambda line: None, lambda: True)
    assert list(tmp_path.iterdir()) == []


def test_recompute_runs_the_commands_in_turn_as_one_job():
    queue = JobQueue(workers=1)
    job = queue.submit(lambda job: recompute.recompute([["reproduce", "dplr", "--help"], ["data", "--help"]], job))
    deadline = time.monotonic() + limit(120)  # a guard against a hang, stretched on a busy machine
    while not job.done:
        assert time.monotonic() < deadline, "the job did not end in time"
        time.sleep(0.1)
    assert job.state == "done" and len(job.result) == 2
    steps = [r["step"] for r in job.records]
    assert steps == sorted(steps) and steps[0] == 1 and steps[-1] == 2 and job.records[-1]["steps"] == 2
    assert job.records[0]["text"].startswith("reproduce dplr --help: usage:")
