"""fmapp.worked: each worked example against a naive computation of the same formula."""

import math
from itertools import combinations

import numpy as np
import pytest
import torch

from fmapp import worked
from fmlib import toy
from fmlib.inversion import attention_output, planted_instance


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n, k", [(3, 2), (5, 3)])
def test_rendle_example_pairs_and_identity_match_the_double_loop(seed, n, k):
    ex = worked.rendle_example(n=n, k=k, seed=seed)
    x, V = ex["x"], ex["V"]
    assert V.shape == (n, k) and np.all(V == np.round(V)) and set(x) <= {1.0, 2.0}
    naive = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            naive += sum(V[i, c] * V[j, c] for c in range(k)) * x[i] * x[j]
    assert ex["pair_sum"] == pytest.approx(naive) and ex["identity"] == pytest.approx(naive)
    assert [(i, j) for i, j, _ in ex["pairs"]] == [(i + 1, j + 1) for i, j in combinations(range(n), 2)]
    s = [sum(V[i, c] * x[i] for i in range(n)) for c in range(k)]
    assert np.allclose(ex["s"], s) and ex["square_of_sum"] == pytest.approx(sum(c * c for c in s))
    assert (ex["pair_products"], ex["identity_products"]) == (n * (n - 1) // 2, n + 1)


def test_rendle_example_refuses_a_single_feature():
    with pytest.raises(ValueError, match="n >= 2"):
        worked.rendle_example(n=1)


def test_example_rows_span_the_counts_and_skip_unseen_features():
    counts = np.array([0, 5, 100, 1, 0, 30, 7, 2, 64, 3])
    rows = worked.example_rows(counts, range(10), count=5)
    assert len(rows) == 5 and rows[0] == 2 and rows[-1] == 3  # the most and the least seen (n > 0)
    assert all(counts[r] > 0 for r in rows) and list(counts[rows]) == sorted(counts[rows], reverse=True)
    assert worked.example_rows(counts, [0, 4, 1], count=5) == [1]
    with pytest.raises(ValueError, match="none of these features"):
        worked.example_rows(counts, [0, 4])


@pytest.mark.parametrize("ranks", [(8, 32), (4, 16, 64)])
def test_rank_example_follows_eq_17_computed_naively(ranks):
    counts = np.array([464, 65, 23, 16, 6, 1, 200])
    rows = list(range(len(counts)))
    table = worked.rank_example(counts, ranks, rows, [f"f{r}" for r in rows])
    for row, entry in zip(rows, table.to_dict("records")):
        distances = [abs(math.log(counts[row]) - math.log(D)) for D in ranks]
        level = min(range(len(ranks)), key=lambda p: (distances[p], p)) + 1  # argmin, a tie to the lower rank
        assert entry["k_i"] == level and entry["D_k_i"] == ranks[level - 1]
        assert [entry[f"|log n_i − log {D}|"] for D in ranks] == pytest.approx(distances)
        assert entry[f"n_i / {ranks[-1]}"] == pytest.approx(counts[row] / ranks[-1])
        assert entry["n_i / D_k_i"] == pytest.approx(counts[row] / ranks[level - 1])
    if ranks == (8, 32):  # n = 16 is the tie √(8·32): the lower rank
        assert table.loc[3, "k_i"] == 1


def test_rank_example_refuses_an_unseen_feature_and_mismatched_labels():
    with pytest.raises(ValueError, match="never occurs"):
        worked.rank_example(np.array([0, 3]), (8, 32), [0], ["a"])
    with pytest.raises(ValueError, match="labels"):
        worked.rank_example(np.array([1, 3]), (8, 32), [0, 1], ["a"])


def test_gradient_example_matches_autograd_for_the_fm_and_the_product_term():
    ex = worked.gradient_example(m_values=(2, 3, 6), d=3, M=1.5, eps=0.25, seed=1)
    X = ex["X"]
    assert X.shape == (6, 3) and np.all((1.25 <= X) & (X <= 1.75))
    for m in (2, 3, 6):
        T = torch.tensor(X[:m], requires_grad=True)
        fm = sum((T[i] * T[j]).sum() for i in range(m) for j in range(i + 1, m))
        (fm_grad,) = torch.autograd.grad(fm, T)
        product = torch.prod(T, dim=0).sum()
        (product_grad,) = torch.autograd.grad(product, T)
        assert np.allclose(ex["fm"][m], fm_grad[0].numpy()) and np.allclose(ex["product"][m], product_grad[0].numpy())
        row = ex["table"].set_index("m").loc[m]
        assert row["fm"] == pytest.approx(fm_grad[0].abs().max().item())
        assert row["product"] == pytest.approx(product_grad[0].abs().max().item())


def test_gradient_example_refuses_bad_bounds():
    with pytest.raises(ValueError, match="ε < M"):
        worked.gradient_example(M=1.0, eps=1.0)
    with pytest.raises(ValueError, match="m ≥ 2"):
        worked.gradient_example(m_values=(1, 4))


@pytest.mark.parametrize("seed, row", [(0, 0), (3, 2)])
def test_attention_row_is_the_layers_row_and_its_weights_come_back(seed, row):
    ex = worked.attention_row(n=3, d=2, seed=seed, row=row)
    inst = planted_instance(3, 2, 1.0, seed)
    X, W = inst.X_true.numpy(), inst.W.numpy()
    scores = np.array([X[:, row] @ W @ X[:, j] for j in range(3)])
    weights = np.exp(scores) / np.exp(scores).sum()
    assert np.allclose(ex["scores"], scores) and np.allclose(ex["weights"], weights)
    assert np.allclose(ex["b"], attention_output(inst.X_true, inst.W, inst.V)[row].numpy())
    assert np.allclose(ex["average"], sum(weights[j] * X[:, j] for j in range(3)))
    assert np.allclose(ex["recovered"], weights)
    assert (ex["unknowns"], ex["equations"]) == (6, 6)


def test_attention_row_refuses_a_row_outside_the_tokens():
    with pytest.raises(ValueError, match="row must be a token"):
        worked.attention_row(n=3, row=3)


def test_context_split_adds_up_to_the_fm_over_all_pairs_and_to_the_playgrounds_score():
    split = worked.context_split(seed=2)
    V = np.array(toy.default_state()["V"])
    for entry in split["movies"].to_dict("records"):
        e = split["fields"][entry["movie"]]  # user, weekday, hour, movie, genre
        naive = sum(float(e[f] @ e[g]) for f, g in combinations(range(len(e)), 2))
        assert entry["pairwise"] == pytest.approx(naive)
        assert np.allclose(split["s_C"], e[:3].sum(0)) and np.allclose(entry["s_I"], e[3:].sum(0))
        time_pairs = naive - sum(float(e[f] @ e[g]) for f, g in [(0, 3), (0, 4), (3, 4)])
        time_biases = split["bias_C"] - toy.W0 - toy.BIAS[split["user"]]
        playground = toy.score(V, split["user"], entry["movie"])  # the toy without the two time fields
        assert entry["score"] == pytest.approx(playground + time_biases + time_pairs)
    assert split["inner_products"] == {"all pairs": 10, "eq. 2c": 3}


def test_context_split_refuses_an_unknown_user():
    with pytest.raises(ValueError, match="user must be one of"):
        worked.context_split(user="Eve")
