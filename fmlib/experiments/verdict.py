"""Verdicts on a paper's claim from paired per-seed differences and a 95 % t-interval.

Each seed trains both models of a comparison on the same split, so the per-seed differences
d_s = (score of the claimed-better model) − (score of the other), oriented so that d > 0 favours
the claim, are paired samples. Their 95 % Student-t interval is

    d̄ ± t_{0.975, n−1} · s_d / √n        (s_d: sample standard deviation, ddof = 1)

and the verdict reads the interval against a margin δ ≥ 0 (δ = 0: "better"; δ > 0: "no worse
than the other by more than δ", how a claim such as "DPLR is about as good as FwFM" is tested):

* "holds"          — the whole interval lies above −δ;
* "does not hold"  — the whole interval lies below −δ;
* otherwise "no difference detectable at this sample size" (one seed never decides anything).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
UNDECIDED = "no difference detectable at this sample size"
VERDICTS = (HOLDS, DOES_NOT_HOLD, UNDECIDED)


@dataclass(frozen=True)
class Interval:
    """Mean paired difference, its 95 % t-interval [low, high] and the number of seeds n."""

    mean: float
    low: float
    high: float
    n: int


def paired_interval(favoured, other, lower_is_better: bool, confidence: float = 0.95) -> Interval:
    """Interval of d_s = score(favoured) − score(other) per seed, signed so that d > 0 favours
    ``favoured`` (for a loss such as MSE: d_s = other_s − favoured_s)."""
    a, b = np.asarray(favoured, dtype=float), np.asarray(other, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 1:
        raise ValueError(f"need two equally long, non-empty lists of per-seed scores, got {a.shape} and {b.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    d = b - a if lower_is_better else a - b
    n, mean = len(d), float(d.mean())
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1)
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n)


def verdict(interval: Interval, margin: float = 0.0) -> str:
    """ "holds" / "does not hold" / "no difference detectable at this sample size" (module docstring)."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if interval.low > -margin:
        return HOLDS
    if interval.high < -margin:
        return DOES_NOT_HOLD
    return UNDECIDED
