"""MovieLens sources, one parser for both file formats, and the 12-field encoding.

Sources, tried in order (the first that yields data with the right counts wins):
  1. a directory the user names (``data_dir`` / ``--data-dir`` / ``FMLIB_DATA_DIR``) holding
     the original GroupLens files (or RecBole's atomic files); when one is named, it is the
     only source, and what is wrong with it is reported;
  2. the cache (``~/.cache/fmlib``, ``FMLIB_CACHE`` overrides), checksum-verified;
  3. the official GroupLens archive, checksum-verified;
  4. MovieLens 100K only: the copy inside the PyPI wheel ``recbole==1.2.1``, fetched with
     ``pip download --no-deps`` into a temporary directory (never installed).
Whatever served the data is written to the cache atomically (a temporary directory renamed
into place) so the next load is local. ``Dataset.source`` says which source served.

Fields: context = user_id, age (bucketed), gender, occupation, zip prefix,
rating-time year, month, weekday, hour; item = movie_id, release year, genres (multi-valued,
embeddings averaged: DPLR paper §3.2).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .dataset import Dataset
from .schema import Schema

ARCHIVE = "https://files.grouplens.org/datasets/movielens/{name}.zip"


@dataclass(frozen=True)
class Spec:
    ratings: int
    users: int
    movies: int
    archive_md5: str


SPECS = {
    "ml-100k": Spec(100_000, 943, 1_682, "0e33842e24a9c977be4e0107933c0723"),
    "ml-1m": Spec(1_000_209, 6_040, 3_883, "c4d9eecfca2ab87c1945afe126590906"),
}
RECBOLE_WHEEL = "recbole==1.2.1"
GENRES_100K = [
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
]
FRAMES = ("ratings", "users", "movies")


class DataError(RuntimeError):
    """No source could provide the data set; the message lists each source and why."""


@dataclass
class Frames:
    ratings: pd.DataFrame  # user_id, movie_id, rating, timestamp
    users: pd.DataFrame  # user_id, age, gender, occupation, zip
    movies: pd.DataFrame  # movie_id, title, year (float, NaN if unknown), genres ("|"-joined)


# ---------------------------------------------------------------- parsing (both formats)


def read_frames(directory: Path) -> Frames:
    """Parse a directory holding GroupLens files (ml-100k u.*, ml-1m *.dat) or RecBole atomic files."""
    d = Path(directory)
    if (d / "u.data").exists() or (d / "u.item").exists() or (d / "u.user").exists():
        return _read_100k(d)
    if (d / "ratings.dat").exists() or (d / "movies.dat").exists():
        return _read_1m(d)
    atomic = sorted(d.glob("*.inter"))
    if atomic:
        return _read_atomic(d, atomic[0].stem)
    raise DataError(
        f"{d}: no MovieLens files found (expected u.data/u.user/u.item, "
        "ratings.dat/users.dat/movies.dat, or RecBole .inter/.user/.item files)"
    )


def _need(d: Path, *names: str) -> None:
    missing = [n for n in names if not (d / n).exists()]
    if missing:
        raise DataError(f"{d}: missing file(s) {', '.join(missing)}")


def _split_title(title: str) -> tuple[str, float]:
    """'Toy Story (1995)' -> ('Toy Story', 1995.0)."""
    m = re.match(r"^(.*?)\s*\((\d{4})\)\s*$", title)
    return (m.group(1), float(m.group(2))) if m else (title.strip(), np.nan)


def _read_100k(d: Path) -> Frames:
    _need(d, "u.data", "u.user", "u.item")
    ratings = pd.read_csv(d / "u.data", sep="\t", header=None, names=["user_id", "movie_id", "rating", "timestamp"])
    users = pd.read_csv(
        d / "u.user", sep="|", header=None, names=["user_id", "age", "gender", "occupation", "zip"], dtype={"zip": str}
    )
    items = pd.read_csv(
        d / "u.item",
        sep="|",
        header=None,
        encoding="latin-1",
        names=["movie_id", "title", "release", "video", "url", *GENRES_100K],
    )
    flags = items[GENRES_100K].to_numpy(dtype=bool)
    genres = ["|".join(g for g, on in zip(GENRES_100K, row) if on) or "unknown" for row in flags]
    release = pd.to_datetime(items["release"], format="%d-%b-%Y", errors="coerce")
    movies = pd.DataFrame(
        {
            "movie_id": items["movie_id"],
            "title": [_split_title(str(t))[0] for t in items["title"]],
            "year": release.dt.year.astype(float),
            "genres": genres,
        }
    )
    return _typed(Frames(ratings, users, movies))


def _read_1m(d: Path) -> Frames:
    _need(d, "ratings.dat", "users.dat", "movies.dat")
    read = dict(sep="::", header=None, engine="python", encoding="latin-1")
    ratings = pd.read_csv(d / "ratings.dat", names=["user_id", "movie_id", "rating", "timestamp"], **read)
    users = pd.read_csv(
        d / "users.dat", names=["user_id", "gender", "age", "occupation", "zip"], dtype={"zip": str}, **read
    )
    raw = pd.read_csv(d / "movies.dat", names=["movie_id", "title", "genres"], **read)
    split = [_split_title(str(t)) for t in raw["title"]]
    movies = pd.DataFrame(
        {
            "movie_id": raw["movie_id"],
            "title": [s[0] for s in split],
            "year": [s[1] for s in split],
            "genres": raw["genres"],
        }
    )
    return _typed(Frames(ratings, users[["user_id", "age", "gender", "occupation", "zip"]], movies))


def _read_atomic(d: Path, stem: str) -> Frames:
    """RecBole atomic files: tab-separated, typed headers ('user_id:token'), 'unkonwn' years."""
    _need(d, f"{stem}.inter", f"{stem}.user", f"{stem}.item")

    def read(ext):
        df = pd.read_csv(d / f"{stem}.{ext}", sep="\t", dtype=str, keep_default_na=False)
        return df.rename(columns=lambda c: c.split(":")[0])

    inter, user, item = read("inter"), read("user"), read("item")
    ratings = inter.rename(columns={"item_id": "movie_id"})[["user_id", "movie_id", "rating", "timestamp"]]
    users = user.rename(columns={"zip_code": "zip"})[["user_id", "age", "gender", "occupation", "zip"]]
    movies = pd.DataFrame(
        {
            "movie_id": item["item_id"],
            "title": item["movie_title"],
            "year": pd.to_numeric(item["release_year"], errors="coerce"),  # 'unkonwn' -> NaN
            "genres": item["class"].str.split().str.join("|").replace("", "unknown"),
        }
    )
    return _typed(Frames(ratings, users, movies))


def _typed(f: Frames) -> Frames:
    r = f.ratings.astype({"user_id": "int64", "movie_id": "int64", "rating": "float64"})
    r["timestamp"] = pd.to_numeric(r["timestamp"]).astype("int64")
    u = f.users.astype({"user_id": "int64", "age": "int64", "gender": str, "occupation": str, "zip": str})
    m = f.movies.astype({"movie_id": "int64", "title": str, "year": "float64", "genres": str})
    return Frames(r.reset_index(drop=True), u.reset_index(drop=True), m.reset_index(drop=True))


def validate(name: str, frames: Frames) -> None:
    """Accept the data only with the published counts (and ratings that join users and movies)."""
    spec = SPECS[name]
    got = (len(frames.ratings), frames.users["user_id"].nunique(), frames.movies["movie_id"].nunique())
    want = (spec.ratings, spec.users, spec.movies)
    if got != want:
        raise DataError(f"counts (ratings, users, movies) are {got}, expected {want} for {name}")
    if (
        not frames.ratings["user_id"].isin(frames.users["user_id"]).all()
        or not frames.ratings["movie_id"].isin(frames.movies["movie_id"]).all()
    ):
        raise DataError("some ratings name users or movies that are not in the user/movie files")


# ---------------------------------------------------------------- sources


def cache_root() -> Path:
    return Path(os.environ.get("FMLIB_CACHE", Path.home() / ".cache" / "fmlib"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_cache(name: str, root: Path) -> tuple[Frames, str]:
    d = root / name
    manifest_path = d / "manifest.json"
    if not manifest_path.exists():
        raise DataError(f"no cache at {d}")
    manifest = json.loads(manifest_path.read_text())
    for frame in FRAMES:
        path = d / f"{frame}.csv"
        if not path.exists() or _sha256(path) != manifest["sha256"].get(frame):
            raise DataError(f"cache file {path} is missing or corrupt (checksum mismatch)")
    frames = Frames(
        *(
            pd.read_csv(
                d / f"{frame}.csv",
                keep_default_na=True,
                dtype={"zip": str, "gender": str, "occupation": str, "title": str},
            )
            for frame in FRAMES
        )
    )
    return _typed(frames), manifest["origin"]


def write_cache(name: str, root: Path, frames: Frames, origin: str) -> None:
    """Write frames + manifest into a temporary directory, then rename it into place."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        sums = {}
        for frame in FRAMES:
            path = tmp / f"{frame}.csv"
            getattr(frames, frame).to_csv(path, index=False)
            sums[frame] = _sha256(path)
        (tmp / "manifest.json").write_text(json.dumps({"origin": origin, "sha256": sums}, indent=1))
        final = root / name
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch_archive(name: str, workdir: Path, timeout: float = 20) -> Path:
    """Download the GroupLens zip, check its MD5, extract it; return the directory of files."""
    url = ARCHIVE.format(name=name)
    with urllib.request.urlopen(url, timeout=timeout) as response:
        blob = response.read()
    md5 = hashlib.md5(blob).hexdigest()
    if md5 != SPECS[name].archive_md5:
        raise DataError(f"{url}: checksum {md5} != published {SPECS[name].archive_md5}")
    zipfile.ZipFile(io.BytesIO(blob)).extractall(workdir)
    return workdir / name


