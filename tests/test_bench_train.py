"""``bench train``'s counts: matrix-product multiply-adds of a training step, and RaFM's
evaluation cost (Corollary 4) against the FM of its largest rank, both against counts by hand."""

from __future__ import annotations

import torch
from torch import nn

from fmlib.bench.train import multiply_adds_per_row, rafm_cost_ratios
from fmlib.models.fm import FM
from fmlib.models.rafm import RaFM
from tests.test_rafm import SCHEMA, counts_for, random_batch


def test_multiply_adds_of_a_linear_step_are_forward_plus_weight_gradient():
    layer = nn.Linear(5, 3, bias=False)
    x = torch.randn(8, 5)  # no gradient to the input: backward computes the weight's only

    def step(rows):
        layer(x[rows]).sum().backward()

    assert multiply_adds_per_row(step, torch.arange(8)) == 5 * 3 + 5 * 3


def test_rafm_cost_ratios_equal_counts_by_hand():
    ranks = (2, 4, 7)
    model = RaFM(SCHEMA, ranks=ranks).set_counts(counts_for(ranks, seed=1))
    index, weight = random_batch(SCHEMA, n=40, seed=2)
    fm = corollary = fmlib = 0
    for b in range(len(index)):
        k = [int(model.k[i]) for i, w in zip(index[b], weight[b]) if w > 0]  # rank index of each slot
        fm += ranks[-1] * len(k)
        corollary += sum(sum(ranks[:ki]) for ki in k)  # slot with rank index ki is in F_1 … F_ki
        fmlib += ranks[-1] * len(k) + sum(2 * ranks[p - 1] * len(k) for p in range(1, len(ranks)) if p in k)
    got = rafm_cost_ratios(model, index, weight)
    assert got == {"corollary 4": round(corollary / fm, 4), "fmlib": round(fmlib / fm, 4)}


def test_with_every_feature_at_the_top_rank_fmlib_costs_the_fm_and_corollary_4_more():
    ranks = (2, 4, 7)
    model = RaFM(SCHEMA, ranks=ranks).set_counts([400] * SCHEMA.num_features)
    index, weight = random_batch(SCHEMA, n=10)
    assert rafm_cost_ratios(model, index, weight) == {"corollary 4": round(13 / 7, 4), "fmlib": 1.0}


def test_an_fm_step_counts_its_multi_valued_field_both_ways():
    """x_f V_f forward and x_fᵀ ∂/∂e_f backward: 2 |f| (k + 1) per row ([v | w] has k + 1 columns)."""
    model = FM(SCHEMA, dim=4)
    index, weight = random_batch(SCHEMA, n=16)

    def step(rows):
        model(index[rows], weight[rows]).sum().backward()

    genres = SCHEMA.fields[-1].cardinality
    assert multiply_adds_per_row(step, torch.arange(16)) == 2 * genres * (4 + 1)
