"""Figures of the attention-inversion topic (app_pages/attention_inversion.py and notebook 06)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import LEGEND_BELOW

COLORS = {"gd": "#1f77b4", "adam": "#2ca02c", "newton": "#d62728"}
NAMES = {"gd": "gradient descent", "adam": "Adam", "newton": "damped Newton"}
OTHER_COLORS = ["#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]  # runs labelled by outcome, not by method


DRAWN_STEPS = 120  # points per line: a 400 px panel shows no more, and each point costs the browser time


def drawn_steps(trajectory: pd.DataFrame, most: int = DRAWN_STEPS) -> pd.DataFrame:
    """The rows of a trajectory a chart draws: every k-th iteration, so that at most ``most`` (plus the last)
    are drawn, and always the first and the last. 500 gradient-descent steps drawn in full took the browser
    0.16 s more per visit here, for the same picture."""
    step = -(-len(trajectory) // most)  # ceil
    rows = list(range(0, len(trajectory), step))
    if rows and rows[-1] != len(trajectory) - 1:
        rows.append(len(trajectory) - 1)
    return trajectory.iloc[rows]


def convergence_figure(runs: dict, title: str = "Inverting the attention layer, iteration by iteration") -> go.Figure:
    """Loss, ‖X_t − X_true‖_F (log scales) and λ_min(∇²L) per iteration, one line per run.

    runs maps a label (a method name, or any text) to an ``Inversion``; a method name gets its
    method's colour, any other label a colour of its own (two Newton runs stay apart).
    """
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.12,  # room for the next panel's ticks and axis title in projector mode at 150 %
        # two short lines each: a panel is a third of a narrow chart at 150 %; the axes hold the symbols
        subplot_titles=("loss", "distance<br>to the secret", "smallest Hessian<br>eigenvalue"),
    )
    for k, (label, run) in enumerate(runs.items()):
        t = drawn_steps(run.trajectory)
        color = COLORS[label] if label in COLORS else OTHER_COLORS[k % len(OTHER_COLORS)]
        name = NAMES.get(label, label)
        fig.add_trace(
            go.Scatter(
                x=t["step"], y=t["loss"].clip(lower=1e-30), name=name, legendgroup=label, line=dict(color=color)
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=t["step"], y=t["dist"], name=name, legendgroup=label, showlegend=False, line=dict(color=color)
            ),
            1,
            2,
        )
        eig = t.dropna(subset=["min_eig"])
        fig.add_trace(
            go.Scatter(
                x=eig["step"],
                y=eig["min_eig"],
                name=name,
                legendgroup=label,
                showlegend=False,
                mode="lines+markers",
                line=dict(color=color),
            ),
            1,
            3,
        )
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=1)
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=2)
    fig.add_hline(y=0, line=dict(color="gray", dash="dot"), row=1, col=3)
    fig.update_xaxes(title_text="iteration t")
    fig.update_yaxes(title_text="L(Xₜ)", row=1, col=1)
    fig.update_yaxes(title_text="‖Xₜ − X<sub>true</sub>‖<sub>F</sub>", row=1, col=2)
    fig.update_yaxes(title_text="λ<sub>min</sub>(∇²L)", row=1, col=3)
    fig.update_layout(title=title, height=460, margin=dict(t=110, b=40), legend=LEGEND_BELOW)
    return fig


BOUND_MARK = "*"  # marks the γ of the corrected Thm 4.2 bound on the axis; the axis title says what it means


def gamma_label(gamma: float, bound: float | None = None) -> str:
    """A γ tick label, one short line (a long one is turned or cut on a small chart): the bound's γ marked."""
    if bound is not None and gamma == bound:
        return f"{gamma:.1e}{BOUND_MARK}"
    return "0" if gamma == 0 else f"{gamma:g}"


