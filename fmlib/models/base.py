"""Shared embedding base of every model: one table with field offsets, linear terms, bias.

For a sample with slots s (rows ``index[s]`` of the table, weights ``weight[s]``) the field
embedding of field f is e_f = Σ_{s in f} weight[s] · v[index[s]] — for a single-valued field
the embedding of its one feature, for a multi-valued field (genres) the average of its values'
embeddings (DPLR paper §3.2). The first-order part is w0 + Σ_s weight[s] · w[index[s]]
(DPLR eq. 2, first two terms). Subclasses add the pairwise part from ``field_embeddings``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..data.schema import Schema


class FieldEmbeddingModel(nn.Module):
    """Base class: ``forward(index, weight) -> (B,)`` scores (a rating, or a click logit)."""

    def __init__(self, schema: Schema, dim: int = 16, init_std: float = 0.01):
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.schema = schema
        self.dim = dim
        self.bias = nn.Parameter(torch.zeros(1))
        self.linear = nn.Embedding(schema.num_features, 1)
        self.embedding = nn.Embedding(schema.num_features, dim)
        nn.init.zeros_(self.linear.weight)
        nn.init.normal_(self.embedding.weight, std=init_std)
        # slot -> field summing matrix (S, m): 1 where slot s belongs to field f
        slot_field = torch.tensor(schema.slot_fields())
        self.register_buffer(
            "slot_to_field", nn.functional.one_hot(slot_field, schema.num_fields).float(), persistent=False
        )
        self._single = schema.num_slots == schema.num_fields

    def hparams(self) -> dict:
        """Keyword arguments that rebuild this model with ``build_model``."""
        return {"dim": self.dim}

    def first_order(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """w0 + Σ_i w_i x_i (DPLR eq. 2, first two terms), shape (B,)."""
        return self.bias + (self.linear(index).squeeze(-1) * weight).sum(1)

    def field_embeddings(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """e_f = Σ_{s in f} weight_s · v_{index_s} for every field (DPLR §3.2), shape (B, m, k)."""
        v = self.embedding(index) * weight.unsqueeze(-1)  # (B, S, k)
        if self._single:  # one slot per field: slots are fields
            return v
        return torch.einsum("bsk,sf->bfk", v, self.slot_to_field)

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Second-order term from field embeddings (B, m, k) -> (B,)."""
        raise NotImplementedError

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return self.first_order(index, weight) + self.pairwise(self.field_embeddings(index, weight))
