"""Feature sets chosen by name: an FM mimics the classic recommenders through its input alone.

``user_id,movie_id`` is matrix factorization; adding ``rated`` — the movies the rating's user
rated in the training split, each weighted 1/√|N(u)| — is SVD++ ([Koren2008] eq. 15, written as an
FM's input in [Rendle2012] §III and [Rendle2013]); ``raters``, the users who rated the rating's
movie there (likewise weighted), is the same block flipped. ``all`` is every field the dataset
has (12 for ml-100k). The two sets are *relation blocks* ([Rendle2013]): shared by every rating of
one user (movie), stored once per user (movie) and computed once per user in a batch by the
models (``models.base``), not copied into every rating.

The blocks are built from the training split only: a validation or test rating reads its user's
training set (which never holds the rating itself), so nothing leaks from the rows scored.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from scipy import sparse

from .dataset import Dataset, Split
from .schema import Field, Schema

BLOCKS = {  # name -> (the field whose value picks the set, the field whose values fill it)
    "rated": ("user_id", "movie_id"),
    "raters": ("movie_id", "user_id"),
}


def parse_features(text: str, schema: Schema) -> list[str]:
    """The field names of ``text`` ("all,rated", "user_id,movie_id"), ``all`` expanded to every
    field of ``schema``, in the order given. A name the dataset cannot build, or one named twice,
    raises ``ValueError`` with one line naming what exists."""
    names = []
    for name in (part.strip() for part in text.split(",")):
        expanded = schema.names if name == "all" else [name]
        for n in expanded:
            if n in names:
                raise ValueError(f"feature {n!r} is named twice in {text!r}")
            if n not in schema.names and n not in BLOCKS:
                choices = ", ".join(["all", *schema.names, *BLOCKS])
                raise ValueError(f"unknown feature {n!r}; this dataset has: {choices}")
            if n in BLOCKS and not all(f in schema.names for f in BLOCKS[n]):
                raise ValueError(f"feature {n!r} needs the fields {' and '.join(BLOCKS[n])}")
            names.append(n)
    if not names or not any(n in schema.names for n in names):
        raise ValueError(f"a feature set needs at least one field of {', '.join(schema.names)}; got {text!r}")
    for n in names:
        if n in BLOCKS and BLOCKS[n][0] not in names:
            raise ValueError(f"feature {n!r} is the set of each {BLOCKS[n][0]}: add {BLOCKS[n][0]} to the feature set")
    return names


def with_features(data: Split, text: str) -> Split:
    """``data`` with the fields of the feature set ``text`` (``parse_features``), in that order,
    the relation blocks built from ``data.train``."""
    names = parse_features(text, data.schema)
    if names == data.schema.names:
        return data
    old = data.schema
    specs, offset = [], 0
    for name in names:
        if name in BLOCKS:
            key, source = (old.field(n) for n in BLOCKS[name])
            starts, members = _block(data.train, key, source)
            f = Field(name, key.role, "block", source.cardinality, offset, 1, source.values, key.name, starts, members)
        else:
            f = replace(old.field(name), offset=offset)
        specs.append(f)
        offset += f.cardinality
    schema = Schema(tuple(specs))
    return Split(
        *(_select(part, old, schema) for part in (data.train, data.valid, data.test)), data.seed, data.min_count
    )


def _block(train: Dataset, key: Field, source: Field) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """CSR of the sets: for every local index of ``key``, the distinct local indices of
    ``source`` that occur with it in ``train`` (sorted). The key's rare bucket gets no set."""
    column = {f.name: s for s, f in zip(first_slots(train.schema), train.schema.fields)}
    keys = train.index[:, column[key.name]].long().numpy() - key.offset
    values = train.index[:, column[source.name]].long().numpy() - source.offset
    pairs = np.unique(keys * source.cardinality + values)
    pairs = pairs[(pairs // source.cardinality > 0) & (pairs % source.cardinality > 0)]
    starts = np.searchsorted(pairs // source.cardinality, np.arange(key.cardinality + 1))
    return tuple(starts.tolist()), tuple((pairs % source.cardinality).tolist())


def first_slots(schema: Schema) -> list[int]:
    """The column of every field's first slot in ``Dataset.index``."""
    return np.cumsum([0] + [f.slots for f in schema.fields])[:-1].tolist()


def set_matrix(field: Field) -> sparse.csr_matrix:
    """A block field's sets as a matrix (keys × values, CSR, float64): row j holds 1/√|set| at the
    members of local key j's set ([Koren2008] eq. 15's |N(u)|^{-1/2})."""
    from scipy import sparse  # imported here: training without blocks never needs scipy

    starts, members = np.asarray(field.starts), np.asarray(field.members)
    sizes = np.diff(starts)
    x = np.repeat(1 / np.sqrt(np.maximum(sizes, 1)), sizes)
    return sparse.csr_matrix((x, members, starts), shape=(len(sizes), field.cardinality))


def _select(part: Dataset, old: Schema, new: Schema) -> Dataset:
    """``part`` laid out in ``new``: each kept field's slots moved to its new rows, each block a
    slot holding its rare bucket's row (weight 1; the models look the set up by the key)."""
    first = dict(zip(old.names, first_slots(old)))
    columns, weights, counts = [], [], []
    multi = [f.name for f in old.fields if f.kind == "multi"]
    for f in new.fields:
        if f.kind == "block":
            columns.append(torch.full((len(part), 1), f.offset, dtype=part.index.dtype))
            weights.append(torch.ones(len(part), 1))
            continue
        was = old.field(f.name)
        slots = slice(first[f.name], first[f.name] + f.slots)
        columns.append(part.index[:, slots] - was.offset + f.offset)
        if part.counts is None:
            weights.append(part.weight[:, slots])
        elif f.kind == "multi":
            counts.append(part.counts[:, multi.index(f.name)])
    index = torch.cat(columns, 1)
    if part.counts is None:
        return replace(part, schema=new, index=index, weight=torch.cat(weights, 1))
    lean = torch.stack(counts, 1) if counts else torch.zeros(len(part), 0, dtype=torch.uint8)
    return replace(part, schema=new, index=index, weight=None, counts=lean)
