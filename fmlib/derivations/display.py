"""A checked line as a reader wants to see it: sides factored and typeset, and the check summed up in a few lines.

`summary(result)` says what a check claimed, what sympy compared and what came out, from the check's own data
(`checker.CheckResult`): short sides are typeset with sympy.latex, longer ones are only described by their shape
and number of symbols, never printed as a raw expansion. Every LaTeX string it makes comes from sympy.latex or from
plain words in ``\\text{…}``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

import sympy as sp

if TYPE_CHECKING:
    from .checker import CheckResult, Side

MAX_NODES = 400  # factoring a bigger expression takes seconds; such a side is shown as printed


class Line(NamedTuple):
    """One line of a summary: ``kind`` is "markdown" (prose) or "latex" (a formula to typeset)."""

    kind: str
    text: str


def factored_latex(expr) -> str:
    """LaTeX of the factored form of a sympy expression (a matrix entry by entry); one too large to factor
    quickly, or one sympy cannot factor (a matrix expression of general size), is typeset as it stands."""
    small = sum(1 for _ in sp.preorder_traversal(expr)) <= MAX_NODES
    if small and isinstance(expr, sp.MatrixBase):
        expr = expr.applyfunc(sp.factor)
    elif small and isinstance(expr, sp.Expr) and not isinstance(expr, sp.MatrixExpr):
        expr = sp.factor(expr)
    return sp.latex(expr)


def readable_latex(side: str) -> str:
    """LaTeX of the factored form of ``side`` (a side as the checker prints it, e.g. ``"a**2 + 2*a*b + b**2"``
    → ``\\left(a + b\\right)^{2}``). A side that cannot be parsed back is typeset as plain words."""
    try:
        expr = sp.sympify(side)
    except (sp.SympifyError, SyntaxError, TypeError, ValueError):
        return r"\text{" + "".join(c for c in side if c.isalnum() or c in " ×.,()") + "}"
    return factored_latex(expr)


def summary(result: CheckResult) -> list[Line]:
    """What the check of one line claimed, in which symbols, what was compared and the result, in at most six
    lines."""
    return claim(result) + symbols(result) + [Line("markdown", f"**Compared.** {compared(result)}")] + outcome(result)


def symbols(result: CheckResult) -> list[Line]:
    """The symbols the two sides are written in, family by family, when a side is too long to typeset (a typeset
    side shows its own); none for a line that could not be built or has none."""
    if result.left is None or (result.left.latex and result.right.latex):
        return []
    names = sorted(set(result.left.names) | set(result.right.names))
    if not names:
        return []
    return [Line("markdown", f"**Symbols.** the {_count(len(names), 'symbol')} ${symbol_families(names)}$.")]


def symbol_families(names) -> str:
    """LaTeX of symbol names grouped by family (the name before its first subscript), each family in index order:
    ``w_{1,1}, \\dots, w_{3,4}\\ (12)`` for a family of more than two, its members for one or two."""
    families: dict[str, list[str]] = {}
    for name in sorted(names, key=_natural):
        families.setdefault(name.split("_")[0], []).append(_symbol_latex(name))
    shown = [
        ", ".join(members) if len(members) <= 2 else rf"{members[0]}, \dots, {members[-1]}\ ({len(members)})"
        for members in families.values()
    ]
    return r";\ ".join(shown)


def _symbol_latex(name: str) -> str:
    """A symbol's name as LaTeX: ``v^{(1)}_{2}_{1}`` → ``v^{(1)}_{2,1}`` (one subscript), ``delta`` → ``\\delta``,
    a word in upright letters."""
    base, *subscripts = name.split("_")
    latex = sp.latex(sp.Symbol(base))
    if latex.isalpha() and len(latex) > 1:
        latex = rf"\mathrm{{{latex}}}"
    return latex + (f"_{{{','.join(s.strip('{}') for s in subscripts)}}}" if subscripts else "")


def _natural(name: str) -> list:
    """A sort key that puts ``x_{2}`` before ``x_{10}``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def claim(result: CheckResult) -> list[Line]:
    """The claim, left = right (or left ≥ right), with each side typeset when short and described otherwise."""
    if result.left is None:
        return [Line("markdown", "**Claim.** the line could not be built, so there is nothing to compare.")]
    sides = (
        rf"\begin{{aligned}} \text{{left}} &= {_shown(result.left)} \\ "
        rf"\text{{right}} &= {_shown(result.right)} \end{{aligned}}"
    )
    return [Line("markdown", f"**Claim.** left {'≥' if result.grid else '='} right, where"), Line("latex", sides)]


