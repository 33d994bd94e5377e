"""Attention inversion: recover the input of an attention layer from its weights and output.

``attack``: the single softmax-attention layer of the paper (Def. 3.1) and its inversion.
``lemmas``: the paper's gradient lemmas (App. A) assembled by hand, printed vs corrected.
``movielens``: the §5 experiment on our data — a tiny causal transformer over movie sequences.
"""

from .attack import (
    HESSIAN_MAX_DIM,
    METHODS,
    Instance,
    Inversion,
    attention_output,
    gamma_bound,
    gradient,
    hessian,
    invert,
    loss,
    planted_instance,
)

__all__ = [
    "HESSIAN_MAX_DIM",
    "METHODS",
    "Instance",
    "Inversion",
    "attention_output",
    "gamma_bound",
    "gradient",
    "hessian",
    "invert",
    "loss",
    "planted_instance",
]
