"""Data: MovieLens sources and encoding, synthetic data, schema, split; ``load(name)``, every data set by name."""

from . import movielens, synthetic
from .dataset import Dataset, Split, split
from .registry import DATASETS, load
from .schema import Field, Schema

__all__ = ["movielens", "synthetic", "Dataset", "Split", "split", "Field", "Schema", "DATASETS", "load"]
