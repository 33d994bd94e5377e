"""Feature frequencies (RaFM paper, Fig. 1) and the ranks they give (eq. 17) as tables for pages.

The rank rule itself, eq. 17, and the feature sets F_k of eq. 6 live beside the model, in
``fmlib.models.rafm_ranks``; this module counts, bins and tabulates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..models.rafm_ranks import (
    assign_ranks,
    check_counts,
    check_ranks,
    feature_set_sizes,
    stored_parameters,
    thresholds,
)


def zero_count_note(counts) -> str:
    """A sentence about the rows that never occur in train (empty if there are none)."""
    zeros = int((check_counts(counts) == 0).sum())
    if zeros == 0:
        return ""
    return (
        f"{zeros} feature row{'s' if zeros > 1 else ''} never occur{'s' if zeros == 1 else ''} in the "
        "training split (rare buckets and values seen only in valid/test): eq. 17 needs log nᵢ, and "
        "log 0 = −∞ is closest to log D₁, so they get the lowest rank; their embeddings stay untrained."
    )


def _field_of_rows(schema) -> np.ndarray:
    field = np.empty(schema.num_features, dtype=object)
    for f in schema.fields:
        field[f.offset : f.offset + f.cardinality] = f.name
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
    return {
        "ranks": ranks,
        "thresholds": thresholds(ranks).tolist(),
        "F_sizes": sizes.tolist(),
        "rafm_parameters": rafm,
        "fm_parameters": fm,
        "share": rafm / fm,
        "occurrence_share": occurrences,
    }
