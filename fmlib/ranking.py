"""Ranking many items for one context, with the context part computed once (DPLR paper §3.1, §4.2.2).

A query is one context (user + time fields C) and N candidate items (item fields I). Whatever
depends on the context alone is computed once per query and cached; each item then pays only for
its own fields. Per-item cost, k the embedding size:

* FM (eq. 2c): cache s_C = Σ_C v_c and the context pairs; per item ⟨s_C, s_I⟩ + item pairs, O(|I|k).
* DPLR-FwFM (Algorithm 1): cache P_C = U_C V_C and s_C = Σ_C d_c ‖v_c‖²; per item
  P = P_C + U_I V_I and ½(s_C + Σ_I d_i ‖v_i‖² + Σ_r e_r ‖P_r,:‖²), O(ρ|I|k). (Algorithm 1 prints
  step 1(a) as P_C = V_C U_C: the factors are swapped, V_C U_C is undefined unless k = ρ. Its
  output is the full double sum of eq. 9; the pairwise term of eq. 3 is half of it, eq. 5.)
* FwFM: the paper counts O(m²k) per item (§3.2), which is what a full forward pass costs. A
  cache helps here too: the context-item terms Σ_c Σ_i R_ci ⟨v_c, v_i⟩ = Σ_i ⟨v_i, w_i⟩ with
  w_i = Σ_c R_ic v_c computed once per query, so the per-item cost is O(|I|k + |I|²k) — quadratic
  in the item fields only. A pruned FwFM skips its zeroed item-item pairs.
``fmlib.bench.ranking`` times all of them, and the full forward pass, in one run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .data.dataset import Dataset
from .data.schema import Schema
from .models.dplr import DPLR
from .models.fm import FM, fm_pairwise
from .models.fwfm import FwFM


@dataclass(frozen=True)
class Layout:
    """Which columns of ``Dataset.index`` (slots) and which fields are context and item."""

    context_slots: torch.Tensor
    item_slots: torch.Tensor
    context_fields: torch.Tensor
    item_fields: torch.Tensor


def layout(schema: Schema) -> Layout:
    """The context and item slots and fields of ``schema``; both roles must be present."""
    slot_field = schema.slot_fields()
    role = [schema.fields[f].role for f in slot_field]

    def long(xs):
        return torch.tensor(xs, dtype=torch.long)

    lay = Layout(
        long([s for s, r in enumerate(role) if r == "context"]),
        long([s for s, r in enumerate(role) if r == "item"]),
        long(schema.field_indices("context")),
        long(schema.field_indices("item")),
    )
    if len(lay.context_fields) == 0 or len(lay.item_fields) == 0:
        raise ValueError(
            "ranking needs at least one context field and one item field; the schema has "
            f"{len(lay.context_fields)} context and {len(lay.item_fields)} item fields"
        )
    return lay


def assemble(lay: Layout, context_index, context_weight, item_index, item_weight):
    """Full rows (N, S) for the full forward pass: the context repeated next to every item."""
    n = item_index.shape[0]
    index = torch.empty(n, len(lay.context_slots) + len(lay.item_slots), dtype=torch.long)
    weight = torch.empty(index.shape)
    index[:, lay.context_slots], weight[:, lay.context_slots] = context_index, context_weight
    index[:, lay.item_slots], weight[:, lay.item_slots] = item_index, item_weight
    return index, weight


class _Ranker:
    """Shared part: field vectors and first-order terms of a subset of the slots."""

    def __init__(self, model, lay: Layout):
        self.model, self.lay = model, lay
        to_field = model.slot_to_field
        self.ctx_map = to_field[lay.context_slots][:, lay.context_fields]  # slot -> field sums
        self.item_map = to_field[lay.item_slots][:, lay.item_fields]
        self.item_single = len(lay.item_slots) == len(lay.item_fields)
        self.ctx_single = len(lay.context_slots) == len(lay.context_fields)

    def vectors(self, index, weight, slot_map, single):
        """Field vectors e_f = Σ_{s in f} weight_s v_{index_s} of the given slots (DPLR §3.2 average)."""
        v = self.model.embedding(index) * weight.unsqueeze(-1)
        return v if single else torch.einsum("nsk,sf->nfk", v, slot_map)

    def first(self, index, weight):
        """Σ_i w_i x_i over the given slots (DPLR eq. 2, first-order term without w0)."""
        return (self.model.linear(index).squeeze(-1) * weight).sum(-1)

    def cache(self, context_index, context_weight) -> dict:
        """Everything that depends on the context alone (computed once per query)."""
        V_C = self.vectors(context_index[None], context_weight[None], self.ctx_map, self.ctx_single)[0]
        return {"first": self.model.bias + self.first(context_index, context_weight), **self.context(V_C)}

    def score(self, cache: dict, item_index, item_weight) -> torch.Tensor:
        """Scores of N items (N, S_I) given the cached context."""
        V_I = self.vectors(item_index, item_weight, self.item_map, self.item_single)
        return cache["first"] + self.first(item_index, item_weight) + self.items(cache, V_I)


class FMRanker(_Ranker):
    def context(self, V_C):
        """DPLR eq. 2c, cached part: s_C = Σ_C v_c and the context pairs Σ_{c<c'} ⟨v_c, v_c'⟩ (eq. 1)."""
        return {"s_C": V_C.sum(0), "pairs_C": fm_pairwise(V_C[None])[0]}

    def items(self, cache, V_I):
        """DPLR eq. 2c: context pairs + ⟨Σ_C v, Σ_I v⟩ + item pairs."""
        return cache["pairs_C"] + V_I.sum(1) @ cache["s_C"] + fm_pairwise(V_I)


class FwFMRanker(_Ranker):
    def __init__(self, model, lay):
        super().__init__(model, lay)
        R = model.R.detach()
        C, I = lay.context_fields, lay.item_fields
        self.R_CC, self.R_IC, self.R_II = R[C][:, C], R[I][:, C], R[I][:, I]
        p, q = torch.triu_indices(len(I), len(I), 1)
        r = self.R_II[p, q]
        kept = r != 0
        # a pruned FwFM visits only its kept item-item pairs when they are under a tenth of them;
        # above that PyTorch's dense batched product is faster than gathering pairs
        self.sparse = bool(kept.sum() < 0.1 * len(r))
        self.p, self.q, self.r = p[kept], q[kept], r[kept]

    def context(self, V_C):
        """Cached part of DPLR eq. 3: context pairs ½⟨V_C V_Cᵀ, R_CC⟩ and w_i = Σ_c R_ic v_c."""
        return {"pairs_C": 0.5 * ((V_C @ V_C.T) * self.R_CC).sum(), "w": self.R_IC @ V_C}

    def items(self, cache, V_I):
        """½⟨PᵀP, R⟩ split into context pairs + Σ_i ⟨v_i, w_i⟩ + item-item pairs (DPLR eq. 3)."""
        cross = (V_I * cache["w"]).sum((1, 2))
        if self.sparse:
            item_pairs = ((V_I[:, self.p] * V_I[:, self.q]).sum(-1) * self.r).sum(1)
        else:
            item_pairs = 0.5 * ((V_I @ V_I.transpose(1, 2)) * self.R_II).sum((1, 2))
        return cache["pairs_C"] + cross + item_pairs


class DPLRRanker(_Ranker):
    def __init__(self, model, lay):
        super().__init__(model, lay)
        U, e = model.U.detach(), model.e.detach()
        d = model.d.detach()
        self.U_C, self.U_I, self.e = U[:, lay.context_fields], U[:, lay.item_fields], e
        self.d_C, self.d_I = d[lay.context_fields], d[lay.item_fields]

    def context(self, V_C):
        """Algorithm 1 step 1: P_C = U_C V_C and s_C = Σ_C d_c ‖v_c‖²."""
        return {"P_C": self.U_C @ V_C, "s_C": (V_C.pow(2).sum(-1) * self.d_C).sum()}

    def items(self, cache, V_I):
        """Algorithm 1 steps 2–3, halved (eq. 5): O(ρ|I|k) per item."""
        P = cache["P_C"] + torch.matmul(self.U_I, V_I)  # (N, ρ, k)
        return 0.5 * (cache["s_C"] + (V_I.pow(2).sum(-1) * self.d_I).sum(1) + (P.pow(2).sum(-1) * self.e).sum(1))


def ranker(model) -> _Ranker:
    """The cached-context scorer for an FM, FwFM (pruned or not) or DPLR-FwFM."""
    for cls, make in ((DPLR, DPLRRanker), (FwFM, FwFMRanker), (FM, FMRanker)):
        if isinstance(model, cls):
            return make(model, layout(model.schema))
    raise ValueError(f"cached-context ranking supports fm, fwfm and dplr models, got {type(model).__name__}")


@torch.no_grad()
def rank_items(model, context_index, context_weight, item_index, item_weight) -> torch.Tensor:
    """Scores (N,) of N items for one context, the context part computed once (Alg. 1 / eq. 2c).

    context_index/weight: (S_C,) the context slots of one sample; item_index/weight: (N, S_I).
    Equal to ``model(*assemble(...))``, the full forward pass, up to rounding.
    """
    r = ranker(model)
    if (
        context_index.shape != (len(r.lay.context_slots),)
        or item_index.ndim != 2
        or item_index.shape[1] != len(r.lay.item_slots)
    ):
        raise ValueError(
            f"expected context slots ({len(r.lay.context_slots)},) and item slots "
            f"(N, {len(r.lay.item_slots)}), got {tuple(context_index.shape)} and "
            f"{tuple(item_index.shape)}"
        )
    model.eval()
    return r.score(r.cache(context_index, context_weight), item_index, item_weight)


def item_candidates(data: Dataset):
    """Every distinct item (its item slots) in ``data``: (item_index, item_weight, first row of each)."""
    lay = layout(data.schema)
    slots = data.index[:, lay.item_slots].numpy()
    _, rows = np.unique(slots, axis=0, return_index=True)
    rows = torch.as_tensor(np.sort(rows))
    return data.index[rows][:, lay.item_slots], data.weight[rows][:, lay.item_slots], rows


def context_of(data: Dataset, row: int):
    """The context slots (index, weight) of sample ``row``: one query."""
    lay = layout(data.schema)
    return data.index[row, lay.context_slots], data.weight[row, lay.context_slots]
