"""Replays of a training, epoch by epoch, from its snapshots (``fmlib.snapshots``) and history.

Each figure is a plotly animation: one frame per kept epoch, with Play, Pause, one-epoch steps back
and forward, and an epoch slider. All of it runs in the browser (no server round trip per frame):
the step buttons of each frame point at the frames before and after it (a frame's layout carries
its own step buttons), so a step is one client-side ``animate`` to a named frame.

- ``r_replay``: the field interaction matrix R of an FwFM ([DPLR] eq. 3) or DPLR ([DPLR] eq. 10)
  after each epoch, on one colour scale for all epochs (the largest |R_fg| of any epoch), so a
  colour means the same number in every frame;
- ``movie_replay``: the most rated movies' embeddings on the final epoch's two principal axes
  (``fmlib.analysis.movie_map.movie_paths``: one projection for every epoch, so nothing flips);
- ``curves_replay``: the training loss and validation metric up to each epoch, on fixed axes.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.movie_map import movie_paths
from ..snapshots import Snapshots

WHAT = ("R", "movies", "curves")
FRAME_MS = 600  # Play's time per epoch
LABELLED = 10  # the movies named on the map (the most rated); every movie names itself on hover


def _go_to(name: str, duration: int = 0) -> list:
    return [
        [name],
        {"mode": "immediate", "frame": {"duration": duration, "redraw": True}, "transition": {"duration": 0}},
    ]


def _menus(names: list[str], k: int, y: float = -0.12) -> list[dict]:
    """Play/Pause and the two step buttons as frame ``k`` shows them (steps to frames k−1 and k+1)."""
    play = [None, {"frame": {"duration": FRAME_MS, "redraw": True}, "fromcurrent": True, "transition": {"duration": 0}}]
    pause = [[None], {"mode": "immediate", "frame": {"duration": 0, "redraw": False}, "transition": {"duration": 0}}]
    return [
        {
            "type": "buttons",
            "direction": "left",
            "showactive": False,
            "x": 0.0,
            "xanchor": "left",
            "y": y,
            "yanchor": "top",
            "pad": {"r": 6, "t": 4},
            "buttons": [
                {"label": "▶ Play", "method": "animate", "args": play},
                {"label": "❚❚ Pause", "method": "animate", "args": pause},
                {"label": "◀ Step", "method": "animate", "args": _go_to(names[max(k - 1, 0)])},
                {"label": "Step ▶", "method": "animate", "args": _go_to(names[min(k + 1, len(names) - 1)])},
            ],
        }
    ]


def animated(frames: list[tuple[str, list, str]], layout: dict, start: int = 0, below: int = 60) -> go.Figure:
    """A figure of ``frames`` [(epoch label, traces, title)] with Play, Pause, steps and an epoch slider,
    showing frame ``start`` first. ``layout``: the rest of the layout (axes, height, top margin);
    ``below``: pixels under the plot area that its axis labels and title take (the controls go under them)."""
    names = [name for name, _, _ in frames]
    margin = {**layout.pop("margin", {}), "b": below + 130}
    plot_height = layout["height"] - margin.get("t", 100) - margin["b"]
    y = -below / plot_height
    fig = go.Figure(
        data=frames[start][1],
        frames=[
            go.Frame(name=name, data=traces, layout={"title": {"text": title}, "updatemenus": _menus(names, k, y)})
            for k, (name, traces, title) in enumerate(frames)
        ],
    )
    slider = {
        "active": start,
        "x": 0.0,
        "len": 1.0,
        "y": y - 40 / plot_height,
        "yanchor": "top",
        "pad": {"t": 10},
        "currentvalue": {"prefix": "epoch ", "visible": True},
        "steps": [{"label": name, "method": "animate", "args": _go_to(name)} for name in names],
    }
    fig.update_layout(
        title={"text": frames[start][2]},
        updatemenus=_menus(names, start, y),
        sliders=[slider],
        margin=margin,
        **layout,
    )
    return fig


def _metrics(history: list[dict]) -> dict[int, str]:
    """Epoch -> 'train loss …, valid rmse …' for each recorded epoch."""
    out = {}
    for r in history:
        valid = ", ".join(f"valid {k.removeprefix('valid_')} {v:.4f}" for k, v in r.items() if k.startswith("valid_"))
        out[r["epoch"]] = f"train loss {r['train_loss']:.4f}, {valid}"
    return out


def _epoch_title(what: str, epoch: int, metrics: dict[int, str]) -> str:
    if epoch == 0:
        return f"{what} before training (epoch 0: the initial weights)"
    return f"{what} after epoch {epoch}" + (f" · {metrics[epoch]}" if epoch in metrics else "")


def r_replay(snapshots: Snapshots, history: list[dict], upto: int | None = None, start: int = 0) -> go.Figure:
    """R after each kept epoch (the first ``upto``), field names on the axes, one colour scale."""
    n = snapshots.count if upto is None else upto
    stack = snapshots.R_stack(n)
    vmax = float(np.abs(stack).max()) or 1.0
    names, metrics = snapshots.fields, _metrics(history)
    frames = []
    for e, R in zip(snapshots.epochs[:n], stack):
        trace = go.Heatmap(
            z=R,
            x=names,
            y=names,
            zmin=-vmax,
            zmax=vmax,
            colorscale="RdBu",
            reversescale=True,
            colorbar={"title": {"text": "R<sub>fg</sub>"}},
            hovertemplate="%{y} × %{x}: %{z:.3f}<extra></extra>",
        )
        frames.append((str(e), [trace], _epoch_title("Field interaction matrix R", e, metrics)))
    layout = {
        "height": 640,
        "margin": {"t": 70, "l": 10, "r": 10},
        "xaxis": {"title": {"text": "field g"}, "tickmode": "array", "tickvals": names},
        "yaxis": {"title": {"text": "field f"}, "autorange": "reversed", "tickmode": "array", "tickvals": names},
    }
    return animated(frames, layout, start=min(start, n - 1), below=130)


MAP_HEIGHT = 580  # the movie map's height, pixels: its plot area is square, PLOT_PX on a side
PLOT_PX = MAP_HEIGHT - 80 - (60 + 130)  # less the top margin and the room ``animated`` keeps below the axes
FONT_PX = 10  # the labels' font size; a character is about 0.6 of it wide and a line 1.2 of it tall
# Where a label may sit around its point (plotly's textposition), tried in this order, and its box's offset from the
# point in label widths (w) and heights (h): (left edge, bottom edge) = (dx_w·w + dx·px, dy_h·h + dy·px).
PLACES = {
    "top center": (-0.5, 0, 0, 5),
    "bottom center": (-0.5, -1, 0, -5),
    "middle right": (0, -0.5, 6, 0),
    "middle left": (-1, -0.5, -6, 0),
    "top right": (0, 0, 3, 3),
    "top left": (-1, 0, -3, 3),
    "bottom right": (0, -1, 3, -3),
    "bottom left": (-1, -1, -3, -3),
}


def label_boxes(xy: np.ndarray, texts: list[str], places: list[str], span: float) -> list[tuple | None]:
    """Each label's box (x0, y0, x1, y1) in pixels on a plot area of PLOT_PX square showing [−span, span] on both
    axes, at its place (``PLACES``); None for an empty label."""
    scale = PLOT_PX / (2 * span)
    boxes = []
    for (x, y), text, place in zip(xy, texts, places):
        if not text:
            boxes.append(None)
            continue
        w, h = 0.6 * FONT_PX * len(text), 1.2 * FONT_PX
        dx_w, dy_h, dx, dy = PLACES[place]
        left, bottom = (x + span) * scale + dx_w * w + dx, (y + span) * scale + dy_h * h + dy
        boxes.append((left, bottom, left + w, bottom + h))
    return boxes


def _meet(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def placed_labels(xy: np.ndarray, texts: list[str], span: float) -> tuple[list[str], list[str]]:
    """The labels and their places (plotly textposition) so that no two labels meet and none covers another labelled
    point: each label, in order, at the first place of ``PLACES`` that is free, else left out of this frame (its
    point still names itself on hover). Returns (texts, places)."""
    scale = PLOT_PX / (2 * span)
    dots = [((x + span) * scale, (y + span) * scale) for (x, y), text in zip(xy, texts) if text]
    taken = [(u - 4, v - 4, u + 4, v + 4) for u, v in dots]  # the labelled points' markers (8 px)
    shown, places = [], []
    for point, text in zip(xy, texts):
        place = next((c for c in PLACES if text and _free(point, text, c, span, taken)), None)
        if place:
            taken += label_boxes(point[None], [text], [place], span)
        shown.append(text if place else "")
        places.append(place or "top center")
    return shown, places


def _free(point: np.ndarray, text: str, place: str, span: float, taken: list[tuple]) -> bool:
    """Whether ``text`` at ``place`` beside ``point`` meets none of the ``taken`` boxes, bar its own point's marker."""
    [box] = label_boxes(point[None], [text], [place], span)
    scale = PLOT_PX / (2 * span)
    u, v = (point[0] + span) * scale, (point[1] + span) * scale
    own = (u - 4, v - 4, u + 4, v + 4)
    return not any(_meet(box, other) for other in taken if other != own)


