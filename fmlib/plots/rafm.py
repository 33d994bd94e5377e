"""Figures of the RaFM topic: occurrence histogram with eq. 17 thresholds (the paper's Fig. 1),
ranks per field, and FM vs RaFM (the paper's Fig. 3 and Table 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from .layout import LEGEND_BELOW


def occurrence_histogram_figure(
    hist: pd.DataFrame, ranks=None, thresholds=None, title: str = "Occurrences per feature"
) -> go.Figure:
    """Features per occurrence bin [2^j, 2^{j+1}) stacked by field; x is log2 of the occurrences.

    ``hist`` comes from ``fmlib.analysis.frequency.occurrence_histogram``. With ``ranks`` and
    ``thresholds`` the eq. 17 boundaries t_k = √(D_k D_{k+1}) are drawn and each region is
    labelled with the rank its features get.
    """
    fig = go.Figure()
    centre = np.log2(hist["low"]) + 0.5
    palette = qualitative.Dark24  # one distinct colour per field: MovieLens has 12, the default palette 10
    for i, field in enumerate(dict.fromkeys(hist["field"])):
        part = hist["field"] == field
        fig.add_trace(
            go.Bar(
                x=centre[part],
                y=hist.loc[part, "features"],
                name=field,
                width=0.9,
                marker_color=palette[i % len(palette)],
                customdata=hist.loc[part, "label"],
                hovertemplate=f"{field}<br>occurrences %{{customdata}}<br>%{{y}} features<extra></extra>",
            )
        )
    edges = np.arange(int(np.log2(hist["low"].min())), int(np.log2(hist["high"].max())) + 1)
    fig.update_xaxes(
        tickvals=edges,
        ticktext=[str(2 ** int(e)) for e in edges],
        title_text="occurrences nᵢ in the training split (log scale, bins [2ʲ, 2ʲ⁺¹))",
    )
    fig.update_yaxes(title_text="number of features")
    if ranks is not None and thresholds is not None:
        cuts = [float(edges[0])] + [float(np.log2(t)) for t in thresholds] + [float(edges[-1])]
        for t in thresholds:
            fig.add_vline(
                x=float(np.log2(t)),
                line_dash="dash",
                line_color="black",
                annotation_text=f"t = {t:.3g}",
                annotation_position="top left",  # inside, under the row of rank labels: never on one of them
            )
        for D, lo, hi in zip(ranks, cuts, cuts[1:]):
            fig.add_annotation(
                x=(max(lo, edges[0]) + min(hi, edges[-1])) / 2,
                y=1.0,
                yref="paper",
                yanchor="bottom",
                text=f"rank D = {D}",
                showarrow=False,
                font=dict(size=13),
            )
    fig.update_layout(
        barmode="stack",
        title=title,
        height=480,
        margin=dict(t=70, b=50, l=50, r=20),
        # under the axis title, in rows: beside the bars, a dozen fields outgrow the chart's height in projector mode
        legend={**LEGEND_BELOW, "title_text": "field"},
    )
    return fig


def rank_share_figure(table: pd.DataFrame, title: str = "Features per rank, by field") -> go.Figure:
    """Per field, how many features get each rank (``fmlib.analysis.frequency.rank_table``)."""
    fig = go.Figure()
    for column in [c for c in table if c.startswith("k=")]:
        fig.add_trace(go.Bar(y=table["field"], x=table[column], name=column, orientation="h"))
    fig.update_layout(
        barmode="stack",
        title=title,
        height=60 + 28 * len(table),
        margin=dict(t=50, b=40, l=90, r=20),
        xaxis_title="number of features",
        yaxis=dict(autorange="reversed", title="field"),
        legend_title_text="rank",
    )
    return fig


def comparison_figure(result: dict) -> go.Figure:
    """FM at each rank vs RaFM and RaFM-low: test metric mean ± std over seeds (Fig. 3), and
    parameters and time relative to the FM of the largest rank (Table 2)."""
    summary = pd.DataFrame(result["summary"])
    key = "rmse" if result["task"] == "rating" else "logloss"
    top = f"FM({result['ranks'][-1]})"
    seeds = len(result["seeds"])
    spread = f"mean ± std, {seeds} seeds" if seeds > 1 else "one seed, no spread"
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"test {key} ({spread})", f"relative to {top}"))
    colours = ["#1f77b4" if m.startswith("FM") else "#d62728" for m in summary["model"]]
    fig.add_trace(
        go.Bar(
            x=summary["model"],
            y=summary[f"test_{key}_mean"],
            marker_color=colours,
            showlegend=False,
            error_y=dict(type="data", array=summary[f"test_{key}_std"]),
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    low, high = summary[f"test_{key}_mean"].min(), summary[f"test_{key}_mean"].max()
    pad = max(high - low, 1e-3)
    fig.update_yaxes(range=[low - pad, high + pad], row=1, col=1)
    for column, name in [
        ("parameters_vs_top_fm", "stored parameters"),
        ("train_time_vs_top_fm", "train time / epoch"),
        ("test_time_vs_top_fm", "test time"),
    ]:
        fig.add_trace(
            go.Bar(
                x=summary["model"],
                y=summary[column],
                name=name,
                hovertemplate=f"%{{x}}: {name} %{{y:.2f}}×<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.add_hline(y=1.0, line_dash="dot", row=1, col=2)
    fig.update_xaxes(title_text="model")
    fig.update_yaxes(title_text=f"test {key.upper()}", row=1, col=1)
    fig.update_yaxes(title_text=f"ratio to {top} (×)", row=1, col=2)
    fig.update_layout(
        barmode="group",
        height=400,
        margin=dict(t=60, b=40, l=50, r=20),
        title=f"FM at each rank vs RaFM: {result['dataset']}, ranks {tuple(result['ranks'])}",
    )
    return fig
