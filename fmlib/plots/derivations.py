"""Figures for the derivations topic."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..derivations.rafm import slack_grid


def s3_slack_figure(delta: float = 2.0, y: int = 1, points: int = 99) -> go.Figure:
    """Slack of RaFM Proposition S3 (eq. S6) over (ŷ1, ŷ2) at the tightest θ; ≥ 0 everywhere if it holds."""
    y1, y2, slack = slack_grid(delta=delta, y=y, points=points)
    low = float(np.min(slack))
    fig = go.Figure(
        go.Heatmap(
            x=y1,
            y=y2,
            z=slack,
            colorscale="Viridis",
            zmin=0,
            colorbar=dict(title="slack"),
            hovertemplate="ŷ1=%{x:.3f}<br>ŷ2=%{y:.3f}<br>slack=%{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"L(ŷ1,y) + C·D_KL(ŷ1‖ŷ2) + log δ − L(ŷ2,y)   (y={y}, δ={delta:g}; min {low:.3f})",
        xaxis_title="ŷ1",
        yaxis_title="ŷ2",
        margin=dict(t=50),
    )
    return fig
