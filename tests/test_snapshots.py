"""fmlib.snapshots: what fit keeps per epoch (R, the most rated movies' embeddings), that it is the
weights fit evaluated, the fixed projection of the movie map, saving with a run, and old runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from fmlib.analysis import interaction_matrix
from fmlib.analysis.movie_map import movie_paths, movie_vectors, principal_components
from fmlib.data import split
from fmlib.data.dataset import Dataset
from fmlib.data.schema import Schema
from fmlib.models import build_model
from fmlib.runs import RunError, RunStore
from fmlib.snapshots import Snapshots, absent, most_rated
from fmlib.train import TrainConfig, fit, train_model

MOVIES = 50  # ids 1..50; local index 0 is the rare bucket
SCHEMA = Schema.build(
    [("user_id", "context", "single", 21, 1), ("movie_id", "item", "single", MOVIES + 1, 1)],
    values=[("<rare>", *(f"u{i}" for i in range(1, 21))), ("<rare>", *(str(i) for i in range(1, MOVIES + 1)))],
)


def movie_data(n: int = 3000, seed: int = 0) -> Dataset:
    """Ratings of 20 users × 50 movies; movie j is drawn with weight 1/j, so the low ids are rated most."""
    gen = np.random.default_rng(seed)
    users = gen.integers(1, 21, size=n)
    p = 1 / np.arange(1, MOVIES + 1)
    movies = gen.choice(np.arange(1, MOVIES + 1), size=n, p=p / p.sum())
    rating = np.clip(np.round(3 + np.sin(users) * np.cos(movies) + gen.normal(0, 0.3, n)), 1, 5)
    index = torch.as_tensor(np.stack([users, SCHEMA.field("movie_id").offset + movies], 1), dtype=torch.int32)
    titles = pd.DataFrame({"movie_id": range(1, MOVIES + 1), "title": [f"Film {i}" for i in range(1, MOVIES + 1)]})
    return Dataset(
        SCHEMA,
        index,
        torch.ones(n, 2),
        torch.as_tensor(rating, dtype=torch.float32),
        name="tiny-movies",
        movies=titles,
        rating_range=(1.0, 5.0),
    )


def test_the_most_rated_movies_are_chosen_with_their_titles_and_no_rare_bucket():
    data = movie_data()
    rows, labels, titles = most_rated(data, count=10)
    movie = SCHEMA.field("movie_id")
    local = data.index[:, 1].long().numpy() - movie.offset
    counts = np.bincount(local, minlength=movie.cardinality)
    assert list(rows - movie.offset) == list(np.argsort(-counts[1:], kind="stable")[:10] + 1)
    assert labels[0] == "1" and titles[:2] == [f"Film {labels[0]}", f"Film {labels[1]}"]


def test_fit_keeps_epoch_0_and_every_epoch_of_the_weights_it_evaluates():
    data = split(movie_data(), seed=0)
    torch.manual_seed(0)
    model = build_model("fm", SCHEMA, dim=3)
    start = model.embedding.weight.detach().clone()
    seen = []  # the callback runs with the epoch's weights in the model (no averaging)
    config = TrainConfig(epochs=4, batch_size=256, patience=10)
    run = fit(
        model, data.train, data.valid, config, callback=lambda r: seen.append(model.embedding.weight.detach().clone())
    )
    snap = run.snapshots
    assert snap.epochs == [0, 1, 2, 3, 4] and not snap.has_R and len(snap.labels) == 40
    rows = torch.as_tensor(most_rated(data.train)[0])
    assert np.allclose(snap.vectors[0], start[rows].numpy())
    for epoch, weights in enumerate(seen, start=1):
        assert np.allclose(snap.vectors[epoch], weights[rows].numpy())
    assert not np.allclose(snap.vectors[1], snap.vectors[4]), "the embeddings moved while training"


@pytest.mark.parametrize("average_from", [0, 2])
def test_the_best_epochs_snapshot_is_the_kept_model_also_with_averaging(small_split, average_from):
    config = TrainConfig(epochs=6, batch_size=128, lr=2e-2, patience=10, average_from=average_from)
    run = train_model("fwfm", small_split, config, dim=3)
    snap = run.snapshots
    best = max(r["epoch"] for r in run.history if r["best"])
    assert snap.epochs == list(range(7)) and snap.has_R and not snap.has_movies  # synthetic: no movie_id
    assert np.allclose(snap.R[best], interaction_matrix(run.model), atol=1e-6)
    assert np.allclose(snap.R[0], 1 - np.eye(len(snap.fields))), "an FwFM starts at R_FM = 11ᵀ − I"


def test_snapshots_can_be_turned_off_and_a_given_one_is_filled(small_split):
    config = TrainConfig(epochs=2, batch_size=256)
    assert train_model("fm", small_split, config, snapshots=False, dim=2).snapshots is None
    live = Snapshots()
    run = train_model("dplr", small_split, config, snapshots=live, dim=2, rank=1)
    assert run.snapshots is live and live.count == 3 and live.has_R


def test_the_movie_map_uses_the_final_epochs_axes_for_every_epoch():
    gen = np.random.default_rng(0)
    V = gen.normal(size=(30, 4)) * [3.0, 2.0, 0.5, 0.1]
    snap = Snapshots(labels=[str(i) for i in range(30)], titles=[""] * 30, epochs=[0, 1, 2])
    snap.vectors = [0.01 * V, -0.5 * V, V]  # the same geometry shrunk, then mirrored: no new directions
    paths = movie_paths(snap)
    coords, _ = principal_components(V)
    assert np.allclose(paths.xy[2], coords), "the last epoch is the Playground's map of the same vectors"
    assert np.allclose(paths.xy[0], 0.01 * coords) and np.allclose(paths.xy[1], -0.5 * coords)
    assert np.allclose(paths.captured, paths.captured[2]) and 0.9 < paths.captured[2] < 1
    upto = movie_paths(snap, upto=2)  # a live view: fitted on the latest epoch kept so far (the mirrored one)
    assert np.allclose(upto.xy[1], 0.5 * coords) and np.allclose(upto.xy[0], -0.01 * coords)


def test_a_run_saves_and_loads_its_snapshots_and_an_old_run_says_why_it_has_none(tmp_path):
    data = split(movie_data(), seed=0)
    run = train_model("fwfm", data, TrainConfig(epochs=2, batch_size=256), dim=2)
    store = RunStore(tmp_path)
    store.save(run, "new")
    loaded = store.load("new").snapshots
    assert loaded.epochs == run.snapshots.epochs and loaded.titles == run.snapshots.titles
    assert np.allclose(np.stack(loaded.R), np.stack(run.snapshots.R))
    assert np.allclose(np.stack(loaded.vectors), np.stack(run.snapshots.vectors))
    assert np.allclose(loaded.vectors[-1], movie_vectors(store.load("new").model)[0][[int(x) for x in loaded.labels]])
    assert absent(store.load("new"), "R") is None and absent(store.load("new"), "movies") is None

    store.save(run, "old")  # as a run saved before snapshots: no entry in run.json, no file
    meta = json.loads((tmp_path / "old" / "run.json").read_text())
    del meta["snapshots"]
    (tmp_path / "old" / "run.json").write_text(json.dumps(meta))
    (tmp_path / "old" / "snapshots.safetensors").unlink()
    old = store.load("old")
    assert old.snapshots is None and "saved before runs kept per-epoch snapshots" in absent(old, "R")
    assert absent(old, "curves") is None, "the curves are the history, which every run has"

    store.save(run, "damaged")
    (tmp_path / "damaged" / "snapshots.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(RunError, match="its snapshots cannot be loaded"):
        store.load("damaged")


def test_absent_names_what_a_run_lacks(small_split):
    run = train_model("fm", small_split, TrainConfig(epochs=1, batch_size=256), dim=2)
    assert "no learned field interaction matrix R" in absent(run, "R")
    assert "no movie embeddings" in absent(run, "movies")
    with pytest.raises(ValueError, match="what must be R, movies or curves"):
        absent(run, "spectrum")


@pytest.mark.parametrize("name", ["fm", "rafm"])
def test_the_snapshot_reads_the_same_movie_vectors_as_the_movie_map(name):
    data = movie_data()
    hp = {"counts": data.feature_counts().tolist()} if name == "rafm" else {"dim": 3}
    torch.manual_seed(0)
    model = build_model(name, SCHEMA, **hp)
    snap = Snapshots()
    snap.start(model, data)
    snap.take(model, 0)
    V, _ = movie_vectors(model)
    assert np.allclose(snap.vectors[0], V[[int(label) for label in snap.labels]], atol=1e-6)
