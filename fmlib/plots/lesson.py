"""Figures of a lesson: how the class answered a stop."""

from __future__ import annotations

import plotly.graph_objects as go

RIGHT, OTHER, HIDDEN = "#2ca02c", "#d62728", "#7f7f7f"


def class_answers_figure(choices, counts: list[int], right=None) -> go.Figure:
    """One bar per choice: how many students picked it. With ``right`` given (after the reveal),
    the right choice is green and the others red; before it, every bar is grey."""
    labels = [str(c) for c in choices]
    colours = [HIDDEN if right is None else RIGHT if c == right else OTHER for c in choices]
    total = sum(counts)
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=counts,
            marker_color=colours,
            text=[f"{n} ({100 * n / total:.0f} %)" if total else "0" for n in counts],
            textposition="outside",
        )
    )
    fig.update_layout(
        title=f"The class's answers ({total} so far)",
        xaxis_title="choice",
        yaxis_title="students",
        yaxis_range=[0, max(counts, default=0) * 1.25 + 1],
        height=300,
        margin=dict(t=60, b=40, l=50, r=20),
    )
    fig.update_xaxes(type="category")
    return fig
