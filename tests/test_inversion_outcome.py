"""The sentence a page shows for one inversion run says what its trajectory measured."""

import math

import pandas as pd
import pytest
import torch

from fmlib.inversion import Inversion, attack, invert, planted_instance
from fmlib.inversion.outcome import SUCCESS_TOL, describe, outcome


def near_newton(seed, steps=100):
    inst = planted_instance(4, 3, 1.0, seed)
    X0 = attack.near_start(inst.X_true, 0.3, seed)
    return inst, invert(inst.W, inst.V, inst.B, "newton", 0.0, steps=steps, X0=X0, X_true=inst.X_true)


def test_the_page_default_near_start_that_stops_short_is_not_called_recovered():
    """Seed 0, near start: Newton's loss falls a hundred-millionfold but it ends ~11 % away from the secret."""
    inst, run = near_newton(0)
    o = outcome(run, inst.X_true)
    rel = run.trajectory["dist"].iloc[-1] / inst.X_true.norm().item()
    assert o.end_error == pytest.approx(rel) and rel > SUCCESS_TOL
    assert o.kind == "look-alike"
    text = describe(run, inst.X_true)
    assert "recovers" not in text and "reaches" not in text
    assert f"ends {rel:.2g}·‖X_true‖ from the secret after 100 steps" in text and "not the secret" in text
    assert "still closing in" in text  # it was farther away after 50 steps


def test_a_run_that_recovers_the_secret_says_so_with_its_distance():
    seed = next(s for s in range(1, 20) if outcome(near_newton(s)[1], near_newton(s)[0].X_true).kind == "recovered")
    inst, run = near_newton(seed)
    rel = run.trajectory["dist"].iloc[-1] / inst.X_true.norm().item()
    assert rel < SUCCESS_TOL
    text = describe(run, inst.X_true)
    assert text.startswith("Damped Newton recovers the secret") and f"{rel:.2g}·‖X_true‖" in text


def test_a_regularised_run_ends_at_a_minimum_that_is_not_the_secret():
    inst = planted_instance(4, 3, 1.0, 0)
    run = invert(inst.W, inst.V, inst.B, "newton", 1.0, steps=100, seed=0, X_true=inst.X_true)
    o = outcome(run, inst.X_true)
    assert o.kind == "minimum" and o.min_eig > 0 and o.end_error > 0.5
    assert "stuck at a minimum that is not the secret" in describe(run, inst.X_true)


def trajectory(dist, loss, grad, eig):
    return Inversion(
        torch.zeros(1, 1),
        pd.DataFrame({"step": range(len(dist)), "loss": loss, "grad_norm": grad, "dist": dist, "min_eig": eig}),
        "gd",
    )


def test_the_four_kinds_follow_the_recorded_numbers():
    X_true = torch.ones(1, 1)  # ‖X_true‖ = 1: dist is the relative error
    nan = math.nan
    assert outcome(trajectory([1, 0.5, 0.001], [1, 0.1, 1e-9], [1, 1, 1e-9], [nan, nan, 1]), X_true).kind == "recovered"
    assert outcome(trajectory([1, 0.5, 0.3], [1, 0.1, 1e-5], [1, 1, 1e-3], [nan, nan, -1]), X_true).kind == "look-alike"
    assert outcome(trajectory([1, 0.5, 0.3], [1, 0.5, 0.4], [1, 1, 1e-9], [nan, nan, 0.2]), X_true).kind == "minimum"
    still = trajectory([1, 0.5, 0.3], [1, 0.5, 0.4], [1, 1, 0.1], [nan, nan, 0.2])  # λ_min > 0 but not stationary
    assert outcome(still, X_true).kind == "not converged"
    text = describe(still, X_true)
    assert "still descending (gradient 0.1, λ_min = 0.2)" in text and "0.3·‖X_true‖" in text
    away = describe(trajectory([1, 0.5, 0.8], [1, 0.1, 1e-6], [1, 1, 1e-3], [nan, nan, 0.0]), X_true)
    assert "moving away (0.5 away after 1 step)" in away


def test_a_run_without_the_secret_cannot_be_judged():
    inst = planted_instance(3, 2, 1.0, 0)
    run = invert(inst.W, inst.V, inst.B, "gd", 0.0, steps=3)
    with pytest.raises(ValueError, match="pass X_true"):
        outcome(run, inst.X_true)
