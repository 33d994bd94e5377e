"""Figures for cached-context ranking: per-item latency against m and |I| (DPLR §4.2.2)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative


def per_item_cost_figure(df: pd.DataFrame, x: str = "m", log_y: bool = True) -> go.Figure:
    """Per-item latency (µs) of every model against ``x`` ("m" or "item_fields"), one line each.

    ``df`` is a ``ranking_benchmark`` frame already restricted to one sweep.
    """
    if x not in ("m", "item_fields"):
        raise ValueError(f"x must be 'm' or 'item_fields', got {x!r}")
    fig = go.Figure()
    palette = qualitative.Dark24  # a distinct colour per line: there are more models than the default 10 colours
    for i, (model, group) in enumerate(df.groupby("model", sort=False)):
        group = group.sort_values(x)
        fig.add_trace(
            go.Scatter(
                x=group[x],
                y=group["per_item_us"],
                name=model,
                mode="lines+markers",
                line_color=palette[i % len(palette)],
                customdata=group["ratio_to_fm"],
                hovertemplate="%{y:.3f} µs (×%{customdata:.2f} FM)<extra>" + model + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title={"m": "number of fields m", "item_fields": "number of item fields |I|"}[x],
        yaxis_title="per-item latency (µs)",
        yaxis_type="log" if log_y else "linear",
        height=380,
        margin=dict(t=30),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
