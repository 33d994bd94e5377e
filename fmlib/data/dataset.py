"""Encoded samples and the seeded train/valid/test split.

A ``Dataset`` holds, for N samples, ``index`` (N, S) rows of the shared embedding table and
``weight`` (N, S) the value of each slot (1 for single-valued fields, 1/len for each value of
a multi-valued field, 0 for padding), plus the target. ``split`` re-encodes the fields from
train counts: features seen fewer than ``min_count`` times in train, and features never
seen there, fall into their field's rare bucket (local index 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from .schema import Field, Schema

TASKS = ("rating", "click")


@dataclass
class Dataset:
    schema: Schema
    index: torch.Tensor  # (N, S) int64 rows of the shared embedding table
    weight: torch.Tensor  # (N, S) float32 slot weights
    rating: torch.Tensor  # (N,) float32 target of the rating task
    name: str = "synthetic"
    source: str = "generated"
    frame: pd.DataFrame | None = None  # raw columns per sample (user_id, movie_id, timestamp, ...)
    movies: pd.DataFrame | None = None  # movie_id, title, year, genres (MovieLens only)
    rating_range: tuple[float, float] | None = None  # predictions are clipped to it
    click_threshold: float = 4.0  # click task: rating >= threshold

    def __len__(self) -> int:
        return self.index.shape[0]

    def target(self, task: str) -> torch.Tensor:
        """Rating (regression) or click = rating >= threshold (binary)."""
        if task == "rating":
            return self.rating
        if task == "click":
            return (self.rating >= self.click_threshold).float()
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")

    def subset(self, rows) -> "Dataset":
        rows = torch.as_tensor(rows, dtype=torch.long)
        frame = None if self.frame is None else self.frame.iloc[rows.numpy()].reset_index(drop=True)
        index, weight, rating = (t.index_select(0, rows) for t in (self.index, self.weight, self.rating))
        return replace(self, index=index, weight=weight, rating=rating, frame=frame)

    def feature_counts(self) -> np.ndarray:
        """Occurrences of every feature row (multi-valued values count once each)."""
        present = (self.weight > 0).reshape(-1).double()  # padding slots (weight 0) do not count
        counts = torch.bincount(self.index.reshape(-1), weights=present, minlength=self.schema.num_features)
        return counts.long().numpy()


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

    def reencoded(part: Dataset) -> Dataset:
        return replace(
            part, schema=schema, index=old_to_new.index_select(0, part.index.reshape(-1)).view_as(part.index)
        )

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
