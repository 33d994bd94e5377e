"""Verdicts on a paper's claim from paired per-seed differences and a 95 % t-interval.

Each seed trains both models of a comparison on the same split, so the per-seed differences
d_s = (score of the claimed-better model) − (score of the other), oriented so that d > 0 favours
the claim, are paired samples. Their 95 % Student-t interval is

    d̄ ± t_{0.975, n−1} · s_d / √n        (s_d: sample standard deviation, ddof = 1)

and the verdict reads the interval against a margin δ ≥ 0 (δ = 0: "better"; δ > 0: "no worse
than the other by more than δ", how a claim such as "DPLR is about as good as FwFM" is tested):

* "holds"          — the whole interval lies above −δ;
* "does not hold"  — the whole interval lies below −δ;
* otherwise the interval holds −δ and the verdict says what is left open (one seed never decides
  anything). Without a margin: "no difference detectable at this sample size". With one, whether
  the claimed model is worse at all is read against 0:
  - the whole interval below 0: "worse on every seed; whether by more than δ is undecided" (or
    "worse on average; …" when some seed's difference is not below 0);
  - the interval holds 0 as well: "not shown to be worse, nor to be within δ".
  Each of these has the outcome "undecided" (``outcome``), what a count of verdicts counts.

A claim about one measured quantity against a threshold τ (a success rate of at least 0.9, an
error below a tolerance, a speed-up above 1) reads its interval the same way, shifted by τ
(``threshold_verdict``). A success rate p̂ = s/n gets the Wilson score interval
(Wilson 1927), which stays inside [0, 1] and is not empty at s = 0 or s = n:

    (p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)        (z = z_{0.975} ≈ 1.96)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
UNDECIDED = "no difference detectable at this sample size"  # a claim without margin, or against a threshold
VERDICTS = (HOLDS, DOES_NOT_HOLD, UNDECIDED)  # the verdicts of a claim without margin
OPEN = "undecided"  # the outcome of every verdict that decides neither way, margin claims' words included
OUTCOMES = (HOLDS, DOES_NOT_HOLD, OPEN)


@dataclass(frozen=True)
class Interval:
    """Mean paired difference, its 95 % t-interval [low, high] and the number of seeds n."""

    mean: float
    low: float
    high: float
    n: int


def paired_differences(favoured, other, lower_is_better: bool) -> np.ndarray:
    """d_s = score(favoured) − score(other) per seed, signed so that d > 0 favours ``favoured``
    (for a loss such as MSE: d_s = other_s − favoured_s)."""
    a, b = np.asarray(favoured, dtype=float), np.asarray(other, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 1:
        raise ValueError(f"need two equally long, non-empty lists of per-seed scores, got {a.shape} and {b.shape}")
    return b - a if lower_is_better else a - b


def paired_interval(favoured, other, lower_is_better: bool, confidence: float = 0.95) -> Interval:
    """Interval of the per-seed differences ``paired_differences``."""
    d = paired_differences(favoured, other, lower_is_better)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    n, mean = len(d), float(d.mean())
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1)
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n)


def verdict(interval: Interval, margin: float = 0.0, margin_text: str | None = None, differences=None) -> str:
    """ "holds", "does not hold", or the words of what is left open (module docstring). ``margin_text``
    names the margin in those words (e.g. "1 %"; default: its value); ``differences``, the per-seed
    d_s, let them say "on every seed"."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if interval.low > -margin:
        return HOLDS
    if interval.high < -margin:
        return DOES_NOT_HOLD
    if margin == 0:
        return UNDECIDED
    return open_margin(interval, margin_text or f"{margin:.2g}", differences)


def open_margin(interval: Interval, margin_text: str, differences=None) -> str:
    """The verdict of a margin claim whose interval holds −δ: worse or not is read against 0, and
    whether every seed says so from the per-seed ``differences``."""
    if interval.high < 0:
        every = differences is not None and bool((np.asarray(differences) < 0).all())
        return f"worse {'on every seed' if every else 'on average'}; whether by more than {margin_text} is undecided"
    return f"not shown to be worse, nor to be within {margin_text}"


def outcome(words: str) -> str:
    """What a verdict decided, one of ``OUTCOMES``: "holds", "does not hold" or "undecided"."""
    return words if words in (HOLDS, DOES_NOT_HOLD) else OPEN


def mean_interval(values, confidence: float = 0.95) -> Interval:
    """The mean of per-seed values with its Student-t interval (one value: unbounded)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or len(x) < 1:
        raise ValueError(f"need a non-empty list of per-seed values, got shape {x.shape}")
    return paired_interval(x, np.zeros_like(x), lower_is_better=False, confidence=confidence)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The success rate s/n with its Wilson score interval (module docstring)."""
    if not (n >= 1 and 0 <= successes <= n):
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z, p = float(norm.ppf(0.5 + confidence / 2)), successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return Interval(p, max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale), n)


def threshold_verdict(interval: Interval, threshold: float, higher_is_better: bool) -> str:
    """ "holds" when the whole interval lies on the claimed side of ``threshold``, "does not hold"
    when it lies wholly on the other side, else undecided (``verdict`` of the shifted interval)."""
    sign = 1.0 if higher_is_better else -1.0
    low, high = sorted((sign * (interval.low - threshold), sign * (interval.high - threshold)))
    return verdict(Interval(sign * (interval.mean - threshold), low, high, interval.n))
