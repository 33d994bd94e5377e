"""A paper's claim measured on a result table: paired per-seed difference, 95 % interval, verdict.

A result table has one row per (seed, model, rank) with test metrics (``mse``, ``rmse``,
``logloss``, ``auc``) and, where a claim must pick a model, validation metrics (``valid_mse``, …).
A claim names the model it favours and the model(s) it is compared with; when it names several
(RaFM against "the best single-rank FM"), the one with the best mean *validation* metric is
taken — the test split never chooses anything. ``verdict.py`` turns the interval into a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .verdict import paired_interval, verdict

LOWER_IS_BETTER = {"mse": True, "rmse": True, "mae": True, "logloss": True, "auc": False}


@dataclass(frozen=True)
class Claim:
    paper: str  # reference key, e.g. "DPLR"
    text: str  # the claim in one sentence
    favoured: tuple[str, int]  # (model, rank) rows of the table that the claim says are better
    others: tuple[tuple[str, int], ...]  # compared with the one of these with the best valid metric
    metric: str  # test metric of the comparison
    margin: float = 0.0  # relative to the compared model's mean: "no worse by more than margin"


def scores(frame: pd.DataFrame, model: str, rank: int, column: str) -> pd.Series:
    """Per-seed values of ``column`` for (model, rank), indexed by seed."""
    rows = frame[(frame["model"] == model) & (frame["rank"] == rank)]
    if rows.empty:
        raise ValueError(f"the result table has no rows for model {model!r} at rank {rank}")
    return rows.set_index("seed")[column].sort_index()


def compared_model(frame: pd.DataFrame, claim: Claim) -> tuple[str, int]:
    """Of ``claim.others``, the model with the best mean validation metric."""
    if len(claim.others) == 1:
        return claim.others[0]
    lower = LOWER_IS_BETTER[claim.metric]
    means = {other: scores(frame, *other, f"valid_{claim.metric}").mean() for other in claim.others}
    return (min if lower else max)(means, key=means.get)


def measure(frame: pd.DataFrame, claim: Claim) -> dict:
    """The claim's paired interval and verdict as one row (difference > 0 favours the claim)."""
    if claim.metric not in LOWER_IS_BETTER:
        raise ValueError(f"metric must be one of {list(LOWER_IS_BETTER)}, got {claim.metric!r}")
    other = compared_model(frame, claim)
    a, b = scores(frame, *claim.favoured, claim.metric), scores(frame, *other, claim.metric)
    seeds = a.index.intersection(b.index)
    interval = paired_interval(a[seeds], b[seeds], LOWER_IS_BETTER[claim.metric])
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
        "verdict": verdict(interval, margin),
    }


COLUMNS = [
    "paper", "claim", "favoured", "other", "metric", "seeds", "favoured_mean", "other_mean",
    "difference", "low", "high", "margin", "verdict",
]  # fmt: skip


def label(model: str, rank: int) -> str:
    return model if not rank else f"{model} ρ={rank}" if model != "FM" else f"FM({rank})"


def measure_all(frame: pd.DataFrame, claims) -> pd.DataFrame:
    """One row per claim whose models the table holds (a table made with fewer ranks skips the rest)."""
    present = set(zip(frame["model"], frame["rank"]))
    return pd.DataFrame(
        [measure(frame, c) for c in claims if {c.favoured, *c.others} <= present],
        columns=COLUMNS,
    )
