"""The Playground's toy, mounted as one st.components.v2 component per model, and its movie map's figure.

Not a page. The component (``_playground_toy.js``, inline JavaScript and CSS, no iframe) draws the
toy's 2-D embeddings as points and computes every score in the browser on each movement, so a drag
never waits for the server; when a move ends (pointer released, an entry typed, arrow keys paused)
it sends the whole state once. ``receive`` checks that state with ``fmlib.toy.check_state``,
keeps it (or keeps the last valid one and says why) and says, computed again in Python by
``fmlib.toy``, how the move changed the scores.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from fmlib import toy
from fmlib.glossary import define, lookup

JS = (Path(__file__).with_name("_playground_toy.js")).read_text(encoding="utf-8")
CSS = """
.toy { font-size: 0.9rem; color: var(--st-text-color, inherit); }
.top { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start; }
.plane { width: 380px; height: 380px; flex: none; touch-action: none; user-select: none;
  border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 6px; }
.grid line { stroke: rgba(128, 128, 128, 0.25); stroke-width: 1px; vector-effect: non-scaling-stroke; }
.grid line.axis { stroke: rgba(128, 128, 128, 0.7); }
.tick { font-size: 0.08px; fill: rgba(128, 128, 128, 0.9); text-anchor: middle; }
.vec { stroke-width: 1.5px; vector-effect: non-scaling-stroke; opacity: 0.25; }
.vec.on { stroke-width: 3px; opacity: 0.9; }
.vec.user, .pt.user circle { stroke: #1f77b4; fill: #1f77b4; }
.vec.movie, .pt.movie circle { stroke: #d62728; fill: #d62728; }
.vec.genre, .pt.genre circle { stroke: #2ca02c; fill: #2ca02c; }
.pt { cursor: grab; outline: none; }
.pt circle { stroke: white; stroke-width: 2px; vector-effect: non-scaling-stroke; }
.pt:focus circle, .pt.dragging circle { stroke: var(--st-text-color, black); stroke-width: 3px; }
.pt.dragging { cursor: grabbing; }
.label { font-size: 0.105px; fill: var(--st-text-color, black); paint-order: stroke;
  stroke: var(--st-background-color, white); stroke-width: 3px; vector-effect: non-scaling-stroke; }
.genre-mean rect { fill: none; stroke: #2ca02c; stroke-width: 2px; vector-effect: non-scaling-stroke; }
.side { flex: 1 1 360px; min-width: 320px; }
.live { font-weight: 600; min-height: 1.4em; margin-bottom: 0.4rem; }
table { border-collapse: collapse; margin: 0.2rem 0 0.6rem; }
th, td { padding: 0.2rem 0.5rem; border: 1px solid rgba(128, 128, 128, 0.3); text-align: right; }
th { font-weight: 600; text-align: left; }
th.user { color: #1f77b4; } th.movie { color: #d62728; } th.genre { color: #2ca02c; }
.score { cursor: pointer; min-width: 5.5em; }
.score .value { font-weight: 600; }
.score .delta { display: block; font-size: 0.8em; min-height: 1em; }
.score.up .delta { color: #1a7f37; } .score.down .delta { color: #cf222e; }
.score.focus { outline: 2px solid var(--st-primary-color, #ff4b4b); outline-offset: -2px; }
.terms td:first-child { text-align: left; }
.terms td { white-space: nowrap; }
.bar { display: inline-block; height: 0.7em; margin-right: 0.4em; vertical-align: middle; }
.bar.pos { background: #1f77b4; } .bar.neg { background: #d62728; }
.bd-title { margin: 0.2rem 0; }
.prop1, .formula { margin: 0.3rem 0; }
.editors { margin-top: 0.6rem; }
.editors input { width: 4.5em; font: inherit; text-align: right; color: inherit; background: transparent;
  border: 1px solid rgba(128, 128, 128, 0.5); border-radius: 4px; padding: 0.1rem 0.25rem; }
.editors input.bad { border: 2px solid #cf222e; background: rgba(207, 34, 46, 0.08); }
.rgrid td { min-width: 4.5em; }
.ranks button { font: inherit; margin: 0 0.3rem 0.4rem 0; padding: 0.15rem 0.6rem; border-radius: 4px;
  border: 1px solid rgba(128, 128, 128, 0.5); background: transparent; color: inherit; cursor: pointer; }
.ranks button[aria-pressed="true"] { border-color: var(--st-primary-color, #ff4b4b); font-weight: 600; }
.served li.off { color: #cf222e; }
.refused { color: #cf222e; font-weight: 600; min-height: 1.2em; margin-top: 0.3rem; }
summary { cursor: pointer; }
"""

_toy = st.components.v2.component("fmlib_toy", css=CSS, js=JS)
MODELS = ("fm", "fwfm", "dplr")


def _keys(model: str) -> tuple[str, str, str, str]:
    """Session keys of one toy: the component, its last valid state, the state's version, the last message."""
    key = f"toy_{model}"
    return key, f"{key}_state", f"{key}_version", f"{key}_message"


def session_keys() -> list[str]:
    """Every session key the toys keep (the page's reset clears them)."""
    return [k for model in MODELS for k in _keys(model)[1:]]


# symbol shown in the toy -> fmlib.glossary key(s) whose definitions its hover shows
TOY_SYMBOLS = {
    "ŷ": ("ŷ",),
    "w": ("w_0", "w_i"),
    "⟨v_i, v_j⟩": ("v_i", "e_f"),
    "R": ("R", "R_fg"),
    "ρ": ("ρ",),
    "U": ("U",),
    "ω": ("ω",),
    "d": ("d",),
}
PAGE_SYMBOLS = ("ŷ", "w_0", "w_i", "v_i", "e_f", "m", "k", "R", "R_fg", "R_FM", "ρ", "U", "ω", "d", "P")
_LATEX = {
    r"\langle": "⟨",
    r"\rangle": "⟩",
    r"\mathbb R": "ℝ",
    r"^\top": "ᵀ",
    r"\top": "ᵀ",
    r"\operatorname{diag}": "diag",
    r"\rho": "ρ",
    r"\omega": "ω",
    r"\sum": "Σ",
    r"\in": "∈",
    r"\times": "×",
    r"\mathbf 1": "1",
    r"\dots": "…",
    r"\tfrac12": "½",
    r"\hat y": "ŷ",
    r"\mathrm{FM}": "FM",
    r"\lVert": "‖",
    r"\rVert": "‖",
    r"\text": "",
}


def plain(text: str) -> str:
    """A glossary definition as plain text for a browser tooltip: its $…$ math without LaTeX commands."""
    for command, symbol in _LATEX.items():
        text = text.replace(command, symbol)
    return re.sub(r"[${}]", "", text).replace("\\", "")


def toy_hints() -> dict[str, str]:
    """Each symbol the toy shows -> its definitions from ``fmlib.glossary`` (plain text, for hover)."""
    return {symbol: "\n".join(plain(define(key)) for key in keys) for symbol, keys in TOY_SYMBOLS.items()}


def symbols_row() -> None:
    """The page's symbols in a row, each showing its ``fmlib.glossary`` definition on hover."""
    row = st.container(horizontal=True, gap="small")
    row.markdown("**Symbols** (point at a ? for its definition):", width="content")
    for key in PAGE_SYMBOLS:
        term = lookup(key)
        row.markdown(f"${term.latex}$", help=f"**{term.name}.** {term.definition} ({term.source})", width="content")


def toy_data(model: str, state: dict, version: int, hints: dict[str, str]) -> dict:
    """What the browser needs: the toy's features, biases and ranges from ``fmlib.toy``, the state
    to draw (adopted when ``version`` is new: first mount, reset, a refused state sent back)."""
    return {
        "model": model,
        "features": list(toy.FEATURES),
        "field_of": toy.FIELD_OF,
        "users": list(toy.USERS),
        "movies": list(toy.MOVIES),
        "movie_genres": {m: list(g) for m, g in toy.MOVIE_GENRES.items()},
        "bias": toy.BIAS,
        "w0": toy.W0,
        "ranges": {"coordinate": toy.COORDINATE_RANGE, "R": toy.R_RANGE, "U": toy.U_RANGE, "e": toy.E_RANGE},
        "state": state,
        "version": version,
        "focus": ["Ann", "Alien"],
        "hints": hints,
    }


def receive(model: str, sent) -> None:
    """A move ended in the browser: check the state it sent (``fmlib.toy.check_state``), keep it and
    say how it changed the scores, computed by ``fmlib.toy``; a state that fails the check is
    refused with the reason, the last valid one stays, and the browser is sent it back."""
    _, state_key, version_key, message_key = _keys(model)
    sent = sent if isinstance(sent, dict) else {}
    before = toy.check_state(st.session_state[state_key])
    try:
        after = toy.check_state(sent.get("state"))
    except ValueError as err:
        st.session_state[message_key] = ("error", f"Refused: {err}. The last valid state stays.")
        st.session_state[version_key] = time.time_ns()  # the browser adopts the kept state again
        return
    st.session_state[state_key] = sent["state"]
    moved = toy.moved(before, after)
    if not moved:
        return
    rows = toy.changes(before, after, model)
    focus = sent.get("focus")
    chosen = next((r for r in rows if focus and [r[0], r[1]] == list(focus)), rows[0])
    user, movie, old, new = chosen
    text = f"Your move of {', '.join(moved)} changed {user}×{movie} by {new - old:+.2f} ({old:.2f} → {new:.2f})"
    biggest = rows[0]
    if biggest[:2] != chosen[:2] and abs(biggest[3] - biggest[2]) >= 0.005:
        text += f"; the largest change: {biggest[0]}×{biggest[1]} by {biggest[3] - biggest[2]:+.2f}"
    st.session_state[message_key] = ("success", text + ". (Computed again in Python by fmlib.toy.)")


def toy_view(model: str) -> None:
    """One toy: the component, then — from Python — the scores of the state it last sent and what the last move did."""
    key, state_key, version_key, message_key = _keys(model)
    state = st.session_state.setdefault(state_key, toy.default_state())
    version = st.session_state.setdefault(version_key, time.time_ns())
    _toy(
        key=key,
        data=toy_data(model, state, version, toy_hints()),
        on_moved_change=lambda: receive(model, (st.session_state[key] or {}).get("moved")),
    )
    kind, text = st.session_state.get(message_key, (None, None))
    if kind:
        getattr(st, kind)(text)
    scores = toy.check_state(state).scores(model)
    st.dataframe(
        pd.DataFrame(scores, index=list(toy.USERS), columns=list(toy.MOVIES)).rename_axis("ŷ"),
        column_config={m: st.column_config.NumberColumn(format="%.2f") for m in toy.MOVIES},
        key=f"{key}_python_scores",
    )
    st.caption(
        "The scores above, computed in Python by `fmlib.toy` from the state the browser sent when your last move "
        "ended (the starting state before that): they match the browser's, which computes the same formula."
    )


def reset_toy(model: str) -> None:
    """Back to the toy's starting state (a new version, which the browser adopts)."""
    _, state_key, version_key, message_key = _keys(model)
    st.session_state[state_key] = toy.default_state()
    st.session_state[version_key] = time.time_ns()
    st.session_state.pop(message_key, None)


GENRE_COLOURS = (
    "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf "
    "#393b79 #637939 #8c6d31 #843c39 #7b4173 #3182bd #e6550d #31a354 #756bb1 #636363"
).split()


def movie_map_figure(frame: pd.DataFrame, explained: tuple[float, float], title: str) -> go.Figure:
    """The movies' first two principal components, one trace per first-listed genre (click the legend
    to hide one), titles, genres, ratings and bias on hover, marker size growing with the ratings."""
    fig = go.Figure()
    genres = frame["genre"].value_counts().index  # the most common genre first
    for i, genre in enumerate(genres):
        part = frame[frame["genre"] == genre]
        fig.add_trace(
            go.Scattergl(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=genre,
                marker={"size": 4 + 2 * np.sqrt(part["ratings"]) / 3, "color": GENRE_COLOURS[i % len(GENRE_COLOURS)]},
                customdata=np.stack([part["title"], part["genres"], part["ratings"], part["bias"]], axis=1),
                hovertemplate="<b>%{customdata[0]}</b><br>%{customdata[1]}<br>%{customdata[2]} ratings in training"
                "<br>bias w = %{customdata[3]:+.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title={"text": title},
        xaxis_title=f"first principal component ({100 * explained[0]:.0f} % of the variance)",
        yaxis_title=f"second principal component ({100 * explained[1]:.0f} % of the variance)",
        legend_title_text="first genre",
        height=560,
        margin={"t": 60},
    )
    return fig
