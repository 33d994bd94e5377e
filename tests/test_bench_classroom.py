"""The classroom load test's bad input and its summary statistics (the run itself needs a browser: `make bench`)."""

from __future__ import annotations

import json

import pytest

from fmlib.bench.classroom import quantiles
from fmlib.cli import main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sessions", "61"], "--sessions must be in 1..60"),
        (["--sessions", "3", "--training", "4"], "--training must be in 0..--sessions = 0..3"),
        (["--ramp", "-1"], "--ramp must be in 0..60"),
        (["--client", "browser", "--answers", "3"], "--answers needs --client protocol"),
        (["--browse", "playground,nowhere"], "--browse: no page nowhere; the pages are attention_inversion"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, message):
    assert main(["bench", "classroom", *argv]) == 2
    assert message in capsys.readouterr().err


def test_quantiles_match_a_sorted_list():
    q = quantiles([float(x) for x in range(1, 21)])  # 1..20
    assert q["n"] == 20 and q["p50"] == 10.5 and q["p95"] == pytest.approx(19.05) and q["max"] == 20
    assert quantiles([]) == {"n": 0} and quantiles([3.0])["p95"] == 3.0


def test_a_small_class_over_the_protocol_answers_browses_trains_and_reports_no_errors(capsys):
    argv = ["--sessions", "2", "--training", "1", "--pages", "2", "--dataset", "synthetic", "--epochs", "1"]
    assert main(["bench", "classroom", *argv, "--answers", "3", "--ramp", "0", "--deadline", "240"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    assert report["errors"] == [], report["errors"]
    assert report["baseline_views"]["n"] == 5 and report["class_views"]["n"] == 4  # Train, the lesson stop, 2 browsed
    assert sum(report["answers_sent"].values()) == 1 and any(line.startswith("answers sent") for line in out)
    assert report["queue_wait"]["n"] == 1 and report["train_to_done"]["n"] == 1


def test_a_class_on_the_playground_browses_it_without_errors(capsys):
    argv = ["--sessions", "3", "--training", "1", "--pages", "3", "--dataset", "synthetic", "--epochs", "1"]
    assert main(["bench", "classroom", *argv, "--browse", "playground", "--ramp", "0", "--deadline", "240"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["errors"] == [] and report["browse"] == ["playground"], report["errors"]
    assert report["baseline_views"]["n"] == 1 and report["class_views"]["n"] == 1 + 2 * 3  # Train, 2 × 3 Playground
