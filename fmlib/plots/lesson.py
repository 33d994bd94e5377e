"""Figures of a lesson: how the class answered a stop."""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

RIGHT, OTHER, HIDDEN = "#2ca02c", "#d62728", "#7f7f7f"
LABEL_WIDTH = 24  # characters a line of a choice's label holds beside its bar


def class_answers_figure(choices, counts: list[int], right=None) -> go.Figure:
    """One horizontal bar per choice, the first on top: how many students picked it. With ``right`` given
    (after the reveal), the right choice is green and the others red; before it, every bar is grey.
    A choice is a sentence: its label is wrapped beside its bar (under vertical bars, a category axis turns
    long labels sideways and cuts them)."""
    labels = ["<br>".join(textwrap.wrap(str(c), LABEL_WIDTH)) for c in choices]
    colours = [HIDDEN if right is None else RIGHT if c == right else OTHER for c in choices]
    total = sum(counts)
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=labels,
            orientation="h",
            marker_color=colours,
            text=[f"{n} ({100 * n / total:.0f} %)" if total else "0" for n in counts],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_layout(
        title=f"The class's answers ({total} so far)",
        xaxis_title="students",
        xaxis_range=[0, max(counts, default=0) * 1.5 + 1],  # room for the count beside the longest bar
        height=110 + 60 * len(choices),
        margin=dict(t=50, b=40, l=10, r=20),
    )
    fig.update_yaxes(type="category", autorange="reversed", automargin=True)
    return fig