def movie_replay(snapshots: Snapshots, history: list[dict], upto: int | None = None, start: int = 0) -> go.Figure:
    """The most rated movies on the last kept epoch's two principal axes, after each kept epoch."""
    n = snapshots.count if upto is None else upto
    paths = movie_paths(snapshots, n)
    span = float(np.abs(paths.xy).max()) * 1.1 or 1.0
    metrics = _metrics(history)
    shown = [t if i < LABELLED else "" for i, t in enumerate(snapshots.titles)]
    frames = []
    for e, xy, captured in zip(snapshots.epochs[:n], paths.xy, paths.captured):
        texts, places = placed_labels(xy, shown, span)
        trace = go.Scatter(
            x=xy[:, 0],
            y=xy[:, 1],
            mode="markers+text",
            text=texts,
            textposition=places,
            textfont={"size": FONT_PX},
            hovertext=snapshots.titles,
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": 8},
        )
        title = _epoch_title(f"{len(xy)} most rated movies", e, metrics) + (
            f"<br><sup>on the final epoch's two principal axes, which hold {captured:.0%} of this epoch's spread</sup>"
        )
        frames.append((str(e), [trace], title))
    layout = {
        "height": MAP_HEIGHT,
        "margin": {"t": 80, "l": 10, "r": 10},
        "xaxis": {"title": {"text": "first principal axis of the final embeddings"}, "range": [-span, span]},
        "yaxis": {"title": {"text": "second axis"}, "range": [-span, span], "scaleanchor": "x"},
        "showlegend": False,
    }
    return animated(frames, layout, start=min(start, n - 1))


