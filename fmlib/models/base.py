"""Shared embedding base of every model: one table with field offsets, linear terms, bias.

For a sample with slots s (rows ``index[s]`` of the table, weights ``weight[s]``) the field
embedding of field f is e_f = Σ_{s in f} weight[s] · v[index[s]] — for a single-valued field
the embedding of its one feature, for a multi-valued field (genres) the average of its values'
embeddings (DPLR paper §3.2). The first-order part is w0 + Σ_s weight[s] · w[index[s]]
(DPLR eq. 2, first two terms). Subclasses add the pairwise part from ``field_embeddings``.

The slots of one field are contiguous columns (``Schema.build`` lays them out in order).
``gather_fields`` reads one row per single-valued field. A multi-valued field f is read through
its part of the FM's input vector x ([Rendle2010] eq. 1): x_f, (B, |f|), with x_f[b, i] the
weight of value i in sample b (``field_values``); then e_f = x_f V_f, one matrix product with
the field's block V_f of the table, and its backward pass, ``scatter_fields``, adds x_fᵀ ∂/∂e_f
to that block. Both cost O(B |f| k) in one BLAS call, cheaper per step than a gather and a
scatter of the field's slots when the field has few values (genres: 20), and padding slots
(weight 0) add nothing. No dense slot-to-field product is formed. A batch's slots are read once
(``FieldRead``: the first slot's row of every field, x_f of every multi-valued field) for both
passes.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ..data.features import set_matrix
from ..data.schema import Schema
from .contract import FeatureTable, Model


class Block(NamedTuple):
    """A relation block ([Rendle2013]; ``Field`` kind "block"): field ``f`` holds, for every sample,
    the set of values its key (the sample's user, or movie) has, e_f = Σ_{j in set} v_j / √|set|.
    ``key_column`` is the key field's slot in the index, ``key_offset`` its first table row,
    ``start`` the block's first table row and ``size`` its number of rows; ``X`` (keys × size, sparse
    CSR) holds 1/√|set| at (key, j) for every j of the key's set, ``XT`` its transpose."""

    f: int
    key_column: int
    key_offset: int
    start: int
    size: int
    X: torch.Tensor
    XT: torch.Tensor

    def keys(self, index: torch.Tensor) -> torch.Tensor:
        """(B,) each sample's key: its local index in the key field."""
        return index[:, self.key_column] - self.key_offset

    def sums(self, table: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """(B, k): Σ_{j in set} v_j / √|set| of every sample's set. Every key's sum is computed once,
        X V_block (the relation-block trick, [Rendle2013] §4), then read by key."""
        return bag(self.X, table[self.start : self.start + self.size])[keys]

    def scatter(self, d: torch.Tensor, keys: torch.Tensor, grad: torch.Tensor) -> None:
        """The adjoint of ``sums``: adds Xᵀ (Σ of ``d`` over each key's samples) to the block's rows of ``grad``."""
        per_key = d.new_zeros(self.X.shape[0], d.shape[1]).index_add_(0, keys, d)
        grad[self.start : self.start + self.size] += bag(self.XT, per_key)


def bag(X: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """X @ table for a sparse CSR X, as one ``embedding_bag`` over X's rows (a weighted sum of
    table rows per row of X; torch's sparse product on the CPU runs slower)."""
    return nn.functional.embedding_bag(
        X.col_indices(), table, X.crow_indices(), mode="sum", per_sample_weights=X.values(), include_last_offset=True
    )


class SlotLayout(NamedTuple):
    """Where each field's slots are: ``first`` (m,), the column of every field's first slot;
    ``multi``, (field f, first column a, stop b, first table row, number of values |f|) of every
    multi-valued field; ``blocks``, every relation block (``Block``)."""

    first: torch.Tensor
    multi: tuple[tuple[int, int, int, int, int], ...]
    blocks: tuple[Block, ...] = ()

    @classmethod
    def of(cls, schema: Schema) -> SlotLayout:
        starts = torch.tensor([0, *(f.slots for f in schema.fields)]).cumsum(0)
        multi = tuple(
            (j, int(starts[j]), int(starts[j + 1]), f.offset, f.cardinality)
            for j, f in enumerate(schema.fields)
            if f.kind == "multi"
        )
        blocks = tuple(
            Block(
                j,
                int(starts[schema.names.index(f.key)]),
                schema.field(f.key).offset,
                f.offset,
                f.cardinality,
                *block_matrices(f),
            )
            for j, f in enumerate(schema.fields)
            if f.kind == "block"
        )
        return cls(starts[:-1].contiguous(), multi, blocks)


def block_matrices(field) -> tuple[torch.Tensor, torch.Tensor]:
    """(X, Xᵀ) of a block field as sparse CSR float32 tensors (``features.set_matrix``)."""
    B = set_matrix(field)
    parts = (torch.from_numpy(a) for a in (B.indptr.astype(np.int64), B.indices.astype(np.int64), B.data))
    with warnings.catch_warnings():  # torch calls its sparse CSR support beta; the products used here are tested
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta state")
        X = torch.sparse_csr_tensor(*parts, B.shape, dtype=torch.float32, check_invariants=False)
        return X, X.t().to_sparse_csr()


def first_rows(index: torch.Tensor, layout: SlotLayout) -> torch.Tensor:
    """(B, S) slots -> (B, m): the table row in every field's first slot (a copy)."""
    return torch.gather(index, 1, layout.first.expand(len(index), -1))


def field_values(index: torch.Tensor, weight: torch.Tensor, multi: tuple, dtype: torch.dtype) -> torch.Tensor:
    """x_f, (B, |f|): the weight of each value of the multi-valued field ``multi`` (an entry of
    ``SlotLayout.multi``) in every sample, the field's part of the FM input x ([Rendle2010] eq. 1);
    padding slots add 0."""
    _, a, b, start, values = multi
    x = torch.zeros(len(index), values, dtype=dtype, device=index.device)
    return x.scatter_add_(1, index[:, a:b] - start, weight[:, a:b].to(dtype))


class FieldRead(NamedTuple):
    """A batch's slots as ``gather_fields`` and ``scatter_fields`` use them, read once per batch:
    ``cols`` (B, m), the table row in every field's first slot (the slots themselves when every
    field is single-valued), ``values``, x_f of every multi-valued field (``field_values``), and
    ``keys``, every sample's key of every relation block (``Block.keys``)."""

    cols: torch.Tensor
    values: tuple[torch.Tensor, ...]
    keys: tuple[torch.Tensor, ...] = ()

    @classmethod
    def of(cls, index: torch.Tensor, weight: torch.Tensor, layout: SlotLayout, dtype: torch.dtype) -> FieldRead:
        if not layout.multi:  # one slot per field, of weight 1: slots are fields
            return cls(index, (), tuple(b.keys(index) for b in layout.blocks))
        values = tuple(field_values(index, weight, f, dtype) for f in layout.multi)
        return cls(first_rows(index, layout), values, tuple(b.keys(index) for b in layout.blocks))

    def take(self, rows: torch.Tensor) -> FieldRead:
        """The read of the samples ``rows`` only."""
        keys = tuple(k.index_select(0, rows) for k in self.keys)
        return FieldRead(self.cols.index_select(0, rows), tuple(x.index_select(0, rows) for x in self.values), keys)


def gather_fields(table: torch.Tensor, read: FieldRead, layout: SlotLayout) -> torch.Tensor:
    """(B, S) slots -> (B, m, k) field embeddings e_f = Σ_{s in f} weight_s table[index_s] (DPLR §3.2).

    A single-valued field is one gathered row (weight 1); a multi-valued field is x_f V_f, its
    values' weights times its block of the table. No dense slot-to-field product is formed."""
    e = table.index_select(0, read.cols.reshape(-1)).view(*read.cols.shape, -1)
    for (f, _, _, start, values), x in zip(layout.multi, read.values):  # overwrites the first slot's row
        e[:, f] = x @ table[start : start + values]
    for block, keys in zip(layout.blocks, read.keys):  # overwrites the block's bucket row
        e[:, block.f] = block.sums(table, keys)
    return e


def scatter_fields(d: torch.Tensor, read: FieldRead, layout: SlotLayout, rows: int) -> torch.Tensor:
    """The adjoint of ``gather_fields``: (B, m, k) field gradients ∂/∂e_f -> (rows, k) table
    gradient, slot s of field f adding weight_s · ∂/∂e_f to row index_s (the chain rule through
    e_f = Σ_{s in f} weight_s v_s); for a multi-valued field that is x_fᵀ ∂/∂e_f on its block.
    Overwrites the multi-valued fields' and blocks' columns of ``d`` with zeros."""
    k = d.shape[-1]
    grad = d.new_zeros(rows, k)
    for (f, _, _, start, values), x in zip(layout.multi, read.values):
        grad[start : start + values] = x.t() @ d[:, f]  # the field's own block: nothing else adds there
        d[:, f].zero_()  # so that the row gathered in its column (``read.cols``) gets nothing below
    for block, keys in zip(layout.blocks, read.keys):
        block.scatter(d[:, block.f], keys, grad)
        d[:, block.f].zero_()
    return grad.index_add_(0, read.cols.reshape(-1), d.reshape(-1, k))


class FieldSum(torch.autograd.Function):
    """``gather_fields`` with ``scatter_fields`` as its backward pass (gradient to the table only)."""

    @staticmethod
    def forward(ctx, table, index, weight, layout):
        ctx.read = FieldRead.of(index, weight, layout, table.dtype)
        ctx.layout, ctx.rows = layout, table.shape[0]
        return gather_fields(table, ctx.read, layout)

    @staticmethod
    def backward(ctx, grad):
        d = grad.clone() if ctx.layout.multi or ctx.layout.blocks else grad  # scatter_fields overwrites those columns
        return scatter_fields(d, ctx.read, ctx.layout, ctx.rows), None, None, None


class KeptTables(Model):
    """A model that scores from tables it derives from its parameters (FM's [v | w], RaFM's
    fused levels) keeps them between evaluation calls instead of building them per batch:
    at MovieLens 25M's 225,000 features a table is 30 MB, more than a batch's gather."""

    def __init__(self):
        super().__init__()
        self._tables = {}

    def _kept(self, name: str, build):
        """``build()``, kept until the mode is set again (``train``/``eval``: a training step in
        between changes the parameters, and torch's fused Adam does so without a trace) or a
        parameter is replaced or changed in place (``load_state_dict``, ``.to``): the key is
        every parameter's storage and version. With autograd on, built afresh (the result
        must carry the graph)."""
        if torch.is_grad_enabled():
            return build()
        key = tuple((q.data_ptr(), q._version) for q in self.parameters())
        kept = self._tables.get(name)
        if kept is None or kept[0] != key:
            kept = self._tables[name] = (key, build())
        return kept[1]

    def train(self, mode: bool = True):
        """Setting the mode drops the tables kept so far."""
        self._tables = {}
        return super().train(mode)


class LaidOutModel(KeptTables):
    """A model that reads its samples' slots through the schema's ``SlotLayout``, kept on the
    model's device: the blocks' set matrices are buffers, so they travel with ``.to``."""

    def keep_layout(self, schema: Schema) -> None:
        """Keep ``SlotLayout.of(schema)`` (the sets rebuilt from the schema, never saved)."""
        layout = SlotLayout.of(schema)
        self.register_buffer("first_slot", layout.first, persistent=False)  # (m,)
        self.multi = layout.multi
        for i, block in enumerate(layout.blocks):
            self.register_buffer(f"block{i}_X", block.X, persistent=False)
            self.register_buffer(f"block{i}_XT", block.XT, persistent=False)
        self.blocks = tuple(b._replace(X=None, XT=None) for b in layout.blocks)

    @property
    def layout(self) -> SlotLayout:
        """Where each field's slots are (on the model's device), for ``gather_fields``."""
        blocks = tuple(
            b._replace(X=getattr(self, f"block{i}_X"), XT=getattr(self, f"block{i}_XT"))
            for i, b in enumerate(self.blocks)
        )
        return SlotLayout(self.first_slot, self.multi, blocks)


class FieldEmbeddingModel(LaidOutModel):
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
        self.keep_layout(schema)

    def field_tables(self) -> list[tuple[torch.Tensor, torch.Tensor, bool]]:
        """(table, feature row of each of its rows, linear?) of every table whose rows belong to
        features: the linear weights w and the embeddings v, one row per feature. The trainer's
        grouped L2 (``fmlib.train.row_decay``) reads the rows' fields from it."""
        rows = torch.arange(self.schema.num_features)
        return [(self.linear.weight, rows, True), (self.embedding.weight, rows, False)]

    def feature_table(self) -> FeatureTable:
        """The shared table: row i of the embeddings v and of the linear weights w ([DPLR] eq. 4's v_i)."""
        return FeatureTable(self.embedding.weight, self.linear.weight[:, 0])

    def first_order(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """w0 + Σ_i w_i x_i (DPLR eq. 2, first two terms), shape (B,)."""
        return self.bias + FieldSum.apply(self.linear.weight, index, weight, self.layout).sum((1, 2))

    def field_embeddings(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """e_f = Σ_{s in f} weight_s · v_{index_s} for every field (DPLR §3.2), shape (B, m, k)."""
        return FieldSum.apply(self.embedding.weight, index, weight, self.layout)

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Second-order term from field embeddings (B, m, k) -> (B,)."""
        raise NotImplementedError

    def vw_table(self) -> torch.Tensor:
        """[v | w]: the embeddings with the linear weights as a last column, (n, k + 1), so that one
        gather reads both (kept between evaluation calls, ``KeptTables``)."""
        return self._kept("vw", lambda: torch.cat([self.embedding.weight, self.linear.weight], 1))

    def embed(self, index: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``first_order`` and ``field_embeddings`` from one gather of the table [v | w]
        (``vw_table``): (B,) and (B, m, k)."""
        fields = FieldSum.apply(self.vw_table(), index, weight, self.layout)
        return self.bias + fields[..., -1].sum(1), fields[..., :-1]

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        first, e = self.embed(index, weight)
        return first + self.pairwise(e)
