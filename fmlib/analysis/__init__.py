"""Analyses of trained models and of the papers' formulas."""

from .frequency import occurrence_histogram, rank_table
from .gradient_growth import gradient_growth
from .interactions import dplr_posthoc, interaction_matrix, prune, spectrum

__all__ = [
    "gradient_growth",
    "interaction_matrix",
    "prune",
    "dplr_posthoc",
    "spectrum",
    "occurrence_histogram",
    "rank_table",
]