def curves_replay(history: list[dict], start: int = 0) -> go.Figure:
    """Training loss and validation metric(s) up to each epoch, on axes fixed to the whole run."""
    epochs = [r["epoch"] for r in history]
    keys = sorted(k for k in history[0] if k.startswith("valid_"))
    series = {"train_loss": [r["train_loss"] for r in history], **{k: [r[k] for r in history] for k in keys}}
    template = make_subplots(rows=1, cols=2, subplot_titles=("train loss", "validation"))
    metrics = _metrics(history)

    def traces(upto: int) -> list:
        out = []
        for name, values in series.items():
            col = 1 if name == "train_loss" else 2
            out.append(
                go.Scatter(
                    x=epochs[:upto],
                    y=values[:upto],
                    name=name.replace("_", " ").removeprefix("valid "),
                    mode="lines+markers",
                    xaxis="x" if col == 1 else "x2",
                    yaxis="y" if col == 1 else "y2",
                )
            )
        return out

    frames = [(str(e), traces(i + 1), f"Learning curves up to epoch {e}<br>{metrics[e]}") for i, e in enumerate(epochs)]

    def padded(values):
        low, high = min(values), max(values)
        pad = (high - low) * 0.08 or abs(high) * 0.05 or 0.1
        return [low - pad, high + pad]

    valid = [v for k in keys for v in series[k]]
    layout = template.layout.to_plotly_json()
    layout["xaxis"].update(title={"text": "epoch"}, range=[0.5, max(epochs) + 0.5])
    layout["xaxis2"].update(title={"text": "epoch"}, range=[0.5, max(epochs) + 0.5])
    layout["yaxis"].update(title={"text": "training loss"}, range=padded(series["train_loss"]))
    layout["yaxis2"].update(title={"text": "validation metric"}, range=padded(valid))
    layout.update(height=500, margin={"t": 110, "l": 40, "r": 20})  # room for a title of two lines over the legend
    return animated(frames, layout, start=min(start, len(frames) - 1))


def replay_figure(snapshots: Snapshots | None, history: list[dict], what: str, upto: int | None = None) -> go.Figure:
    """``what`` ("R", "movies" or "curves") replayed, starting at the first epoch (``upto``: the first
    ``upto`` kept epochs, e.g. those a running training has so far, starting at the last of them)."""
    if what not in WHAT:
        raise ValueError(f"what must be one of {WHAT}, got {what!r}")
    if what == "curves":
        shown = history if upto is None else history[: max(upto - 1, 1)]
        return curves_replay(shown, start=0 if upto is None else len(shown) - 1)
    build = r_replay if what == "R" else movie_replay
    n = snapshots.count if upto is None else upto
    return build(snapshots, history, upto=n, start=0 if upto is None else n - 1)
