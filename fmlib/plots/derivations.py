"""Figures for the derivations topic."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..derivations.rafm import slack_grid


def s3_slack_figure(delta: float = 2.0, y: int = 1, points: int = 99) -> go.Figure:
    """Slack of RaFM Proposition S3 (eq. S6) over (ŷ1, ŷ2) at the tightest θ; ≥ 0 everywhere if it holds."""
    y1, y2, slack = slack_grid(delta=delta, y=y, points=points)
    low = float(np.min(slack))
    # The slack spans 0 to thousands near the corners: on a linear scale all but a corner is one
    # colour. The colour is log10(1 + slack), with the colour bar labelled in slack itself.
    shown = np.log10(1 + np.clip(slack, 0, None))
    ticks = [t for t in (0, 0.1, 1, 10, 100, 1000, 10_000) if np.log10(1 + t) <= shown.max()]
    fig = go.Figure(
        go.Heatmap(
            x=y1,
            y=y2,
            z=shown,
            customdata=slack,
            colorscale="Viridis",
            zmin=0,
            colorbar=dict(title="slack (log scale)", tickvals=[np.log10(1 + t) for t in ticks], ticktext=ticks),
            hovertemplate="ŷ₁=%{x:.3f}<br>ŷ₂=%{y:.3f}<br>slack=%{customdata:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Slack of Prop. S3: L(ŷ₁, y) + C·D<sub>KL</sub>(ŷ₁‖ŷ₂) + log δ − L(ŷ₂, y)   (y = {y}, δ = {delta:g}; min {low:.3f})",
        xaxis_title="ŷ₁ (predicted probability)",
        yaxis_title="ŷ₂ (predicted probability)",
        margin=dict(t=50),
    )
    return fig
