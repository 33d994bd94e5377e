"""Field-weighted factorization machine (Pan et al. 2018), as written in the DPLR paper.

ŷ = w0 + Σ_i w_i x_i + Σ_{f<g} ⟨e_f, e_g⟩ R_{f,g}                  (DPLR eq. 3)
  = w0 + Σ_i w_i x_i + ½ ⟨PᵀP, R⟩                                 (DPLR eq. 5, Identity 1)
where P (k×m) stacks the field embeddings as columns and R is the symmetric m×m field
interaction matrix with zero diagonal. Only the strict upper triangle of R is learned
(m(m−1)/2 numbers, registered as a parameter so it is trained); ``R`` returns the full matrix.
With R = 11ᵀ − I the model is an FM.

**How R is trained: L2 toward R_FM.** R learns at the full learning rate, and every minibatch
loss gets λ_R Σ_{f<g} (R_fg − 1)² (``extra_loss``, added by ``Model.loss``): a Gaussian
prior centred on the FM, R = 11ᵀ − I (DPLR eq. 7), so R departs from it only as far as the
data pay for. Why a penalty is needed: the L2 on the embeddings alone can be evaded — dividing
field f's embeddings by c_f and multiplying R_fg by c_f c_g predicts the same and shrinks the
penalty — so with R free the model overfits. Measured (ml-100k, split seed 0, training seeds
0 and 1, default TrainConfig, validation RMSE): λ_R = 0: 0.938/0.937; 1e-3: 0.933/0.932;
1e-2: 0.926/0.925; 1e-1: 0.923/0.925 (R's off-diagonal coefficient of variation 0.58, 0.42,
0.16, 0.03). On planted data (``synthetic.block_R(8, 3)``, three blocks of both signs, 4000
samples, dim 4, batch 128, 40 epochs) λ_R ≤ 1e-2 recovers the planted R (off-diagonal
correlation 0.99 after ``fmlib.analysis.field_scales``), λ_R = 1e-1 does not (0.74): it holds R
at the FM when the data say otherwise. Default λ_R = 1e-2, the best validation RMSE among the
values that let the planted R be found. (The previous crutch, R at 1/50 of the learning rate,
gave 0.925/0.926 on ml-100k but left R at its start on the planted data: 0.70.)
"""

from __future__ import annotations

import torch
from torch import nn

from .base import FieldEmbeddingModel
from .contract import BilinearForm


def checked_r_l2(r_l2: float) -> float:
    """λ_R as a float, refused when negative (a ValueError naming it)."""
    if not r_l2 >= 0:
        raise ValueError(f"r_l2 (λ_R, L2 of R toward R_FM) must be >= 0, got {r_l2}")
    return float(r_l2)


def fm_pull(r_upper: torch.Tensor, r_l2: float) -> torch.Tensor:
    """λ_R Σ_{f<g} (R_fg − 1)² of R's strict upper triangle ``r_upper``: L2 of R toward R_FM = 11ᵀ − I (DPLR eq. 7)."""
    return r_l2 * (r_upper - 1).pow(2).sum()


class FwFM(FieldEmbeddingModel):
    """FwFM with R learned under L2 toward R_FM of strength ``r_l2`` = λ_R (module docstring)."""

    def __init__(self, schema, dim: int = 16, r_l2: float = 1e-2, init_std: float = 0.01):
        super().__init__(schema, dim, init_std)
        self.r_l2 = checked_r_l2(r_l2)
        m = schema.num_fields
        rows, cols = torch.triu_indices(m, m, offset=1)
        self.register_buffer("_rows", rows, persistent=False)
        self.register_buffer("_cols", cols, persistent=False)
        self.r_upper = nn.Parameter(torch.ones(rows.numel()))  # start at the FM, R = 11ᵀ − I

    def extra_loss(self) -> torch.Tensor:
        """λ_R Σ_{f<g} (R_fg − 1)²: L2 of R toward R_FM = 11ᵀ − I (DPLR eq. 7), added to each minibatch loss."""
        return fm_pull(self.r_upper, self.r_l2)

    @property
    def R(self) -> torch.Tensor:
        """The symmetric, zero-diagonal field interaction matrix R (m×m)."""
        m = self.schema.num_fields
        upper = torch.zeros(m, m, dtype=self.r_upper.dtype, device=self.r_upper.device)
        upper = upper.index_put((self._rows, self._cols), self.r_upper)
        return upper + upper.T

    def interaction_matrix(self) -> torch.Tensor:
        """R, learned (DPLR eq. 3)."""
        return self.R

    def bilinear_form(self) -> BilinearForm:
        """w0 and the full R of eq. 5 (no factors: R is free)."""
        return BilinearForm(self.bias, self.R)

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """½⟨PᵀP, R⟩ for each sample (DPLR eq. 5): ½ Σ_{f,g} R_fg ⟨e_f, e_g⟩."""
        gram = e @ e.transpose(1, 2)  # (B, m, m) = PᵀP
        return 0.5 * (gram * self.R).sum((1, 2))
