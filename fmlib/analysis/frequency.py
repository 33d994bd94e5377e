"""Feature frequencies and the rank each feature gets (RaFM paper, Fig. 1 and eq. 17).

Paper: ../shared/papers/rafm-rank-aware-fm.md. Names used here:

* n_i — occurrences of feature row i in the **training** split (``Dataset.feature_counts()``;
  the authors' code counts over train + valid + test, which leaks the test set into k_i).
* D_1 < D_2 < … < D_m — the rank set; k_i ∈ {1, …, m} — the rank index of feature i, so that
  feature i keeps the embeddings v_i^(1), …, v_i^(k_i) (eq. 3).
* eq. 17:  k_i = argmin_k |log n_i − log D_k|  — the D_k closest to n_i on a log scale.
  Two neighbours D_k < D_{k+1} are equally close when n_i = √(D_k D_{k+1}), so eq. 17 is the
  threshold rule  k_i = 1 + #{k : n_i > t_k}  with  t_k = √(D_k D_{k+1})  (``thresholds``);
  a tie goes to the lower rank, as argmin returns the first minimum.
* n_i = 0 (a rare bucket, or a value never seen in train): log n_i = −∞, whose closest log D_k
  is log D_1, so such rows get the lowest rank — the limit of eq. 17 (``zero_count_note``
  says so in words). Their embeddings are never trained, whatever their rank.
* F_k = {i : k_i ≥ k} (eq. 6); RaFM stores Σ_k D_k |F_k| interaction numbers (Prop. 1)
  against D_m |F| for the FM of the largest rank.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def check_ranks(ranks: Sequence[int]) -> tuple[int, ...]:
    """The rank set D_1 < … < D_m as a tuple of ints; a clear ValueError otherwise.

    The paper allows D_1 ≤ … ≤ D_m, but two equal ranks are the same FM twice: we ask for
    strictly increasing ranks. One rank is a plain FM, so at least two are needed.
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
        raise ValueError(f"ranks needs at least two ranks D_1 < D_2 (got {values}); "
                         "a single rank is a plain FM (model 'fm')")
    if min(values) < 1:
        raise ValueError(f"ranks must be positive integers, got {values}")
    if any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"ranks must be strictly increasing (D_1 < D_2 < …), got {values}")
    return values


def check_counts(counts, num_features: int | None = None) -> np.ndarray:
    """Occurrence counts n_i as an int64 array: one non-negative integer per feature row."""
    n = np.asarray(counts)
    if n.ndim != 1 or n.size == 0:
        raise ValueError(f"counts must be a non-empty 1-D array of occurrences, got shape {n.shape}")
    if num_features is not None and n.size != num_features:
        raise ValueError(f"counts has {n.size} entries but the schema has {num_features} feature rows; "
                         "compute it with feature_counts() of the training split")
    if not np.issubdtype(n.dtype, np.number) or np.any(n != np.round(n)) or np.any(n < 0):
        raise ValueError("counts must be non-negative integers (occurrences in the training data)")
    if n.sum() == 0:
        raise ValueError("every feature has zero occurrences: counts must come from a non-empty training split")
    return n.astype(np.int64)


def thresholds(ranks: Sequence[int]) -> np.ndarray:
    """t_k = √(D_k D_{k+1}), k = 1..m−1: eq. 17 moves a feature from rank D_k to D_{k+1} once n_i > t_k."""
    D = np.asarray(check_ranks(ranks), dtype=float)
    return np.sqrt(D[:-1] * D[1:])


def assign_ranks(counts, ranks: Sequence[int]) -> np.ndarray:
    """k_i = argmin_k |log n_i − log D_k| (eq. 17), 1-based, as the threshold rule
    k_i = 1 + #{k : n_i > √(D_k D_{k+1})} evaluated exactly in integers (n_i² > D_k D_{k+1}),
    so a tie n_i = √(D_k D_{k+1}) goes to the lower rank. n_i = 0 gives k_i = 1 (the limit)."""
    D = np.asarray(check_ranks(ranks), dtype=np.int64)
    n = check_counts(counts)
    return 1 + (n[:, None] ** 2 > (D[:-1] * D[1:])[None, :]).sum(1)


