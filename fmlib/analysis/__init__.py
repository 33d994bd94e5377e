"""Analyses of trained models and of the papers' formulas."""
from .gradient_growth import gradient_growth

__all__ = ["gradient_growth"]
