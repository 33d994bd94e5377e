"""The Adam FM's ablation: validation and test RMSE per configuration, mean ± std over splits."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .layout import LEGEND_BELOW, lines, wrapped

LABEL_WIDTH = 28  # characters a line of a configuration's name holds beside its bars
LINE = 22  # px of height a line of the names takes (a pair of bars spans at least two lines)


def ablation_figure(frame: pd.DataFrame, target: float | None = None, reference: dict | None = None) -> go.Figure:
    """Grouped horizontal bars from a ``reproduce fm-ablation`` table (one row per split and configuration,
    columns ``model``, ``valid_rmse``, ``rmse``, ``cpu_seconds``): the validation and test RMSE of
    every configuration, in the table's order from the top, with the std over splits as error bars; the hover
    gives the CPU seconds of training. ``target``: a dashed line (the test RMSE aimed at);
    ``reference``: {label: test RMSE} dotted lines (e.g. a Bayesian FM measured elsewhere).
    Horizontal, so that each configuration's name is read level, wrapped beside its bars: under vertical bars
    a dozen names turn sideways and run into each other."""
    order = list(dict.fromkeys(frame["model"]))
    stats = frame.groupby("model")[["valid_rmse", "rmse", "cpu_seconds"]].agg(["mean", "std"]).loc[order]
    labels = [wrapped(model, LABEL_WIDTH) for model in order]
    fig = go.Figure()
    for column, name, colour in (("valid_rmse", "validation", "#9ecae1"), ("rmse", "test", "#3182bd")):
        fig.add_trace(
            go.Bar(
                x=stats[(column, "mean")],
                y=labels,
                orientation="h",
                error_x=dict(type="data", array=stats[(column, "std")].fillna(0.0)),
                name=f"{name} RMSE",
                marker_color=colour,
                customdata=stats[("cpu_seconds", "mean")],
                hovertemplate="%{y}<br>" + name + " RMSE %{x:.4f}<br>training %{customdata:.1f} s CPU<extra></extra>",
            )
        )
    if target is not None:
        fig.add_vline(x=target, line_dash="dash", line_color="black", annotation_text=f"target {target:.3f}")
    for label, value in (reference or {}).items():
        fig.add_vline(x=value, line_dash="dot", line_color="#d62728", annotation_text=f"{label} {value:.4f}")
    low = min(
        stats[("rmse", "mean")].min(), stats[("valid_rmse", "mean")].min(), target or 9, *(reference or {}).values()
    )
    high = max(stats[("rmse", "mean")].max(), stats[("valid_rmse", "mean")].max())
    text_lines = sum(max(2, lines(label)) for label in labels)
    fig.update_layout(
        title=f"What the Adam FM needs: RMSE per configuration, mean ± std over {frame['seed'].nunique()} splits",
        barmode="group",
        yaxis=dict(type="category", autorange="reversed", title="configuration"),  # the table's order, from the top
        xaxis_title="RMSE (stars)",
        xaxis_range=[low - 0.01, high + 0.01],
        height=160 + LINE * text_lines,
        margin=dict(t=60, b=40, l=20, r=20),
        legend=LEGEND_BELOW,
    )
    return fig
