"""fmlib.analysis.movie_map: which table each family's movie vectors come from, the PCA map, the
bias extremes, and the two-seed agreement (invariant to a turn of the embeddings, blind to nothing else)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fmlib.analysis.movie_map import (
    has_movie_embeddings,
    movie_map,
    movie_vectors,
    principal_components,
    same_recipe,
    seed_agreement,
)
from fmlib.data.schema import Schema
from fmlib.models import build_model

MOVIES = 8  # movie ids 1..8, local index 0 the rare bucket
SCHEMA = Schema.build(
    [("user_id", "context", "single", 4, 1), ("movie_id", "item", "single", MOVIES + 1, 1)],
    values=[("<rare>", "u1", "u2", "u3"), ("<rare>", *(str(i) for i in range(1, MOVIES + 1)))],
)
TABLE = pd.DataFrame(
    {
        "movie_id": range(1, MOVIES + 1),
        "title": [f"Film {i}" for i in range(1, MOVIES + 1)],
        "genres": ["Drama|Comedy", "Sci-Fi", "Drama", "Horror", "Comedy", "Sci-Fi|Action", "Drama", "Romance"],
    }
)
COUNTS = np.array([0, 5, 5, 5] + [0] + [30, 30, 30, 30, 30, 30, 2, 30])  # users, then movies (bucket, 1..8)
MOVIE_ROWS = slice(4, 4 + MOVIES + 1)


def fm_with(V: np.ndarray, w: np.ndarray, name: str = "fm", **hp):
    """A model whose movie rows hold ``V`` and ``w`` (rare bucket first)."""
    torch.manual_seed(0)
    model = build_model(name, SCHEMA, dim=V.shape[1], **hp)
    with torch.no_grad():
        model.embedding.weight[MOVIE_ROWS] = torch.as_tensor(V, dtype=torch.float32)
        model.linear.weight[MOVIE_ROWS, 0] = torch.as_tensor(w, dtype=torch.float32)
    return model


def planted(seed: int = 0, k: int = 3):
    gen = np.random.default_rng(seed)
    return gen.normal(size=(MOVIES + 1, k)), gen.normal(size=MOVIES + 1)


@pytest.mark.parametrize(("name", "hp"), [("fm", {}), ("fwfm", {}), ("dplr", {"rank": 1}), ("rfm", {})])
def test_the_shared_table_models_give_their_movie_rows(name, hp):
    V, w = planted()
    model = fm_with(V, w, name, **hp)
    Vm, wm = movie_vectors(model)
    assert has_movie_embeddings(model)
    assert np.allclose(Vm, V, atol=1e-6) and np.allclose(wm, w, atol=1e-6)


def test_rafm_gives_its_level_1_vectors_which_every_movie_has():
    counts = np.arange(SCHEMA.num_features) * 10  # some features rare (rank 2), some frequent (rank 4)
    model = build_model("rafm", SCHEMA, ranks=(2, 4)).set_counts(counts)
    V, _ = movie_vectors(model)
    level1 = model.level_table(0).detach().numpy()
    positions = model.level_pos[0].numpy()[MOVIE_ROWS]
    assert V.shape == (MOVIES + 1, 2) and np.allclose(V, level1[positions])


def test_the_bayesian_fm_gives_its_posterior_means_and_refuses_before_sampling():
    model = build_model("bfm", SCHEMA, dim=2)
    with pytest.raises(ValueError, match="posterior samples are drawn"):
        movie_vectors(model)
    n = SCHEMA.num_features
    samples = torch.arange(3 * n * 2, dtype=torch.float32).reshape(3, n, 2)
    model._set_samples(torch.zeros(3), torch.ones(3, n), samples)
    V, w = movie_vectors(model)
    assert np.allclose(V, samples.mean(0).numpy()[MOVIE_ROWS]) and np.allclose(w, 1.0)


def test_a_model_without_a_movie_field_is_refused():
    schema = Schema.build([("a", "context", "single", 3, 1), ("b", "item", "single", 3, 1)])
    model = build_model("fm", schema, dim=2)
    assert not has_movie_embeddings(model)
    with pytest.raises(ValueError, match="no movie embeddings"):
        movie_vectors(model)


def test_principal_components_find_a_planted_line_and_its_share():
    t = np.linspace(-1, 1, 9)
    direction = np.array([3.0, 4.0]) / 5
    V = np.outer(t, direction) + np.array([2.0, -1.0])
    coords, shares = principal_components(V)
    assert np.isclose(shares[0], 1.0) and np.isclose(shares[1], 0.0, atol=1e-12)
    assert np.allclose(np.abs(coords[:, 0]), np.abs(t)) and np.allclose(coords[:, 1], 0, atol=1e-12)
    assert coords[np.argmax(np.abs(coords[:, 0])), 0] > 0, "each axis points to its farthest movie"


def test_the_map_keeps_movies_rated_often_enough_with_titles_genres_and_extremes():
    V, w = planted()
    mm = movie_map(fm_with(V, w), COUNTS, TABLE, min_ratings=20)
    frame = mm.frame
    assert list(frame["movie"]) == ["1", "2", "3", "4", "5", "6", "8"], "movie 7 (2 ratings) and the bucket left out"
    assert frame.loc[0, "title"] == "Film 1" and frame.loc[0, "genres"] == "Drama, Comedy"
    assert frame.loc[0, "genre"] == "Drama" and frame.loc[0, "ratings"] == 30
    assert np.allclose(frame["bias"], w[[1, 2, 3, 4, 5, 6, 8]], atol=1e-6)
    assert 0 < mm.explained[1] <= mm.explained[0] <= 1
    top, bottom = mm.extremes(3)
    assert list(top["bias"]) == sorted(frame["bias"], reverse=True)[:3]
    assert list(bottom["bias"]) == sorted(frame["bias"])[:3]
    with pytest.raises(ValueError, match="lower the minimum"):
        movie_map(fm_with(V, w), COUNTS, TABLE, min_ratings=100)


def test_two_seeds_that_differ_by_a_turn_agree_fully_and_unrelated_ones_do_not():
    V, w = planted(0)
    Q, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))  # a rotation or reflection
    turned = fm_with(V @ Q, w)
    same = seed_agreement(fm_with(V, w), turned, COUNTS)
    assert np.isclose(same.bias_rho, 1) and np.isclose(same.distance_rho, 1)
    assert same.movies == 7 and same.pairs == 21 and "nearly identically" in same.sentence
    V2, w2 = planted(1)
    other = seed_agreement(fm_with(V, w), fm_with(V2, -w), COUNTS)
    assert other.bias_rho == pytest.approx(-1.0) and other.distance_rho < 0.9
    assert "depends on the seed" in other.sentence


def test_runs_of_different_movies_are_not_compared():
    values = [("<rare>", "u1", "u2", "u3"), ("<rare>", *(str(i) for i in range(11, 11 + MOVIES)))]
    schema = Schema.build([(f.name, f.role, f.kind, f.cardinality, f.slots) for f in SCHEMA.fields], values=values)
    other = build_model("fm", schema, dim=3)
    with pytest.raises(ValueError, match="different movies"):
        seed_agreement(fm_with(*planted()), other, COUNTS)


def test_same_recipe_means_everything_but_the_seed():
    config = {
        "model": "fm",
        "hp": {"dim": 8},
        "dataset": "ml-100k",
        "split": {"seed": 0},
        "train": {"lr": 0.01, "seed": 0},
    }
    assert same_recipe(config, {**config, "train": {"lr": 0.01, "seed": 1}})
    assert not same_recipe(config, config), "the same seed is the same run"
    assert not same_recipe(config, {**config, "train": {"lr": 0.02, "seed": 1}})
    assert not same_recipe(config, {**config, "hp": {"dim": 16}, "train": {"lr": 0.01, "seed": 1}})
