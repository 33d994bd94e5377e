"""What one inversion run did, read off its trajectory, and the sentence a page or notebook shows for it.

A run of ``attack.invert`` ([AttnInv] Def. 3.1: minimise L(X) = ‖f(W; X) − B‖²_F + γ‖X‖²_F) ends in
one of four ways, judged by the numbers it recorded, never by what the theory promises:

* "recovered": ‖X_T − X_true‖_F / ‖X_true‖_F < ``SUCCESS_TOL`` (1 %, the criterion of
  ``attack.trials`` and ``python -m fmlib reproduce inversion``);
* "look-alike": the loss fell below ``FLAT`` times its starting value, yet X_T is not the secret —
  an input whose output is (nearly) B, or a point in a nearly flat valley on the way to the secret;
* "minimum": loss not near zero, the gradient norm below ``STATIONARY`` times its starting value and
  the smallest Hessian eigenvalue λ_min ≥ 0 at the end: a minimum (of the regularised loss where
  γ > 0) that is not the secret;
* "not converged": anything else — the run is still descending.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

SUCCESS_TOL = 1e-2  # relative distance below which the secret counts as recovered (as in attack.trials)
FLAT = 1e-4  # a loss below FLAT × its starting value counts as nearly zero (a 1 % output mismatch of the start's)
STATIONARY = 1e-6  # a gradient norm below STATIONARY × its starting value counts as zero
NAMES = {"gd": "Gradient descent", "adam": "Adam", "newton": "Damped Newton"}


@dataclass(frozen=True)
class Outcome:
    method: str
    steps: int
    start_error: float  # ‖X_0 − X_true‖_F / ‖X_true‖_F
    half_error: float  # the same after half the steps
    end_error: float  # the same at the end
    start_loss: float
    end_loss: float
    grad_norm: float  # ‖∇L‖ at the end
    min_eig: float  # λ_min(∇²L) at the end, NaN where not tracked
    kind: str  # "recovered" | "look-alike" | "minimum" | "not converged"


def outcome(run, X_true: torch.Tensor, success_tol: float = SUCCESS_TOL) -> Outcome:
    """The ``Outcome`` of an ``Inversion`` whose trajectory recorded the distance to ``X_true``."""
    t = run.trajectory
    if t["dist"].isna().any():
        raise ValueError("the run did not record its distance to the secret: pass X_true to invert")
    norm = float(torch.as_tensor(X_true).norm())
    rel = t["dist"].to_numpy() / norm
    start_loss, end_loss = float(t["loss"].iloc[0]), float(t["loss"].iloc[-1])
    start_grad, end_grad = float(t["grad_norm"].iloc[0]), float(t["grad_norm"].iloc[-1])
    min_eig = float(t["min_eig"].dropna().iloc[-1]) if t["min_eig"].notna().any() else math.nan
    if rel[-1] < success_tol:
        kind = "recovered"
    elif end_loss <= FLAT * start_loss:
        kind = "look-alike"
    elif end_grad <= STATIONARY * start_grad and min_eig >= 0:
        kind = "minimum"
    else:
        kind = "not converged"
    return Outcome(
        run.method,
        run.steps,
        float(rel[0]),
        float(rel[(len(rel) - 1) // 2]),  # step steps // 2
        float(rel[-1]),
        start_loss,
        end_loss,
        end_grad,
        min_eig,
        kind,
    )


def describe(run, X_true: torch.Tensor, success_tol: float = SUCCESS_TOL) -> str:
    """One sentence on what the run did, every number from its trajectory."""
    o = outcome(run, X_true, success_tol)
    name = NAMES.get(o.method, o.method)
    where = f"{o.end_error:.2g}·‖X_true‖ from the secret after {o.steps} steps (it started {o.start_error:.2g} away)"
    if o.kind == "recovered":
        return f"{name} recovers the secret: it ends {where}, under the {success_tol:.0%} that counts as recovered."
    head = f"{name} ends {where}, with loss {o.end_loss:.2g}"
    if o.kind == "look-alike":
        half = f"{o.half_error:.2g} away after {o.steps // 2} step{'' if o.steps // 2 == 1 else 's'}"
        if o.end_error < 0.9 * o.half_error:
            trend = f"still closing in ({half})"
        elif o.end_error > 1.1 * o.half_error:
            trend = f"moving away ({half})"
        else:
            trend = f"no longer closing in ({half})"
        return (
            f"{head} — {o.end_loss / o.start_loss:.1g} of its start: an input with almost the same output as the "
            f"secret, yet not the secret; the run is {trend}, λ_min = {o.min_eig:.2g}."
        )
    if o.kind == "minimum":
        return (
            f"{head}, gradient {o.grad_norm:.1g} and λ_min = {o.min_eig:.2g} ≥ 0: stuck at a minimum that is not "
            "the secret."
        )
    eig = "" if math.isnan(o.min_eig) else f", λ_min = {o.min_eig:.2g}"
    return f"{head}: still descending (gradient {o.grad_norm:.2g}{eig}), neither at the secret nor at a minimum."
