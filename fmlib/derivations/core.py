"""A derivation is data: a title, its source, its assumptions and a list of steps.

Each step is one line of the derivation: the LaTeX the reader sees, the rule that
justifies it in words, where it comes from (paper and equation) and a `Check`, a
function that builds the two sides of the line as sympy objects so that
`fmlib.derivations.checker` can compare them. A step may also carry the line as the
paper printed it (`Printed`) when that differs from the corrected line, and wrong
variants prepared for class (`WrongVariant`), which must fail their check.

Sizes: matrix steps are built from explicit small matrices of symbols; `n` is the size the
builder receives, and such a check is shown as "checked at n = …": evidence at that size, not
a proof for every n. MatrixSymbol expressions are only used for
display, never as ground truth (sympy/sympy#17229: differentiating a 1×1 matrix
expression can silently return 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import sympy as sp

METHODS = ("symbolic", "exact", "numeric")
RELATIONS = ("=", ">=")

Build = Callable[[Any], tuple[Any, Any]]


@dataclass(frozen=True, eq=False)
class Check:
    """How to check one line: `build(n)` returns `(lhs, rhs)`, claimed `lhs = rhs` (or `lhs >= rhs`).

    method   'symbolic' (general symbols, no size: `build(None)`), 'exact' (explicit
             matrices of symbols at size `size`, the difference must simplify to 0) or
             'numeric' (random substitutions, `trials` of them).
    exact_limit  above this size an 'exact' check falls back to 'numeric' (and says so).
    build_limit  above this size the step is not checked at all (and says why).
    ranges   sampling range per symbol name (or per name prefix before '_'); default
             (0.25, 2) for positive symbols and (-1.5, 1.5) otherwise.
    grid     for relation '>=': values per symbol; the check evaluates every grid point.
    """

    build: Build
    method: str = "exact"
    size: int | None = 3
    exact_limit: int = 6
    build_limit: int = 12
    relation: str = "="
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    grid: Mapping[str, Sequence[float]] | None = None
    trials: int = 4

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"check method {self.method!r} is not one of {METHODS}")
        if self.relation not in RELATIONS:
            raise ValueError(f"relation {self.relation!r} is not one of {RELATIONS}")
        if self.method == "symbolic" and self.size is not None:
            raise ValueError("a symbolic check works at general size: give size=None")
        if self.method != "symbolic" and (self.size is None or self.size < 1):
            raise ValueError(f"a {self.method} check needs a size n >= 1")
        if self.relation == ">=" and not self.grid:
            raise ValueError("an inequality check needs a grid of values to evaluate")


@dataclass(frozen=True)
class Printed:
    """The line as the paper printed it, when it differs from the corrected line."""

    latex: str
    check: Check
    note: str


@dataclass(frozen=True)
class WrongVariant:
    """A deliberately wrong line prepared for class; its check must fail."""

    label: str
    latex: str
    check: Check
    explanation: str


@dataclass(frozen=True)
class Step:
    """One line: what is shown (latex), why it holds (justification), where it is from (source)."""

    name: str
    latex: str
    justification: str
    source: str
    check: Check
    printed: Printed | None = None
    wrong: tuple[WrongVariant, ...] = ()

    def __post_init__(self):
        if not self.justification or not self.justification.strip():
            raise ValueError(f"step {self.name!r} has no justification: every line needs the rule that gives it")
        if not self.source or not self.source.strip():
            raise ValueError(f"step {self.name!r} has no source (paper and equation)")
        if not isinstance(self.check, Check):
            raise TypeError(f"step {self.name!r}: check must be a Check, got {type(self.check).__name__}")


@dataclass(frozen=True)
class Derivation:
    """A titled list of steps from one paper; `check()` runs every step's check (cached)."""

    key: str
    title: str
    source: str
    assumptions: tuple[str, ...]
    steps: tuple[Step, ...]

    def __post_init__(self):
        if not self.steps:
            raise ValueError(f"derivation {self.key!r} has no steps")
        for step in self.steps:
            if not isinstance(step, Step):
                raise TypeError(f"derivation {self.key!r}: {step!r} is not a Step")


# ---- explicit small matrices of symbols (the ground truth for matrix steps) ----


def sym_matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    """rows×cols matrix whose (i, j) entry is the symbol name_{i,j} (1-based, as in the papers)."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{{{i + 1},{j + 1}}}", **assumptions))


def sym_vector(name: str, n: int, **assumptions) -> sp.Matrix:
    """n×1 column vector of symbols name_i (1-based)."""
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"{name}_{{{i + 1}}}", **assumptions))


def dot(a: sp.Matrix, b: sp.Matrix) -> sp.Expr:
    """⟨a, b⟩ for two vectors of the same length (rows or columns)."""
    return sum((x * y for x, y in zip(a, b)), sp.Integer(0))


def sqnorm(a: sp.Matrix) -> sp.Expr:
    """‖a‖²."""
    return dot(a, a)
