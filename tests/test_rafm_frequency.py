"""Eq. 17 rank assignment, its thresholds, histograms and parameter counts (fmlib.models.rafm_ranks, fmlib.analysis.frequency)."""

from __future__ import annotations

import numpy as np
import pytest

from fmlib.analysis.frequency import occurrence_histogram, parameter_summary, rank_table, zero_count_note
from fmlib.data.schema import Schema
from fmlib.models.rafm_ranks import assign_ranks, check_ranks, feature_set_sizes, stored_parameters, thresholds

SCHEMA = Schema.build([("user", "context", "single", 5, 1), ("genres", "item", "multi", 4, 2)])


@pytest.mark.parametrize("ranks", [(8, 32), (4, 16, 64), (3, 5, 11, 40)])
def test_eq_17_is_the_literal_argmin_and_the_threshold_rule(ranks):
    n = np.arange(0, 5000)
    k = assign_ranks(n, ranks)
    with np.errstate(divide="ignore"):
        literal = np.abs(np.log(n[1:, None]) - np.log(np.array(ranks))[None, :]).argmin(1) + 1
    t = thresholds(ranks)
    ties = np.isin(n[1:] ** 2, np.multiply(ranks[:-1], ranks[1:]))
    assert np.array_equal(k[1:][~ties], literal[~ties])
    assert np.array_equal(k[1:], 1 + (n[1:, None] > t[None, :]).sum(1))
    assert k[0] == 1  # n = 0: the limit log n → −∞ picks D_1


def test_thresholds_are_geometric_means_and_ties_go_low():
    assert thresholds((8, 32)).tolist() == [16.0]
    assert thresholds((4, 16, 64)).tolist() == [8.0, 32.0]
    assert assign_ranks([15, 16, 17], (8, 32)).tolist() == [1, 1, 2]
    assert assign_ranks([1, 8, 9, 32, 33, 10**6], (4, 16, 64)).tolist() == [1, 1, 2, 2, 3, 3]


def test_feature_sets_and_stored_parameters():
    levels = np.array([1, 3, 2, 3, 1, 2, 3])
    assert feature_set_sizes(levels, 3).tolist() == [7, 5, 3]
    assert stored_parameters(levels, (2, 4, 8)) == 2 * 7 + 4 * 5 + 8 * 3


@pytest.mark.parametrize(
    "ranks, message",
    [
        ((32, 8), "strictly increasing"),
        ((4, 4), "strictly increasing"),
        ((0, 4), "positive"),
        ((16,), "at least two ranks"),
        ((), "at least two ranks"),
        ((2.0, 4), "integers"),
        ("4,8", "list of integers"),
    ],
)
def test_bad_rank_sets(ranks, message):
    with pytest.raises(ValueError, match=message):
        check_ranks(ranks)
    with pytest.raises(ValueError, match=message):
        assign_ranks([1, 2, 3], ranks)


def test_bad_counts():
    with pytest.raises(ValueError, match="non-negative integers"):
        assign_ranks([1, -2, 3], (4, 8))
    with pytest.raises(ValueError, match="non-negative integers"):
        assign_ranks([1.5, 2], (4, 8))
    with pytest.raises(ValueError, match="zero occurrences"):
        assign_ranks([0, 0], (4, 8))
    with pytest.raises(ValueError, match="1-D"):
        assign_ranks([[1, 2]], (4, 8))


def test_histogram_bins_are_powers_of_two_per_field_and_zeros_reported():
    counts = np.array([0, 1, 2, 3, 9, 0, 200, 130, 1])  # user rows 0-4, genres rows 5-8
    hist = occurrence_histogram(counts, SCHEMA)
    got = {(r.field, r.label): r.features for r in hist.itertuples()}
    assert got == {
        ("user", "1"): 1,
        ("user", "2–3"): 2,
        ("user", "8–15"): 1,
        ("genres", "1"): 1,
        ("genres", "128–255"): 2,
    }
    assert hist["features"].sum() == (counts > 0).sum()
    assert all((hist["low"] <= hist["high"] - 1)) and set(hist["low"]) <= {2**j for j in range(9)}
    assert zero_count_note(counts).startswith("2 feature rows never occur")
    assert zero_count_note(counts + 1) == ""


def test_rank_table_and_parameter_summary():
    counts = np.array([0, 1, 20, 40, 9, 0, 200, 130, 1])
    table = rank_table(counts, (4, 16), SCHEMA)
    assert table.to_dict("records") == [
        {"field": "user", "features": 5, "never seen": 1, "k=1 (D=4)": 2, "k=2 (D=16)": 3},
        {"field": "genres", "features": 4, "never seen": 1, "k=1 (D=4)": 2, "k=2 (D=16)": 2},
    ]
    summary = parameter_summary(counts, (4, 16))
    assert summary["F_sizes"] == [9, 5]  # threshold √(4·16) = 8: 9, 20, 40, 200, 130 get D = 16
    assert summary["rafm_parameters"] == 4 * 9 + 16 * 5 and summary["fm_parameters"] == 16 * 9
    assert summary["occurrence_share"][1] == pytest.approx((20 + 40 + 9 + 200 + 130) / counts.sum())
