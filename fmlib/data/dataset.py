"""Encoded samples and the seeded train/valid/test split.

A ``Dataset`` holds, for N samples, ``index`` (N, S) rows of the shared embedding table (int32
while the table fits, else int64) and ``weight`` (N, S) the value of each slot (1 for
single-valued fields, 1/len for each value of a multi-valued field, 0 for padding), plus the
target. MovieLens stores the weights lean: ``counts`` (N, number of multi-valued fields) uint8,
the values of each sample in each multi-valued field; ``weight`` is then built on first read
(and kept), and ``batch`` builds a batch's weights alone. ``split`` re-encodes the fields from
train counts: features seen fewer than ``min_count`` times in train, and features never
seen there, fall into their field's rare bucket (local index 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import torch

from .schema import Field, Schema

TASKS = ("rating", "click")


@dataclass
class Dataset:
    schema: Schema
    index: torch.Tensor  # (N, S) rows of the shared embedding table: int32 while they fit, else int64
    # (N, S) float32 slot weights; None: built from ``counts`` on first read (not in repr: that would build them)
    weight: torch.Tensor | None = field(repr=False)
    rating: torch.Tensor  # (N,) float32 target of the rating task
    name: str = "synthetic"
    source: str = "generated"
    frame: pd.DataFrame | None = None  # raw columns per sample (user_id, movie_id, timestamp, ...)
    movies: pd.DataFrame | None = None  # movie_id, title, year, genres (MovieLens only)
    rating_range: tuple[float, float] | None = None  # predictions are clipped to it
    click_threshold: float = 4.0  # click task: rating >= threshold
    counts: torch.Tensor | None = None  # (N, multi-valued fields) uint8 values per sample: the lean weights

    def __post_init__(self):
        if self._weight is None and self.counts is None:
            raise ValueError("a Dataset needs its slot weights or the value counts of its multi-valued fields")

    def __len__(self) -> int:
        return self.index.shape[0]

    def target(self, task: str) -> torch.Tensor:
        """Rating (regression) or click = rating >= threshold (binary)."""
        if task == "rating":
            return self.rating
        if task == "click":
            return (self.rating >= self.click_threshold).float()
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")

    def batch(self, rows) -> tuple[torch.Tensor, torch.Tensor]:
        """(index int64, weight float32) of the samples ``rows`` (a slice or row numbers), the
        weights built for these rows only when they are stored lean."""
        index = self.index[rows].long()
        if self.counts is None:
            return index, self.weight[rows]
        return index, slot_weights(self.schema, self.counts[rows])

    def subset(self, rows) -> "Dataset":
        rows = torch.as_tensor(rows, dtype=torch.long)
        frame = None if self.frame is None else self.frame.iloc[rows.numpy()].reset_index(drop=True)
        index, rating = (t.index_select(0, rows) for t in (self.index, self.rating))
        return replace(self, index=index, rating=rating, frame=frame, **self._weights(rows))

    def _weights(self, rows=None) -> dict:
        """The stored form of the weights (of ``rows``), for ``replace``: reading ``weight`` of a
        lean dataset would build the full tensor."""
        if self.counts is None:
            return {"weight": self.weight if rows is None else self.weight.index_select(0, rows)}
        return {"weight": None, "counts": self.counts if rows is None else self.counts.index_select(0, rows)}

    def feature_counts(self) -> np.ndarray:
        """Occurrences of every feature row (multi-valued values count once each; padding not):
        the number of samples whose input x has the feature. A relation block's member j occurs in
        every sample whose key's set holds j (``_block_counts``); its slot's placeholder row never."""
        counts = torch.zeros(self.schema.num_features, dtype=torch.long, device=self.index.device)
        multi = {j: i for i, j in enumerate(j for j, f in enumerate(self.schema.fields) if f.kind == "multi")}
        for s, (j, within) in enumerate(_slot_positions(self.schema)):
            if self.schema.fields[j].kind == "block":
                counts += self._block_counts(self.schema.fields[j]).to(counts.device)
                continue
            column = self.index[:, s]
            if self.counts is not None and j in multi:
                column = column[self.counts[:, multi[j]] > within]
            elif self.counts is None:
                column = column[self.weight[:, s] > 0]
            counts += torch.bincount(column, minlength=self.schema.num_features)
        return counts.cpu().numpy()

    def _block_counts(self, block: Field) -> torch.Tensor:
        """(num_features,) occurrences of a block's members: member j of key u's set occurs in each of
        u's samples, so n_j = Σ_{u: j in set(u)} (samples of u)."""
        key = self.schema.field(block.key)
        column = _slot_positions(self.schema).index((self.schema.names.index(block.key), 0))
        per_key = torch.bincount(self.index[:, column] - key.offset, minlength=key.cardinality)
        sizes = torch.from_numpy(np.diff(block.starts))
        members = torch.tensor(block.members, dtype=torch.long)
        counts = torch.zeros(self.schema.num_features, dtype=torch.long)
        return counts.index_add_(0, block.offset + members, per_key.repeat_interleave(sizes))


