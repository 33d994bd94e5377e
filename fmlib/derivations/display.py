"""A side of a checked line, as a reader wants to see it: factored and typeset, not a raw expanded polynomial."""

from __future__ import annotations

import sympy as sp

MAX_NODES = 400  # factoring a bigger expression takes seconds; such a side is shown as printed


def readable_latex(side: str) -> str:
    """LaTeX of the factored form of ``side`` (a side as the checker prints it, e.g. ``"a**2 + 2*a*b + b**2"``
    → ``\\left(a + b\\right)^{2}``); a matrix is factored entry by entry. A side that cannot be parsed
    back, or is too large to factor quickly, is typeset as text."""
    try:
        expr = sp.sympify(side)
    except (sp.SympifyError, SyntaxError, TypeError, ValueError):
        return r"\text{" + side.replace("\\", "") + "}"
    if sum(1 for _ in sp.preorder_traversal(expr)) <= MAX_NODES:
        expr = expr.applyfunc(sp.factor) if isinstance(expr, sp.MatrixBase) else sp.factor(expr)
    return sp.latex(expr)
