"""MovieLens 100K, 1M, 10M, 20M and 25M: sources, validation, cache, ``load``.

Sources, tried in order (the first that yields data with the right counts wins):
  1. a directory the user names (``data_dir`` / ``--data-dir`` / ``FMLIB_DATA_DIR``) holding
     the original GroupLens files (or RecBole's atomic files of 100K); when one is named, it is
     the only source, and what is wrong with it is reported;
  2. the cache (``~/.cache/fmlib``, ``FMLIB_CACHE`` overrides), checksum-verified;
  3. the official GroupLens archive, checksum-verified;
  4. MovieLens 100K only: the copy inside the PyPI wheel ``recbole==1.2.1``, fetched with
     ``pip download --no-deps`` into a temporary directory (never installed).
Whatever served the data is written to the cache atomically (a temporary directory renamed
into place) so the next load is local. ``Dataset.source`` says which source served.

The files' layouts are parsed by ``grouplens``; the fields and their encoding are ``encoding``'s
(10M and later describe no users: their samples have no demographic fields). A data set is
accepted only with its published counts of ratings, users and movies.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from . import encoding
from .dataset import Dataset
from .encoding import DEMOGRAPHICS, encode
from .grouplens import LAYOUTS, RATING_COLUMNS, DataError, Frames, detect, read, read_ratings, typed

ARCHIVE = "https://files.grouplens.org/datasets/movielens/{name}.zip"


@dataclass(frozen=True)
class Spec:
    ratings: int  # published counts: ratings, users who rate, movies in the movie file
    users: int
    movies: int
    archive_md5: str  # GroupLens's <name>.zip.md5
    layouts: tuple[str, ...]  # the ``grouplens.LAYOUTS`` its files come in
    folder: str  # the folder the archive unpacks to

    @property
    def rating_range(self) -> tuple[float, float]:
        lowest, highest, _ = LAYOUTS[self.layouts[0]].scale
        return lowest, highest


SPECS = {
    "ml-100k": Spec(100_000, 943, 1_682, "0e33842e24a9c977be4e0107933c0723", ("u.data", "atomic"), "ml-100k"),
    "ml-1m": Spec(1_000_209, 6_040, 3_883, "c4d9eecfca2ab87c1945afe126590906", ("users.dat",), "ml-1m"),
    # 10M's README counts 71,567 users, those who only tagged included; 69,878 of them rate
    "ml-10m": Spec(10_000_054, 69_878, 10_681, "ce571fd55effeba0271552578f2648bd", ("ratings.dat",), "ml-10M100K"),
    "ml-20m": Spec(20_000_263, 138_493, 27_278, "cd245b17a1ae2cc31bb14903e1204af3", ("ratings.csv",), "ml-20m"),
    "ml-25m": Spec(25_000_095, 162_541, 62_423, "6b51fb2759a8657d3bfcbfc42b592ada", ("ratings.csv",), "ml-25m"),
}
RECBOLE_WHEEL = "recbole==1.2.1"
FRAMES = ("ratings", "users", "movies")


def read_frames(directory: Path, name: str | None = None) -> Frames:
    """Parse a directory of GroupLens files (or RecBole's atomic files of 100K): the layout that
    data set ``name`` comes in, or, without a name, whichever layout the files are in. Another
    data set's files, or missing files, are named."""
    d = Path(directory)
    layouts = SPECS[name].layouts if name else tuple(LAYOUTS)
    mine, complete = detect(d, layouts)
    if not complete:
        other, other_complete = detect(d)
        if other_complete:
            theirs = ", ".join(n for n, s in SPECS.items() if other in s.layouts)
            raise DataError(
                f"{d}: holds {', '.join(LAYOUTS[other].files)}, the files of {theirs}, not those of {name} "
                f"({', '.join(LAYOUTS[layouts[0]].files)})"
            )
        if mine is None:
            expected = " or ".join("/".join(LAYOUTS[lay].files) for lay in layouts)
            raise DataError(f"{d}: no MovieLens files found (expected {expected})")
    return read(d, mine)


def validate(name: str, frames: Frames) -> None:
    """Accept the data only with the published counts (and ratings that join users and movies)."""
    spec = SPECS[name]
    got = (len(frames.ratings), frames.users["user_id"].nunique(), frames.movies["movie_id"].nunique())
    if got != (spec.ratings, spec.users, spec.movies):
        where = frames.files.get("ratings", "the ratings")
        theirs = [n for n, s in SPECS.items() if got == (s.ratings, s.users, s.movies)]
        raise DataError(
            f"{where}: {got[0]:,} ratings by {got[1]:,} users of {got[2]:,} movies, expected {spec.ratings:,} by "
            f"{spec.users:,} of {spec.movies:,} for {name}"
            + (f" (these are {theirs[0]}'s counts)" if theirs else " (a truncated or altered file?)")
        )
    if (
        not frames.ratings["user_id"].isin(frames.users["user_id"]).all()
        or not frames.ratings["movie_id"].isin(frames.movies["movie_id"]).all()
    ):
        raise DataError("some ratings name users or movies that are not in the user/movie files")


# ---------------------------------------------------------------- sources


def cache_root() -> Path:
    return Path(os.environ.get("FMLIB_CACHE", Path.home() / ".cache" / "fmlib"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            digest.update(chunk)
    return digest.hexdigest()


CACHE_COLUMNS = {  # how the cached users and movies read back (a title or zip of digits stays text)
    "users": dict(dtype={"gender": str, "occupation": str, "zip": str}),
    "movies": dict(dtype={"title": str, "genres": str}, keep_default_na=False, na_values={"year": [""]}),
}


def read_cache(name: str, root: Path) -> tuple[Frames, str]:
    d = root / name
    manifest_path = d / "manifest.json"
    if not manifest_path.exists():
        raise DataError(f"no cache at {d}")
    manifest = json.loads(manifest_path.read_text())
    files = {frame: d / f"{frame}.csv" for frame in FRAMES}
    for frame, path in files.items():
        if not path.exists() or _sha256(path) != manifest["sha256"].get(frame):
            raise DataError(f"cache file {path} is missing or corrupt (checksum mismatch)")
    ratings = read_ratings(files["ratings"], sep=",", header=",".join(RATING_COLUMNS))
    users, movies = (pd.read_csv(files[frame], **CACHE_COLUMNS[frame]) for frame in ("users", "movies"))
    return typed(ratings, users, movies, files), manifest["origin"]


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
    """Download the GroupLens zip (in chunks, to a file), check its MD5, extract it; return the
    directory of files."""
    url = ARCHIVE.format(name=name)
    spec = SPECS[name]
    archive, md5 = workdir / f"{name}.zip", hashlib.md5()
    with urllib.request.urlopen(url, timeout=timeout) as response, open(archive, "wb") as out:
        for chunk in iter(lambda: response.read(1 << 20), b""):
            md5.update(chunk)
            out.write(chunk)
    if md5.hexdigest() != spec.archive_md5:
        raise DataError(f"{url}: checksum {md5.hexdigest()} != published {spec.archive_md5}")
    with zipfile.ZipFile(archive) as z:
        z.extractall(workdir)
    archive.unlink()
    return workdir / spec.folder


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
        frames = read_frames(Path(data_dir), name)
        validate(name, frames)
        return frames, f"directory {data_dir}"
    try:
        frames, origin = read_cache(name, root)
        validate(name, frames)
        return frames, f"cache {root / name} (from {origin})"
    except Exception as err:
        failures.append(f"cache {root / name}: {err}")
    remote = [("GroupLens archive", lambda tmp: read_frames(fetch_archive(name, tmp), name))]
    if name == "ml-100k":
        remote.append((f"PyPI wheel {RECBOLE_WHEEL}", lambda tmp: read_frames(fetch_recbole_wheel(tmp), name)))
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

ENCODING = 2  # bump when ``encoding`` changes, so cached arrays of an old encoding are not used


def _encoded(frames: Frames, cache_file: Path | None) -> encoding.Encoded:
    """``encode(frames)``, read from ``cache_file`` when it exists (its name carries the checksums
    of the cached frames and ``ENCODING``), else computed and written there atomically."""
    if cache_file is not None and cache_file.exists():
        try:
            return encoding.load(cache_file)
        except Exception:  # unreadable or partial: encode again and overwrite it
            pass
    encoded = encode(frames)
    if cache_file is not None:
        encoding.save(cache_file, encoded)
    return encoded


def encoded_cache_file(name: str, root: Path) -> Path | None:
    """Where the encoded arrays of the cached ``name`` live: beside its frames, keyed by the
    frames' checksums (manifest.json) and ``ENCODING``; None when there is no cache."""
    manifest = root / name / "manifest.json"
    if not manifest.exists():
        return None
    key = hashlib.sha256(manifest.read_bytes() + str(ENCODING).encode()).hexdigest()[:16]
    return root / name / f"encoded-{key}.npz"


def encode_into_cache(name: str, root: Path, frames: Frames) -> None:
    """Encode the frames just cached under ``root`` beside them, unless that is done."""
    path = encoded_cache_file(name, root)
    if path is not None and not path.exists():
        encoding.save(path, encode(frames))


def absent_fields(schema) -> list[str]:
    """The demographic fields a data set's files do not hold (all of them from 10M on)."""
    return [f for f in DEMOGRAPHICS if f not in schema.names]


def load(name: str = "ml-100k", data_dir=None, cache_dir=None, log=None) -> Dataset:
    """MovieLens as a Dataset of all ratings, every value of every field encoded, weights lean.

    When the frames come from the cache, the encoded arrays are cached beside them."""
    frames, source = load_frames(name, data_dir, cache_dir, log)
    from_cache = not (data_dir or os.environ.get("FMLIB_DATA_DIR"))
    root = Path(cache_dir) if cache_dir else cache_root()
    encoded = _encoded(frames, encoded_cache_file(name, root) if from_cache else None)
    return Dataset(
        schema=encoded.schema,
        index=encoded.index,
        weight=None,
        counts=encoded.counts,
        rating=torch.tensor(frames.ratings["rating"].to_numpy()),  # float32 (the frame's column is read-only)
        name=name,
        source=source,
        frame=frames.ratings,
        movies=frames.movies,
        rating_range=SPECS[name].rating_range,
    )
