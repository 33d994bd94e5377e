"""Figures for field interactions (DPLR paper): R heatmaps, spectra (§4.1, App. C Fig. 2), a toy R, and the
pair of fields a reader points at (``pickable``, ``with_pair``, ``picked_pair``: one pair outlined in every heatmap).

Plotly's heatmaps cannot be selected (a click on one selects nothing), so ``pickable`` lays an invisible
marker on every cell: a click selects that marker, whose ``customdata`` names the pair (f, g).
"""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import LEGEND_BELOW

PAIR_OUTLINE = (("#111111", 4), ("#ffffff", 1.5))  # (colour, width): a black ring with a white core, seen on any cell


def interaction_heatmaps(
    matrices: dict,
    names: list[str],
    title: str = "Field interaction matrices R",
    entry: str = "R<sub>fg</sub>",
    centre: float = 0.0,
) -> go.Figure:
    """Side-by-side heatmaps of m×m matrices {title: R}, field names on the axes, one diverging colour scale,
    white at ``centre`` and as wide as the largest |R − centre| of them all; ``entry`` names what a cell
    holds in the figure's title."""
    names_of = list(matrices)
    # NaN: a cell left blank
    vmax = max(float(np.nanmax(np.abs(np.asarray(R, dtype=float) - centre))) for R in matrices.values()) or 1.0
    # a long subplot title takes two lines, so that three side by side never run into each other
    wrapped = ["<br>".join(textwrap.wrap(name.replace(" = ", "\u00a0=\u00a0"), 18)) for name in names_of]
    fig = make_subplots(rows=1, cols=len(names_of), subplot_titles=wrapped, horizontal_spacing=0.1)
    for i, name in enumerate(names_of, start=1):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(matrices[name]),
                x=names,
                y=names,
                zmin=centre - vmax,
                zmax=centre + vmax,
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
        title=f"{title}: {entry}",
        height=420,
        margin=dict(t=110, l=10, r=10, b=10),  # short: narrow at 150 %
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


def blank_diagonal(matrices: dict) -> dict:
    """{title: R} with each R's diagonal blank (NaN): the model never uses it ([DPLR] eq. 5), it is not a parameter."""
    return {
        name: np.where(np.eye(len(R), dtype=bool), np.nan, np.asarray(R, dtype=float)) for name, R in matrices.items()
    }


def r_heatmaps(matrices: dict, names: list[str], title: str = "Field interaction matrices R") -> go.Figure:
    """A learned R and its approximations side by side ({title: R}) on one diverging colour scale centred on the
    FM's R_FM = 11ᵀ − I ([DPLR] eq. 7): white where R_fg = 1 as in an FM, red above, blue below, as wide as the
    largest |R_fg − 1| of them all; the diagonal blank."""
    return interaction_heatmaps(blank_diagonal(matrices), names, title, "R<sub>fg</sub> (white: the FM's 1)", 1.0)


def short_names(names: list[str], width: int = 7) -> list[str]:
    """Each field's name in at most ``width`` characters, for a tick label where the full name does not fit: an
    ``id`` part dropped (user_id → user), every part but the last cut to its first letter (time_hour → t.hour,
    release_year → r.year), what is still too long cut with a trailing "." (occupation → occupa.). The full names
    when two short ones would read the same."""

    def short(name: str) -> str:
        parts = [part for part in name.split("_") if part and part != "id"] or [name]
        text = ".".join([part[0] for part in parts[:-1]] + [parts[-1]])
        return text if len(text) <= width else text[: width - 1] + "."

    shown = [short(name) for name in names]
    return shown if len(set(shown)) == len(shown) else list(names)


def room_r_heatmaps(matrices: dict, names: list[str], tick_size: int) -> go.Figure:
    """``r_heatmaps`` for a projector, where the figure is short and its text large: each axis labelled by
    ``short_names`` in ``tick_size`` px, upright under the columns, so that one label per field fits its row and
    its column; the axes' titles left to the figure's title (rows f, columns g) and its top margin tight, so the
    rows keep the height their labels need; a cell's hover still names both fields in full (the ticks relabel the
    fields, not rename them)."""
    fig, short = r_heatmaps(matrices, names), short_names(names)
    fig.update_xaxes(ticktext=short, tickfont_size=tick_size, tickangle=-90, title_text=None)
    fig.update_yaxes(ticktext=short, tickfont_size=tick_size, title_text=None)
    fig.update_layout(title_text="R<sub>fg</sub>, row f × column g (white: the FM's 1)", margin_t=45, margin_b=2)
    return fig


def toy_heatmaps(matrices: dict, names: list[str], title: str) -> go.Figure:
    """A small R and its approximations side by side ({title: R}), each cell's value written in it, the unused
    diagonal left blank: the picture that comes before a learned R."""
    fig = interaction_heatmaps(blank_diagonal(matrices), names, title)
    fig.update_traces(texttemplate="%{z:.2f}", textfont_size=11, showscale=False)
    fig.update_xaxes(title_standoff=2)
    fig.update_yaxes(title_standoff=6, row=1, col=1)
    for col in range(2, len(matrices) + 1):  # their rows are named once, at the left
        fig.update_yaxes(visible=False, row=1, col=col)
    fig.update_layout(title=f"{title}: R<sub>fg</sub> per pair", height=280, margin=dict(t=75, l=10, r=10, b=10))
    return fig


