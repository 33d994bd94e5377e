"""Factorization machine (Rendle 2010) over field embeddings.

ŷ = w0 + Σ_i w_i x_i + Σ_{f<g} ⟨e_f, e_g⟩                       (DPLR paper eq. 2)
with the pairwise sum computed in O(mk) by Rendle's identity     ([Rendle2010] Lemma 3.1; [DPLR] eq. 1 restates it)
    Σ_{f<g} ⟨e_f, e_g⟩ = ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²).

Training uses ``FMFunction``, a custom autograd function whose backward pass is the memoised
O(mk) gradient of [FMGrad]: with Z = Σ_f e_f computed once in the forward pass,
∂φ/∂e_f = Z − e_f (the note's eq. 8 in field form, with the coefficient corrected from 2 to 1:
the note's eq. 7 drops the P_ij inside Z; see the Derivations page). Each slot's embedding
row then receives weight · (Z − e_f) and its linear weight receives weight. Single-valued
slots always weigh 1, so their weights are not multiplied in; a multi-valued field is the
weighted sum of its contiguous slots, e_f = x_f V_f with x_f its values' weights
(``base.gather_fields``), and its gradient goes back as x_fᵀ ∂φ/∂e_f to the field's block of
the table (``base.scatter_fields``) — no slot-to-field matrix.
"""

from __future__ import annotations

import torch

from .base import FieldEmbeddingModel, FieldRead, gather_fields, scatter_fields
from .contract import BilinearForm


def fm_pairwise(e: torch.Tensor) -> torch.Tensor:
    """Rendle's identity ([Rendle2010] Lemma 3.1): (B, m, k) field embeddings -> (B,) pairwise term."""
    return 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1)


def fm_score(table, index, weight, layout):
    """Σ_i w_i x_i + ½(‖Z‖² − Σ_f ‖e_f‖²) with Z = Σ_f e_f (DPLR eqs. 1–2) from the table [v | w] (the
    linear weights as a last column, so one gather gives every field's (e_f, Σ_{s in f} weight_s w_s)):
    (score, fields, sums, read), the last three kept by ``FMFunction`` for its backward pass."""
    k = table.shape[1] - 1
    read = FieldRead.of(index, weight, layout, table.dtype)
    fields = gather_fields(table, read, layout)  # (B, m, k + 1)
    sums = fields.sum(1)  # [Z | Σ_i w_i x_i], Z memoised for the backward pass
    return sums[:, k] + 0.5 * (sums[:, :k].pow(2).sum(1) - fields[..., :k].pow(2).sum((1, 2))), fields, sums, read


class FMFunction(torch.autograd.Function):
    """Σ_s weight_s w[index_s] + Σ_{f<g}⟨e_f, e_g⟩ with the memoised O(mk) backward pass.

    ``layout`` (``base.SlotLayout``) says which columns are multi-valued fields, each a weighted
    sum of its slots (``base.gather_fields``); slots are fields when there are none.
    """

    @staticmethod
    def forward(ctx, linear, embedding, index, weight, layout):
        """``fm_score`` of [v | w], Z kept for the backward pass."""
        score, fields, sums, read = fm_score(torch.cat([embedding, linear], 1), index, weight, layout)
        ctx.save_for_backward(fields, sums)
        ctx.read, ctx.layout, ctx.rows = read, layout, embedding.shape[0]
        return score

    @staticmethod
    def backward(ctx, grad):
        """∂φ/∂e_f = Z − e_f from the memoised Z ([FMGrad] eq. 8, coefficient corrected) and
        ∂φ/∂(Σ_{s in f} weight_s w_s) = 1; slot s of field f gets weight_s times them
        (``base.scatter_fields``)."""
        fields, sums = ctx.saved_tensors
        d = sums.unsqueeze(1) - fields  # Z − e_f in the first k columns
        d[..., -1] = 1.0
        d.mul_(grad[:, None, None])
        table = scatter_fields(d, ctx.read, ctx.layout, ctx.rows)  # gradient of [v | w]
        return table[:, -1:], table[:, :-1], None, None, None


class FM(FieldEmbeddingModel):
    def bilinear_form(self) -> BilinearForm:
        """w0 and R_FM = 11ᵀ − I, i.e. U = 1ᵀ, e = 1, d = −1 ([DPLR] eq. 7)."""
        m = self.schema.num_fields
        return BilinearForm(
            self.bias, torch.ones(m, m) - torch.eye(m), (torch.ones(1, m), torch.ones(1), -torch.ones(m))
        )

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Σ_{f<g} ⟨e_f, e_g⟩ by Rendle's identity ([Rendle2010] Lemma 3.1); ``forward`` uses ``FMFunction``."""
        return fm_pairwise(e)

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():  # training: the memoised backward pass
            return self.bias + FMFunction.apply(self.linear.weight, self.embedding.weight, index, weight, self.layout)
        return self.bias + fm_score(self.vw_table(), index, weight, self.layout)[0]  # evaluation: [v | w] kept
