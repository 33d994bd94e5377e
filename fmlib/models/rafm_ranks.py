"""The rank each feature gets and the feature sets F_k of the rank-aware FM (RaFM paper, eq. 17 and eq. 6).

Names used here:

* n_i — occurrences of feature row i in the **training** split (``Dataset.feature_counts()``;
  the authors' code counts over train + valid + test, which leaks the test set into k_i).
* D_1 < D_2 < … < D_m — the rank set; k_i ∈ {1, …, m} — the rank index of feature i, so that
  feature i keeps the embeddings v_i^(1), …, v_i^(k_i) (eq. 3).
* eq. 17:  k_i = argmin_k |log n_i − log D_k|  — the D_k closest to n_i on a log scale.
  Two neighbours D_k < D_{k+1} are equally close when n_i = √(D_k D_{k+1}), so eq. 17 is the
  threshold rule  k_i = 1 + #{k : n_i > t_k}  with  t_k = √(D_k D_{k+1})  (``thresholds``);
  a tie goes to the lower rank, as argmin returns the first minimum.
* n_i = 0 (a rare bucket, or a value never seen in train): log n_i = −∞, whose closest log D_k
  is log D_1, so such rows get the lowest rank — the limit of eq. 17 (``fmlib.analysis.frequency.zero_count_note``
  says so in words). Their embeddings are never trained, whatever their rank.
* F_k = {i : k_i ≥ k} (eq. 6); RaFM stores Σ_k D_k |F_k| interaction numbers (Prop. 1)
  against D_m |F| for the FM of the largest rank.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_RANK = 512  # the largest embedding size the app and the CLI accept for any model


def check_ranks(ranks: Sequence[int]) -> tuple[int, ...]:
    """The rank set D_1 < … < D_m as a tuple of ints; a clear ValueError otherwise.

    The paper allows D_1 ≤ … ≤ D_m, but two equal ranks are the same FM twice: we ask for
    strictly increasing ranks. One rank is a plain FM, so at least two are needed; no rank
    exceeds MAX_RANK (an embedding table of that size already dwarfs MovieLens).
    """
    if isinstance(ranks, str):
        raise ValueError(f"ranks must be a list of integers such as (8, 32), got the text {ranks!r}")
    try:
        values = tuple(ranks)
    except TypeError:
        raise ValueError(f"ranks must be a list of integers such as (8, 32), got {ranks!r}") from None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in values):
        raise ValueError(f"ranks must be integers, got {values}")
    values = tuple(int(d) for d in values)
    if len(values) < 2:
        raise ValueError(
            f"ranks needs at least two ranks D_1 < D_2 (got {values}); a single rank is a plain FM (model 'fm')"
        )
    if min(values) < 1 or max(values) > MAX_RANK:
        raise ValueError(f"ranks must be positive integers up to {MAX_RANK}, got {values}")
    if any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"ranks must be strictly increasing (D_1 < D_2 < …), got {values}")
    return values


def check_counts(counts, num_features: int | None = None) -> np.ndarray:
    """Occurrence counts n_i as an int64 array: one non-negative integer per feature row."""
    n = np.asarray(counts)
    if n.ndim != 1 or n.size == 0:
        raise ValueError(f"counts must be a non-empty 1-D array of occurrences, got shape {n.shape}")
    if num_features is not None and n.size != num_features:
        raise ValueError(
            f"counts has {n.size} entries but the schema has {num_features} feature rows; "
            "compute it with feature_counts() of the training split"
        )
    if not np.issubdtype(n.dtype, np.number) or np.any(n != np.round(n)) or np.any(n < 0):
        raise ValueError("counts must be non-negative integers (occurrences in the training data)")
    if n.sum() == 0:
        raise ValueError("every feature has zero occurrences: counts must come from a non-empty training split")
    return n.astype(np.int64)


def thresholds(ranks: Sequence[int]) -> np.ndarray:
    """t_k = √(D_k D_{k+1}), k = 1..m−1: eq. 17 moves a feature from rank D_k to D_{k+1} once n_i > t_k."""
    D = np.asarray(check_ranks(ranks), dtype=float)
    return np.sqrt(D[:-1] * D[1:])


def check_thresholds(cuts, ranks: Sequence[int]) -> tuple[int, ...] | None:
    """Count thresholds t_1 < … < t_{m−1} for the rank set ``ranks`` as a tuple of ints, or None
    (eq. 17's own √(D_k D_{k+1})); a clear ValueError otherwise."""
    if cuts is None:
        return None
    m = len(check_ranks(ranks))
    try:
        values = tuple(int(t) for t in cuts)
    except (TypeError, ValueError):
        raise ValueError(f"thresholds must be integers such as (128,), got {cuts!r}") from None
    if len(values) != m - 1 or min(values) < 0 or any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(
            f"thresholds must be {m - 1} increasing counts >= 0 for the {m} ranks {tuple(ranks)}, got {values}"
        )
    return values


def assign_ranks(counts, ranks: Sequence[int], cuts=None) -> np.ndarray:
    """k_i = argmin_k |log n_i − log D_k| (eq. 17), 1-based, as the threshold rule
    k_i = 1 + #{k : n_i > √(D_k D_{k+1})} evaluated exactly in integers (n_i² > D_k D_{k+1}),
    so a tie n_i = √(D_k D_{k+1}) goes to the lower rank. n_i = 0 gives k_i = 1 (the limit).

    ``cuts`` (t_1 < … < t_{m−1}) replaces eq. 17's thresholds: k_i = 1 + #{k : n_i > t_k}. The
    paper regards the k_i as hyperparameters (§3) and sets them by eq. 17 to avoid a grid search
    (§6); eq. 17 ties a rank set to fixed counts (for (8, 32), t = 16), so on a small data set
    explicit cut-points are what lets a rank set reach the features it is meant for."""
    n = check_counts(counts)
    cuts = check_thresholds(cuts, ranks)
    if cuts is not None:
        return 1 + (n[:, None] > np.asarray(cuts, dtype=np.int64)[None, :]).sum(1)
    D = np.asarray(check_ranks(ranks), dtype=np.int64)
    return 1 + (n[:, None] ** 2 > (D[:-1] * D[1:])[None, :]).sum(1)


def feature_set_sizes(levels: np.ndarray, m: int) -> np.ndarray:
    """|F_k| = #{i : k_i ≥ k} for k = 1..m (eq. 6)."""
    return np.array([(np.asarray(levels) >= k).sum() for k in range(1, m + 1)])


def stored_parameters(levels: np.ndarray, ranks: Sequence[int]) -> int:
    """Σ_k D_k |F_k|: the active factors RaFM stores (Prop. 1)."""
    return int(np.dot(check_ranks(ranks), feature_set_sizes(levels, len(ranks))))
