"""What a trained model learned about movies: a map of its movie embeddings, its highest and
lowest movie biases, and how far two seeds' runs agree on both.

Every model here gives movie m a bias w_m (the first-order term of [Rendle2010] eq. 1) and an
embedding v_m (its factors in the pairwise terms ⟨v_i, v_j⟩); ``movie_vectors`` reads them from the
model's ``feature_table()`` (``fmlib.models.Model``), which each family fills:

- FM, FwFM, DPLR, RFM: row m of the shared embedding table ([DPLR] eq. 4's v_m) and of the linear weights;
- RaFM: v_m^(1), the level-1 embedding, the only level that every feature has ([RaFM] eq. 6:
  F_1 holds every feature; a frequent movie also has higher levels, a rare one does not);
- the Bayesian FM: the posterior means of w_m and v_m over the kept Gibbs samples ([Rendle2012] §MCMC).

The map is the movies' first two principal components (PCA of the centred embeddings of the
movies rated at least ``min_ratings`` times in training: a rarely rated movie's vector is mostly
its initial noise), titles and genres attached.

**Two seeds.** The scores see embeddings only through inner products, and ⟨Qv_i, Qv_j⟩ = ⟨v_i, v_j⟩
for every orthogonal Q: a second seed may learn the same geometry turned or mirrored, so its
coordinates — and its PCA axes — cannot be compared entry by entry. What such a turn keeps are
lengths and distances: ``seed_agreement`` compares the ranking of the movies' biases (Spearman's
ρ) and the ranking of all pairwise distances ‖v_a − v_b‖ between movies (Spearman's ρ over the
pairs), and says in a sentence what the two numbers mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.spatial.distance import pdist
from scipy.stats import spearmanr

if TYPE_CHECKING:
    from ..snapshots import Snapshots

FIELD = "movie_id"


def _movie_rows(schema) -> range:
    """The movie field's rows of the shared table, its rare bucket (local index 0) included."""
    field = schema.field(FIELD)
    return range(field.offset, field.offset + field.cardinality)


def has_movie_embeddings(model) -> bool:
    """Whether ``movie_vectors`` can read this model: its schema has a movie_id field and it has a
    per-feature table (``Model.feature_table``)."""
    return FIELD in model.schema.names and model.feature_table() is not None


def movie_vectors(model) -> tuple[np.ndarray, np.ndarray]:
    """(V, w): every movie's embedding (cardinality × k) and bias (cardinality,), rows in the order of
    the schema's movie_id values (row 0: the rare bucket). Which table each family uses: module docstring."""
    if FIELD not in model.schema.names:
        raise ValueError(f"a {type(model).__name__} model of these data has no movie embeddings: no {FIELD} field")
    if model.feature_table() is None:
        raise ValueError(
            f"a {type(model).__name__} model has no per-feature table yet (a Bayesian FM has none before "
            "its posterior samples are drawn): train it first"
        )
    rows = np.asarray(_movie_rows(model.schema))
    V, w = model.feature_table()
    return V.detach().cpu().double().numpy()[rows], w.detach().cpu().double().numpy()[rows]


