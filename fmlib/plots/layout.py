"""Layout pieces the figure builders share, so that a chart's texts fit at 150 % zoom and in projector mode."""

from __future__ import annotations

import textwrap

# The legend in rows under the axis title. Plotly's container reference lets automargin make room for both; a
# legend placed by a negative paper y lies on the axis title as soon as the text grows (plotly.js issue 1199).
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom")


def wrapped(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` characters joined by ``<br>``, never broken at a hyphen: a label
    or title on one line is wider than its chart at 150 %."""
    return "<br>".join(textwrap.wrap(text, width, break_on_hyphens=False))


def lines(label: str) -> int:
    """How many lines a label with ``<br>`` breaks takes: figures grow their height by a line for each."""
    return label.count("<br>") + 1
