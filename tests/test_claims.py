import numpy as np
import pandas as pd
import pytest

from fmlib.experiments.claims import Claim, measure, measure_all
from fmlib.experiments.verdict import DOES_NOT_HOLD, HOLDS, UNDECIDED


def _table(rng):
    rows = []
    for seed in range(5):
        base = 0.80 + 0.01 * rng.standard_normal()  # a per-seed shift shared by every model: pairing removes it
        for model, rank, shift, valid in [
            ("DPLR", 2, -0.010, 0.0),
            ("Pruned", 2, 0.000, 0.0),
            ("FM", 8, 0.002, 0.90),
            ("FM", 32, 0.004, 0.95),
        ]:
            mse = base + shift + 0.0005 * rng.standard_normal()
            rows.append({"seed": seed, "model": model, "rank": rank, "mse": mse, "valid_mse": valid})
    return pd.DataFrame(rows)


def test_paired_differences_see_through_seed_noise():
    frame = _table(np.random.default_rng(0))
    row = measure(frame, Claim("DPLR", "DPLR beats pruning", ("DPLR", 2), (("Pruned", 2),), "mse"))
    assert row["verdict"] == HOLDS and row["low"] > 0
    assert row["difference"] == pytest.approx(0.010, abs=0.002)
    reverse = measure(frame, Claim("DPLR", "pruning beats DPLR", ("Pruned", 2), (("DPLR", 2),), "mse"))
    assert reverse["verdict"] == DOES_NOT_HOLD


def test_the_best_of_several_is_chosen_by_validation():
    frame = _table(np.random.default_rng(1))
    row = measure(frame, Claim("RaFM", "x", ("DPLR", 2), (("FM", 32), ("FM", 8)), "mse"))
    assert row["other"] == "FM(8)"  # lower valid_mse, whatever the test says


def test_margin_turns_better_into_no_worse():
    frame = _table(np.random.default_rng(2))
    strict = measure(frame, Claim("x", "FM(8) beats pruning", ("FM", 8), (("Pruned", 2),), "mse"))
    loose = measure(frame, Claim("x", "FM(8) about as good", ("FM", 8), (("Pruned", 2),), "mse", margin=0.01))
    assert strict["verdict"] == DOES_NOT_HOLD and loose["verdict"] == HOLDS
    assert loose["margin"] == pytest.approx(0.01 * loose["other_mean"])


def test_an_open_margin_claim_says_which_side_is_open():
    """RaFM-low at about 1 % worse than FM on every seed: worse is decided, "more than 1 %" is not."""
    rows = [
        {"seed": seed, "model": model, "rank": 0, "mse": mse}
        for seed, (low, fm) in enumerate([(0.8080, 0.80), (0.8092, 0.80), (0.8075, 0.80), (0.8087, 0.80)])
        for model, mse in (("RaFM-low", low), ("FM", fm))
    ]
    claim = Claim("RaFM", "RaFM-low is about as accurate as FM", ("RaFM-low", 0), (("FM", 0),), "mse", margin=0.01)
    row = measure(pd.DataFrame(rows), claim)
    assert row["high"] < 0 and row["low"] < -row["margin"] < row["high"]  # below 0, holds −δ: −0.008 at 0.80
    assert row["verdict"] == "worse on every seed; whether by more than 1 % is undecided"
    rows[0]["mse"], rows[2]["mse"] = 0.8150, 0.8000  # RaFM-low: seed 0 worse by 1.9 %, seed 1 as good
    row = measure(pd.DataFrame(rows), claim)
    assert row["low"] < -row["margin"] and row["high"] > 0
    assert row["verdict"] == "not shown to be worse, nor to be within 1 %"


def test_claims_on_missing_models_are_skipped_and_bad_metric_refused():
    frame = _table(np.random.default_rng(3))
    claims = [
        Claim("x", "a", ("DPLR", 2), (("Pruned", 2),), "mse"),
        Claim("x", "b", ("DPLR", 5), (("Pruned", 5),), "mse"),
    ]
    assert list(measure_all(frame, claims)["claim"]) == ["a"]
    with pytest.raises(ValueError, match="metric"):
        measure(frame, Claim("x", "a", ("DPLR", 2), (("Pruned", 2),), "r2"))
    one_seed = frame[frame.seed == 0]
    assert measure(one_seed, claims[0])["verdict"] == UNDECIDED


def test_threshold_claims_from_a_small_table():
    from fmlib.experiments.claims import Threshold

    frame = pd.DataFrame(
        {
            "seed": [0, 1, 2, 3, 0, 1, 2, 3],
            "gamma": ["0"] * 4 + ["big"] * 4,
            "success": [1, 1, 1, 0, 0, 0, 0, 0],
            "error": [1e-16, 2e-16, 1e-16, 3e-16, 0.5, 0.6, 0.4, 0.5],
            "speedup": [2.0, 2.2, 1.9, 2.1, 0.9, 1.1, 1.0, 1.0],
        }
    )

    def claim(gamma, column, statistic, threshold, higher=True):
        return Threshold("X", f"{column} at {gamma}", (("gamma", gamma),), column, statistic, threshold, higher, column)

    rows = measure_all(frame, [claim("big", "success", "rate", 0.9), claim("none", "success", "rate", 0.9)])
    assert len(rows) == 1  # no rows for gamma "none": skipped, like a model the table lacks
    assert rows["verdict"][0] == DOES_NOT_HOLD and rows["difference"][0] == 0 and rows["high"][0] < 0.9
    assert rows["measured"][0].startswith("success 0.00 [0.00, 0.")
    assert "4 seeds; the claim needs > 0.9" in rows["measured"][0]
    assert measure(frame, claim("0", "success", "rate", 0.9))["verdict"] == UNDECIDED  # 3/4: too few
    assert measure(frame, claim("0", "error", "mean", 1e-10, higher=False))["verdict"] == HOLDS
    worst = measure(frame, claim("0", "error", "max", 1e-10, higher=False))
    assert worst["verdict"] == HOLDS and worst["difference"] == 3e-16 and worst["measured"].startswith("error 3e-16, 4")
    assert measure(frame, claim("big", "error", "max", 0.55, higher=False))["verdict"] == DOES_NOT_HOLD
    assert measure(frame, claim("big", "error", "mean", 1e-10, higher=False))["verdict"] == DOES_NOT_HOLD
    fast = measure(frame, claim("0", "speedup", "ratio", 1.0))
    assert fast["verdict"] == HOLDS and fast["difference"] == pytest.approx(np.exp(np.log([2, 2.2, 1.9, 2.1]).mean()))
    assert "×" in fast["measured"]
    assert measure(frame, claim("big", "speedup", "ratio", 1.0))["verdict"] == UNDECIDED
    with pytest.raises(ValueError, match="no column 'nope'"):
        measure(frame, claim("0", "nope", "mean", 1.0))
    with pytest.raises(ValueError, match="statistic must be one of"):
        measure(frame, claim("0", "error", "median", 1.0))