def _slot_positions(schema: Schema) -> list[tuple[int, int]]:
    """(field number, position within the field) of every column of the index."""
    return [(j, p) for j, f in enumerate(schema.fields) for p in range(f.slots)]


def slot_weights(schema: Schema, counts: torch.Tensor) -> torch.Tensor:
    """(N, S) float32 weights from the value counts of the multi-valued fields: 1 for a single
    slot, 1/count for each of the first ``count`` slots of a multi-valued field, 0 after them
    (on the device of ``counts``)."""
    columns, m = [], 0
    for f in schema.fields:
        if f.kind == "multi":
            c = counts[:, m : m + 1].double()
            present = torch.arange(f.slots, device=counts.device) < c
            columns.append(torch.where(present, 1.0 / c.clamp(min=1), 0.0).float())
            m += 1
        else:
            columns.append(torch.ones(len(counts), f.slots, device=counts.device))
    return torch.cat(columns, 1)


def _weight(self: Dataset) -> torch.Tensor:
    """(N, S) float32 slot weights: the stored tensor, or, stored lean, built from ``counts`` on
    first read and kept (callers slice it batch by batch)."""
    if self._weight is None:
        self._weight = slot_weights(self.schema, self.counts)
    return self._weight


def _set_weight(self: Dataset, value: torch.Tensor | None) -> None:
    self._weight = value


Dataset.weight = property(_weight, _set_weight)  # after @dataclass: the field stays an __init__ argument


@dataclass
class Split:
    train: Dataset
    valid: Dataset
    test: Dataset
    seed: int = 0
    min_count: int = 1

    @property
    def schema(self) -> Schema:
        return self.train.schema


def split(
    data: Dataset, seed: int = 0, min_count: int = 1, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
) -> Split:
    """Seeded random 80/10/10 split (DPLR §4, RaFM §6), then rare-bucket re-encoding."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-9 or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    n = len(data)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_train, n_valid = int(fractions[0] * n), int(fractions[1] * n)
    parts = perm[:n_train], perm[n_train : n_train + n_valid], perm[n_train + n_valid :]
    train, valid, test = (data.subset(p) for p in parts)
    old_to_new, schema = _reencode(data.schema, train.feature_counts(), min_count)

    old_to_new = old_to_new.to(data.index.dtype)

    def reencoded(part: Dataset) -> Dataset:
        """``part`` in the new rows; its index (a copy ``subset`` made) is rewritten in place, a
        block of samples at a time, so no second index is held (25M ratings: 1.6 GiB less)."""
        for start in range(0, len(part), 1 << 20):
            block = part.index[start : start + (1 << 20)]
            block.copy_(old_to_new.index_select(0, block.reshape(-1)).view_as(block))
        return replace(part, schema=schema, **part._weights())

    return Split(reencoded(train), reencoded(valid), reencoded(test), seed, min_count)


def _reencode(schema: Schema, counts: np.ndarray, min_count: int):
    """Map every old row to its new row; kept features first, everything else to the bucket."""
    old_to_new = torch.zeros(schema.num_features, dtype=torch.long)
    fields, offset = [], 0
    for f in schema.fields:
        local = counts[f.offset : f.offset + f.cardinality]
        kept = [i for i in range(1, f.cardinality) if local[i] >= min_count]
        new_local = torch.zeros(f.cardinality, dtype=torch.long)
        new_local[kept] = torch.arange(1, len(kept) + 1)
        old_to_new[f.offset : f.offset + f.cardinality] = offset + new_local
        values = ((f.values[0],) + tuple(f.values[i] for i in kept)) if f.values else ()
        fields.append(Field(f.name, f.role, f.kind, len(kept) + 1, offset, f.slots, values))
        offset += len(kept) + 1
    return old_to_new, Schema(tuple(fields))
