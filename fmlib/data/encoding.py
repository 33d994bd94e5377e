"""MovieLens ratings encoded field by field on integer codes, and the encoded cache.

Fields (those the frames hold; 10M and later have no demographics): context = user_id, age
(bucketed), gender, occupation, zip prefix, rating-time year, month, weekday, hour (UTC); item =
movie_id, release year, genres (multi-valued, embeddings averaged: DPLR paper §3.2). Every
distinct value that occurs in the ratings gets a row of the shared table, in natural order
(numbers numerically, then words), after its field's rare bucket (local index 0).

Each field is read as a small integer key per rating (a user's or movie's row, an hour, ...)
whose labels are few: values are ordered by label once, and the index is written block by block
of rows, so no string is made per rating. Storage is lean: the index is int32 while the table
fits, and the weights are not stored: single-valued slots weigh 1, and a multi-valued field
stores the number of values of each rating (uint8), its slots weighing 1/count (``Dataset``
builds weights on demand). The encoded cache is one ``.npz`` written array by array in chunks
into a temporary file and renamed into place; arrays are read back into place (no second copy).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch

from .grouplens import Frames
from .schema import Schema

FIELDS = [  # (name, role, kind)
    ("user_id", "context", "single"),
    ("age", "context", "single"),
    ("gender", "context", "single"),
    ("occupation", "context", "single"),
    ("zip", "context", "single"),
    ("time_year", "context", "single"),
    ("time_month", "context", "single"),
    ("time_weekday", "context", "single"),
    ("time_hour", "context", "single"),
    ("movie_id", "item", "single"),
    ("release_year", "item", "single"),
    ("genres", "item", "multi"),
]
DEMOGRAPHICS = ("age", "gender", "occupation", "zip")
AGE_BUCKETS = [18, 25, 35, 45, 50, 56]  # MovieLens 1M's age groups: <18, 18-24, ..., 56+
AGE_LABELS = ["<18", "18-24", "25-34", "35-44", "45-49", "50-55", "56+"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
BLOCK = 1 << 20  # ratings per block: bounds the temporaries of a 25M-rating encoding
INDEX_DTYPES = (torch.int32, torch.int64)  # the first whose range holds every table row


@dataclass
class Encoded:
    schema: Schema
    index: torch.Tensor  # (N, S) table rows, int32 while the table fits
    counts: torch.Tensor  # (N, number of multi-valued fields) uint8: values of each rating in each


def natural(v: str):
    """Sort numbers numerically, then words: hours 0..23, years in order, 'unknown' last."""
    return (0, float(v), "") if v.isdigit() or re.fullmatch(r"-?\d+(\.\d+)?", v) else (1, 0.0, v)


class _Block:
    """Ratings ``rows`` (a slice) with what fields read from them, each computed once."""

    def __init__(self, ids: dict, rows: slice):
        self.ids, self.rows = ids, rows

    def row_of(self, entity: str) -> np.ndarray:
        """The row of each rating's user or movie in its frame (a hash lookup of the id)."""
        return self.ids[entity].get_indexer(self.ids[f"rated_{entity}"][self.rows])

    @cached_property
    def user(self) -> np.ndarray:
        return self.row_of("user")

    @cached_property
    def movie(self) -> np.ndarray:
        return self.row_of("movie")

    @cached_property
    def seconds(self) -> np.ndarray:
        return self.ids["timestamp"][self.rows]

    @cached_property
    def month(self) -> np.ndarray:
        """Months since January 1970 (UTC)."""
        return self.seconds.astype("datetime64[s]").astype("datetime64[M]").astype(np.int64)


@dataclass
class _Field:
    name: str
    role: str
    kind: str
    labels: list[str]  # the label of every key
    keys: Callable[[_Block], np.ndarray]  # block -> (B,) keys, or (B, width) for a multi field (-1: none)


def _factorized(values) -> tuple[list[str], np.ndarray]:
    """Distinct labels (first seen first) and each value's key."""
    labels, keys = {}, []
    for v in values:
        keys.append(labels.setdefault(v, len(labels)))
    return list(labels), np.asarray(keys, dtype=np.int32)


