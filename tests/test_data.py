"""MovieLens parsing (both formats), validation, sources and cache; encoding; split."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from movielens_files import MOVIES, RATINGS, USERS, write_grouplens_100k, write_recbole_atomic

from fmlib.data import movielens, split, synthetic
from fmlib.data.dataset import slot_weights
from fmlib.data.movielens import DataError


def test_both_file_formats_parse_to_the_same_frames(tmp_path):
    a = movielens.read_frames(write_grouplens_100k(tmp_path / "grouplens"))
    b = movielens.read_frames(write_recbole_atomic(tmp_path / "recbole"))
    for frame in ("ratings", "users", "movies"):
        pd.testing.assert_frame_equal(getattr(a, frame), getattr(b, frame), check_like=True)
    assert a.movies.loc[a.movies.movie_id == 4, "year"].isna().all()  # 'unkonwn' and '' both -> NaN
    assert a.movies.loc[0, "title"] == "Toy Story"
    assert a.movies.loc[0, "genres"] == "Animation|Children's|Comedy"


def test_counts_are_checked(tmp_path):
    frames = movielens.read_frames(write_grouplens_100k(tmp_path / "d"))
    with pytest.raises(DataError, match=r"u.data: 6 ratings by 3 users of 4 movies, expected 100,000 by 943 of 1,682"):
        movielens.validate("ml-100k", frames)


def test_directory_with_missing_files_is_named(tmp_path):
    d = write_grouplens_100k(tmp_path / "d")
    (d / "u.item").unlink()
    with pytest.raises(DataError, match="missing file.*u.item"):
        movielens.read_frames(d)


def _fake_sources(monkeypatch, tmp_path, archive_ok=False, wheel_ok=True):
    calls = []

    def archive(name, workdir, timeout=20):
        calls.append("archive")
        if not archive_ok:
            raise OSError("network unreachable")
        return write_grouplens_100k(workdir / "x")

    def wheel(workdir, timeout=300):
        calls.append("wheel")
        if not wheel_ok:
            raise DataError("pip download failed")
        return write_recbole_atomic(workdir / "y")

    monkeypatch.setattr(movielens, "fetch_archive", archive)
    monkeypatch.setattr(movielens, "fetch_recbole_wheel", wheel)
    monkeypatch.setattr(movielens, "validate", lambda name, frames: None)  # fixture files are tiny
    return calls


def test_fallback_order_cache_and_source_reporting(monkeypatch, tmp_path):
    calls = _fake_sources(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    frames, source = movielens.load_frames("ml-100k", cache_dir=cache)
    assert calls == ["archive", "wheel"] and source == "PyPI wheel recbole==1.2.1"
    assert len(frames.ratings) == len(RATINGS)
    frames2, source2 = movielens.load_frames("ml-100k", cache_dir=cache)
    assert calls == ["archive", "wheel"], "second load must come from the cache"
    assert source2.startswith("cache") and "recbole" in source2
    pd.testing.assert_frame_equal(frames.movies, frames2.movies)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")], "no temporary leftovers"


def test_encoded_tensors_are_cached_beside_the_frames(monkeypatch, tmp_path):
    _fake_sources(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    first = movielens.load("ml-100k", cache_dir=cache)
    monkeypatch.setattr(movielens, "encode", lambda raw: pytest.fail("the cached tensors must be used"))
    second = movielens.load("ml-100k", cache_dir=cache)
    assert second.schema == first.schema
    assert torch.equal(second.index, first.index) and torch.equal(second.weight, first.weight)
    (cached,) = (cache / "ml-100k").glob("encoded-*.npz")
    assert cached == movielens.encoded_cache_file("ml-100k", cache)
    assert not [p for p in (cache / "ml-100k").iterdir() if p.name.startswith(".")], "no temporary leftovers"


def test_a_corrupt_encoded_cache_is_encoded_again(monkeypatch, tmp_path):
    _fake_sources(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    first = movielens.load("ml-100k", cache_dir=cache)
    movielens.encoded_cache_file("ml-100k", cache).write_bytes(b"half-written")
    again = movielens.load("ml-100k", cache_dir=cache)
    assert torch.equal(again.index, first.index)
    assert movielens.encoded_cache_file("ml-100k", cache).stat().st_size > len(b"half-written")


def test_corrupt_cache_is_detected_and_fetched_again(monkeypatch, tmp_path):
    calls = _fake_sources(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    movielens.load_frames("ml-100k", cache_dir=cache)
    ratings = cache / "ml-100k" / "ratings.csv"
    ratings.write_text(ratings.read_text()[:40])  # truncated
    _, source = movielens.load_frames("ml-100k", cache_dir=cache)
    assert source == "PyPI wheel recbole==1.2.1" and calls.count("wheel") == 2


def test_user_directory_comes_first(monkeypatch, tmp_path):
    calls = _fake_sources(monkeypatch, tmp_path)
    d = write_grouplens_100k(tmp_path / "mine")
    _, source = movielens.load_frames("ml-100k", data_dir=d, cache_dir=tmp_path / "cache")
    assert source == f"directory {d}" and calls == []


def test_no_source_lists_every_source_and_why(monkeypatch, tmp_path):
    _fake_sources(monkeypatch, tmp_path, wheel_ok=False)
    with pytest.raises(DataError) as err:
        movielens.load_frames("ml-100k", cache_dir=tmp_path / "cache")
    text = str(err.value)
    for part in ("cache", "GroupLens archive: network unreachable", "recbole==1.2.1: pip download failed"):
        assert part in text


def test_a_named_directory_that_fails_is_reported_not_skipped(monkeypatch, tmp_path):
    calls = _fake_sources(monkeypatch, tmp_path)
    with pytest.raises(DataError, match="no MovieLens files found"):
        movielens.load_frames("ml-100k", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert calls == []


def test_ml1m_has_no_wheel_fallback(monkeypatch, tmp_path):
    calls = _fake_sources(monkeypatch, tmp_path)
    with pytest.raises(DataError):
        movielens.load_frames("ml-1m", cache_dir=tmp_path / "cache")
    assert calls == ["archive"]


def test_ml1m_format_parses(tmp_path):
    d = tmp_path / "ml-1m"
    d.mkdir()
    (d / "ratings.dat").write_text("".join(f"{u}::{m}::{r}::{t}\n" for u, m, r, t in RATINGS))
    (d / "users.dat").write_text("".join(f"{u}::{g}::{a}::{i}::{z}\n" for i, (u, a, g, o, z) in enumerate(USERS)))
    (d / "movies.dat").write_bytes("".join(f"{m}::{t}::{'|'.join(g)}\n" for m, t, _, g in MOVIES).encode("latin-1"))
    f = movielens.read_frames(d)
    assert f.movies.loc[1, "title"] == "GoldenEye" and f.movies.loc[1, "year"] == 1995
    assert list(f.users.columns) == ["user_id", "age", "gender", "occupation", "zip"]


def test_unknown_dataset_is_named():
    with pytest.raises(ValueError, match="unknown dataset 'ml-7'"):
        movielens.load_frames("ml-7")


def _encoded(tmp_path):
    frames = movielens.read_frames(write_grouplens_100k(tmp_path / "d"))
    encoded = movielens.encode(frames)
    return encoded.schema, encoded.index, slot_weights(encoded.schema, encoded.counts)


def test_twelve_fields_with_roles_and_multi_valued_genres(tmp_path):
    schema, index, weight = _encoded(tmp_path)
    assert schema.names == [
        "user_id",
        "age",
        "gender",
        "occupation",
        "zip",
        "time_year",
        "time_month",
        "time_weekday",
        "time_hour",
        "movie_id",
        "release_year",
        "genres",
    ]
    assert [f.name for f in schema.fields if f.role == "item"] == ["movie_id", "release_year", "genres"]
    genres = schema.field("genres")
    assert genres.kind == "multi" and genres.slots == 3
    # Toy Story has three genres: each slot weighs 1/3; Four Rooms one genre: weight 1 then padding
    g = slice(schema.num_slots - 3, schema.num_slots)
    assert torch.allclose(weight[0, g], torch.full((3,), 1 / 3))
    assert weight[3, g].tolist() == [1.0, 0.0, 0.0]
    assert index.shape == (len(RATINGS), 14) and index.max() < schema.num_features


def test_split_is_seeded_and_rare_features_share_a_bucket():
    data = synthetic.make(synthetic.block_R(4), n_samples=500, cardinality=300, seed=1)
    a, b = split(data, seed=3, min_count=2), split(data, seed=3, min_count=2)
    assert torch.equal(a.test.index, b.test.index)
    assert (len(a.train), len(a.valid), len(a.test)) == (400, 50, 50)
    counts = data.subset(torch.randperm(500, generator=torch.Generator().manual_seed(3))[:400]).feature_counts()
    for old, new in zip(data.schema.fields, a.schema.fields):
        kept = (counts[old.offset + 1 : old.offset + old.cardinality] >= 2).sum()
        assert new.cardinality == kept + 1
    bucket = {f.offset for f in a.schema.fields}
    assert any(int(i) in bucket for i in a.test.index.flatten()), "unseen test features map to the bucket"
    with pytest.raises(ValueError, match="min_count"):
        split(data, min_count=0)


@pytest.mark.parametrize("m, blocks", [(8, 3), (12, 2), (9, 4)])
def test_block_R_is_low_rank_only_off_the_diagonal(m, blocks):
    """Zero diagonal: R has full rank; R + within·I, which agrees with R off the diagonal, has rank ≤ blocks."""
    R = synthetic.block_R(m, blocks, within=1.0, between=-0.5).double()
    assert torch.linalg.matrix_rank(R) == m
    assert torch.linalg.matrix_rank(R + torch.eye(m, dtype=torch.float64)) <= blocks


def test_the_registry_loads_every_synthetic_set_by_name_with_its_recipe():
    from fmlib.data import DATASETS, load
    from fmlib.data.registry import RECIPES

    assert set(DATASETS) == {*movielens.SPECS, *RECIPES}
    app = load("synthetic")
    again = load("synthetic")
    assert app.name == "synthetic" and len(app) == 4000 and app.schema.num_fields == len(synthetic.demo_R())
    assert torch.equal(app.index, again.index) and torch.equal(app.rating, again.rating), (
        "a recipe is fixed by its seed"
    )
    assert load("synthetic-16").schema.num_fields == 16
    planted = load(synthetic.PLANTED_RANKS, seed=1)
    assert torch.equal(planted.rating, synthetic.planted_ranks(seed=1).rating)
    with pytest.raises(ValueError, match="unknown data set 'nope'; choose one of ml-100k"):
        load("nope")
    with pytest.raises(ValueError, match="no seed"):
        load("ml-100k", seed=1)
