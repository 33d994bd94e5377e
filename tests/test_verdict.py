import math

import numpy as np
import pytest
from scipy import stats

from fmlib.experiments.verdict import DOES_NOT_HOLD, HOLDS, UNDECIDED, Interval, paired_interval, verdict


def test_interval_matches_scipy_paired_t_test():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.90, 0.01, 6), rng.normal(0.91, 0.01, 6)
    interval = paired_interval(a, b, lower_is_better=True)  # d = b − a: positive when a has lower loss
    ci = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert interval.mean == pytest.approx(np.mean(b - a))
    assert (interval.low, interval.high) == pytest.approx((ci.low, ci.high))
    assert interval.n == 6


def test_orientation_for_higher_is_better():
    up = paired_interval([0.8, 0.81, 0.79], [0.7, 0.7, 0.71], lower_is_better=False)
    down = paired_interval([0.8, 0.81, 0.79], [0.7, 0.7, 0.71], lower_is_better=True)
    assert up.mean > 0 > down.mean
    assert up.mean == pytest.approx(-down.mean)


def test_one_seed_decides_nothing():
    interval = paired_interval([0.9], [1.0], lower_is_better=True)
    assert interval.low == -math.inf and interval.high == math.inf
    assert verdict(interval) == UNDECIDED


@pytest.mark.parametrize(
    "low, high, margin, expected",
    [
        (0.001, 0.01, 0.0, HOLDS),
        (-0.01, -0.001, 0.0, DOES_NOT_HOLD),
        (-0.01, 0.01, 0.0, UNDECIDED),
        (-0.004, 0.002, 0.005, HOLDS),  # no worse than the other by more than the margin
        (-0.02, -0.006, 0.005, DOES_NOT_HOLD),
        (-0.008, 0.002, 0.005, UNDECIDED),
    ],
)
def test_verdict_reads_the_interval_against_the_margin(low, high, margin, expected):
    assert verdict(Interval((low + high) / 2, low, high, 5), margin) == expected


def test_bad_input():
    with pytest.raises(ValueError, match="equally long"):
        paired_interval([1, 2], [1], lower_is_better=True)
    with pytest.raises(ValueError, match="margin"):
        verdict(Interval(0, -1, 1, 3), -0.1)
