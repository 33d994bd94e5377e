"""Figures for the RFM topic: gradient growth (appendix §1.2) and the Theorem 1.1 construction."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..analysis.rotation_construction import feature_labels
from .layout import LEGEND_BELOW

GRADIENT_LINES = {  # column -> (legend name, colour, dash); short names: the page says what each line is
    "product": ("one m-way product term (autograd)", "#d62728", "solid"),
    "product_lower_bound": ("its lower bound a(M−ε)<sup>am−1</sup>", "#d62728", "dash"),
    "fm": ("FM (autograd)", "#2ca02c", "solid"),
    "fm_upper_bound": ("FM upper bound d(m−1)(M+ε)", "#2ca02c", "dash"),
    "fm_lower_bound": ("FM lower bound d(m−1)(M−ε), one sign", "#2ca02c", "dot"),
    "rotation": ("rotation layer σ(①)V (autograd)", "#1f77b4", "solid"),
    "rotation_upper_bound": ("its upper bound C₁·m", "#1f77b4", "dash"),
}


def gradient_growth_figure(df: pd.DataFrame, log_y: bool = True) -> go.Figure:
    """‖∂y/∂X‖∞ against the number of fields m, measured and theoretical (RFM appendix §1.2; the FM:
    [Rendle2010] eq. 1, ``analysis.gradient_growth`` (c))."""
    fig = go.Figure()
    for col, (name, colour, dash) in GRADIENT_LINES.items():
        fig.add_trace(
            go.Scatter(
                x=df["m"],
                y=df[col],
                name=name,
                mode="lines+markers" if dash == "solid" else "lines",
                legendgroup=col.split("_")[0],
                line=dict(color=colour, dash=dash),
                marker=dict(size=4),
            )
        )
    fig.update_layout(
        title="Gradient size as the number of fields grows",
        xaxis_title="number of fields m",
        yaxis_title="‖∂y/∂X‖∞",  # short: it stands beside the plot's height, in projector mode at 150 % too
        yaxis_type="log" if log_y else "linear",
        legend=LEGEND_BELOW,
        height=500,
        margin=dict(t=50),
    )
    return fig


def _field_lines(fig: go.Figure, sizes, col: int) -> None:
    """Thin lines between the fields' blocks of a truth-table heatmap."""
    edge = -0.5
    for n in sizes[:-1]:
        edge += n
        fig.add_vline(x=edge, line=dict(color="grey", width=1), row=1, col=col)
        fig.add_hline(y=edge, line=dict(color="grey", width=1), row=1, col=col)


def truth_table_figure(T: torch.Tensor, T_hat: torch.Tensor, sizes) -> go.Figure:
    """The truth table T next to the attention scores read back from the construction (§1.1)."""
    labels = feature_labels(sizes)
    fig = make_subplots(
        1, 2, subplot_titles=("truth table T(s, t)", "attention score α read back"), horizontal_spacing=0.12
    )
    for col, Z in ((1, T), (2, T_hat)):
        fig.add_trace(
            go.Heatmap(
                z=Z.numpy(),
                x=labels,
                y=labels,
                zmin=0,
                zmax=1,
                colorscale="Blues",
                showscale=col == 2,
                hovertemplate="s=%{y}, t=%{x}: %{z:.3g}<extra></extra>",
            ),
            1,
            col,
        )
        _field_lines(fig, list(sizes), col)
    fig.update_yaxes(autorange="reversed", title_text="feature s (row)")
    fig.update_xaxes(title_text="feature t (column)")
    fig.update_layout(title="Any truth table as attention scores (Theorem 1.1)", margin=dict(t=80))
    return fig


def construction_error_figure(df: pd.DataFrame, target: float = 1e-6) -> go.Figure:
    """max |α − T| against S (log scale), with the exact prediction Sigmoid(−S)."""
    fig = go.Figure(
        [
            go.Scatter(
                x=df["S"],
                y=df["error"],
                name="measured max |α − T|",
                mode="markers",
                marker=dict(size=9, color="#1f77b4"),
            ),
            go.Scatter(
                x=df["S"], y=df["sigmoid(-S)"], name="Sigmoid(−S)", mode="lines", line=dict(color="grey", dash="dash")
            ),
        ]
    )
    fig.add_hline(y=target, line=dict(color="#2ca02c", dash="dot"), annotation_text=f"{target:g}")
    fig.update_layout(
        title="The construction's error shrinks like Sigmoid(−S)",
        xaxis_title="S (the weight w = S·1)",
        yaxis_title="max |α − T| (log scale)",
        yaxis_type="log",
        margin=dict(t=50),
    )
    return fig
