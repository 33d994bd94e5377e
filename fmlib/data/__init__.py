"""Data: MovieLens sources and encoding, synthetic data, schema, split."""

from . import movielens, synthetic
from .dataset import Dataset, Split, split
from .schema import Field, Schema

__all__ = ["movielens", "synthetic", "Dataset", "Split", "split", "Field", "Schema"]
