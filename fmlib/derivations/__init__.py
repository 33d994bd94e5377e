"""Derivations you can step through, each line checked by sympy.

    from fmlib.derivations import catalog, check_derivations
    for r in check_derivations(catalog()):   # one StepResult per step: status, method, detail
        print(r.derivation, r.index, r.status)

A derivation is data (`core.Derivation`: title, source, assumptions, steps); the
generic checker is `checker.py`; one module per paper holds its derivations.
"""

from __future__ import annotations

from functools import cache

from . import attention, dplr, fm_gradient, rafm, rfm
from .checker import CheckResult, StepResult, check_derivations, check_step, run_check
from .core import Check, Derivation, Printed, Step, WrongVariant

__all__ = [
    "catalog",
    "get",
    "Derivation",
    "Step",
    "Check",
    "Printed",
    "WrongVariant",
    "CheckResult",
    "StepResult",
    "check_derivations",
    "check_step",
    "run_check",
]


@cache
def _catalog() -> tuple[Derivation, ...]:
    return (
        dplr.rendle(),
        fm_gradient.derivation(),
        dplr.identity1(),
        dplr.proposition1(),
        dplr.r_fm(),
        rafm.efficient_evaluation(),
        rafm.quasi_triangle(),
        rfm.euler(),
        rfm.gradient_part1(),
        attention.definitions(),
        attention.gradients(),
        attention.hessian_bound(),
    )


def catalog() -> list[Derivation]:
    """Every derivation, in teaching order (built once; check results are cached per step)."""
    return list(_catalog())


def get(key: str) -> Derivation:
    """The derivation with this key; KeyError names the allowed keys."""
    for d in _catalog():
        if d.key == key:
            return d
    raise KeyError(f"unknown derivation {key!r}; choose one of: {', '.join(d.key for d in _catalog())}")
