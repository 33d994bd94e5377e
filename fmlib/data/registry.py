"""Every data set by name, with its recipe: ``load(name)``, the one place a name becomes data.

MovieLens sizes (``movielens.SPECS``) come from their files (``movielens.load``: a directory you
point to, the cache, the GroupLens archive). The synthetic sets are drawn from a recipe (``RECIPES``):

* ``synthetic`` — the app's set: 8 fields in three blocks (``synthetic.demo_R``), 4,000 ratings, 20
  values a field, seed 0; small enough to train in seconds, with an R an FwFM can recover.
* ``synthetic-16`` — the DPLR reproduction's set: 16 fields in two blocks (``synthetic.block_R(16, 2)``),
  20,000 ratings, 20 values a field, embeddings of 4, seed 0.
* ``planted-ranks`` — two fields with Zipf popularity and a planted frequency-dependent rank
  (``synthetic.planted_ranks``, its defaults); ``seed`` draws a new sample of it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from . import movielens, synthetic
from .dataset import Dataset


class Recipe(NamedTuple):
    """A synthetic data set: what it is, in words, and how it is drawn (``draw(seed)``)."""

    description: str
    draw: object


RECIPES = {
    "synthetic": Recipe(
        "8 fields in three blocks of planted R, 4,000 ratings",
        lambda seed: synthetic.make(synthetic.demo_R(), n_samples=4000, cardinality=20, seed=seed),
    ),
    "synthetic-16": Recipe(
        "16 fields in two blocks of planted R, 20,000 ratings",
        lambda seed: synthetic.make(synthetic.block_R(16, 2), n_samples=20_000, cardinality=20, dim=4, seed=seed),
    ),
    synthetic.PLANTED_RANKS: Recipe(
        "two Zipf-popular fields with a planted frequency-dependent rank",
        lambda seed: synthetic.planted_ranks(seed=seed),
    ),
}
DATASETS = [*movielens.SPECS, *RECIPES]


def load(name: str, *, seed: int = 0, data_dir=None, log=None) -> Dataset:
    """The data set ``name`` (one of ``DATASETS``), every rating, not yet split.

    MovieLens: ``data_dir`` (the original GroupLens files), else the cache, else a download; ``log``
    hears which source served. Synthetic: the recipe drawn with ``seed`` (0: the set the app and the
    experiments use); its ``name`` is the registry's."""
    if name in movielens.SPECS:
        if seed != 0:
            raise ValueError(f"{name} is MovieLens, one fixed set: it has no seed (got {seed})")
        return movielens.load(name, data_dir=data_dir, log=log)
    if name not in RECIPES:
        raise ValueError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
    return replace(RECIPES[name].draw(seed), name=name)
