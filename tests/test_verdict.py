import math

import numpy as np
import pytest
from scipy import stats

from fmlib.experiments.verdict import (
    DOES_NOT_HOLD,
    HOLDS,
    OPEN,
    OUTCOMES,
    UNDECIDED,
    Interval,
    mean_interval,
    outcome,
    paired_differences,
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
        (-0.008, 0.002, 0.005, "not shown to be worse, nor to be within 0.005"),  # holds −δ and 0
        (-0.008, -0.001, 0.005, "worse on average; whether by more than 0.005 is undecided"),  # holds −δ, below 0
    ],
)
def test_verdict_reads_the_interval_against_the_margin(low, high, margin, expected):
    assert verdict(Interval((low + high) / 2, low, high, 5), margin) == expected


# per-seed differences d_s (> 0 favours the claim) of a claim "at most 1 % worse" against a model
# whose mean is 0.32 (δ = 0.0032), one case per side of −δ and 0 that the interval can leave open
WORSE_EVERY_SEED = [-0.0030, -0.0042, -0.0025, -0.0037, -0.0031]
WORSE_ON_AVERAGE = [-0.0080, -0.0070, -0.0090, -0.0060, 0.0010]
EITHER_WAY = [-0.0090, 0.0040, -0.0070, 0.0010, -0.0020]


@pytest.mark.parametrize(
    "d, words, below_zero, holds_margin",
    [
        (WORSE_EVERY_SEED, "worse on every seed; whether by more than 1 % is undecided", True, True),
        (WORSE_ON_AVERAGE, "worse on average; whether by more than 1 % is undecided", True, True),
        (EITHER_WAY, "not shown to be worse, nor to be within 1 %", False, True),
    ],
)
def test_a_margin_claim_says_which_side_it_left_open(d, words, below_zero, holds_margin):
    other = np.full(len(d), 0.32)
    favoured = other - np.asarray(d)  # a loss: d_s = other_s − favoured_s
    differences = paired_differences(favoured, other, lower_is_better=True)
    interval = paired_interval(favoured, other, lower_is_better=True)
    margin = 0.01 * other.mean()
    np.testing.assert_allclose(differences, d)
    assert (interval.high < 0) == below_zero and (interval.low <= -margin <= interval.high) == holds_margin
    assert (differences < 0).all() == ("every seed" in words)
    assert verdict(interval, margin, "1 %", differences) == words
    assert outcome(verdict(interval, margin, "1 %", differences)) == OPEN


def test_a_margin_claim_decided_either_way_says_so():
    other = np.full(5, 0.32)
    within = paired_interval(other + 0.001, other, lower_is_better=True)  # 0.3 % worse on every seed
    beyond = paired_interval(other + np.array([0.008, 0.009, 0.007, 0.0085, 0.0075]), other, lower_is_better=True)
    assert -0.0032 < within.low and within.high < 0 and verdict(within, 0.0032, "1 %") == HOLDS
    assert beyond.high < -0.0032 and verdict(beyond, 0.0032, "1 %") == DOES_NOT_HOLD
    assert [outcome(verdict(i, 0.0032, "1 %")) for i in (within, beyond)] == [HOLDS, DOES_NOT_HOLD]


def test_without_margin_an_interval_around_zero_detects_no_difference():
    interval = paired_interval([0.30, 0.32, 0.31], [0.31, 0.31, 0.31], lower_is_better=True)
    assert interval.low < 0 < interval.high
    assert verdict(interval) == UNDECIDED == "no difference detectable at this sample size"
    assert outcome(UNDECIDED) == OPEN and OUTCOMES == (HOLDS, DOES_NOT_HOLD, OPEN)


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
