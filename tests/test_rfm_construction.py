"""RFM appendix §1.1 (Theorem 1.1): the construction reproduces random truth tables."""

import math

import pytest
import torch

from fmlib.analysis.rotation_construction import (
    construct,
    construction_error,
    field_of,
    random_truth_table,
    relation_vectors,
)

LAYOUTS = [(2, 2), (2, 3, 2), (1, 4, 2, 3), (3, 1, 1, 2, 2)]


def naive_relation_vector(sizes, T, ids, j):
    """r_j[k] straight from the §1.1 definition, one k at a time."""
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    G = [f for f, n in enumerate(sizes) for _ in range(n)]
    r = []
    for k in range(sum(sizes)):
        if G[k] != j:
            r.append(float(T[k, ids[j]]))
        else:
            x_j = [1.0 if offsets[j] + i == ids[j] else 0.0 for i in range(sizes[j])]
            r.append(0.5 + 0.5 * x_j[k - offsets[j]])
    return torch.tensor(r, dtype=torch.float64)


def test_relation_vectors_follow_the_definition():
    sizes = (2, 3, 2)
    T = random_truth_table(sizes, 0.5, seed=3)
    ids = torch.tensor([[0, 3, 6], [1, 2, 5]])
    r = relation_vectors(sizes, T, ids)
    for b in range(2):
        for j in range(3):
            assert torch.equal(r[b, j], naive_relation_vector(sizes, T, ids[b].tolist(), j))


@pytest.mark.parametrize("sizes", LAYOUTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_construction_reproduces_random_truth_tables(sizes, seed):
    T = random_truth_table(sizes, density=0.3 + 0.2 * seed, seed=seed)
    c = construct(sizes, T, S=20.0, eps=1e-3, seed=seed)
    assert len(c.ids) == math.prod(sizes)  # every combination of one feature per field
    assert c.error < 1e-6
    G = field_of(sizes)
    cross = G[:, None] != G[None, :]
    assert torch.allclose(c.T_hat[cross], T[cross], atol=1e-6)
    assert torch.all(c.T_hat[~cross] == 0)
    assert c.theta_hat_error < 1e-6 * len(sizes)
    assert c.theta.norm(dim=-1).max() <= 1 + 1e-12  # ‖θ_j‖₂ ≤ 1


def test_error_is_sigmoid_of_minus_S_and_shrinks():
    sizes = (2, 3, 2)
    T = random_truth_table(sizes, 0.5, seed=4)
    assert T.sum() > 0 and (1 - T).sum() > 0
    df = construction_error(sizes, T, [1.0, 3.0, 8.0, 14.0, 20.0])
    assert df["error"].tolist() == pytest.approx(df["sigmoid(-S)"].tolist(), rel=1e-6)
    assert df["error"].is_monotonic_decreasing
    assert df["error"].iloc[-1] < 1e-6 < df["error"].iloc[0]


def test_printed_claim_fails_on_the_diagonal():
    """Slip: α_{j,j} = Sigmoid(S·n_j) → 1, while the proof's chain gives T(s, s) = 0."""
    sizes = (2, 3)
    T = random_truth_table(sizes, 1.0, seed=0)
    c = construct(sizes, T, S=20.0)
    assert c.self_score_min > 1 - 1e-6
    assert torch.all(T.diagonal() == 0)
    # the printed output θ̂_j = Σ_l f(e_j, e_l) θ_l misses θ_j itself
    target = T[c.ids[:, :, None], c.ids[:, None, :]] @ c.theta
    assert (c.theta_hat - target).abs().max() > 0.1


@pytest.mark.parametrize(
    "args, message",
    [
        (((), None), "the field layout is empty"),
        (((3,), None), "at least 2 fields"),
        (((2, 0), None), "integer number of features >= 1"),
        (((2, 2), torch.zeros(0, 0)), "the truth table T is empty"),
        (((2, 2), torch.zeros(3, 3)), r"N×N = 4×4"),
        (((2, 2), torch.full((4, 4), 0.5)), "only 0 and 1"),
        (((2, 2), torch.eye(4)), "same field"),
        (((13, 12), None), "at most 24 features"),
    ],
)
def test_bad_input_names_the_problem(args, message):
    sizes, T = args
    with pytest.raises(ValueError, match=message):
        construct(sizes, torch.zeros(sum(sizes), sum(sizes)) if T is None else T)


@pytest.mark.parametrize(
    "kw, message", [(dict(S=0.0), "S must be a positive number"), (dict(eps=-1e-3), "ε must be a positive number")]
)
def test_bad_S_and_eps(kw, message):
    with pytest.raises(ValueError, match=message):
        construct((2, 2), torch.zeros(4, 4), **kw)
