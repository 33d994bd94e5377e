"""Factorization machine (Rendle 2010) over field embeddings.

ŷ = w0 + Σ_i w_i x_i + Σ_{f<g} ⟨e_f, e_g⟩                       (DPLR paper eq. 2)
with the pairwise sum computed in O(mk) by Rendle's identity     (DPLR paper eq. 1)
    Σ_{f<g} ⟨e_f, e_g⟩ = ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²).
"""
from __future__ import annotations

import torch

from .base import FieldEmbeddingModel


def fm_pairwise(e: torch.Tensor) -> torch.Tensor:
    """Rendle's identity (DPLR eq. 1): (B, m, k) field embeddings -> (B,) pairwise term."""
    return 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1)


class FM(FieldEmbeddingModel):
    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        return fm_pairwise(e)
