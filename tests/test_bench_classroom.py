"""The classroom load test's bad input and its summary statistics (the run itself needs a browser: `make bench`)."""

from __future__ import annotations

import pytest

from fmlib.bench.classroom import quantiles
from fmlib.cli import main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sessions", "61"], "--sessions must be in 1..60"),
        (["--sessions", "3", "--training", "4"], "--training must be in 0..--sessions = 0..3"),
        (["--ramp", "-1"], "--ramp must be in 0..60"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, message):
    assert main(["bench", "classroom", *argv]) == 2
    assert message in capsys.readouterr().err


def test_quantiles_match_a_sorted_list():
    q = quantiles([float(x) for x in range(1, 21)])  # 1..20
    assert q["n"] == 20 and q["p50"] == 10.5 and q["p95"] == pytest.approx(19.05) and q["max"] == 20
    assert quantiles([]) == {"n": 0} and quantiles([3.0])["p95"] == 3.0
