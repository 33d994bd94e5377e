"""One FM, four feature sets: test RMSE per step (MF, SVD++, context, context + blocks) beside the peers."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .layout import LEGEND_BELOW

COLOURS = {"FM (Adam": "#3182bd", "Bayesian FM": "#e6550d", "Surprise": "#31a354"}


def features_figure(summary: pd.DataFrame) -> go.Figure:
    """Points with 95 % interval bars from ``fmlib.experiments.features.summary`` (columns
    ``features``, ``model``, ``splits``, ``rmse_mean``, ``rmse_low``, ``rmse_high``): the feature
    sets along x in the table's order, one trace per model; a peer (Surprise) sits at the step it
    mimics. The hover gives the seconds per epoch (per Gibbs sweep)."""
    order = list(dict.fromkeys(summary["features"]))
    fig = go.Figure()
    for model, rows in summary.groupby("model", sort=False):
        colour = next((c for prefix, c in COLOURS.items() if model.startswith(prefix)), "#636363")
        peer = model.startswith("Surprise")
        fig.add_trace(
            go.Scatter(
                x=rows["features"],
                y=rows["rmse_mean"],
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=rows["rmse_high"] - rows["rmse_mean"],
                    arrayminus=rows["rmse_mean"] - rows["rmse_low"],
                ),
                mode="markers" if peer else "lines+markers",
                marker=dict(size=12 if peer else 9, symbol="diamond" if peer else "circle", color=colour),
                line=dict(color=colour),
                name=model,
                customdata=rows[["rmse_low", "rmse_high", "epoch_seconds_mean"]].fillna(0.0),
                hovertemplate=(
                    "%{x}<br>" + model + "<br>test RMSE %{y:.4f} [%{customdata[0]:.4f}, %{customdata[1]:.4f}]"
                    "<br>%{customdata[2]:.2f} s per epoch<extra></extra>"
                ),
            )
        )
    splits = int(summary["splits"].max())
    fig.update_layout(
        title=f"One FM, four inputs: test RMSE, mean and 95 % interval over {splits} splits",
        xaxis=dict(title="feature set (each adds to the last)", categoryorder="array", categoryarray=order),
        yaxis_title="test RMSE (stars)",
        margin=dict(t=60, b=40, l=20, r=20),
        legend=LEGEND_BELOW,
    )
    return fig
