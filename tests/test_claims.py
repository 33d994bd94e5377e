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
