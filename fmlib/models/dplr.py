"""Diagonal-plus-low-rank field-weighted FM (DPLR-FwFM), DPLR paper §4.

Names (DPLR paper §4): the m field vectors v_1..v_m ∈ ℝ^k are the rows of V ∈ ℝ^{m×k}
(eq. 4); ρ is the rank; U ∈ ℝ^{ρ×m} and e ∈ ℝ^ρ are learned; the field interaction matrix

    R = Uᵀ diag(e) U + diag(d),   d ≡ −diag_of(Uᵀ diag(e) U)                 (eq. 10)

is symmetric with a zero diagonal by construction, and has ρ(m+1) parameters (the paper's
budget). It is never formed in ``forward``: with P = UV (ρ×k), Proposition 1 (eq. 9) gives

    Σ_{i<j} ⟨v_i, v_j⟩ R_ij = ½ ( Σ_i d_i ‖v_i‖² + Σ_r e_r ‖P_r,:‖² )          (eqs. 5, 9)

in O(ρmk) instead of the O(m²k) of an FwFM. (The paper's §4.2.1 prints e ∈ ℝ^{ρ×m}; e has ρ
entries, one per row of U, as in eq. 8 and Proposition 1.)

Initialisation starts next to the FM, like ``FwFM`` starts at it: U's first row is 1ᵀ, the
other rows are small random numbers N(0, 0.1²), and e = 1, so R ≈ 11ᵀ − I = R_FM (eq. 7).
The paper does not say how it initialises. Two things we measured on planted data
(tests/test_dplr.py): a sign of e rarely crosses zero during
training, and starting exactly at the FM (e = (1, 0, …)) let the second direction take the wrong
sign and stall; e = 1 recovered a planted rank-2 R from every seed we tried.

**The FwFM's pull toward the FM, as an option** (``r_l2`` = λ_R, default 0: the paper's model, which
has none). The loss may get λ_R Σ_{f<g} (R_fg − 1)², the FwFM's L2 of R toward R_FM (DPLR eq. 7;
``FwFM.extra_loss``), with R from eq. 10: the same tool on both sides of a comparison. Without it a
DPLR of rank 1 contains the FM only in the function space: started at the FM with the tuned FM(8)'s
recipe (ml-100k click, seeds 0–2) it drifts away and validates at log loss 0.5635 against the FM's
0.5513 (no L2 on U: 0.5711); with λ_R = 1 it stays there, 0.5513. The penalty forms R (O(ρm²) a
minibatch, independent of the batch size), which ``forward`` still never does.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import FieldEmbeddingModel
from .contract import BilinearForm
from .fwfm import checked_r_l2, fm_pull


def dplr_pairwise(V: torch.Tensor, U: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """½ (Σ_i d_i ‖v_i‖² + Σ_r e_r ‖P_r,:‖²), P = UV (DPLR eqs. 9–10): (B, m, k) -> (B,)."""
    d = dplr_diagonal(U, e)
    P = torch.einsum("rm,bmk->brk", U, V)  # (B, ρ, k), O(ρmk)
    return 0.5 * ((V.pow(2).sum(-1) * d).sum(1) + (P.pow(2).sum(-1) * e).sum(1))


def dplr_diagonal(U: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """d = −diag_of(Uᵀ diag(e) U), i.e. d_i = −Σ_r e_r U_ri² (DPLR eq. 10)."""
    return -(e.unsqueeze(1) * U.pow(2)).sum(0)


def dplr_upper(U: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """R_fg = Σ_r e_r U_rf U_rg for f < g (DPLR eq. 10; the diagonal d only zeroes R's diagonal): (m(m−1)/2,)."""
    rows, cols = torch.triu_indices(U.shape[1], U.shape[1], offset=1, device=U.device)
    return (e.unsqueeze(1) * U[:, rows] * U[:, cols]).sum(0)


def dplr_matrix(U: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """The R of eq. 10, formed explicitly (for analysis and tests only)."""
    return U.T @ torch.diag(e) @ U + torch.diag(dplr_diagonal(U, e))


class DPLR(FieldEmbeddingModel):
    """DPLR-FwFM of rank ρ = ``rank`` (1 ≤ ρ ≤ m − 1), its R pulled toward R_FM by ``r_l2`` (module docstring)."""

    def __init__(self, schema, dim: int = 16, rank: int = 2, r_l2: float = 0.0, init_std: float = 0.01):
        super().__init__(schema, dim, init_std)
        m = schema.num_fields
        if not (isinstance(rank, int) and 1 <= rank <= m - 1):
            raise ValueError(f"rank ρ must be an integer in 1..m−1 = 1..{m - 1} for {m} fields, got {rank!r}")
        self.rank = rank
        self.r_l2 = checked_r_l2(r_l2)
        U = 0.1 * torch.randn(rank, m)
        U[0] = 1.0
        self.U = nn.Parameter(U)  # (ρ, m)
        self.e = nn.Parameter(torch.ones(rank))  # (ρ,)

    def extra_loss(self) -> torch.Tensor:
        """λ_R Σ_{f<g} (R_fg − 1)² with R from eq. 10: the FwFM's L2 toward R_FM (DPLR eq. 7); none at λ_R = 0."""
        if self.r_l2 == 0:
            return torch.zeros(())
        return fm_pull(dplr_upper(self.U, self.e), self.r_l2)

    @property
    def d(self) -> torch.Tensor:
        """The diagonal d of eq. 10 (m,), determined by U and e."""
        return dplr_diagonal(self.U, self.e)

    @property
    def R(self) -> torch.Tensor:
        """The field interaction matrix the model implies (eq. 10), m×m; ``forward`` never forms it."""
        return dplr_matrix(self.U, self.e)

    def interaction_matrix(self) -> torch.Tensor:
        """R implied by U and e (eq. 10)."""
        return self.R

    def bilinear_form(self) -> BilinearForm:
        """w0, R and its factors U, e, d (eq. 10)."""
        return BilinearForm(self.bias, self.R, (self.U, self.e, self.d))

    def pairwise(self, V: torch.Tensor) -> torch.Tensor:
        return dplr_pairwise(V, self.U, self.e)
