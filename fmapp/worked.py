"""Worked examples: one small case traced through a paper's formula, for a page or notebook to open with.

Each function takes a handful of numbers (drawn from a seed, read from a dataset's counts, or the
Playground's toy of ``fmlib.toy``) and returns every intermediate value of one formula, so that a
reader sees the idea on numbers small enough to follow before the evidence that it holds at scale.
Nothing here is a claim: the evidence (checks, benchmarks, verdicts) lives in the modules the pages
show after these examples.

* ``rendle_example`` — Rendle's identity on three features ([Rendle2010] Lemma 3.1; [DPLR] eq. 2a–2b):
  Σ_{i<j} ⟨v_i, v_j⟩ x_i x_j = ½ (‖Σ_i v_i x_i‖² − Σ_i ‖v_i‖² x_i²).
* ``rank_example`` — eq. 17 of [RaFM] on a few features of very different counts n_i:
  k_i = argmin_p |log n_i − log D_p|, with the samples each embedding number would be fitted from.
* ``gradient_example`` — one field's gradient in the FM and in a single m-way product term as fields are
  added ([RFM] §1.2; [FMGrad] eq. 8 with coefficient 1): a sum of m − 1 embeddings against a product of them.
* ``attention_row`` — one row of a softmax-attention layer ([AttnInv] Def. 3.1): its weights α_i, its output
  b_i = α_i XᵀV, and α_i read back from b_i when the tokens X are known.
* ``context_split`` — one user's FM score for a few movies split as [DPLR] eq. 2c splits it: the context
  fields' part computed once, each movie paying for its own fields only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from fmlib import toy
from fmlib.inversion import planted_instance
from fmlib.models.rafm_ranks import assign_ranks, check_counts, check_ranks


def rendle_example(n: int = 3, k: int = 2, seed: int = 0) -> dict:
    """Rendle's identity on ``n`` features with embeddings in ℝ^k, small integers from ``seed``.

    Returns the feature values ``x`` (n), embeddings ``V`` (n×k), each pair's term ⟨v_i, v_j⟩ x_i x_j
    (``pairs``: list of (i, j, term), i < j, 1-based), their sum (``pair_sum``, eq. 2a), the vector
    ``s`` = Σ_i v_i x_i, ``square_of_sum`` = ‖s‖², ``sum_of_squares`` = Σ_i ‖v_i‖² x_i² and
    ``identity`` = ½ (‖s‖² − Σ_i ‖v_i‖² x_i²) (eq. 2b), with the inner products each side takes:
    n(n−1)/2 pairs (``pair_products``) against n + 1 squared norms (``identity_products``).
    """
    if n < 2 or k < 1:
        raise ValueError(f"Rendle's identity needs n >= 2 features and k >= 1, got n={n}, k={k}")
    rng = np.random.default_rng(seed)
    V = rng.integers(-2, 3, size=(n, k)).astype(float)
    x = rng.integers(1, 3, size=n).astype(float)  # feature values 1 or 2: small enough to follow by hand
    pairs = [(i + 1, j + 1, float(V[i] @ V[j] * x[i] * x[j])) for i in range(n) for j in range(i + 1, n)]
    s = (V * x[:, None]).sum(0)
    square_of_sum = float(s @ s)
    sum_of_squares = float(((V**2).sum(1) * x**2).sum())
    return {
        "x": x,
        "V": V,
        "pairs": pairs,
        "pair_sum": float(sum(term for _, _, term in pairs)),
        "s": s,
        "square_of_sum": square_of_sum,
        "sum_of_squares": sum_of_squares,
        "identity": 0.5 * (square_of_sum - sum_of_squares),
        "pair_products": n * (n - 1) // 2,
        "identity_products": n + 1,
    }


def example_rows(counts, rows: Sequence[int], count: int = 5) -> list[int]:
    """``count`` rows of ``rows`` whose counts n_i > 0 span the range: the most and least frequent and
    evenly spaced quantiles between (ties broken by row number), most frequent first."""
    n = check_counts(counts)
    seen = [int(r) for r in rows if n[int(r)] > 0]
    if not seen:
        raise ValueError("none of these features occurs in the training split: nothing to show")
    ordered = sorted(seen, key=lambda r: (-n[r], r))
    picks = np.unique(np.round(np.linspace(0, len(ordered) - 1, min(count, len(ordered)))).astype(int))
    return [ordered[p] for p in picks]


def rank_example(counts, ranks: Sequence[int], rows: Sequence[int], labels: Sequence[str]) -> pd.DataFrame:
    """Eq. 17 of [RaFM] traced for the features ``rows`` (named ``labels``): one row per feature with its
    count n_i, the distance |log n_i − log D_p| to each rank, the level k_i (``fmlib.models.rafm_ranks``)
    and its rank D_{k_i}, and the samples per embedding number at the top rank D_h and at D_{k_i}
    (n_i / D): below 1, a feature has fewer samples than numbers to fit — its embedding is mostly noise.
    """
    ranks = check_ranks(ranks)
    n = check_counts(counts)
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    levels = assign_ranks(n, ranks)
    table = []
    for row, label in zip(rows, labels):
        n_i = int(n[row])
        if n_i == 0:
            raise ValueError(f"{label} never occurs in the training split: log n_i is −∞")
        entry = {"feature": label, "n_i": n_i}
        entry |= {f"|log n_i − log {D}|": abs(math.log(n_i) - math.log(D)) for D in ranks}
        level = int(levels[row])
        entry |= {
            "k_i": level,
            "D_k_i": ranks[level - 1],
            f"n_i / {ranks[-1]}": n_i / ranks[-1],
            "n_i / D_k_i": n_i / ranks[level - 1],
        }
        table.append(entry)
    return pd.DataFrame(table)


def gradient_example(
    m_values: Sequence[int] = (2, 4, 8, 16, 32), d: int = 2, M: float = 1.5, eps: float = 0.25, seed: int = 0
) -> dict:
    """One draw of field embeddings X_1, …, X_m ∈ ℝ^d with entries in [M − ε, M + ε] (the page's
    product inputs, [RFM] §1.2), and ∂y/∂X_1 for the first m of them, m in ``m_values``:

    * the FM y = Σ_{i<j} ⟨X_i, X_j⟩: ∂y/∂X_1 = Σ_{j≠1} X_j ([FMGrad] eq. 8 with coefficient 1, x = 1),
    * one m-way product term y = Σ_c Π_j X_jc: ∂y/∂X_1 = ⊙_{j≠1} X_j (§1.2, exponent 1).

    Returns ``X`` (max m × d), ``fm`` and ``product`` (dicts m -> ∂y/∂X_1) and ``table``: per m, the
    largest entry of each gradient.
    """
    if not 0 <= eps < M:
        raise ValueError(f"need 0 ≤ ε < M, got M = {M}, ε = {eps}")
    if d < 1 or not m_values or min(m_values) < 2:
        raise ValueError(f"need d ≥ 1 and every m ≥ 2 (a pair of fields), got d = {d}, m = {list(m_values)}")
    rng = np.random.default_rng(seed)
    X = rng.uniform(M - eps, M + eps, size=(max(m_values), d))
    fm = {m: X[1:m].sum(0) for m in m_values}
    product = {m: X[1:m].prod(0) for m in m_values}
    table = pd.DataFrame(
        {
            "m": list(m_values),
            "fm": [float(np.abs(fm[m]).max()) for m in m_values],
            "product": [float(np.abs(product[m]).max()) for m in m_values],
        }
    )
    return {"X": X, "fm": fm, "product": product, "table": table}


def attention_row(n: int = 3, d: int = 2, seed: int = 0, R: float = 1.0, row: int = 0) -> dict:
    """One row of the softmax-attention layer f(W; X) = D(X)⁻¹ exp(XᵀWX) XᵀV ([AttnInv] Def. 3.1) traced,
    on ``planted_instance(n, d, R, seed)``: token i = ``row`` scores every token, s_ij = x_iᵀ W x_j; its
    weights are α_i = softmax(s_i); its output is b_i = α_i XᵀV, the row i of B.

    Knowing V (invertible) and the tokens X, b_i V⁻¹ = Σ_j α_ij x_jᵀ is a weighted average of the tokens,
    and α_i is read back by solving [X; 1ᵀ] α = [V⁻ᵀ b_iᵀ; 1] (least squares; exact when n ≤ d + 1).
    Returns ``X`` (d×n), ``scores``, ``weights``, ``b``, ``average`` (b_i V⁻¹), ``recovered`` (α read back),
    ``B`` (the layer's whole output) and the counts ``unknowns`` (n·d entries of X) and ``equations`` (n·d of B).
    """
    if not 0 <= row < n:
        raise ValueError(f"row must be a token 0 to {n - 1}, got {row}")
    inst = planted_instance(n, d, R, seed)
    X, W, V, B = inst.X_true, inst.W, inst.V, inst.B
    scores = X[:, row] @ W @ X
    weights = torch.softmax(scores, dim=0)
    b = B[row]
    average = torch.linalg.solve(V.T, b)  # V⁻ᵀ b_iᵀ = Σ_j α_ij x_j
    system = torch.cat([X, torch.ones(1, n, dtype=X.dtype)])
    target = torch.cat([average, torch.ones(1, dtype=X.dtype)])
    recovered = torch.linalg.lstsq(system, target[:, None]).solution[:, 0]
    return {
        "X": X.numpy(),
        "scores": scores.numpy(),
        "weights": weights.numpy(),
        "b": b.numpy(),
        "average": average.numpy(),
        "recovered": recovered.numpy(),
        "B": B.numpy(),
        "unknowns": n * d,
        "equations": B.numel(),
    }


CONTEXT_FIELDS = ("user", "weekday", "hour")  # 𝒞: the Playground's user and two time fields
ITEM_FIELDS = ("movie", "genre")  # ℐ: the Playground's movie and its genres (averaged)


def context_split(user: str = toy.USERS[0], weekday: str = "Friday", hour: str = "20 h", seed: int = 0) -> dict:
    """``user``'s FM score for each of the Playground's movies, split as [DPLR] eq. 2c splits the pairwise term:

        Σ_{f<g} ⟨e_f, e_g⟩ = ½ (‖s_𝒞 + s_ℐ‖² − Σ_{f∈𝒞} ‖e_f‖² − Σ_{f∈ℐ} ‖e_f‖²),  s_𝒞 = Σ_{f∈𝒞} e_f, s_ℐ = Σ_{f∈ℐ} e_f.

    The user, movies and genres are ``fmlib.toy``'s (its embeddings and biases); the two time fields
    (``weekday``, ``hour``) get a bias and a 2-D embedding drawn from ``seed``. Per query (once):
    ``s_C``, ``norms_C`` = Σ_𝒞 ‖e_f‖² and ``bias_C`` = w_0 + Σ_𝒞 w_f. Per movie (``movies``, one row
    each): s_ℐ, Σ_ℐ ‖e_f‖², Σ_ℐ w_f, the pairwise term by eq. 2c and ŷ. ``fields`` gives every field's
    embedding per movie (for a check against the plain sum over pairs) and ``inner_products`` the count
    per movie: all m(m−1)/2 pairs against the one ‖s_𝒞 + s_ℐ‖² and |ℐ| norms eq. 2c needs.
    """
    if user not in toy.USERS:
        raise ValueError(f"user must be one of {', '.join(toy.USERS)}, got {user!r}")
    rng = np.random.default_rng(seed)
    time = {name: rng.normal(0, 0.5, size=2) for name in (weekday, hour)}
    time_bias = {name: float(rng.normal(0, 0.1)) for name in (weekday, hour)}
    V = np.array(toy.default_state()["V"])
    context = [toy.field_embeddings(V, user, toy.MOVIES[0])[0], time[weekday], time[hour]]
    s_C = np.sum(context, axis=0)
    norms_C = float(sum(e @ e for e in context))
    bias_C = toy.W0 + toy.BIAS[user] + sum(time_bias.values())
    rows, fields = [], {}
    for movie in toy.MOVIES:
        items = list(toy.field_embeddings(V, user, movie)[1:])
        genres = toy.MOVIE_GENRES[movie]
        s_I = np.sum(items, axis=0)
        norms_I = float(sum(e @ e for e in items))
        bias_I = toy.BIAS[movie] + sum(toy.BIAS[g] for g in genres) / len(genres)
        total = s_C + s_I
        pairwise = 0.5 * (float(total @ total) - norms_C - norms_I)
        fields[movie] = np.stack([*context, *items])
        rows.append(
            {
                "movie": movie,
                "genres": " + ".join(genres),
                "s_I": s_I,
                "norms_I": norms_I,
                "bias_I": bias_I,
                "pairwise": pairwise,
                "score": bias_C + bias_I + pairwise,
            }
        )
    m = len(CONTEXT_FIELDS) + len(ITEM_FIELDS)
    return {
        "user": user,
        "time": (weekday, hour),
        "s_C": s_C,
        "norms_C": norms_C,
        "bias_C": bias_C,
        "movies": pd.DataFrame(rows),
        "fields": fields,
        "inner_products": {"all pairs": m * (m - 1) // 2, "eq. 2c": 1 + len(ITEM_FIELDS)},
    }
