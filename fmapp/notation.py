"""Math in plain text: ``k_i`` → ``kᵢ``, ``B_{1,m}`` → ``B₁,ₘ``, ``2^{j+1}`` → ``2ʲ⁺¹``.

For text that cannot carry LaTeX (select-box options; plotly titles, axes and legends) and for
prose written with ASCII scripts. A script with a character Unicode has no small form for
(``Σ_C``, ``R_fg``) is written with plotly's ``<sub>``/``<sup>`` tags when ``html=True``, as
inline ``$…$`` math when ``markdown=True``, and left as it is otherwise. A word of three letters
or more after ``_`` is a name (``X_true``), not a subscript, unless it is in braces.
"""

from __future__ import annotations

import re

_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx,", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ,"))
_SUP = dict(zip("0123456789+-=()abcdeghijklmnoprstuvwxyzT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᵀ"))
_SCRIPT = re.compile(r"([\w)\]|‖])([_^])(\{([^{}]*)\}|([A-Za-z0-9]+)(?![A-Za-z0-9]))")


def unicode_math(text: str, html: bool = False, markdown: bool = False) -> str:
    """``text`` with its ``_x``, ``_{…}``, ``^x``, ``^{…}`` written as sub- and superscripts."""

    def script(match: re.Match) -> str:
        base, kind = match.group(1), match.group(2)
        braced = match.group(4) is not None
        body = match.group(4) if braced else match.group(5)
        if not braced and len(body) > 2:
            return match.group(0)  # a name such as X_true
        table = _SUB if kind == "_" else _SUP
        if all(c in table for c in body):
            return base + "".join(table[c] for c in body)
        if html:
            tag = "sub" if kind == "_" else "sup"
            return f"{base}<{tag}>{body}</{tag}>"
        if markdown:
            return f"${base}{kind}{{{body}}}$"
        return match.group(0)

    return _SCRIPT.sub(script, text)
