"""GroupLens's MovieLens files (and RecBole's atomic copy of 100K) parsed into ``Frames``.

Layouts, recognised by the files a folder holds:
  ``u.data``       100K: u.data (tab), u.user and u.item ('|'), whole stars 1–5
  ``users.dat``    1M: ratings.dat, users.dat, movies.dat ('::'), whole stars 1–5
  ``ratings.dat``  10M: ratings.dat and movies.dat ('::'), half stars 0.5–5, no users file
  ``ratings.csv``  20M and 25M: ratings.csv and movies.csv (comma, a header, quoted titles), half stars
  ``atomic``       RecBole's ml-100k.inter, .user and .item (tab, typed headers)
Only 100K and 1M describe their users (age, gender, occupation, zip); from 10M on a user is an id.
Bad input is one ``DataError`` line naming the file and the line: a line that is not a rating
(a truncated file), a rating off the layout's scale, a rating of a movie (or user) the movie (user)
file does not list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

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
WHOLE_STARS = (1.0, 5.0, 1.0)  # (lowest, highest, step) of a rating
HALF_STARS = (0.5, 5.0, 0.5)
RATING_COLUMNS = {"user_id": np.int32, "movie_id": np.int32, "rating": np.float32, "timestamp": np.int64}


class DataError(RuntimeError):
    """No source could provide the data set, or its files are not what they should be."""


@dataclass
class Frames:
    ratings: pd.DataFrame  # user_id (int32), movie_id (int32), rating (float32), timestamp (int64 seconds)
    users: pd.DataFrame  # user_id, and age, gender, occupation, zip where the files describe users
    movies: pd.DataFrame  # movie_id, title, year (float, NaN if unknown), genres ("|"-joined)
    files: dict[str, Path] = field(default_factory=dict)  # frame -> the file it was read from


@dataclass(frozen=True)
class Layout:
    files: tuple[str, ...]  # the files it needs
    scale: tuple[float, float, float]  # its ratings' (lowest, highest, step)


LAYOUTS = {
    "u.data": Layout(("u.data", "u.user", "u.item"), WHOLE_STARS),
    "users.dat": Layout(("ratings.dat", "users.dat", "movies.dat"), WHOLE_STARS),
    "ratings.dat": Layout(("ratings.dat", "movies.dat"), HALF_STARS),
    "ratings.csv": Layout(("ratings.csv", "movies.csv"), HALF_STARS),
    "atomic": Layout(("ml-100k.inter", "ml-100k.user", "ml-100k.item"), WHOLE_STARS),
}


def detect(directory: Path, layouts=tuple(LAYOUTS)) -> tuple[str | None, bool]:
    """The layout among ``layouts`` whose files are in ``directory`` (all of them, else most; the
    first listed on a tie; None when none is), and whether all of its files are."""
    present = {name: sum((directory / f).exists() for f in LAYOUTS[name].files) for name in layouts}
    complete = {name: n == len(LAYOUTS[name].files) for name, n in present.items()}
    best = max(layouts, key=lambda name: (complete[name], present[name]))
    return (best, complete[best]) if present[best] else (None, False)


def read(directory: Path, layout: str) -> Frames:
    """Parse the files of ``layout`` in ``directory`` and check every rating against them."""
    d = Path(directory)
    missing = [f for f in LAYOUTS[layout].files if not (d / f).exists()]
    if missing:
        raise DataError(f"{d}: missing file(s) {', '.join(missing)}")
    frames = PARSERS[layout](d)
    _check_ratings(frames, LAYOUTS[layout].scale, header=layout in ("ratings.csv", "atomic"))
    return frames


def split_title(title: str) -> tuple[str, float]:
    """'Toy Story (1995)' -> ('Toy Story', 1995.0); no year in brackets at the end -> NaN."""
    m = re.match(r"^(.*?)\s*\((\d{4})\)\s*$", title)
    return (m.group(1), float(m.group(2))) if m else (title.strip(), np.nan)


def _movies(ids, titles, genres) -> pd.DataFrame:
    split = [split_title(str(t)) for t in titles]
    return pd.DataFrame(
        {"movie_id": ids, "title": [s[0] for s in split], "year": [s[1] for s in split], "genres": genres}
    )


def _read_100k(d: Path) -> Frames:
    ratings = read_ratings(d / "u.data", sep="\t")
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
            "title": [split_title(str(t))[0] for t in items["title"]],
            "year": release.dt.year.astype(float),
            "genres": genres,
        }
    )
    return typed(ratings, users, movies, {"ratings": d / "u.data", "users": d / "u.user", "movies": d / "u.item"})


def _read_1m(d: Path) -> Frames:
    read = dict(sep="::", header=None, engine="python", encoding="latin-1")  # small files
    users = pd.read_csv(
        d / "users.dat", names=["user_id", "gender", "age", "occupation", "zip"], dtype={"zip": str}, **read
    )
    raw = pd.read_csv(d / "movies.dat", names=["movie_id", "title", "genres"], **read)
    return typed(
        read_ratings(d / "ratings.dat", sep="::"),
        users[["user_id", "age", "gender", "occupation", "zip"]],
        _movies(raw["movie_id"], raw["title"], raw["genres"]),
        {"ratings": d / "ratings.dat", "users": d / "users.dat", "movies": d / "movies.dat"},
    )


def _read_10m(d: Path) -> Frames:
    """ratings.dat as 1M's; movies.dat 'MovieID::Title::Genres', titles holding ':' (UTF-8, else Latin-1)."""
    blob = (d / "movies.dat").read_bytes()
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        text = blob.decode("latin-1")
    rows = []
    for n, line in enumerate(text.rstrip("\n").split("\n"), 1):  # not splitlines: Latin-1 titles hold \x85
        line = line.rstrip("\r")
        head, sep, rest = line.partition("::")
        title, sep2, genres = rest.rpartition("::")
        if not (sep and sep2 and head.strip().isdigit()):
            raise DataError(f"{d / 'movies.dat'} line {n}: expected MovieID::Title::Genres, found {line[:60]!r}")
        rows.append((int(head), title, genres))
    ids, titles, genres = zip(*rows) if rows else ((), (), ())
    return _large(d, read_ratings(d / "ratings.dat", sep="::"), _movies(list(ids), titles, list(genres)), "dat")