def fetch_recbole_wheel(workdir: Path, timeout: float = 300) -> Path:
    """``pip download --no-deps recbole==1.2.1`` and extract its ml-100k atomic files."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(workdir), RECBOLE_WHEEL]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wheels = list(workdir.glob("recbole-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel was downloaded"])[-1]
        raise DataError(f"pip download {RECBOLE_WHEEL} failed: {last}")
    inner = "recbole/dataset_example/ml-100k/"
    with zipfile.ZipFile(wheels[0]) as wheel:
        for ext in ("inter", "user", "item"):
            (workdir / f"ml-100k.{ext}").write_bytes(wheel.read(f"{inner}ml-100k.{ext}"))
    return workdir


def load_frames(
    name: str = "ml-100k", data_dir: str | Path | None = None, cache_dir: str | Path | None = None, log=None
) -> tuple[Frames, str]:
    """Try every source in order; return the validated frames and which source served them."""
    if name not in SPECS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(SPECS)}")
    log = log or (lambda msg: None)
    data_dir = data_dir or os.environ.get("FMLIB_DATA_DIR")
    root = Path(cache_dir) if cache_dir else cache_root()
    failures = []

    def attempt(label, produce):
        try:
            frames = produce()
            validate(name, frames)
            return frames
        except Exception as err:  # each source's failure is reported, then the next is tried
            failures.append(f"{label}: {err}")
            log(f"{label} failed: {err}")
            return None

    if data_dir:  # a directory the user names is used or reported, never silently skipped
        frames = read_frames(Path(data_dir))
        validate(name, frames)
        return frames, f"directory {data_dir}"
    try:
        frames, origin = read_cache(name, root)
        validate(name, frames)
        return frames, f"cache {root / name} (from {origin})"
    except Exception as err:
        failures.append(f"cache {root / name}: {err}")
    remote = [("GroupLens archive", lambda tmp: read_frames(fetch_archive(name, tmp)))]
    if name == "ml-100k":
        remote.append((f"PyPI wheel {RECBOLE_WHEEL}", lambda tmp: read_frames(fetch_recbole_wheel(tmp))))
    for label, produce in remote:
        log(f"fetching {name} from {label} ...")
        with tempfile.TemporaryDirectory() as tmp:
            frames = attempt(label, lambda produce=produce, tmp=tmp: produce(Path(tmp)))
        if frames is not None:
            write_cache(name, root, frames, label)
            return frames, label
    raise DataError(
        f"{name} is not on this machine and could not be downloaded: fetch {ARCHIVE.format(name=name)} where there "
        f"is internet, unzip it, and run `python -m fmlib data fetch --dataset {name} --data-dir <the unzipped "
        f"folder>` once (or set FMLIB_DATA_DIR to it).\nSources tried:\n  - " + "\n  - ".join(failures)
    )


# ---------------------------------------------------------------- encoding

AGE_BUCKETS = [18, 25, 35, 45, 50, 56]  # MovieLens 1M's age groups: <18, 18-24, ..., 56+


def fields_frame(frames: Frames) -> pd.DataFrame:
    """One row per rating with the raw value of every field (genres '|'-joined)."""
    df = frames.ratings.merge(frames.users, on="user_id", how="left").merge(frames.movies, on="movie_id", how="left")
    t = pd.to_datetime(df["timestamp"], unit="s", utc=True)
    age = np.digitize(df["age"].to_numpy(), AGE_BUCKETS)
    age_labels = ["<18", "18-24", "25-34", "35-44", "45-49", "50-55", "56+"]
    year = df["year"]
    return pd.DataFrame(
        {
            "user_id": df["user_id"].astype(str),
            "age": [age_labels[a] for a in age],
            "gender": df["gender"],
            "occupation": df["occupation"].astype(str),
            "zip": df["zip"].str[:1],
            "time_year": t.dt.year.astype(str),
            "time_month": t.dt.month.astype(str),
            "time_weekday": t.dt.day_name(),
            "time_hour": t.dt.hour.astype(str),
            "movie_id": df["movie_id"].astype(str),
            "release_year": year.map(lambda y: "unknown" if np.isnan(y) else str(int(y))),
            "genres": df["genres"],
        }
    )


FIELDS = [  # (name, role, kind)
    ("user_id", "context", "single"),
    ("age", "context", "single"),
    ("gender", "context", "single"),
    ("occupation", "context", "single"),
    ("zip", "context", "single"),
    ("time_year", "context", "single"),
    ("time_month", "context", "single"),
    ("time_weekday", "context", "single"),
    ("time_hour", "context", "single"),
    ("movie_id", "item", "single"),
    ("release_year", "item", "single"),
    ("genres", "item", "multi"),
]


def _natural(v: str):
    """Sort numbers numerically, then words: hours 0..23, years in order."""
    return (0, float(v), "") if re.fullmatch(r"-?\d+(\.\d+)?", v) else (1, 0.0, v)


def encode(raw: pd.DataFrame, fields=FIELDS):
    """Give every distinct value of every field a row (local index 0 = rare bucket)."""
    specs, values, index_cols, weight_cols = [], [], [], []
    offset = 0
    for name, role, kind in fields:
        if kind == "multi":
            lists = raw[name].str.split("|")
            flat, lengths = lists.explode(), lists.str.len().to_numpy()
            pos = flat.groupby(level=0).cumcount().to_numpy()
        else:
            flat, lengths, pos = raw[name], np.ones(len(raw), dtype=np.int64), 0
        vocab = sorted(flat.unique(), key=_natural)
        codes = pd.Categorical(flat, categories=vocab).codes.astype(np.int64) + 1 + offset
        rows = flat.index.to_numpy()
        slots = int(lengths.max())
        idx = np.full((len(raw), slots), offset, dtype=np.int64)  # padding -> rare bucket, weight 0
        wts = np.zeros((len(raw), slots), dtype=np.float32)
        idx[rows, pos] = codes
        wts[rows, pos] = 1.0 / lengths[rows]
        specs.append((name, role, kind, len(vocab) + 1, slots))
        values.append(["<rare>", *vocab])
        index_cols.append(idx)
        weight_cols.append(wts)
        offset += len(vocab) + 1
    return (
        Schema.build(specs, values),
        torch.from_numpy(np.hstack(index_cols)),
        torch.from_numpy(np.hstack(weight_cols)),
    )


ENCODING = 1  # bump when fields_frame/encode change, so cached tensors of an old encoding are not used


def _encoded(frames: Frames, cache_file: Path | None):
    """(schema, index, weight) of ``encode(fields_frame(frames))``, read from ``cache_file`` when
    it exists (its name carries the checksums of the cached frames and ``ENCODING``), else
    computed and written there atomically (a temporary file renamed into place)."""
    if cache_file is not None and cache_file.exists():
        try:
            saved = torch.load(cache_file)
            return Schema.from_dict(saved["schema"]), saved["index"], saved["weight"]
        except Exception:  # unreadable or partial: encode again and overwrite it
            pass
    schema, index, weight = encode(fields_frame(frames))
    if cache_file is not None:
        fd, tmp = tempfile.mkstemp(prefix=".encoded-", dir=cache_file.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                torch.save({"schema": schema.to_dict(), "index": index, "weight": weight}, out)
            os.replace(tmp, cache_file)
        finally:
            Path(tmp).unlink(missing_ok=True)
    return schema, index, weight


def encoded_cache_file(name: str, root: Path) -> Path | None:
    """Where the encoded tensors of the cached ``name`` live: beside its frames, keyed by the
    frames' checksums (manifest.json) and ``ENCODING``; None when there is no cache."""
    manifest = root / name / "manifest.json"
    if not manifest.exists():
        return None
    key = hashlib.sha256(manifest.read_bytes() + str(ENCODING).encode()).hexdigest()[:16]
    return root / name / f"encoded-{key}.pt"


def load(name: str = "ml-100k", data_dir=None, cache_dir=None, log=None) -> Dataset:
    """MovieLens as a Dataset of all ratings, every value of every field encoded.

    When the frames come from the cache, the encoded tensors are cached beside them."""
    frames, source = load_frames(name, data_dir, cache_dir, log)
    from_cache = not (data_dir or os.environ.get("FMLIB_DATA_DIR"))
    root = Path(cache_dir) if cache_dir else cache_root()
    schema, index, weight = _encoded(frames, encoded_cache_file(name, root) if from_cache else None)
    return Dataset(
        schema=schema,
        index=index,
        weight=weight,
        rating=torch.tensor(frames.ratings["rating"].to_numpy(), dtype=torch.float32),
        name=name,
        source=source,
        frame=frames.ratings[["user_id", "movie_id", "rating", "timestamp"]].copy(),
        movies=frames.movies,
        rating_range=(1.0, 5.0),
    )