def feature_set_sizes(levels: np.ndarray, m: int) -> np.ndarray:
    """|F_k| = #{i : k_i ≥ k} for k = 1..m (eq. 6)."""
    return np.array([(np.asarray(levels) >= k).sum() for k in range(1, m + 1)])


def stored_parameters(levels: np.ndarray, ranks: Sequence[int]) -> int:
    """Σ_k D_k |F_k|: the active factors RaFM stores (Prop. 1)."""
    return int(np.dot(check_ranks(ranks), feature_set_sizes(levels, len(ranks))))


def zero_count_note(counts) -> str:
    """A sentence about the rows that never occur in train (empty if there are none)."""
    zeros = int((check_counts(counts) == 0).sum())
    if zeros == 0:
        return ""
    return (f"{zeros} feature row{'s' if zeros > 1 else ''} never occur{'s' if zeros == 1 else ''} in the "
            "training split (rare buckets and values seen only in valid/test): eq. 17 needs log n_i, and "
            "log 0 = −∞ is closest to log D_1, so they get the lowest rank; their embeddings stay untrained.")


def _field_of_rows(schema) -> np.ndarray:
    field = np.empty(schema.num_features, dtype=object)
    for f in schema.fields:
        field[f.offset:f.offset + f.cardinality] = f.name
    return field


def occurrence_histogram(counts, schema=None) -> pd.DataFrame:
    """Features per occurrence bin [2^j, 2^{j+1}) (the paper's Fig. 1, log scale), per field.

    Columns: field, low, high (occurrences low ≤ n_i < high), label, features. Rows with n_i = 0
    are left out (a log axis has no place for 0): ``zero_count_note`` reports them.
    """
    n = check_counts(counts)
    field = _field_of_rows(schema) if schema is not None else np.full(n.size, "all", dtype=object)
    seen = n > 0
    j = np.floor(np.log2(n[seen])).astype(int)
    frame = pd.DataFrame({"field": field[seen], "j": j})
    table = frame.groupby(["field", "j"], sort=False).size().rename("features").reset_index()
    table["low"] = 2 ** table["j"]
    table["high"] = 2 ** (table["j"] + 1)
    table["label"] = [str(lo) if hi - lo == 1 else f"{lo}–{hi - 1}" for lo, hi in zip(table["low"], table["high"])]
    order = {name: i for i, name in enumerate(dict.fromkeys(field))}
    table = table.sort_values(["j", "field"], key=lambda c: c.map(order) if c.name == "field" else c)
    return table[["field", "low", "high", "label", "features"]].reset_index(drop=True)


def rank_table(counts, ranks: Sequence[int], schema) -> pd.DataFrame:
    """Per field: features, rows never seen in train, and how many features get each rank D_k."""
    ranks = check_ranks(ranks)
    n = check_counts(counts, schema.num_features)
    levels = assign_ranks(n, ranks)
    rows = []
    for f in schema.fields:
        part = slice(f.offset, f.offset + f.cardinality)
        row = {"field": f.name, "features": f.cardinality, "never seen": int((n[part] == 0).sum())}
        row.update({f"k={k} (D={d})": int((levels[part] == k).sum()) for k, d in enumerate(ranks, 1)})
        rows.append(row)
    return pd.DataFrame(rows)


def parameter_summary(counts, ranks: Sequence[int]) -> dict:
    """|F_k|, Σ_k D_k|F_k| and its share of D_m|F| (the FM of the largest rank), plus the share of
    occurrences that fall in each F_k (n(F_k), Remark 5: what the evaluation time depends on)."""
    ranks = check_ranks(ranks)
    n = check_counts(counts)
    levels = assign_ranks(n, ranks)
    sizes = feature_set_sizes(levels, len(ranks))
    rafm = stored_parameters(levels, ranks)
    fm = ranks[-1] * n.size
    occurrences = [float(n[levels >= k].sum() / n.sum()) for k in range(1, len(ranks) + 1)]
    return {"ranks": ranks, "thresholds": thresholds(ranks).tolist(), "F_sizes": sizes.tolist(),
            "rafm_parameters": rafm, "fm_parameters": fm, "share": rafm / fm,
            "occurrence_share": occurrences}
