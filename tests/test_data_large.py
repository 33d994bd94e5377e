"""MovieLens 10M, 20M and 25M (generated files in each layout), the lean integer-code encoding
against the string encoding it replaced, lean weights, the chunked encoded cache, bad input."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import zipfile
from dataclasses import replace

import legacy_encoding
import numpy as np
import pytest
import torch
from movielens_files import (
    LARGE_MOVIES,
    LARGE_RATINGS,
    MOVIES,
    RATINGS,
    USERS,
    write_generated,
    write_grouplens_10m,
    write_grouplens_100k,
    write_grouplens_csv,
)

from fmlib import cli
from fmlib.data import encoding, movielens, split
from fmlib.data.dataset import Dataset, slot_weights
from fmlib.data.movielens import SPECS, DataError
from fmlib.models import MODELS
from fmlib.train import TrainConfig, train_model

WRITERS = {"ml-10m": write_grouplens_10m, "ml-20m": write_grouplens_csv, "ml-25m": write_grouplens_csv}
RATINGS_FILE = {"ml-10m": "ratings.dat", "ml-20m": "ratings.csv", "ml-25m": "ratings.csv"}


def _tiny_specs(monkeypatch, *names, ratings=None, users=4, movies=None):
    """The published counts of ``names`` set to those of the generated files."""
    ratings, movies = ratings or len(LARGE_RATINGS), movies or len(LARGE_MOVIES)
    for name in names:
        monkeypatch.setitem(SPECS, name, replace(SPECS[name], ratings=ratings, users=users, movies=movies))


def _write_1m(d):
    d.mkdir(parents=True)
    (d / "ratings.dat").write_text("".join(f"{u}::{m}::{r}::{t}\n" for u, m, r, t in RATINGS))
    (d / "users.dat").write_text("".join(f"{u}::{g}::{a}::{i}::{z}\n" for i, (u, a, g, o, z) in enumerate(USERS)))
    (d / "movies.dat").write_bytes("".join(f"{m}::{t}::{'|'.join(g)}\n" for m, t, _, g in MOVIES).encode("latin-1"))
    return d


@pytest.mark.parametrize("name", list(WRITERS))
def test_each_new_layout_loads_with_its_own_fields(monkeypatch, tmp_path, name):
    _tiny_specs(monkeypatch, name)
    data = movielens.load(name, data_dir=WRITERS[name](tmp_path / name))
    assert data.schema.names == [
        "user_id",
        "time_year",
        "time_month",
        "time_weekday",
        "time_hour",
        "movie_id",
        "release_year",
        "genres",
    ]
    assert movielens.absent_fields(data.schema) == ["age", "gender", "occupation", "zip"]
    assert data.rating.tolist() == [r for _, _, r, _ in LARGE_RATINGS]  # half stars kept
    assert data.rating_range == (0.5, 5.0)
    genres = data.schema.field("genres")
    assert "(no genres listed)" in genres.values and genres.slots == 5  # Toy Story's five genres
    assert data.schema.field("movie_id").values[1:] == ("1", "2", "5", "32", "136", "8606")  # 140: never rated
    movies = data.movies.set_index("movie_id")
    assert movies.loc[136, "title"] == "Good, the Bad and the Ugly, The (Buono, il brutto, il cattivo, Il)"
    assert movies.loc[2, "title"] == "Star Wars: Episode IV - A New Hope" and np.isnan(movies.loc[140, "year"])
    assert data.index.dtype == torch.int32 and data.counts.dtype == torch.uint8


@pytest.mark.parametrize("layout", ["100k", "1m", "10m", "csv", "blocks"])
def test_the_integer_encoding_is_the_string_encoding(monkeypatch, tmp_path, layout):
    """Same fields, labels, value order, index values and weights as ENCODING 1 (tests/legacy_encoding.py)."""
    if layout == "blocks":  # many blocks of 7 ratings: block edges change nothing
        monkeypatch.setattr(encoding, "BLOCK", 7)
    write = {
        "100k": write_grouplens_100k,
        "1m": _write_1m,
        "10m": write_grouplens_10m,
        "csv": write_grouplens_csv,
        "blocks": lambda d: write_generated(d, "ratings.csv", 400, 30, 40, seed=3),
    }[layout]
    frames = movielens.read_frames(write(tmp_path / layout))
    specs, values, index, weight = legacy_encoding.encode(legacy_encoding.fields_frame(frames))
    encoded = encoding.encode(frames)
    assert [(f.name, f.role, f.kind, f.cardinality, f.slots) for f in encoded.schema.fields] == specs
    assert [list(f.values) for f in encoded.schema.fields] == values
    assert np.array_equal(encoded.index.numpy(), index)
    assert torch.equal(slot_weights(encoded.schema, encoded.counts), torch.from_numpy(weight))


def test_the_integer_encoding_of_movielens_100k_is_the_string_encoding():
    try:
        frames, _ = movielens.read_cache("ml-100k", movielens.cache_root())
    except DataError:
        pytest.skip("MovieLens 100K is not in the cache (python -m fmlib data fetch)")
    specs, values, index, weight = legacy_encoding.encode(legacy_encoding.fields_frame(frames))
    encoded = encoding.encode(frames)
    assert [list(f.values) for f in encoded.schema.fields] == values
    assert np.array_equal(encoded.index.numpy(), index)
    assert torch.equal(slot_weights(encoded.schema, encoded.counts), torch.from_numpy(weight))


def _generated(tmp_path, monkeypatch, n=3000):
    _tiny_specs(monkeypatch, "ml-25m", ratings=n, users=120, movies=90)
    return movielens.load("ml-25m", data_dir=write_generated(tmp_path / "gen", "ratings.csv", n, 120, 90, seed=5))


def test_lean_weights_read_as_the_full_weights(tmp_path, monkeypatch):
    data = _generated(tmp_path, monkeypatch)
    full = replace(data, weight=slot_weights(data.schema, data.counts), counts=None)
    assert data.__dict__["_weight"] is None, "no weight tensor is stored"
    rows = torch.tensor([5, 0, 2999, 17])
    for part in (rows, slice(10, 20)):
        index, weight = data.batch(part)
        assert index.dtype == torch.int64 and torch.equal(index, full.index[part].long())
        assert torch.equal(weight, full.weight[part])
    assert np.array_equal(data.feature_counts(), full.feature_counts())
    lean, dense = split(data, seed=1, min_count=3), split(full, seed=1, min_count=3)
    for a, b in ((lean.train, dense.train), (lean.test, dense.test)):
        assert a.counts is not None and a.__dict__["_weight"] is None and a.index.dtype == torch.int32
        assert torch.equal(a.index.long(), b.index) and torch.equal(a.weight, b.weight)
    assert data.weight.shape == (len(data), data.schema.num_slots) and data.__dict__["_weight"] is not None


def test_a_dataset_needs_weights_or_counts():
    with pytest.raises(ValueError, match="slot weights or the value counts"):
        Dataset(None, torch.zeros(2, 1, dtype=torch.long), None, torch.zeros(2))


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_trains_the_same_on_an_int32_index(tmp_path, monkeypatch, name):
    data = split(_generated(tmp_path, monkeypatch), seed=0)
    wide = replace(
        data,
        **{p: replace(getattr(data, p), index=getattr(data, p).index.long()) for p in ("train", "valid", "test")},
    )
    hp = {"rafm": {"ranks": (2, 4)}, "bfm": {"dim": 2, "burn_in": 1}}.get(name, {"dim": 4})
    runs = [train_model(name, d, TrainConfig(epochs=2, seed=0), **hp) for d in (data, wide)]
    assert runs[0].metrics == runs[1].metrics


def test_the_encoded_cache_round_trip_and_a_crash_leaves_none(tmp_path, monkeypatch):
    data = _generated(tmp_path, monkeypatch)
    root = tmp_path / "cache"
    frames, _ = movielens.load_frames("ml-25m", data_dir=tmp_path / "gen")
    movielens.write_cache("ml-25m", root, frames, "test")

    def crash(fp, array, **kw):
        fp.write(b"\x93NUMPY half")
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", crash)
    with pytest.raises(OSError, match="disk full"):
        movielens.load("ml-25m", cache_dir=root)
    assert sorted(p.name for p in (root / "ml-25m").iterdir()) == [
        "manifest.json",
        "movies.csv",
        "ratings.csv",
        "users.csv",
    ]
    monkeypatch.undo()
    _tiny_specs(monkeypatch, "ml-25m", ratings=3000, users=120, movies=90)
    first = movielens.load("ml-25m", cache_dir=root)
    monkeypatch.setattr(movielens, "encode", lambda frames: pytest.fail("the cached arrays must be used"))
    again = movielens.load("ml-25m", cache_dir=root)
    assert again.schema == data.schema == first.schema
    assert again.index.dtype == torch.int32 and torch.equal(again.index, data.index)
    assert torch.equal(again.counts, data.counts) and torch.equal(again.weight, data.weight)


def _bad(tmp_path, name, edit):
    d = WRITERS[name](tmp_path / name)
    path = d / RATINGS_FILE[name]
    lines = path.read_text().splitlines(keepends=True)
    h = HEADER[name]
    path.write_text("".join(lines[:h] + edit(lines[h:])))  # the edit sees the rating lines
    return d


HEADER = {"ml-10m": 0, "ml-20m": 1, "ml-25m": 1}
BAD = {  # what is wrong -> (edit of the ratings file's lines, what the message says after the file's name)
    "truncated": (lambda lines: [*lines[:-1], lines[-1][:5]], "line {last}: expected user"),
    "off the scale": (lambda lines: [*lines[:2], lines[2].replace("0.5", "5.5"), *lines[3:]], "line {third}: rating 5.5 is off the scale 0.5–5"),
    "unknown movie": (lambda lines: [*lines[:-1], lines[-1].replace("1", "99", 1)], "line {last}: movie 99 is not in"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(WRITERS))
@pytest.mark.parametrize("wrong", list(BAD))
def test_bad_ratings_are_one_line_naming_the_file_and_line(tmp_path, monkeypatch, capsys, name, wrong):
    edit, says = BAD[wrong]
    d = _bad(tmp_path, name, edit)
    h = HEADER[name]
    where = f"{d / RATINGS_FILE[name]} " + says.format(last=len(LARGE_RATINGS) + h, third=3 + h)
    monkeypatch.setenv("FMLIB_CACHE", str(tmp_path / "cache"))
    assert cli.main(["data", "fetch", "--dataset", name, "--data-dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and where in err, err
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir()), "nothing in the cache"


def test_data_info_exits_2_on_a_truncated_file(tmp_path):
    d = _bad(tmp_path, "ml-20m", BAD["truncated"][0])
    done = subprocess.run(
        [sys.executable, "-m", "fmlib", "data", "info", "--dataset", "ml-20m", "--data-dir", str(d)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{d / 'ratings.csv'} line 8: expected user,movie,rating,timestamp, found '7,1,4'" in done.stderr


def test_another_data_sets_files_are_named(tmp_path, monkeypatch, capsys):
    csv = write_grouplens_csv(tmp_path / "csv")
    assert cli.main(["data", "info", "--dataset", "ml-10m", "--data-dir", str(csv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "holds ratings.csv, movies.csv, the files of ml-20m, ml-25m, not those of ml-10m (ratings.dat" in err
    _tiny_specs(monkeypatch, "ml-20m")  # the generated files have "ml-20m's counts"
    assert cli.main(["data", "info", "--dataset", "ml-25m", "--data-dir", str(csv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{csv / 'ratings.csv'}: 7 ratings by 4 users of 7 movies, expected" in err
    assert "(these are ml-20m's counts)" in err


def test_data_info_lists_the_fields_and_what_the_files_lack(tmp_path, monkeypatch, capsys):
    _tiny_specs(monkeypatch, "ml-10m")
    assert cli.main(["data", "info", "--dataset", "ml-10m", "--data-dir", str(write_grouplens_10m(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "7 ratings, 4 users, 7 movies (6 rated), ratings 0.5–5" in out
    assert "fields:  8; the files describe no users, so no age, gender, occupation, zip" in out
    assert "genres        item     multi             11" in out
    assert "int32, loaded in" in out and "peak resident memory" in out


def _zip(name, folder, write, tmp_path):
    files = write(tmp_path / "unzipped")
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w") as z:
        for f in sorted(files.iterdir()):
            z.write(f, f"{folder}/{f.name}")
    return blob.getvalue()


def test_the_archive_is_checked_and_unpacked(tmp_path, monkeypatch):
    blob = _zip("ml-10m", "ml-10M100K", write_grouplens_10m, tmp_path)
    urls = []

    def urlopen(url, timeout):
        urls.append(url)
        return io.BytesIO(blob)

    monkeypatch.setattr(movielens.urllib.request, "urlopen", urlopen)
    _tiny_specs(monkeypatch, "ml-10m")
    with pytest.raises(DataError, match=r"GroupLens archive: .*checksum [0-9a-f]{32} != published ce571fd5"):
        movielens.load_frames("ml-10m", cache_dir=tmp_path / "cache")
    monkeypatch.setitem(SPECS, "ml-10m", replace(SPECS["ml-10m"], archive_md5=hashlib.md5(blob).hexdigest()))
    frames, source = movielens.load_frames("ml-10m", cache_dir=tmp_path / "cache")
    assert urls == ["https://files.grouplens.org/datasets/movielens/ml-10m.zip"] * 2
    assert source == "GroupLens archive" and len(frames.ratings) == len(LARGE_RATINGS)
    again, source = movielens.load_frames("ml-10m", cache_dir=tmp_path / "cache")
    assert source.startswith("cache") and again.ratings.equals(frames.ratings) and again.movies.equals(frames.movies)
