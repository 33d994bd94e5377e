"""One rating traced through the FM formula, term by term, as a waterfall (the Train page's opening picture).

The toy FM of ``fmlib.toy`` (the Playground's: users, movies, genres with 2-D embeddings) predicts

    ŷ(u, m) = w0 + w_u + w_m + w_G + ⟨e_user, e_movie⟩ + ⟨e_user, e_genre⟩ + ⟨e_movie, e_genre⟩

([Rendle2010] eq. 1 over fields, genres averaged: w_G = Σ_{g ∈ G(m)} w_g / |G(m)|, e_genre the mean of
the genres' vectors, [DPLR] §3.2). ``trace_terms`` lists the terms; ``trace_figure`` stacks them from
w0 to ŷ, so a reader sees which numbers training has to move for the prediction to move.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .. import toy


def trace_terms(user: str = "Ann", movie: str = "Alien") -> list[tuple[str, float]]:
    """[(term, value)] of ŷ(user, movie) in the toy FM, in the formula's order; they sum to ``toy.score``."""
    V = toy.default_state()["V"]
    genres = toy.MOVIE_GENRES[movie]
    genre = " + ".join(genres) if len(genres) == 1 else f"mean of {', '.join(genres)}"
    pair = toy.pair_terms(V, user, movie)
    return [
        ("w₀ (global bias)", toy.W0),
        (f"w {user}", toy.BIAS[user]),
        (f"w {movie}", toy.BIAS[movie]),
        (f"w genre ({genre})", sum(toy.BIAS[g] for g in genres) / len(genres)),
        (f"⟨v {user}, v {movie}⟩", float(pair[0])),
        (f"⟨v {user}, e genre⟩", float(pair[1])),
        (f"⟨v {movie}, e genre⟩", float(pair[2])),
    ]


def trace_figure(user: str = "Ann", movie: str = "Alien") -> go.Figure:
    """A waterfall from w0 through each term to the prediction ŷ(user, movie) of the toy FM."""
    terms = trace_terms(user, movie)
    total = sum(value for _, value in terms)
    fig = go.Figure(
        go.Waterfall(
            x=[name for name, _ in terms] + [f"ŷ = {total:.2f}"],
            y=[value for _, value in terms] + [0.0],
            measure=["absolute"] + ["relative"] * (len(terms) - 1) + ["total"],
            text=[f"{value:+.2f}" if k else f"{value:.2f}" for k, (_, value) in enumerate(terms)] + [f"{total:.2f}"],
            textposition="outside",
            connector={"line": {"dash": "dot"}},
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    low = min(toy.W0, total) - 0.6
    fig.update_layout(
        title=f"One rating, term by term: {user} rates {movie}",
        height=300,
        margin={"t": 50, "b": 10, "l": 10, "r": 10},
        yaxis={"title": {"text": "stars"}, "range": [low, max(toy.W0, total) + 0.6]},
        xaxis={"title": {"text": "term of the formula"}},
        showlegend=False,
    )
    return fig
