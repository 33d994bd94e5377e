"""Shared embedding base of every model: one table with field offsets, linear terms, bias.

For a sample with slots s (rows ``index[s]`` of the table, weights ``weight[s]``) the field
embedding of field f is e_f = Σ_{s in f} weight[s] · v[index[s]] — for a single-valued field
the embedding of its one feature, for a multi-valued field (genres) the average of its values'
embeddings (DPLR paper §3.2). The first-order part is w0 + Σ_s weight[s] · w[index[s]]
(DPLR eq. 2, first two terms). Subclasses add the pairwise part from ``field_embeddings``.

The slots of one field are contiguous columns (``Schema.build`` lays them out in order), so
the field sums are slices: a run of single-valued fields is kept as it is and a multi-valued
field's columns are summed (``sum_slots``). No dense slot-to-field product is formed.
"""

from __future__ import annotations

import torch
from torch import nn

from ..data.schema import Schema


def slot_runs(schema: Schema) -> tuple[tuple[int, int, bool], ...]:
    """Column ranges (start, stop, multi): a maximal run of single-valued fields (multi False),
    or the slots of one multi-valued field (multi True, to be summed)."""
    runs, start = [], 0
    for f in schema.fields:
        stop = start + f.slots
        if f.kind == "single" and runs and not runs[-1][2] and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], stop, False)
        else:
            runs.append((start, stop, f.kind == "multi"))
        start = stop
    return tuple(runs)


def sum_slots(v: torch.Tensor, weight: torch.Tensor | None, runs: tuple[tuple[int, int, bool], ...]) -> torch.Tensor:
    """(B, S, k) slot vectors -> (B, m, k) field embeddings e_f = Σ_{s in f} weight_s v_s (DPLR §3.2).

    Single-valued slots weigh 1 and are kept as they are; only multi-valued slots are weighted
    (``weight`` None: the vectors already carry their weights)."""

    def total(a, b):
        return (v[:, a:b] if weight is None else v[:, a:b] * weight[:, a:b, None]).sum(1, keepdim=True)

    parts = [total(a, b) if multi else v[:, a:b] for a, b, multi in runs]
    return parts[0] if len(parts) == 1 else torch.cat(parts, 1)


def spread_slots(d: torch.Tensor, weight: torch.Tensor, runs: tuple[tuple[int, int, bool], ...]) -> torch.Tensor:
    """The adjoint of ``sum_slots``: (B, m, k) field gradients -> (B, S, k), slot s of field f
    getting weight_s · d_f (the chain rule through e_f = Σ_{s in f} weight_s v_s)."""
    parts, f = [], 0
    for a, b, multi in runs:
        if multi:
            parts.append(d[:, f : f + 1] * weight[:, a:b, None])
            f += 1
        else:
            parts.append(d[:, f : f + b - a])
            f += b - a
    return parts[0] if len(parts) == 1 else torch.cat(parts, 1)


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
        self.register_buffer("slot_field", torch.tensor(schema.slot_fields()), persistent=False)  # (S,)
        self.runs = slot_runs(schema)
        self._single = schema.num_slots == schema.num_fields

    @property
    def slot_to_field(self) -> torch.Tensor:
        """(S, m) 0/1 matrix, 1 where slot s belongs to field f (for callers that map slots to fields)."""
        return nn.functional.one_hot(self.slot_field, self.schema.num_fields).float()

    def hparams(self) -> dict:
        """Keyword arguments that rebuild this model with ``build_model``."""
        return {"dim": self.dim}

    def first_order(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """w0 + Σ_i w_i x_i (DPLR eq. 2, first two terms), shape (B,)."""
        w = self.linear(index).squeeze(-1)
        return self.bias + (w if self._single else w * weight).sum(1)

    def field_embeddings(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """e_f = Σ_{s in f} weight_s · v_{index_s} for every field (DPLR §3.2), shape (B, m, k)."""
        v = self.embedding(index)  # (B, S, k)
        if self._single:  # one slot per field, of weight 1: slots are fields
            return v
        return sum_slots(v, weight, self.runs)

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Second-order term from field embeddings (B, m, k) -> (B,)."""
        raise NotImplementedError

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return self.first_order(index, weight) + self.pairwise(self.field_embeddings(index, weight))
