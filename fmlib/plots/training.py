"""Figures of a training run: loss and validation metric per epoch."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots


def learning_curves(history: list[dict], title: str = "Learning curves") -> go.Figure:
    """Train loss and the validation metric(s) per epoch; the best epoch is marked."""
    epochs = [r["epoch"] for r in history]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("train loss", "validation"))
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["train_loss"] for r in history], name="train loss", mode="lines+markers"),
        row=1,
        col=1,
    )
    for key in sorted(k for k in (history[0] if history else {}) if k.startswith("valid_")):
        fig.add_trace(
            go.Scatter(x=epochs, y=[r[key] for r in history], name=key.removeprefix("valid_"), mode="lines+markers"),
            row=1,
            col=2,
        )
    best = [r["epoch"] for r in history if r.get("best")]
    if best:
        fig.add_vline(x=best[-1], line_dash="dot", annotation_text="best", row=1, col=2)
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text="training loss (MSE for ratings, log loss for clicks)", row=1, col=1)
    fig.update_yaxes(title_text="validation metric", row=1, col=2)
    fig.update_layout(title=title, height=340, margin=dict(t=60, b=40, l=40, r=20))
    return fig
