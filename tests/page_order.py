"""AppTest helpers for a page's reading order: its elements flattened top to bottom, and where one sits."""

from __future__ import annotations

from collections.abc import Callable


def in_order(at) -> list:
    """Every element of the page's main area (containers, columns, popovers opened up), top to bottom."""
    out = []

    def walk(node):
        children = getattr(node, "children", None)
        if children is None:
            out.append(node)
            return
        for key in sorted(children):
            walk(children[key])

    walk(at.main)
    return out


def position(at, found: Callable) -> int:
    """The index in ``in_order(at)`` of the first element for which ``found(element)`` holds."""
    for i, element in enumerate(in_order(at)):
        if found(element):
            return i
    raise AssertionError("no such element on the page")


def text(element) -> str:
    """An element's text (markdown, subheader, caption …), or "" for one without."""
    value = getattr(element, "value", None)
    return value if isinstance(value, str) else ""


def starts(prefix: str) -> Callable:
    """A ``position`` test: the element's text starts with ``prefix``."""
    return lambda element: text(element).startswith(prefix)


def of_type(kind: str) -> Callable:
    """A ``position`` test: the element is a ``kind`` (e.g. "plotly_chart", "table")."""
    return lambda element: getattr(element, "type", None) == kind


def block_tables(at, title: str) -> list:
    """The tables drawn after the worked example's title line, up to the next subheader or header."""
    elements = in_order(at)
    start = position(at, starts(f"**{title}"))
    tables = []
    for element in elements[start + 1 :]:
        if getattr(element, "type", None) in ("subheader", "header"):
            break
        if getattr(element, "type", None) == "table":
            tables.append(element.value)
    return tables
