"""Field scales: putting a learned R on the scale of unit-size field embeddings.

An FwFM's pairwise term Σ_{f<g} R_fg ⟨e_f, e_g⟩ (DPLR eq. 3) is unchanged when field f's
embeddings are divided by s_f > 0 and R_fg is multiplied by s_f s_g: R is identifiable only up
to these m scales. ``field_scales`` measures s_f as the root mean square of ‖e_f‖ over a data
set, and ``rescaled_R`` returns R_fg s_f s_g — the R of the equivalent model whose field
embeddings have RMS norm 1. Two R learned from different seeds, or a learned and a planted R
(planted embeddings of RMS norm ≈ 1), can then be compared entry by entry, without fitting
anything to the other matrix.
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.dataset import Dataset


@torch.no_grad()
def field_scales(model, data: Dataset, batch_size: int = 8192) -> np.ndarray:
    """s_f = sqrt(mean over samples of ‖e_f‖²) for every field f, shape (m,)."""
    total = torch.zeros(model.schema.num_fields, dtype=torch.float64)
    for i in range(0, len(data), batch_size):
        e = model.field_embeddings(*data.batch(slice(i, i + batch_size)))
        total += e.double().pow(2).sum(-1).sum(0)
    return (total / len(data)).sqrt().numpy()


def rescaled_R(R, scales) -> np.ndarray:
    """R_fg s_f s_g: the interaction matrix of the same model with field embeddings e_f / s_f."""
    R, s = np.asarray(R, dtype=float), np.asarray(scales, dtype=float)
    if R.shape != (len(s), len(s)) or not np.all(s > 0):
        raise ValueError(f"need an m×m R and m positive scales, got R {R.shape} and {len(s)} scales")
    return R * np.outer(s, s)


def offdiag_correlation(A, B) -> float:
    """Pearson correlation of the entries above the diagonal of two m×m matrices."""
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    rows, cols = np.triu_indices(A.shape[0], 1)
    return float(np.corrcoef(A[rows, cols], B[rows, cols])[0, 1])


def offdiag_cv(R) -> float:
    """Coefficient of variation (std / |mean|) of the entries above the diagonal."""
    R = np.asarray(R, dtype=float)
    upper = R[np.triu_indices(R.shape[0], 1)]
    return float(upper.std() / abs(upper.mean()))
