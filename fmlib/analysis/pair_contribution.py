"""One pair of fields in one rating's score: its term R_fg ⟨e_f, e_g⟩ under a learned, pruned or DPLR R.

A field-weighted FM scores a sample as ([FwFM] eq. 3, as [DPLR] eq. 3 writes it)

    ŷ = w0 + Σ_i w_i x_i + Σ_{f<g} R_fg ⟨e_f, e_g⟩,

with e_f the sample's embedding of field f (its feature's embedding, or the weighted sum of a multi-valued
field's values' embeddings, [DPLR] §3.2). So every pair of fields (f, g) adds one term

    T_fg = R_fg ⟨e_f, e_g⟩,

and Σ_{f<g} T_fg is the sample's interaction score. Putting an approximation R̃ in place of R (pruned to
its ρ(m+1) largest |R_fg|, or a post-hoc DPLR R̃ = Uᵀdiag(e)U + diag(d), [DPLR] eq. 10 and App. C) with
the embeddings kept changes each term by (R̃_fg − R_fg) ⟨e_f, e_g⟩: what pruning or DPLR does to one pair
in one sample. A DPLR model's own R is the matrix its U and e imply (eq. 10); its forward pass never
forms it (Proposition 1, eq. 9), yet the sum of these terms is its interaction score all the same
(tests/test_pair_contribution.py checks both models against their forward pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..data.dataset import Dataset

COLUMNS = ("R_fg", "inner", "term", "interaction", "score")


@dataclass(frozen=True)
class SampleEmbeddings:
    """One sample as an FwFM sees it: ``first_order`` = w0 + Σ_i w_i x_i and the field embeddings ``e`` (m × k)."""

    first_order: float
    e: np.ndarray

    @property
    def inner(self) -> np.ndarray:
        """⟨e_f, e_g⟩ for every pair of fields (m × m, the Gram matrix VVᵀ of [DPLR] eq. 4's V)."""
        return self.e @ self.e.T


@torch.no_grad()
def sample_embeddings(model, data: Dataset, row: int) -> SampleEmbeddings:
    """The first-order part and the field embeddings of sample ``row`` of ``data`` under ``model``
    (any model with ``first_order`` and ``field_embeddings``: FM, FwFM, DPLR), in float64."""
    if isinstance(row, bool) or not float(row).is_integer() or not 0 <= row < len(data):
        raise ValueError(f"sample must be a row number in 0..{len(data) - 1}, got {row!r}")
    if data.schema.num_features != model.schema.num_features or data.schema.names != model.schema.names:
        raise ValueError("the data's fields are not the model's: open the split the run was trained on")
    index, weight = data.batch([int(row)])
    first = float(model.first_order(index, weight)[0])
    e = model.field_embeddings(index, weight)[0].double().cpu().numpy()
    return SampleEmbeddings(first, e)


def pair_terms(R, sample: SampleEmbeddings) -> np.ndarray:
    """T_fg = R_fg ⟨e_f, e_g⟩ for f ≠ g and 0 on the diagonal (R's diagonal is never used, [DPLR] eq. 5), m × m."""
    R = np.asarray(R, dtype=float)
    m = len(sample.e)
    if R.shape != (m, m):
        raise ValueError(f"R must be {m}×{m} for a sample of {m} fields, got {R.shape}")
    T = R * sample.inner + 0.0  # + 0.0: a pruned pair's term is 0, not −0
    np.fill_diagonal(T, 0.0)
    return T


def interaction_score(R, sample: SampleEmbeddings) -> float:
    """Σ_{f<g} R_fg ⟨e_f, e_g⟩: the sample's pairwise part of [FwFM] eq. 3."""
    return float(np.triu(pair_terms(R, sample), 1).sum())


def pair_contribution(sample: SampleEmbeddings, matrices: dict, f: int, g: int) -> pd.DataFrame:
    """The pair (f, g)'s term in one sample's score under each R of ``matrices`` ({name: m × m R}), one row
    per R, with the same embeddings: R_fg, ⟨e_f, e_g⟩, the term T_fg = R_fg ⟨e_f, e_g⟩, the whole
    interaction score Σ_{f<g} T_fg and the score w0 + Σ_i w_i x_i + Σ_{f<g} T_fg ([FwFM] eq. 3)."""
    m = len(sample.e)
    if not (0 <= f < m and 0 <= g < m) or f == g:
        raise ValueError(f"a pair needs two different fields in 0..{m - 1}, got ({f}, {g}): R's diagonal is not used")
    rows = []
    for name, R in matrices.items():
        terms = pair_terms(R, sample)
        interaction = float(np.triu(terms, 1).sum())
        rows.append(
            {
                "R": name,
                "R_fg": float(np.asarray(R)[f, g]),
                "inner": float(sample.inner[f, g]),
                "term": float(terms[f, g]),
                "interaction": interaction,
                "score": sample.first_order + interaction,
            }
        )
    return pd.DataFrame(rows, columns=["R", *COLUMNS])


def sample_label(data: Dataset, row: int) -> str:
    """One line naming sample ``row``: on MovieLens who rated which movie and how, else its target y."""
    y = float(data.rating[row])
    frame = data.frame
    if frame is None or not {"user_id", "movie_id"} <= set(frame.columns):
        return f"target y = {y:.3g}"
    user, movie = frame["user_id"].iloc[row], frame["movie_id"].iloc[row]
    title = ""
    if data.movies is not None:
        found = data.movies.loc[data.movies["movie_id"] == movie, "title"]
        title = f" ({found.iloc[0]})" if len(found) else ""
    return f"user {user} rated movie {movie}{title} {y:g}"
