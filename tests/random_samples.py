"""Random samples for the model tests: a small schema with a multi-valued field, and rows drawn from it.

Every field's rows are drawn uniformly; a multi-valued field holds 1..slots values, each at weight 1/len
(its slots beyond the length keep a row at weight 0)."""

from __future__ import annotations

import torch

from fmlib.data import Dataset
from fmlib.data.schema import Schema

SCHEMA = Schema.build(
    [
        ("a", "context", "single", 5, 1),
        ("b", "context", "single", 4, 1),
        ("c", "item", "single", 6, 1),
        ("g", "item", "multi", 7, 3),  # a multi-valued field: e_g is the weighted sum of its values' embeddings
    ]
)


def _draw(schema: Schema, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    cols, weights = [], []
    for f in schema.fields:
        cols.append(f.offset + torch.randint(0, f.cardinality, (n, f.slots), generator=gen))
        lengths = torch.randint(1, f.slots + 1, (n, 1), generator=gen)
        weights.append((torch.arange(f.slots) < lengths).float() / lengths)
    return torch.cat(cols, 1), torch.cat(weights, 1)


def random_batch(schema: Schema = SCHEMA, n: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(index, weight) of ``n`` random samples of ``schema``."""
    return _draw(schema, n, torch.Generator().manual_seed(seed))


def random_dataset(n: int, seed: int = 0, schema: Schema = SCHEMA) -> Dataset:
    """``n`` random samples of ``schema`` with ratings uniform in [1, 5)."""
    gen = torch.Generator().manual_seed(seed)
    index, weight = _draw(schema, n, gen)
    return Dataset(schema, index, weight, 1 + 4 * torch.rand(n, generator=gen))