@dataclass(frozen=True)
class MovieMap:
    """``frame``: one row per mapped movie — movie (id label), title, genres, genre (its first, for
    colour), ratings (in training), bias w_m, x and y (its first two principal components);
    ``explained``: the share of the embeddings' variance along x and along y."""

    frame: pd.DataFrame
    explained: tuple[float, float]

    def extremes(self, n: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The ``n`` movies with the highest bias w_m and the ``n`` with the lowest (each sorted outward)."""
        columns = ["title", "bias", "ratings", "genres"]
        ranked = self.frame.sort_values("bias", ascending=False)[columns]
        return ranked.head(n).reset_index(drop=True), ranked.tail(n).iloc[::-1].reset_index(drop=True)


def mapped_movies(schema, counts: np.ndarray, min_ratings: int) -> np.ndarray:
    """Local indices of the movies rated at least ``min_ratings`` times in training (``counts``:
    ``Dataset.feature_counts()`` of the training split), the rare bucket left out."""
    if min_ratings < 1:
        raise ValueError(f"min_ratings must be >= 1, got {min_ratings}")
    local = np.asarray(counts)[np.asarray(_movie_rows(schema))]
    keep = np.flatnonzero(local >= min_ratings)
    return keep[keep > 0]


def principal_axes(X: np.ndarray, components: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(axes (components × k), singular values) of the already centred rows ``X``: its first principal
    axes by its SVD, each oriented so that the row of ``X`` farthest along it lies on its positive side
    (PCA fixes an axis only up to sign). Fewer columns than ``components``: zero axes after them."""
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    axes = np.zeros((components, X.shape[1]))
    take = min(components, Vt.shape[0])
    axes[:take] = Vt[:take]
    coords = X @ axes.T
    for c in range(take):
        if coords[np.argmax(np.abs(coords[:, c])), c] < 0:
            axes[c] *= -1
    return axes, s


def principal_components(V: np.ndarray, components: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates (n × components), share of the variance of each): PCA of the centred rows of
    ``V`` on its oriented principal axes (``principal_axes``). Fewer columns than ``components``:
    zeros after them."""
    X = V - V.mean(0)
    axes, s = principal_axes(X, components)
    coords = X @ axes.T
    take = min(components, len(s))
    total = float((s**2).sum())
    shares = np.zeros(components)
    shares[:take] = (s[:take] ** 2) / total if total > 0 else 0.0
    return coords, shares


@dataclass(frozen=True)
class MoviePaths:
    """``xy`` (epochs, n, 2): every epoch's movies on the final epoch's two principal axes (why one
    projection: ``fmlib.snapshots``); ``captured`` (epochs,): the share of each epoch's centred variance those two axes hold."""

    xy: np.ndarray
    captured: np.ndarray


def movie_paths(snapshots: Snapshots, upto: int | None = None) -> MoviePaths:
    """Project every kept epoch's movie embeddings (the first ``upto``) with one projection, fitted on the
    last of them: its first two principal axes, each oriented so that its farthest movie lies on the
    positive side. With k = 1 the second coordinate is 0."""
    n = snapshots.count if upto is None else upto
    if not snapshots.has_movies or n < 1:
        raise ValueError("these snapshots hold no movie embeddings")
    V = np.stack(snapshots.vectors[:n]).astype(np.float64)  # (E, n, k)
    centred = V - V.mean(1, keepdims=True)
    axes, _ = principal_axes(centred[-1])
    xy = centred @ axes.T  # (E, n, 2)
    total = (centred**2).sum((1, 2))
    captured = np.where(total > 0, (xy**2).sum((1, 2)) / np.where(total > 0, total, 1.0), 0.0)
    return MoviePaths(xy, captured)


def movie_map(model, counts: np.ndarray, movies: pd.DataFrame, min_ratings: int = 20) -> MovieMap:
    """The map of ``model``'s movies rated at least ``min_ratings`` times in training (``counts``:
    the training split's ``feature_counts()``); ``movies``: the data set's movie table (movie_id,
    title, genres "A|B|…")."""
    keep = mapped_movies(model.schema, counts, min_ratings)
    if len(keep) < 3:
        raise ValueError(f"only {len(keep)} movies have at least {min_ratings} ratings in training: lower the minimum")
    V, w = movie_vectors(model)
    coords, shares = principal_components(V[keep])
    labels = [model.schema.field(FIELD).values[i] for i in keep]
    table = movies.assign(movie=movies["movie_id"].astype(str)).set_index("movie")
    found = table.reindex(labels)
    genres = found["genres"].fillna("").astype(str)
    local = np.asarray(counts)[np.asarray(_movie_rows(model.schema))]
    frame = pd.DataFrame(
        {
            "movie": labels,
            "title": found["title"].fillna("movie " + pd.Series(labels, index=found.index)).to_numpy(),
            "genres": genres.str.replace("|", ", ").to_numpy(),
            "genre": genres.str.split("|").str[0].replace("", "unknown").to_numpy(),
            "ratings": local[keep].astype(int),
            "bias": w[keep],
            "x": coords[:, 0],
            "y": coords[:, 1],
        }
    )
    return MovieMap(frame, (float(shares[0]), float(shares[1])))


@dataclass(frozen=True)
class Agreement:
    """Two runs' agreement over ``movies`` movies: Spearman's ρ of their biases and of their
    ``pairs`` pairwise embedding distances, and a sentence that reads them."""

    bias_rho: float
    distance_rho: float
    movies: int
    pairs: int
    sentence: str


def _strength(rho: float) -> str:
    """How alike two rankings with Spearman's ρ are, in words."""
    if rho >= 0.9:
        return "nearly identically"
    if rho >= 0.7:
        return "largely alike"
    if rho >= 0.4:
        return "only partly alike"
    return "hardly alike"


def seed_agreement(model_a, model_b, counts: np.ndarray, min_ratings: int = 20) -> Agreement:
    """How far two runs of the same recipe (different seeds, same split) agree on the movies rated
    at least ``min_ratings`` times: Spearman's ρ of the biases w_m, and of the distances ‖v_a − v_b‖
    over every pair of those movies (distances, because a seed may learn the same geometry turned:
    module docstring)."""
    labels_a, labels_b = (m.schema.field(FIELD).values for m in (model_a, model_b))
    if labels_a != labels_b:
        raise ValueError("the two runs encode different movies (another data set or split): compare runs of one split")
    keep = mapped_movies(model_a.schema, counts, min_ratings)
    if len(keep) < 3:
        raise ValueError(f"only {len(keep)} movies have at least {min_ratings} ratings in training: lower the minimum")
    (Va, wa), (Vb, wb) = movie_vectors(model_a), movie_vectors(model_b)
    bias_rho = float(spearmanr(wa[keep], wb[keep]).statistic)
    da, db = pdist(Va[keep]), pdist(Vb[keep])
    distance_rho = float(spearmanr(da, db).statistic)
    sentence = (
        f"Over {len(keep)} movies, the two seeds rank the movie biases {_strength(bias_rho)} "
        f"(Spearman ρ = {bias_rho:.2f}): which movies the model rates up or down "
        f"{'is a property of the data, not of the seed' if bias_rho >= 0.7 else 'depends on the seed'}. "
        f"Their {len(da):,} pairwise embedding distances rank {_strength(distance_rho)} "
        f"(ρ = {distance_rho:.2f}): "
        + (
            "which movies sit near each other is stable, so the map's neighbourhoods can be read."
            if distance_rho >= 0.7
            else "the map's broad layout may repeat, but single neighbours on it are partly the seed's noise."
            if distance_rho >= 0.4
            else "the map's neighbourhoods are mostly the seed's noise; read only its broadest features."
        )
    )
    return Agreement(bias_rho, distance_rho, len(keep), len(da), sentence)


def same_recipe(config_a: dict, config_b: dict) -> bool:
    """Whether two runs' configs differ in the training seed only (model, hyperparameters, data set,
    split and every other training setting equal): the pair ``seed_agreement`` is meant for."""

    def recipe(config):
        train = {k: v for k, v in config.get("train", {}).items() if k != "seed"}
        return (config.get("model"), config.get("hp"), config.get("dataset"), config.get("split"), train)

    def seed(config):
        return config.get("train", {}).get("seed")

    return recipe(config_a) == recipe(config_b) and seed(config_a) != seed(config_b)