def _read_csv(d: Path) -> Frames:
    """ratings.csv 'userId,movieId,rating,timestamp' and movies.csv 'movieId,title,genres' (UTF-8)."""
    movies = pd.read_csv(d / "movies.csv", dtype={"movieId": str, "title": str, "genres": str}, keep_default_na=False)
    if list(movies.columns) != ["movieId", "title", "genres"]:
        raise DataError(f"{d / 'movies.csv'} line 1: expected the header movieId,title,genres")
    bad = ~movies["movieId"].str.fullmatch(r"\d+")
    if bad.any():
        n = int(np.flatnonzero(bad)[0])
        raise DataError(f"{d / 'movies.csv'} line {n + 2}: expected movieId,title,genres")
    ratings = read_ratings(d / "ratings.csv", sep=",", header="userId,movieId,rating,timestamp")
    return _large(d, ratings, _movies(movies["movieId"].astype(np.int64), movies["title"], movies["genres"]), "csv")


def _large(d: Path, ratings: pd.DataFrame, movies: pd.DataFrame, ext: str) -> Frames:
    """10M and later: the users are the ids that rate (no users file)."""
    users = pd.DataFrame({"user_id": np.unique(ratings["user_id"].to_numpy())})
    return typed(ratings, users, movies, {"ratings": d / f"ratings.{ext}", "movies": d / f"movies.{ext}"})


def _read_atomic(d: Path) -> Frames:
    """RecBole atomic files: tab-separated, typed headers ('user_id:token'), 'unkonwn' years."""

    def read(ext):
        df = pd.read_csv(d / f"ml-100k.{ext}", sep="\t", dtype=str, keep_default_na=False)
        return df.rename(columns=lambda c: c.split(":")[0])

    inter, user, item = read("inter"), read("user"), read("item")
    ratings = inter.rename(columns={"item_id": "movie_id"})[["user_id", "movie_id", "rating", "timestamp"]]
    ratings = ratings.apply(pd.to_numeric).astype(RATING_COLUMNS)
    users = user.rename(columns={"zip_code": "zip"})[["user_id", "age", "gender", "occupation", "zip"]]
    movies = pd.DataFrame(
        {
            "movie_id": item["item_id"],
            "title": item["movie_title"],
            "year": pd.to_numeric(item["release_year"], errors="coerce"),  # 'unkonwn' -> NaN
            "genres": item["class"].str.split().str.join("|").replace("", "unknown"),
        }
    )
    files = {"ratings": d / "ml-100k.inter", "users": d / "ml-100k.user", "movies": d / "ml-100k.item"}
    return typed(ratings, users, movies, files)


