"""The small worked example a page opens with, before its evidence: intuition first.

Not a page. ``block(title, keys)`` opens a bordered box whose first line is the example's title; its
``?`` shows the ``fmlib.glossary`` definitions of the symbols the example uses, so the box needs no
row of its own for them. The numbers inside come from ``fmapp.worked``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from app_pages._view import projector
from fmlib.glossary import lookup

KEY_PREFIX = "intuition_"  # the box's key: tests find it by ``intuition_<page>``


def glossary_help(keys: Sequence[str]) -> str:
    """The definitions of ``keys`` from ``fmlib.glossary``, one paragraph each, for a ``help=`` tooltip."""
    return "\n\n".join(
        f"${term.latex}$ — **{term.name}.** {term.definition} ({term.source})" for term in map(lookup, keys)
    )


def block(page: str, title: str, keys: Sequence[str], container=st):
    """A bordered box keyed ``intuition_<page>``, opened by ``title`` in bold with the symbols' definitions
    on hover; draw the example inside it (``with block(...):``). In projector mode a folded expander
    instead: a class arrives from a lesson stop for the view below it, which must stay above the fold."""
    if projector() and container is st:
        box = st.expander(title, key=f"{KEY_PREFIX}{page}")
        box.caption("The symbols", help=glossary_help(keys))
        return box
    box = container.container(border=True, key=f"{KEY_PREFIX}{page}")
    box.markdown(f"**{title}**", help=glossary_help(keys))
    return box


def vector(values, digits: int = 2) -> str:
    """A vector as LaTeX, e.g. ``(1.2,\\ -0.5)``: for an example's inline formulas."""
    return "(" + r",\ ".join(f"{float(v):.{digits}f}" for v in np.ravel(values)) + ")"


def short(values, digits: int = 2) -> str:
    """A vector as plain text for a table cell, e.g. ``(1.20, −0.50)``."""
    return "(" + ", ".join(f"{float(v):.{digits}f}".replace("-", "−") for v in np.ravel(values)) + ")"
