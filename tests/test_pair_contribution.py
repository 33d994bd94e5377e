"""One pair's term R_fg⟨e_f, e_g⟩ in one sample's score ([FwFM] eq. 3) against the models' own forward passes,
and the five-field toy R the Field interactions page opens with."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from random_samples import SCHEMA, random_dataset

from fmlib.analysis.budget_toy import FIELDS, ODD, budget_toy, toy_R
from fmlib.analysis.interactions import budget, interaction_matrix, prune, prune_mask, with_R
from fmlib.analysis.pair_contribution import (
    interaction_score,
    pair_contribution,
    pair_terms,
    sample_embeddings,
    sample_label,
)
from fmlib.data.dataset import Dataset
from fmlib.data.schema import Schema
from fmlib.models import build_model


def trained_looking(name: str, seed: int = 0, **hp):
    """A model whose every parameter is random and far from its start (R not the FM's, w and w0 not 0)."""
    torch.manual_seed(seed)
    model = build_model(name, SCHEMA, dim=3, **hp)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    return model.eval()


@torch.no_grad()
def naive_sample(model, data: Dataset, row: int) -> tuple[float, np.ndarray]:
    """w0 + Σ_s weight_s w[index_s] and e_f = Σ_{slots s of f} weight_s v[index_s], slot by slot."""
    index, weight = data.index[row].long(), data.weight[row]
    first = float(model.bias)
    e = np.zeros((SCHEMA.num_fields, model.dim))
    for s, f in enumerate(SCHEMA.slot_fields()):
        first += float(weight[s] * model.linear.weight[index[s], 0])
        e[f] += float(weight[s]) * model.embedding.weight[index[s]].double().numpy()
    return first, e


@pytest.mark.parametrize(("name", "hp"), [("fwfm", {}), ("dplr", {"rank": 2})], ids=["fwfm", "dplr"])
def test_the_pair_terms_plus_first_order_are_the_models_forward_pass(name, hp):
    """Σ_{f<g} R_fg⟨e_f, e_g⟩ by a double loop over the pairs' terms, plus w0 + Σ w_i x_i, is the model's own
    prediction for the sample (DPLR's forward pass uses Proposition 1 and never forms R)."""
    model, data = trained_looking(name, **hp), random_dataset(n=12)
    R = interaction_matrix(model)
    with torch.no_grad():
        forward = model(*data.batch(slice(None))).double().numpy()
    for row in range(len(data)):
        sample = sample_embeddings(model, data, row)
        first, e = naive_sample(model, data, row)
        assert sample.first_order == pytest.approx(first, rel=1e-5, abs=1e-5)
        np.testing.assert_allclose(sample.e, e, rtol=1e-5, atol=1e-6)
        total = 0.0
        for f, g in itertools.combinations(range(SCHEMA.num_fields), 2):  # the naive double loop
            (term,) = pair_contribution(sample, {"R": R}, f, g)["term"]
            assert term == pytest.approx(R[f, g] * float(e[f] @ e[g]), rel=1e-5, abs=1e-6)
            total += term
        assert sample.first_order + total == pytest.approx(forward[row], rel=1e-5, abs=1e-5)
        (score,) = pair_contribution(sample, {"R": R}, 0, 3)["score"]
        assert score == pytest.approx(forward[row], rel=1e-5, abs=1e-5)


def test_a_swapped_R_scores_as_the_model_with_that_R():
    """The pruned row of the table is what the FwFM pruned to that R (``with_R``) predicts, embeddings unchanged."""
    model, data = trained_looking("fwfm", seed=1), random_dataset(n=12, seed=1)
    R = interaction_matrix(model)
    pruned = prune(R, 3)
    with torch.no_grad():
        forward = with_R(model, pruned).eval()(*data.batch(slice(None))).double().numpy()
    mask = prune_mask(R, 3)
    for row in range(len(data)):
        sample = sample_embeddings(model, data, row)
        table = pair_contribution(sample, {"full": R, "pruned": pruned}, 1, 3)
        assert list(table["R"]) == ["full", "pruned"]
        assert table["score"][1] == pytest.approx(forward[row], rel=1e-5, abs=1e-5)
        assert table["inner"][0] == table["inner"][1] == pytest.approx(sample.inner[1, 3])
        assert (table["term"][1] == table["term"][0]) == bool(mask[1, 3])  # a kept pair's term is unchanged
        terms = pair_terms(pruned, sample)
        assert np.array_equal(terms, terms.T) and not terms.diagonal().any() and not (terms[~mask] != 0).any()
        assert interaction_score(pruned, sample) == pytest.approx(table["interaction"][1])


def test_bad_pairs_rows_and_data_are_refused():
    model, data = trained_looking("fwfm"), random_dataset(n=12)
    sample = sample_embeddings(model, data, 0)
    R = interaction_matrix(model)
    with pytest.raises(ValueError, match="two different fields in 0..3"):
        pair_contribution(sample, {"R": R}, 2, 2)
    with pytest.raises(ValueError, match="two different fields"):
        pair_contribution(sample, {"R": R}, 0, 4)
    with pytest.raises(ValueError, match=r"R must be 4×4"):
        pair_terms(np.zeros((3, 3)), sample)
    for row in (-1, len(data), 1.5):
        with pytest.raises(ValueError, match=rf"row number in 0..{len(data) - 1}"):
            sample_embeddings(model, data, row)
    other = build_model("fwfm", Schema(SCHEMA.fields[:3]), dim=3)
    with pytest.raises(ValueError, match="not the model's"):
        sample_embeddings(other, data, 0)


def test_a_sample_is_named_by_its_rating_or_its_user_and_movie():
    import pandas as pd

    data = random_dataset(n=2)
    assert sample_label(data, 1) == f"target y = {float(data.rating[1]):.3g}"
    frame = pd.DataFrame({"user_id": [7, 9], "movie_id": [3, 4]})
    movies = pd.DataFrame({"movie_id": [3], "title": ["Alien"]})
    rated = Dataset(SCHEMA, data.index, data.weight, torch.tensor([4.0, 2.0]), frame=frame, movies=movies)
    assert sample_label(rated, 0) == "user 7 rated movie 3 (Alien) 4"
    assert sample_label(rated, 1) == "user 9 rated movie 4 2"


def test_the_toy_spends_the_same_budget_two_ways():
    toy = budget_toy()
    m = len(FIELDS)
    assert toy.keep == budget(m, 1) == 6 and toy.pairs == 10  # ρ(m+1) numbers for m(m−1)/2 pairs
    upper = np.triu_indices(m, 1)
    assert np.count_nonzero(toy.pruned[upper]) == toy.keep
    full, pruned, dplr = toy.odd_pair()
    assert full == pruned == ODD[2] < 0  # pruning keeps the odd pair exactly (it is among the largest)
    assert dplr > 0  # a rank-1 DPLR follows the pattern of the other pairs, not the odd one
    assert np.count_nonzero(toy.dplr[upper]) == toy.pairs  # DPLR gives every pair a value
    # R̃ = Uᵀdiag(ω)U + diag(d): off the diagonal it is rank one, so every 2×2 minor off the diagonal vanishes
    D = toy.dplr
    assert D[0, 1] * D[2, 3] == pytest.approx(D[0, 3] * D[2, 1])
    errors = toy.errors
    assert 0 < errors["dplr"] < 1 and 0 < errors["pruned"] < 1
    assert np.array_equal(toy.R, toy_R()) and np.array_equal(toy.R, toy.R.T) and not toy.R.diagonal().any()