def success_figure(
    rates: dict, bound: dict | None = None, title: str = "How often the Newton attack works, by regulariser γ"
) -> go.Figure:
    """Success rate (recovered the secret) and agreement rate (two starts, same end point) vs γ.

    rates maps a label (e.g. "n=4, d=3") to a ``success_rates`` table; bound maps the same label
    to the γ of Thm. 4.2 (corrected, ``attack.gamma_bound``) if that γ is in the table. A table
    with ``<rate>_low`` and ``<rate>_high`` columns (``experiments.inversion.rates``: Wilson
    intervals) gets them as error bars.
    """
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,  # one scale, titled and ticked once (on the left)
        horizontal_spacing=0.08,
        # two lines each: on one, a panel's title at 150 % in projector mode is wider than its panel
        subplot_titles=("recovered the secret<br>(relative error < 1%)", "both starts end<br>at the same point"),
    )
    dash = ["solid", "dash", "dot"]
    for k, (label, table) in enumerate(rates.items()):
        b = None if bound is None else bound.get(label)
        x = [gamma_label(g, b) for g in table["gamma"]]
        for col, key in ((1, "success_rate"), (2, "agree_rate")):
            bars = None
            if f"{key}_low" in table:
                bars = dict(
                    type="data",
                    symmetric=False,
                    array=table[f"{key}_high"] - table[key],
                    arrayminus=table[key] - table[f"{key}_low"],
                )
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=table[key],
                    error_y=bars,
                    mode="lines+markers",
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1,
                    line=dict(
                        dash=dash[k % 3], color=OTHER_COLORS[k % len(OTHER_COLORS)]
                    ),  # one colour per label in both panels
                    customdata=np.stack([table["runs"], table["median_rel_error"]], axis=1),
                    hovertemplate="γ=%{x}<br>rate=%{y:.2f}<br>runs=%{customdata[0]}"
                    "<br>median rel. error=%{customdata[1]:.2g}",
                ),
                1,
                col,
            )
    fig.update_yaxes(range=[-0.03, 1.03])
    fig.update_yaxes(title_text="fraction of runs", col=1)  # the shared scale's title, once
    marked = bound is not None and any(
        b is not None and b in table["gamma"].values for label, table in rates.items() for b in [bound.get(label)]
    )
    fig.update_xaxes(
        type="category",
        title_text=f"γ ({BOUND_MARK} corrected Thm 4.2 bound)" if marked else "regulariser γ",
    )
    # the legend at the top left (the chart's tools sit at the right): below the panels it would run into the
    # tick labels on a narrow screen
    legend = dict(orientation="h", yref="container", y=1, yanchor="top", x=0, xanchor="left")
    fig.update_layout(title=title, height=460, margin=dict(t=150, b=40), legend=legend)  # room for 2-line titles
    return fig


def recovery_figure(summary: pd.DataFrame) -> go.Figure:
    """Top-1 / top-10 recovery of hidden movies: the attack, the popularity guess and chance (one bar group per metric)."""
    fig = go.Figure()
    for column, name in [
        ("attack", "inversion attack"),
        ("popularity", "guess the most popular (training users)"),
        ("chance", "uniform chance"),
    ]:
        fig.add_trace(
            go.Bar(
                x=summary["metric"],
                y=summary[column],
                name=name,
                text=[f"{v:.1%}" for v in summary[column]],
                textposition="outside",
            )
        )
    fig.update_yaxes(title_text="fraction of hidden movies recovered", tickformat=".0%")
    fig.update_xaxes(title_text="hit within the attack's top-k guesses")
    fig.update_layout(
        title="Hidden first movies recovered: attack vs baselines", barmode="group", height=380, margin=dict(t=60, b=40)
    )
    return fig


def training_figure(losses) -> go.Figure:
    """Training cross-entropy of the tiny transformer per epoch."""
    fig = go.Figure(go.Scatter(x=np.arange(1, len(losses) + 1), y=losses, mode="lines+markers"))
    fig.update_layout(
        title="Training the tiny transformer",
        height=300,
        margin=dict(t=50, b=40),
        xaxis_title="epoch",
        yaxis_title="next-movie cross-entropy (nats)",
    )
    return fig