def _fields(frames: Frames, timestamps: np.ndarray) -> list[_Field]:
    """Every field the frames hold, as labels and a key per rating."""
    users, movies = frames.users, frames.movies
    by_user: dict[str, tuple[list[str], np.ndarray]] = {"user_id": _factorized(users["user_id"].astype(str))}
    if "age" in users:
        by_user["age"] = (AGE_LABELS, np.digitize(users["age"].to_numpy(), AGE_BUCKETS).astype(np.int32))
        by_user["gender"] = _factorized(users["gender"])
        by_user["occupation"] = _factorized(users["occupation"].astype(str))
        by_user["zip"] = _factorized(users["zip"].str[:1])
    years = movies["year"].map(lambda y: "unknown" if np.isnan(y) else str(int(y)))
    genre_lists = [g.split("|") for g in movies["genres"]]
    genre_labels, flat = _factorized(g for gs in genre_lists for g in gs)
    width = max(map(len, genre_lists), default=1)
    by_movie_genres = np.full((len(movies), width), -1, dtype=np.int32)
    by_movie_genres[np.repeat(np.arange(len(movies)), [len(g) for g in genre_lists]), _positions(genre_lists)] = flat
    by_movie = {"movie_id": _factorized(movies["movie_id"].astype(str)), "release_year": _factorized(years)}
    first = int(np.datetime64(int(timestamps.min()), "s").astype("datetime64[Y]").astype(int)) if len(timestamps) else 0
    last = int(np.datetime64(int(timestamps.max()), "s").astype("datetime64[Y]").astype(int)) if len(timestamps) else 0
    clock = {
        "time_year": ([str(1970 + y) for y in range(first, last + 1)], lambda b: b.month // 12 - first),
        "time_month": ([str(m) for m in range(1, 13)], lambda b: b.month % 12),
        "time_weekday": (WEEKDAYS, lambda b: (b.seconds // 86400 + 3) % 7),  # 1 Jan 1970 was a Thursday
        "time_hour": ([str(h) for h in range(24)], lambda b: b.seconds % 86400 // 3600),
    }
    out = []
    for name, role, kind in FIELDS:
        if name in by_user:
            labels, keys = by_user[name]
            out.append(_Field(name, role, kind, labels, lambda b, k=keys: k[b.user]))
        elif name in clock:
            labels, read = clock[name]
            out.append(_Field(name, role, kind, labels, read))
        elif name in by_movie:
            labels, keys = by_movie[name]
            out.append(_Field(name, role, kind, labels, lambda b, k=keys: k[b.movie]))
        elif name == "genres":
            out.append(_Field(name, role, kind, genre_labels, lambda b: by_movie_genres[b.movie]))
    return out


def _positions(lists) -> np.ndarray:
    return np.fromiter((i for items in lists for i in range(len(items))), dtype=np.int64)


def _blocks(ids: dict, n: int):
    for start in range(0, n, BLOCK):
        yield _Block(ids, slice(start, min(start + BLOCK, n)))


def encode(frames: Frames) -> Encoded:
    """The schema and index of every rating, and the value counts of its multi-valued fields."""
    r = frames.ratings
    ids = {"timestamp": r["timestamp"].to_numpy()}
    for entity, table, column in (("user", frames.users, "user_id"), ("movie", frames.movies, "movie_id")):
        ids[entity] = pd.Index(table[column])
        ids[f"rated_{entity}"] = r[column].to_numpy()
    fields = _fields(frames, ids["timestamp"])
    seen, slots = _occurring(fields, ids, len(r))
    vocabs = [sorted(np.flatnonzero(s), key=lambda k, f=f: natural(f.labels[k])) for f, s in zip(fields, seen)]
    schema = Schema.build(
        [(f.name, f.role, f.kind, len(vocab) + 1, width) for f, vocab, width in zip(fields, vocabs, slots)],
        [["<rare>", *(f.labels[k] for k in vocab)] for f, vocab in zip(fields, vocabs)],
    )
    dtype = next(t for t in INDEX_DTYPES if schema.num_features <= torch.iinfo(t).max)
    index = torch.empty((len(r), schema.num_slots), dtype=dtype)
    tables = []  # key -> table row; key -1 (no value) reads the last entry: the field's rare bucket
    for f, field, vocab in zip(fields, schema.fields, vocabs):
        table = np.full(len(f.labels) + 1, field.offset, dtype=index.numpy().dtype)
        table[vocab] = field.offset + 1 + np.arange(len(vocab))
        tables.append(table)
    multi = [j for j, f in enumerate(fields) if f.kind == "multi"]
    counts = torch.empty((len(r), len(multi)), dtype=torch.uint8)
    out, cnt, columns = index.numpy(), counts.numpy(), np.cumsum([0, *slots])
    for block in _blocks(ids, len(r)):  # the index, block by block
        for j, f in enumerate(fields):
            keys = f.keys(block)
            if f.kind == "multi":
                keys = keys[:, : slots[j]]
                cnt[block.rows, multi.index(j)] = (keys >= 0).sum(1)
            out[block.rows, columns[j] : columns[j + 1]] = tables[j][keys].reshape(len(keys), -1)
    return Encoded(schema, index, counts)


def _occurring(fields: list[_Field], ids: dict, n: int) -> tuple[list[np.ndarray], list[int]]:
    """Which keys of every field occur in the ratings, and the slots each field takes (a
    multi-valued field: the most values a rating has)."""
    seen = [np.zeros(len(f.labels), dtype=bool) for f in fields]
    slots = [1] * len(fields)
    for block in _blocks(ids, n):
        for j, f in enumerate(fields):
            keys = f.keys(block)
            if f.kind == "multi":
                seen[j][keys[keys >= 0]] = True
                slots[j] = max(slots[j], int((keys >= 0).sum(1).max(initial=1)))
            else:
                seen[j][keys] = True
    return seen, slots


def save(path: Path, encoded: Encoded) -> None:
    """Write the encoded arrays into a temporary file beside ``path`` (numpy writes each array in
    chunks), then rename it into place: a crash leaves no half-written cache."""
    fd, tmp = tempfile.mkstemp(prefix=".encoded-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(
                out,
                schema=np.array(json.dumps(encoded.schema.to_dict())),
                index=encoded.index.numpy(),
                counts=encoded.counts.numpy(),
            )
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def load(path: Path) -> Encoded:
    """The arrays ``save`` wrote, each read straight into its own array."""
    with np.load(path, allow_pickle=False) as z:
        schema = Schema.from_dict(json.loads(str(z["schema"])))
        return Encoded(schema, torch.from_numpy(z["index"]), torch.from_numpy(z["counts"]))
