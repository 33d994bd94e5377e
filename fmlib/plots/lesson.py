"""Figures of a lesson: how the class answered a stop."""

from __future__ import annotations

import plotly.graph_objects as go

from .layout import lines, wrapped

RIGHT, OTHER, HIDDEN = "#2ca02c", "#d62728", "#7f7f7f"
LABEL_WIDTH = 22  # characters a line of a choice's label holds beside its bar
LINE = 28  # px of height a line of the labels takes, room for the projector's 20 px text too


def class_answers_figure(choices, counts: list[int], right=None) -> go.Figure:
    """One horizontal bar per choice, the first on top: how many students picked it. With ``right`` given
    (after the reveal), the right choice is green and the others red; before it, every bar is grey.

    A choice is a sentence: it is wrapped beside its bar, with its count and share on a line of its own under
    it (under vertical bars, a category axis turns long labels sideways and cuts them; a count written after its
    bar runs out of a narrow column at 150 %)."""
    total = sum(counts)
    labels = [
        wrapped(str(c), LABEL_WIDTH) + f"<br><b>{n}" + (f" ({100 * n / total:.0f} %)" if total else "") + "</b>"
        for c, n in zip(choices, counts, strict=True)
    ]
    colours = [HIDDEN if right is None else RIGHT if c == right else OTHER for c in choices]
    fig = go.Figure(go.Bar(x=counts, y=labels, orientation="h", marker_color=colours))
    fig.update_layout(
        title=f"{total} answer{'s' * (total != 1)} so far",  # short: the teacher's column is narrow at 150 %
        xaxis_title="students",
        xaxis_range=[0, max(counts, default=0) + 1],
        height=100 + LINE * sum(map(lines, labels)),
        margin=dict(t=50, b=40, l=10, r=20),
    )
    fig.update_yaxes(type="category", autorange="reversed", automargin=True)
    return fig
