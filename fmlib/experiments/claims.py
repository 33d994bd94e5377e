"""A paper's claim measured on a result table: paired per-seed difference, 95 % interval, verdict.

A result table has one row per (seed, model, rank) with test metrics (``mse``, ``rmse``,
``logloss``, ``auc``) and, where a claim must pick a model, validation metrics (``valid_mse``, …).
A claim names the model it favours and the model(s) it is compared with; when it names several
(RaFM against "the best single-rank FM"), the one with the best mean *validation* metric is
taken — the test split never chooses anything. ``verdict.py`` turns the interval into a verdict.

A ``Threshold`` claim is about one measured quantity rather than two models (an error below a
tolerance, a speed-up above 1, a success rate of at least 0.9): its table's rows hold one value
per seed, instance or repeat, whatever the table's other columns are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .verdict import (
    Interval,
    mean_interval,
    paired_differences,
    paired_interval,
    threshold_verdict,
    verdict,
    wilson_interval,
)

LOWER_IS_BETTER = {"mse": True, "rmse": True, "mae": True, "logloss": True, "auc": False}


@dataclass(frozen=True)
class Claim:
    paper: str  # reference key, e.g. "DPLR"
    text: str  # the claim in one sentence
    favoured: tuple[str, int]  # (model, rank) rows of the table that the claim says are better
    others: tuple[tuple[str, int], ...]  # compared with the one of these with the best valid metric
    metric: str  # test metric of the comparison
    margin: float = 0.0  # relative to the compared model's mean: "no worse by more than margin"

    def present(self, frame: pd.DataFrame) -> bool:
        """Whether the table holds every model the claim compares."""
        return {self.favoured, *self.others} <= set(zip(frame["model"], frame["rank"]))


STATISTICS = ("max", "mean", "rate", "ratio")


@dataclass(frozen=True)
class Threshold:
    """A claim that one measured quantity lies above (or below) ``threshold``.

    The rows of the table that ``where`` selects ((column, value) pairs) hold one value of
    ``column`` each, one per seed, instance or repeat (``samples`` names them). ``statistic``:
    "max" — the largest of them, a bound with no interval (an error that must stay below a
    tolerance on every seed: one seed above it refutes the claim);
    "mean" — their mean with its t-interval;
    "rate" — the share of true values with its Wilson interval (a success rate);
    "ratio" — the geometric mean with the t-interval of the logs, exponentiated (a speed-up).
    """

    paper: str
    text: str
    where: tuple[tuple[str, object], ...]
    column: str
    statistic: str
    threshold: float
    higher_is_better: bool
    what: str  # the measured value's name in the scorecard, e.g. "success rate"
    samples: str = "seeds"

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        keep = np.ones(len(frame), dtype=bool)
        for column, value in self.where:
            if column not in frame:
                raise ValueError(f"the result table has no column {column!r} (claim: {self.text})")
            keep &= (frame[column] == value).to_numpy()
        return frame[keep]

    def present(self, frame: pd.DataFrame) -> bool:
        return not self.rows(frame).empty

    def interval(self, frame: pd.DataFrame) -> Interval:
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {self.statistic!r}")
        if self.column not in frame:
            raise ValueError(f"the result table has no column {self.column!r} (claim: {self.text})")
        values = self.rows(frame)[self.column]
        if values.empty:
            raise ValueError(f"the result table has no rows with {dict(self.where)} (claim: {self.text})")
        if self.statistic == "rate":
            return wilson_interval(int(values.astype(bool).sum()), len(values))
        if self.statistic == "max":
            top = float(values.max())
            return Interval(top, top, top, len(values))
        if self.statistic == "mean":
            return mean_interval(values)
        logs = mean_interval(np.log(values.to_numpy(dtype=float)))
        return Interval(float(np.exp(logs.mean)), float(np.exp(logs.low)), float(np.exp(logs.high)), logs.n)

    def measure(self, frame: pd.DataFrame) -> dict:
        """The claim as one row of ``COLUMNS``: the value with its interval, the threshold, the verdict."""
        interval = self.interval(frame)
        number = {"max": "{:.2g}", "mean": "{:.4g}", "rate": "{:.2f}", "ratio": "{:.2f}"}[self.statistic].format
        times = "×" if self.statistic == "ratio" else ""
        side = ">" if self.higher_is_better else "<"
        spread = "" if self.statistic == "max" else f" [{number(interval.low)}, {number(interval.high)}]"
        text = (
            f"{self.what} {number(interval.mean)}{times}{spread}, "
            f"{interval.n} {self.samples}; the claim needs {side} {self.threshold:g}"
        )
        return {
            "paper": self.paper,
            "claim": self.text,
            "favoured": self.what,
            "other": f"{side} {self.threshold:g}",
            "metric": self.column,
            "seeds": interval.n,
            "favoured_mean": interval.mean,
            "other_mean": self.threshold,
            "difference": interval.mean,
            "low": interval.low,
            "high": interval.high,
            "margin": 0.0,
            "verdict": threshold_verdict(interval, self.threshold, self.higher_is_better),
            "measured": text,
            "recipes": "",
        }


def scores(frame: pd.DataFrame, model: str, rank: int, column: str) -> pd.Series:
    """Per-seed values of ``column`` for (model, rank), indexed by seed."""
    rows = frame[(frame["model"] == model) & (frame["rank"] == rank)]
    if rows.empty:
        raise ValueError(f"the result table has no rows for model {model!r} at rank {rank}")
    return rows.set_index("seed")[column].sort_index()


def recipes(frame: pd.DataFrame, sides) -> str:
    """ "model: recipe; model: recipe" for the (model, rank) ``sides`` of a comparison, from the
    table's ``recipe`` column (how each was trained); "" for a table without one."""
    if "recipe" not in frame:
        return ""
    out = []
    for model, rank in sides:
        rows = frame[(frame["model"] == model) & (frame["rank"] == rank)]["recipe"].dropna()
        out.append(f"{label(model, rank)}: {rows.iloc[0] if len(rows) else 'not recorded'}")
    return "; ".join(out)


