"""Figures for field interactions (DPLR paper): R heatmaps, spectra (§4.1, App. C Fig. 2)."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots


def interaction_heatmaps(matrices: dict, names: list[str], title: str = "Field interaction matrices R") -> go.Figure:
    """Side-by-side heatmaps of m×m matrices {title: R}, field names on the axes, one colour scale."""
    names_of = list(matrices)
    vmax = max(float(np.abs(R).max()) for R in matrices.values()) or 1.0
    # a long subplot title takes two lines, so that three side by side never run into each other
    wrapped = ["<br>".join(textwrap.wrap(name.replace(" = ", "\u00a0=\u00a0"), 18)) for name in names_of]
    fig = make_subplots(rows=1, cols=len(names_of), subplot_titles=wrapped, horizontal_spacing=0.1)
    for i, name in enumerate(names_of, start=1):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(matrices[name]),
                x=names,
                y=names,
                zmin=-vmax,
                zmax=vmax,
                colorscale="RdBu",
                reversescale=True,
                showscale=i == len(names_of),
                hovertemplate="%{y} × %{x}: %{z:.3f}<extra>" + name + "</extra>",
            ),
            row=1,
            col=i,
        )
        fig.update_yaxes(
            autorange="reversed",
            showticklabels=i == 1,
            tickmode="array",
            tickvals=list(names),
            title_text="field f",
            title_standoff=4,
            row=1,
            col=i,
        )
        fig.update_xaxes(title_text="field g", tickmode="array", tickvals=list(names), row=1, col=i)  # every field
    fig.update_layout(
        title=f"{title}: R<sub>fg</sub> per pair of fields (no unit)", height=420, margin=dict(t=110, l=10, r=10, b=10)
    )
    return fig


def deviation_heatmap(R, names: list[str]) -> go.Figure:
    """R − R_FM (R_FM = 11ᵀ − I, DPLR eq. 7) off the diagonal, on a diverging scale fitted to the
    largest deviation, so that small departures from the FM's uniform R are visible."""
    R = np.asarray(R, dtype=float)
    deviation = R - (1.0 - np.eye(len(R)))
    np.fill_diagonal(deviation, np.nan)
    vmax = float(np.nanmax(np.abs(deviation))) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=deviation,
            x=names,
            y=names,
            zmin=-vmax,
            zmax=vmax,
            colorscale="RdBu",
            reversescale=True,
            hovertemplate="%{y} × %{x}: R − 1 = %{z:.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title_text="field f")
    fig.update_xaxes(title_text="field g")
    fig.update_layout(
        title="R − R<sub>FM</sub> per pair of fields (colour scale fitted to the data)",
        height=420,
        margin=dict(t=40, l=10, r=10, b=10),
    )
    return fig


def eigen_spectrum_figure(eigenvalues: np.ndarray, reference: np.ndarray | None = None) -> go.Figure:
    """Eigenvalues of R (descending) next to those of R_FM = 11ᵀ − I: {m−1, −1, …, −1} (DPLR §4.1)."""
    fig = go.Figure()
    i = np.arange(1, len(eigenvalues) + 1)
    fig.add_trace(go.Bar(x=i, y=eigenvalues, name="learned R"))
    if reference is not None:
        fig.add_trace(
            go.Scatter(
                x=i,
                y=reference,
                name="R<sub>FM</sub> = 11ᵀ − I",
                mode="markers",
                marker=dict(symbol="line-ew", size=18, line=dict(width=3, color="black")),
            )
        )
    fig.update_layout(
        title="Eigenvalues of R",
        xaxis_title="i (eigenvalues in descending order)",
        yaxis_title="eigenvalue λᵢ(R)",
        height=320,
        margin=dict(t=30),
        legend=dict(orientation="h", y=1.12),
    )
    return fig


def error_spectra_figure(spectra: dict) -> go.Figure:
    """Singular values of approximation errors E = R̃ − R, e.g. pruned vs post-hoc DPLR (App. C, Fig. 2)."""
    fig = go.Figure()
    for name, sigma in spectra.items():
        fig.add_trace(go.Scatter(x=np.arange(1, len(sigma) + 1), y=sigma, name=name, mode="lines+markers"))
    fig.update_layout(
        title="Singular values of the error E = R̃ − R",
        xaxis_title="i (singular values in descending order)",
        yaxis_title="singular value σᵢ(E)",
        height=320,
        margin=dict(t=60),
        legend=dict(orientation="h", y=1.12),
    )
    return fig