def compared(result: CheckResult) -> str:
    """What sympy compared, in one sentence."""
    symbols = _count(result.symbols, "symbol")
    if result.method == "none":
        return "nothing: the line was not checked."
    if result.shape_mismatch:
        return "the shapes of the two sides."
    if result.method == "symbolic" and result.left is not None and _general(result.left):
        return "left − right, simplified as matrix expressions of general size."
    if result.method == "symbolic":
        return f"left − right, simplified by sympy for general values of its {symbols}."
    if result.method == "exact" and result.left is not None and _general(result.left):
        return f"left − right did not simplify at general size, so it was written out at size {result.size}."
    if result.method == "exact" and not result.symbols:
        return f"{_difference(result)} computed exactly at n = {result.size}, where no symbols are left."
    if result.method == "exact":
        how = "expanded as a polynomial" if result.polynomial else "expanded and cancelled exactly"
        return f"{_difference(result)} {how} in {symbols}, at n = {result.size} only."
    if result.grid:
        return f"the slack left − right, evaluated at each of {result.trials} grid points."
    because = f" ({result.note})" if result.note else ""
    points = _count(result.trials, "random point")
    where = "" if result.size is None else f" at n = {result.size}"
    return f"both sides{where} evaluated at {points} for their {symbols}, to 30 digits{because}."


def outcome(result: CheckResult, label: str = "Result") -> list[Line]:
    """The result: the difference (or largest gap, or smallest slack), and whether that makes the line hold;
    its first line starts with ``label`` in bold."""
    lines = _outcome(result)
    return [Line(lines[0].kind, f"**{label}.** {lines[0].text}"), *lines[1:]]


def _outcome(result: CheckResult) -> list[Line]:
    if result.status == "not-checked":
        return [Line("markdown", "not checked: neither passed nor failed.")]
    if result.shape_mismatch:
        return [Line("markdown", "not equal: the two sides do not even have the same shape.")]
    if result.grid and result.least_slack is None:
        return [Line("markdown", "not defined: the line is undefined at every grid point.")]
    if result.grid:
        verdict = "holds" if result.status == "passed" else "violated"
        return [Line("markdown", f"{verdict}: the smallest slack is {result.least_slack:.3g}.")]
    if result.method == "numeric":
        verdict = "equal" if result.status == "passed" else "not equal"
        return [Line("markdown", f"{verdict}: largest relative gap {result.max_error:.1e}.")]
    if result.status == "passed" and result.method == "exact" and not _general(result.left):
        count = int(result.left.rows) * int(result.left.cols)
        if count > 1:
            return [Line("markdown", f"all {count} entries of the difference are 0: the two sides are equal.")]
    if result.status == "passed":
        return [Line("markdown", "difference 0: the two sides are equal.")]
    entry = "the difference is" if result.left.rows == result.left.cols == "1" else "one entry of the difference is"
    if result.gap.latex:
        return [Line("markdown", f"not equal: {entry} not 0, as typeset below."), Line("latex", result.gap.latex)]
    terms = _count(result.gap_terms, "term")
    return [Line("markdown", f"not equal: {entry} nonzero, {terms} in {_count(result.gap.symbols, 'symbol')}.")]


def _shown(side: Side) -> str:
    """A side typeset if short, else its shape and number of symbols in words."""
    if side.latex:
        return side.latex
    content = f"in {_count(side.symbols, 'symbol')}" if side.symbols else "of numbers"
    if side.rows == side.cols == "1":
        return rf"\text{{an expression {content}}}"
    if side.entry:
        return rf"\text{{a }} {side.rows} \times {side.cols} \text{{ matrix, entry (1,1): }} {side.entry}"
    return rf"\text{{a }} {side.rows} \times {side.cols} \text{{ matrix {content}}}"


def _general(side: Side) -> bool:
    """Whether a side has a general (symbolic) size rather than numbers of rows and columns."""
    return not (side.rows.isdigit() and side.cols.isdigit())


def _difference(result: CheckResult) -> str:
    """``left − right``, or ``each of the 6 entries of left − right`` for a matrix line."""
    count = int(result.left.rows) * int(result.left.cols)
    return "left − right" if count == 1 else f"each of the {count} entries of left − right"


def _count(n: int, noun: str) -> str:
    """``3 symbols``, ``1 symbol``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
