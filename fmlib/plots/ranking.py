"""Figures for cached-context ranking: per-item cost against m and |I| (DPLR §4.2.2, Algorithm 1)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from .layout import LEGEND_BELOW


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values 1, 2, 5 × 10ⁿ covering [low, high] (both > 0), labelled in full on a log axis."""
    if not 0 < low <= high:
        raise ValueError(f"log ticks need 0 < low <= high, got {low}, {high}")
    ticks = []
    for n in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        ticks += [c * 10.0**n for c in (1, 2, 5)]
    inside = [t for t in ticks if low <= t <= high]
    below = [t for t in ticks if t < low][-1:]
    above = [t for t in ticks if t > high][:1]
    return below + inside + above  # one tick past each end, so the axis is labelled at both ends


def per_item_cost_figure(df: pd.DataFrame, x: str = "m", title: str = "") -> go.Figure:
    """Per-item cost (µs, median with IQR bars) of every scorer against ``x`` ("m" or "item_fields").

    ``df``: the rows of one sweep at one catalogue size of a ``ranking_benchmark`` frame.
    """
    if x not in ("m", "item_fields"):
        raise ValueError(f"x must be 'm' or 'item_fields', got {x!r}")
    fig = go.Figure()
    palette = qualitative.Dark24  # a distinct colour per line: there are more scorers than the default 10 colours
    for i, (model, group) in enumerate(df.groupby("model", sort=False)):
        group = group.sort_values(x)
        fig.add_trace(
            go.Scatter(
                x=group[x].tolist(),
                y=group["per_item_us"].tolist(),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=(group["per_item_q3"] - group["per_item_us"]).tolist(),
                    arrayminus=(group["per_item_us"] - group["per_item_q1"]).tolist(),
                ),
                name=model,
                mode="lines+markers",
                line_color=palette[i % len(palette)],
                line_dash="dot" if model.startswith("floor") else "solid",
                customdata=group[["per_item_q1", "per_item_q3", "x_floor"]].values.tolist(),
                hovertemplate="%{y:.3f} µs [IQR %{customdata[0]:.3f}–%{customdata[1]:.3f}], "
                "×%{customdata[2]:.1f} floor<extra>" + model + "</extra>",
            )
        )
    ticks = log_ticks(float(df["per_item_q1"].min()), float(df["per_item_q3"].max()))
    fig.update_layout(
        title=title,
        xaxis_title={"m": "fields m (|I| = m/2)", "item_fields": "item fields |I| (m = 40)"}[x],
        yaxis=dict(
            title="µs per item",  # short, beside the plot's height at 150 %; the ticks say it is a log scale
            type="log",
            tickvals=ticks,
            ticktext=[f"{t:g}" for t in ticks],
            range=[math.log10(ticks[0]), math.log10(ticks[-1])],
        ),
        height=480,
        margin=dict(t=60),
        legend=LEGEND_BELOW,
    )
    return fig
