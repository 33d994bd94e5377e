"""Factorization machine (Rendle 2010) over field embeddings.

ŷ = w0 + Σ_i w_i x_i + Σ_{f<g} ⟨e_f, e_g⟩                       (DPLR paper eq. 2)
with the pairwise sum computed in O(mk) by Rendle's identity     (DPLR paper eq. 1)
    Σ_{f<g} ⟨e_f, e_g⟩ = ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²).

Training uses ``FMFunction``, a custom autograd function whose backward pass is the memoised
O(mk) gradient of [FMGrad]: with Z = Σ_f e_f computed once in the forward pass,
∂φ/∂e_f = Z − e_f (the note's eq. 8 in field form, with the coefficient corrected from 2 to 1:
the note's eq. 7 drops the P_ij inside Z; see the Derivations page). Each slot's embedding
row then receives weight · (Z − e_f) and its linear weight receives weight. Single-valued
slots always weigh 1, so when every field is single-valued the weights are not multiplied in;
a multi-valued field is the weighted sum of its contiguous slots (``base.sum_slots``), and its
gradient goes back to every slot by an index along the slot axis — no slot-to-field matrix.
"""

from __future__ import annotations

import torch

from .base import FieldEmbeddingModel, spread_slots, sum_slots


def fm_pairwise(e: torch.Tensor) -> torch.Tensor:
    """Rendle's identity (DPLR eq. 1): (B, m, k) field embeddings -> (B,) pairwise term."""
    return 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1)


class FMFunction(torch.autograd.Function):
    """Σ_s weight_s w[index_s] + Σ_{f<g}⟨e_f, e_g⟩ with the memoised O(mk) backward pass.

    ``runs`` (``base.slot_runs``) says which columns are multi-valued fields, summed into one
    field each; None when every field is single-valued (slots are fields, weights are 1).
    """

    @staticmethod
    def forward(ctx, linear, embedding, index, weight, runs):
        """Σ_i w_i x_i + ½(‖Z‖² − Σ_f ‖e_f‖²) with Z = Σ_f e_f (DPLR eqs. 1–2), Z kept for backward."""
        flat = index.reshape(-1)
        e = embedding.index_select(0, flat).view(*index.shape, -1)  # (B, S, k) slot embeddings
        first = linear.index_select(0, flat).view(index.shape)
        if runs is not None:  # multi-valued fields: weighted sum of their slots
            e = sum_slots(e, weight, runs)
            first = first * weight
        z = e.sum(1)  # Z, memoised for the backward pass
        ctx.save_for_backward(index, weight, e, z)
        ctx.runs = runs
        ctx.shapes = (linear.shape, embedding.shape)
        return first.sum(1) + 0.5 * (z.pow(2).sum(1) - e.pow(2).sum((1, 2)))

    @staticmethod
    def backward(ctx, grad):
        """∂φ/∂e_f = Z − e_f from the memoised Z ([FMGrad] eq. 8, coefficient corrected);
        slot s of field f gets weight_s · ∂φ/∂e_f."""
        index, weight, e, z = ctx.saved_tensors
        d_e = grad[:, None, None] * (z.unsqueeze(1) - e)  # ∂/∂e_f = Z − e_f
        d_first = grad[:, None].expand_as(index)
        if ctx.runs is not None:  # back from fields to their slots, times the slot weights
            d_e = spread_slots(d_e, weight, ctx.runs)
            d_first = d_first * weight
        flat = index.reshape(-1)
        d_embedding = e.new_zeros(ctx.shapes[1]).index_add_(0, flat, d_e.reshape(flat.numel(), -1))
        d_linear = e.new_zeros(ctx.shapes[0]).index_add_(0, flat, d_first.reshape(-1, 1))
        return d_linear, d_embedding, None, None, None


class FM(FieldEmbeddingModel):
    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Σ_{f<g} ⟨e_f, e_g⟩ by Rendle's identity (DPLR eq. 1); ``forward`` uses ``FMFunction``."""
        return fm_pairwise(e)

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        runs = None if self._single else self.runs
        return self.bias + FMFunction.apply(self.linear.weight, self.embedding.weight, index, weight, runs)
