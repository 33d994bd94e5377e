import math

import numpy as np
import pytest
from scipy import stats

from fmlib.experiments.verdict import (
    DOES_NOT_HOLD,
    HOLDS,
    UNDECIDED,
    Interval,
    mean_interval,
    paired_interval,
    threshold_verdict,
    verdict,
    wilson_interval,
)


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


@pytest.mark.parametrize(
    "successes, n, low, high",
    [(50, 100, 0.4038, 0.5962), (0, 100, 0.0, 0.0370), (100, 100, 0.9630, 1.0), (9, 10, 0.5958, 0.9821)],
)
def test_wilson_interval_matches_published_values(successes, n, low, high):
    interval = wilson_interval(successes, n)
    assert interval.mean == successes / n and interval.n == n
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-4)


def test_mean_interval_is_the_one_sample_t_interval():
    x = np.array([1.0, 1.2, 0.9, 1.1])
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    interval = mean_interval(x)
    assert (interval.mean, interval.low, interval.high) == pytest.approx((x.mean(), ci.low, ci.high))


@pytest.mark.parametrize(
    "low, high, threshold, higher, expected",
    [
        (0.93, 0.99, 0.9, True, HOLDS),
        (0.0, 0.04, 0.9, True, DOES_NOT_HOLD),
        (0.85, 0.95, 0.9, True, UNDECIDED),
        (1e-16, 3e-16, 1e-10, False, HOLDS),  # an error below its tolerance
        (0.5, 0.7, 1e-10, False, DOES_NOT_HOLD),
    ],
)
def test_threshold_verdict(low, high, threshold, higher, expected):
    assert threshold_verdict(Interval((low + high) / 2, low, high, 10), threshold, higher) == expected


def test_bad_rate_input():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)
    with pytest.raises(ValueError, match="non-empty"):
        mean_interval([])