def _heatmaps(fig: go.Figure):
    """(trace, x axis, y axis) of every heatmap of ``fig``, its axes as shapes name them ("x", "x2", ...)."""
    return [(t, t.xaxis or "x", t.yaxis or "y") for t in fig.data if t.type == "heatmap"]


def _on_the_cells(fig: go.Figure, trace, xaxis: str, yaxis: str) -> None:
    """The axes ``xaxis`` and ``yaxis`` of ``fig`` span the cells of the heatmap ``trace`` exactly (categories sit at
    0, 1, ...: each cell half a unit either side), the rows top down where the y axis was reversed."""
    x_axis, y_axis = fig.layout["xaxis" + xaxis[1:]], fig.layout["yaxis" + yaxis[1:]]
    x_axis.update(autorange=False, range=[-0.5, len(trace.x) - 0.5])
    rows = [-0.5, len(trace.y) - 0.5]
    y_axis.update(autorange=False, range=rows[::-1] if y_axis.autorange == "reversed" else rows)


def pickable(fig: go.Figure) -> go.Figure:
    """``fig`` with an invisible marker on every cell of each heatmap (NaN cells left out), its ``customdata``
    [field f (row), field g (column), value], so that a click on a cell selects the pair (``picked_pair``).
    The markers carry the heatmaps' hover text; the heatmaps' own hover is turned off. Each heatmap's axes keep
    to its cells (``_on_the_cells``): a marker's padding would otherwise leave an empty strip around them."""
    for trace, xaxis, yaxis in _heatmaps(fig):
        _on_the_cells(fig, trace, xaxis, yaxis)
        z = np.asarray(trace.z, dtype=float)
        cells = [(i, j) for i in range(z.shape[0]) for j in range(z.shape[1]) if np.isfinite(z[i, j])]
        fig.add_trace(
            go.Scatter(
                x=[trace.x[j] for _, j in cells],
                y=[trace.y[i] for i, _ in cells],
                customdata=[[trace.y[i], trace.x[j], z[i, j]] for i, j in cells],
                mode="markers",
                marker=dict(symbol="square", size=12, opacity=0),
                hovertemplate=(trace.hovertemplate or "%{y} × %{x}: %{z:.3f}").replace("%{z", "%{customdata[2]"),
                showlegend=False,
                xaxis=xaxis,
                yaxis=yaxis,
            )
        )
        trace.hoverinfo = "skip"
    return fig


def with_pair(fig: go.Figure, f: str, g: str) -> go.Figure:
    """``fig`` with the pair of fields (f, g) outlined in every heatmap: cell (f, g) and its mirror (g, f), each by a
    black rectangle with a white one inside it (``PAIR_OUTLINE``), visible on dark and light cells alike. The
    rectangles are added in one layout update (one ``add_shape`` each would revalidate every shape before it)."""
    shapes = []
    for trace, xaxis, yaxis in _heatmaps(fig):
        rows, cols = list(trace.y), list(trace.x)
        if f not in rows or g not in cols:
            continue
        for row, col in {(f, g), (g, f)}:
            i, j = rows.index(row), cols.index(col)
            shapes += [
                dict(
                    type="rect",
                    xref=xaxis,
                    yref=yaxis,
                    x0=j - 0.5,
                    x1=j + 0.5,
                    y0=i - 0.5,
                    y1=i + 0.5,
                    line=dict(color=colour, width=width),
                    fillcolor="rgba(0,0,0,0)",
                    layer="above",
                )
                for colour, width in PAIR_OUTLINE
            ]
    return fig.update_layout(shapes=[*fig.layout.shapes, *shapes])


def picked_pair(points: list[dict]) -> tuple[str, str] | None:
    """The pair of fields (f, g) of the last cell clicked in a ``pickable`` figure (its selection's
    points, as ``st.plotly_chart(on_select=...)`` returns them), or None when no cell is selected."""
    for point in reversed(points or []):
        data = point.get("customdata")
        if data is not None and len(data) >= 2:
            return str(data[0]), str(data[1])
    return None


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
        xaxis_title="i (descending)",
        yaxis_title="eigenvalue λᵢ(R)",
        height=320,
        margin=dict(t=30),
        legend=LEGEND_BELOW,  # above the plot it met the title
    )
    return fig


def error_spectra_figure(spectra: dict) -> go.Figure:
    """Singular values of approximation errors E = R̃ − R, e.g. pruned vs post-hoc DPLR (App. C, Fig. 2)."""
    fig = go.Figure()
    for name, sigma in spectra.items():
        fig.add_trace(go.Scatter(x=np.arange(1, len(sigma) + 1), y=sigma, name=name, mode="lines+markers"))
    fig.update_layout(
        title="Singular values of E = R̃ − R",
        xaxis_title="i (descending)",
        yaxis_title="singular value σᵢ(E)",
        height=320,
        margin=dict(t=60),
        legend=LEGEND_BELOW,  # above the plot it met the title
    )
    return fig
