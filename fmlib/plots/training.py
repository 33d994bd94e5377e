"""Figures of a training run: loss and validation metric per epoch."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

UNITS = {  # each metric's name on its axis, with its unit (ratings are 1 to 5 stars)
    "rmse": "RMSE (stars)",
    "mae": "MAE (stars)",
    "logloss": "log loss (nats)",
    "auc": "AUC (0.5 = chance)",
}


def learning_curves(history: list[dict], title: str = "Learning curves") -> go.Figure:
    """Train loss and each validation metric per epoch, one panel and one quantity per axis with its unit; the best
    epoch is marked on every validation panel."""
    epochs = [r["epoch"] for r in history]
    metrics = sorted(k.removeprefix("valid_") for k in (history[0] if history else {}) if k.startswith("valid_"))
    ratings = "rmse" in metrics or not metrics
    loss = "MSE (stars²)" if ratings else "log loss (nats)"
    panels = ["train loss", *(f"validation {m.upper() if m != 'logloss' else 'log loss'}" for m in metrics)]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels, horizontal_spacing=0.08)
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["train_loss"] for r in history], name="train loss", mode="lines+markers"),
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text=loss, row=1, col=1)
    best = [r["epoch"] for r in history if r.get("best")]
    for col, metric in enumerate(metrics, 2):
        fig.add_trace(
            go.Scatter(x=epochs, y=[r[f"valid_{metric}"] for r in history], name=metric, mode="lines+markers"),
            row=1,
            col=col,
        )
        fig.update_yaxes(title_text=UNITS.get(metric, metric), row=1, col=col)
        if best:
            fig.add_vline(x=best[-1], line_dash="dot", annotation_text="best", row=1, col=col)
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(automargin=True)
    fig.update_layout(title=title, height=340, showlegend=False, margin=dict(t=60, b=40, l=10, r=20))
    return fig
