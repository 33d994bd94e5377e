"""``python -m fmlib reproduce inversion``: [AttnInv]'s attack on planted instances — success vs γ.

Synthetic: no data set. Instance s (s = 0 … count − 1) draws W, V of spectral norm 1 and a secret
X_true ~ N(0, 1)^{d×n} (``inversion.planted_instance``); the attacker sees W, V and
B = f(W; X_true) (Def. 3.1) and minimises L(X) + γ‖X‖² by damped Newton (``attack.trials``,
60 steps) from two starts per instance, for each γ of the grid: 0, 1e-4, 0.01, 1, 100 and
Theorem 4.2's bound, corrected (``attack.gamma_bound`` = 72n²dR⁸, with R the largest of
Assumption 4.1's norms over the instances). Two kinds of start: "random", X0 ~ N(0, 1), and
"near", X_true + 0.3·N(0, 1) — Theorem 4.4's good initial point.

A run succeeds when ‖X − X_true‖_F / ‖X_true‖_F < 1 %; an instance's two starts agree when they
end within 1e-6·‖X_true‖_F of each other, which a strongly convex loss guarantees. The table has
one row per (start kind, γ, instance): the first start's relative error (3 significant digits)
and success, and whether the second start agreed with it.

The paper's claims ([AttnInv] Thm. 4.2–4.4): with γ ≥ O(ndR⁸) the regularised loss is strongly
convex, and gradient descent or Newton "recover the initial data" with probability at least
1 − δ, δ ∈ (0, 0.1). So each claim needs a rate above 0.9, read from its Wilson interval over
instances.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pandas as pd

from ..arguments import positive_int
from ..inversion import attack
from ..results import results_dir
from . import tables
from .claims import Threshold
from .verdict import wilson_interval

GAMMAS = (0.0, 1e-4, 1e-2, 1.0, 100.0)  # and the bound, appended per table
BOUND = "Thm 4.2 bound"
STARTS = {"random": None, "near": 0.3}  # start kind -> noise around X_true (None: independent of it)
RATE = 0.9  # 1 − δ with δ < 0.1 (Thm. 4.4)
COLUMNS = (
    "seed", "model", "rank", "n", "d", "gamma", "regulariser", "start_kind", "rel_error", "success", "agree",
)  # fmt: skip


def table_name(dataset: str = "", task: str = "") -> str:
    """Synthetic: one table whatever the data set and task."""
    return "inversion_synthetic.csv"


def bound(n: int, d: int, count: int) -> float:
    """Theorem 4.2's γ (corrected) at the largest R of Assumption 4.1 over instances 0 … count − 1."""
    instances = [attack.planted_instance(n, d, 1.0, s) for s in range(count)]
    R = max(attack.assumption_R(i.W, i.V, i.X_true, i.B) for i in instances)
    return attack.gamma_bound(n, d, R)


def label(gamma: float, at_bound: float) -> str:
    return BOUND if gamma == at_bound else f"{gamma:g}"


def experiment(n: int, d: int, count: int, steps: int = 60, log=None) -> pd.DataFrame:
    """One row per (start kind, γ, instance): the table ``run`` writes."""
    top = bound(n, d, count)
    parts = []
    for kind, noise in STARTS.items():
        start = time.perf_counter()
        table = attack.trials(n, d, 1.0, [*GAMMAS, top], count, steps=steps, start_noise=noise)
        table = table[table["start"] == 0].rename(columns={"trial": "seed"})
        parts.append(
            table.assign(
                model="newton",
                rank=0,
                n=n,
                d=d,
                regulariser=[label(g, top) for g in table["gamma"]],
                start_kind=kind,
                rel_error=[float(f"{e:.3g}") for e in table["rel_error"]],
                success=table["success"].astype(int),
                agree=table["agree"].astype(int),
            )
        )
        if log:
            log(
                f"{kind} starts: {count} instances × 2 starts × {len(GAMMAS) + 1} γ, {time.perf_counter() - start:.0f} s"
            )
    return pd.concat(parts, ignore_index=True)[list(COLUMNS)]


def rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (start kind, γ): success and agreement rates over instances with Wilson intervals."""
    rows = []
    for (kind, gamma), part in frame.groupby(["start_kind", "gamma"], sort=True):
        row = {"start_kind": kind, "gamma": gamma, "regulariser": part["regulariser"].iloc[0], "runs": len(part)}
        for key in ("success", "agree"):
            interval = wilson_interval(int(part[key].astype(bool).sum()), len(part))
            row |= {f"{key}_rate": interval.mean, f"{key}_rate_low": interval.low, f"{key}_rate_high": interval.high}
        row["median_rel_error"] = part["rel_error"].median()
        rows.append(row)
    return pd.DataFrame(rows)


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: convexity and recovery at Theorem 4.2's γ."""

    def rate(text, column, kind, what):
        where = (("regulariser", BOUND), ("start_kind", kind))
        return Threshold("AttnInv", text, where, column, "rate", RATE, True, what, "instances")

    return frame, [
        rate(
            "At Thm 4.2's γ every start reaches the same point (the regularised loss is convex; synthetic)",
            "agree",
            "random",
            "starts agree",
        ),
        rate(
            "At Thm 4.2's γ Newton from a random start recovers the secret input (Thm 4.3/4.4; synthetic)",
            "success",
            "random",
            "success rate",
        ),
        rate(
            "At Thm 4.2's γ Newton from a start near the secret recovers it (Thm 4.4; synthetic)",
            "success",
            "near",
            "success rate",
        ),
    ]


def format_table(frame: pd.DataFrame) -> str:
    lines = [f"{'start':<8}{'γ':<16}{'success [95 % Wilson]':>26}{'starts agree':>26}{'median rel. error':>19}"]
    for r in rates(frame).itertuples():
        lines.append(
            f"{r.start_kind:<8}{r.regulariser:<16}"
            f"{r.success_rate:>10.2f} [{r.success_rate_low:.2f}, {r.success_rate_high:.2f}]"
            f"{r.agree_rate:>14.2f} [{r.agree_rate_low:.2f}, {r.agree_rate_high:.2f}]{r.median_rel_error:>19.2g}"
        )
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--instances", type=positive_int, default=200, help="planted instances (default 200)")
    parser.add_argument("--n", type=positive_int, default=4, help="tokens n (default 4; n·d at most 300)")
    parser.add_argument("--d", type=positive_int, default=3, help="token length d (default 3; n·d at most 300)")
    parser.add_argument("--steps", type=positive_int, default=60, help="Newton steps (default 60)")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "inversion", "--instances", str(args.instances)]
    words += ["--n", str(args.n), "--d", str(args.d), "--steps", str(args.steps)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    frame = experiment(args.n, args.d, args.instances, args.steps, log)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
