"""Interval bars of claims: each claim's paired per-seed difference with its 95 % t-interval."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from .layout import LEGEND_BELOW, lines, wrapped

CLAIM_WIDTH = 40  # characters a line of a claim holds on the y axis: a claim is a sentence
LINE = 26  # px of height a line of the claims takes, room for the projector's 20 px text too

COLOURS = {"holds": "#2ca02c", "does not hold": "#d62728"}
UNDECIDED = "#7f7f7f"  # every verdict that decides neither way, whatever its words say was left open


def claim_label(claim: str) -> str:
    """A claim in lines of at most ``CLAIM_WIDTH`` characters, for the y axis: a whole sentence on one line is
    wider than the chart at 150 %."""
    return wrapped(claim, CLAIM_WIDTH)


def height(rows: pd.DataFrame, other: int) -> int:
    """The figure's height: ``other`` px for title, axis and legend, and a ``LINE`` per line of the claims."""
    return other + LINE * sum(lines(claim_label(claim)) for claim in rows["claim"])


def _verdict_markers(part: pd.DataFrame, verdict: str, above, below, hover_columns: list, hover: str) -> go.Scatter:
    """The claims of one verdict: a marker per claim at its measured value, coloured by the verdict,
    with an asymmetric interval bar (``above``/``below`` the value) and the hover text ``hover``."""
    return go.Scatter(
        x=part["difference"],
        y=part["claim"].map(claim_label),
        mode="markers",
        name=verdict,
        marker=dict(color=COLOURS.get(verdict, UNDECIDED), size=10),
        error_x=dict(type="data", symmetric=False, array=above, arrayminus=below),
        customdata=part[hover_columns].values,
        hovertemplate=hover,
    )


def verdict_figure(rows: pd.DataFrame, title: str = "The paper's claims, checked seed by seed") -> go.Figure:
    """One horizontal bar per claim (rows of ``claims.measure_all``): the mean difference (> 0 favours
    the claim) with its interval; the dashed line is "no difference", a dotted one a claim's margin.
    A one-seed interval is unbounded and drawn without bars."""
    fig = go.Figure()
    for verdict, part in rows.groupby("verdict", sort=False):
        finite = [math.isfinite(lo) and math.isfinite(hi) for lo, hi in zip(part["low"], part["high"])]
        above = [hi - d if ok else 0 for d, hi, ok in zip(part["difference"], part["high"], finite)]
        below = [d - lo if ok else 0 for d, lo, ok in zip(part["difference"], part["low"], finite)]
        hover = (
            "%{y}<br>vs %{customdata[0]}, %{customdata[1]}: %{x:+.4f} "
            "[%{customdata[3]:+.4f}, %{customdata[4]:+.4f}], %{customdata[2]} seeds<extra></extra>"
        )
        fig.add_trace(_verdict_markers(part, verdict, above, below, ["other", "metric", "seeds", "low", "high"], hover))
    fig.add_vline(x=0, line_dash="dash", line_color="black")
    for margin in sorted(set(rows["margin"]) - {0.0}):
        fig.add_vline(x=-margin, line_dash="dot", line_color="grey", annotation_text="margin")
    fig.update_layout(
        title=title,
        xaxis_title="difference (> 0 favours claim)",  # short, at 150 %; the page says: paired, per seed, 95 %
        height=height(rows, 140),
        margin=dict(t=50, b=40, l=20, r=20),
        legend=LEGEND_BELOW,
    )
    fig.update_yaxes(autorange="reversed", title_text="claim")
    return fig


def threshold_figure(
    rows: pd.DataFrame, title: str, log_x: bool = False, x_title: str = "measured value, 95 % interval"
) -> go.Figure:
    """One row per ``claims.Threshold`` claim (rows of ``claims.measure_all``): the measured value
    with its 95 % interval (a "max" claim, the largest value over seeds, has none), coloured by
    verdict, and a grey tick at the threshold the claim needs. ``log_x`` for values that span
    orders of magnitude (errors from rounding to the gradient's size); ``x_title`` names the one quantity the
    claims share, with its unit."""
    fig = go.Figure()
    for verdict, part in rows.groupby("verdict", sort=False):
        above, below = part["high"] - part["difference"], part["difference"] - part["low"]
        fig.add_trace(
            _verdict_markers(part, verdict, above, below, ["measured"], "%{y}<br>%{customdata[0]}<extra></extra>")
        )
    fig.add_trace(
        go.Scatter(
            x=rows["other_mean"],
            y=rows["claim"].map(claim_label),
            mode="markers",
            name="threshold the claim needs",
            marker=dict(symbol="line-ns-open", size=24, color="grey", line=dict(width=3)),
            customdata=rows[["other"]].values,
            hovertemplate="%{y}<br>needs %{customdata[0]}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title=x_title,  # a log scale shows in its ticks (powers of ten)
        height=height(rows, 160),
        margin=dict(t=50, b=40, l=20, r=20),
        legend=LEGEND_BELOW,
    )
    fig.update_xaxes(type="log" if log_x else "linear", exponentformat="power")
    fig.update_yaxes(autorange="reversed", title_text="claim")
    return fig