PARSERS = {
    "u.data": _read_100k,
    "users.dat": _read_1m,
    "ratings.dat": _read_10m,
    "ratings.csv": _read_csv,
    "atomic": _read_atomic,
}


def read_ratings(path: Path, sep: str, header: str | None = None) -> pd.DataFrame:
    """user, movie, rating, timestamp per line, read by pandas' C engine ('::' read as ':' with
    empty fields between) block by block into arrays sized by the file's lines (so a 25M-line
    file costs its arrays, not a parser's leftovers); a line that is not four numbers is named."""
    names = list(RATING_COLUMNS)
    if sep == "::":
        columns = dict(sep=":", usecols=[0, 2, 4, 6], names=[names[0], "a", names[1], "b", names[2], "c", names[3]])
    else:
        columns = dict(sep=sep, names=names)
    skip = int(header is not None)
    if header is not None:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline().strip()
        if first != header:
            raise DataError(f"{path} line 1: expected the header {header}, found {first[:60]!r}")
    arrays = {c: np.empty(max(_count_lines(path) - skip, 0), t) for c, t in RATING_COLUMNS.items()}
    n = 0
    try:
        with pd.read_csv(
            path, header=None, skiprows=skip, dtype=RATING_COLUMNS, chunksize=1 << 21, **columns
        ) as blocks:
            for block in blocks:
                for c, a in arrays.items():
                    a[n : n + len(block)] = block[c].to_numpy()
                n += len(block)
    except (ValueError, OverflowError, pd.errors.ParserError) as err:  # a line that is no rating, an id past int32
        line = _first_bad_line(path, sep, skip)
        raise DataError(f"{path}{line or f': {err}'}") from None
    return pd.DataFrame({c: a[:n] for c, a in arrays.items()}, copy=False)


def _count_lines(path: Path) -> int:
    """Lines of a file, a last one without its newline included."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            n, last = n + chunk.count(b"\n"), chunk[-1:]
    return n + (last != b"\n")


def _first_bad_line(path: Path, sep: str, skip: int) -> str | None:
    """' line N: ...' for the first line that is not four numbers (a truncated file's last one)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\r\n").split(sep)
            if n > skip and (len(parts) != 4 or not all(re.fullmatch(r"-?\d+(\.\d*)?", p.strip()) for p in parts)):
                return f" line {n}: expected user{sep}movie{sep}rating{sep}timestamp, found {line.strip()[:60]!r}"
    return None


def typed(ratings: pd.DataFrame, users: pd.DataFrame, movies: pd.DataFrame, files=None) -> Frames:
    """Frames with their columns in fmlib's types: ids int32, rating float32 (compact for 25M rows)."""
    u = users.astype({"user_id": np.int32, **{c: str for c in ("gender", "occupation", "zip") if c in users}})
    if "age" in u:
        u["age"] = u["age"].astype(np.int64)
    m = movies.astype({"movie_id": np.int32, "title": str, "year": "float64", "genres": str})
    return Frames(ratings.astype(RATING_COLUMNS), u.reset_index(drop=True), m.reset_index(drop=True), files or {})


def _check_ratings(frames: Frames, scale: tuple[float, float, float], header: bool) -> None:
    """Every rating on the scale, of a listed movie (and user where users are listed)."""
    r = frames.ratings
    where = frames.files.get("ratings", "ratings")
    lowest, highest, step = scale
    allowed = np.arange(lowest, highest + step / 2, step, dtype=np.float32)
    checks = [
        (
            ~np.isin(r["rating"].to_numpy(), allowed),
            "rating",
            f"is off the scale {lowest:g}–{highest:g} in steps of {step:g}",
        ),
        (
            ~np.isin(r["movie_id"].to_numpy(), frames.movies["movie_id"].to_numpy()),
            "movie",
            f"is not in {frames.files.get('movies', 'the movies')}",
        ),
    ]
    if "users" in frames.files:
        listed = frames.users["user_id"].to_numpy()
        checks.append((~np.isin(r["user_id"].to_numpy(), listed), "user", f"is not in {frames.files['users']}"))
    for bad, what, why in checks:
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = r[{"rating": "rating", "movie": "movie_id", "user": "user_id"}[what]].iloc[row]
            raise DataError(f"{where} line {row + 1 + header}: {what} {value:g} {why}")