def compared_model(frame: pd.DataFrame, claim: Claim) -> tuple[str, int]:
    """Of ``claim.others``, the model with the best mean validation metric."""
    if len(claim.others) == 1:
        return claim.others[0]
    lower = LOWER_IS_BETTER[claim.metric]
    means = {other: scores(frame, *other, f"valid_{claim.metric}").mean() for other in claim.others}
    return (min if lower else max)(means, key=means.get)


def measure(frame: pd.DataFrame, claim: Claim | Threshold) -> dict:
    """The claim's paired interval and verdict as one row (difference > 0 favours the claim);
    a ``Threshold`` claim measures itself."""
    if isinstance(claim, Threshold):
        return claim.measure(frame)
    if claim.metric not in LOWER_IS_BETTER:
        raise ValueError(f"metric must be one of {list(LOWER_IS_BETTER)}, got {claim.metric!r}")
    other = compared_model(frame, claim)
    a, b = scores(frame, *claim.favoured, claim.metric), scores(frame, *other, claim.metric)
    seeds = a.index.intersection(b.index)
    interval = paired_interval(a[seeds], b[seeds], LOWER_IS_BETTER[claim.metric])
    differences = paired_differences(a[seeds], b[seeds], LOWER_IS_BETTER[claim.metric])
    margin = claim.margin * abs(b[seeds].mean())
    return {
        "paper": claim.paper,
        "claim": claim.text,
        "favoured": label(*claim.favoured),
        "other": label(*other),
        "metric": claim.metric,
        "seeds": interval.n,
        "favoured_mean": float(a[seeds].mean()),
        "other_mean": float(b[seeds].mean()),
        "difference": interval.mean,
        "low": interval.low,
        "high": interval.high,
        "margin": margin,
        "verdict": verdict(interval, margin, f"{100 * claim.margin:g} %", differences),
        "measured": (
            f"{interval.mean:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}] {claim.metric.upper()}, "
            f"{interval.n} seeds, vs {label(*other)}"
        ),
        "recipes": recipes(frame, (claim.favoured, other)),
    }


COLUMNS = [
    "paper", "claim", "favoured", "other", "metric", "seeds", "favoured_mean", "other_mean",
    "difference", "low", "high", "margin", "verdict", "measured", "recipes",
]  # fmt: skip


def label(model: str, rank: int) -> str:
    return model if not rank else f"{model} ρ={rank}" if model != "FM" else f"FM({rank})"


def measure_all(frame: pd.DataFrame, claims) -> pd.DataFrame:
    """One row per claim whose rows the table holds (a table made with fewer ranks skips the rest)."""
    return pd.DataFrame([measure(frame, c) for c in claims if c.present(frame)], columns=COLUMNS)
