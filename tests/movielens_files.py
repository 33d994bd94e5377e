"""A tiny MovieLens-like data set, written in both file formats by the tests."""

USERS = [(1, 24, "M", "technician", "85711"), (2, 53, "F", "other", "94043"), (3, 17, "M", "student", "T8H1N")]
MOVIES = [
    (1, "Toy Story (1995)", "01-Jan-1995", ["Animation", "Children's", "Comedy"]),
    (2, "GoldenEye (1995)", "01-Jan-1995", ["Action", "Adventure", "Thriller"]),
    (3, "Four Rooms (1995)", "01-Jan-1995", ["Thriller"]),
    (4, "Unknown Film", "", ["unknown"]),
]
RATINGS = [
    (1, 1, 5, 874965758),
    (1, 2, 3, 876893171),
    (2, 1, 4, 878542960),
    (2, 3, 1, 876893119),
    (3, 4, 2, 889751712),
    (3, 2, 4, 875071561),
]


def write_grouplens_100k(d):
    from fmlib.data.grouplens import GENRES_100K

    d.mkdir(parents=True, exist_ok=True)
    (d / "u.data").write_text("".join(f"{u}\t{m}\t{r}\t{t}\n" for u, m, r, t in RATINGS))
    (d / "u.user").write_text("".join(f"{u}|{a}|{g}|{o}|{z}\n" for u, a, g, o, z in USERS))
    rows = []
    for m, title, date, genres in MOVIES:
        flags = "|".join("1" if g in genres else "0" for g in GENRES_100K)
        rows.append(f"{m}|{title}|{date}||http://example.org|{flags}\n")
    (d / "u.item").write_bytes("".join(rows).encode("latin-1"))
    return d


def write_recbole_atomic(d):
    d.mkdir(parents=True, exist_ok=True)
    (d / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        + "".join(f"{u}\t{m}\t{r}\t{t}\n" for u, m, r, t in RATINGS)
    )
    (d / "ml-100k.user").write_text(
        "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
        + "".join(f"{u}\t{a}\t{g}\t{o}\t{z}\n" for u, a, g, o, z in USERS)
    )
    items = []
    for m, title, date, genres in MOVIES:
        year = date[-4:] if date else "unkonwn"  # RecBole's spelling of a missing year
        items.append(f"{m}\t{title.rsplit(' (', 1)[0]}\t{year}\t{' '.join(genres)}\n")
    (d / "ml-100k.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n" + "".join(items)
    )
    return d


# MovieLens 10M, 20M and 25M: no users file, half-star ratings, genres with "(no genres listed)",
# titles with commas (quoted in the CSV files) and colons; movie 140 is listed but never rated.
LARGE_MOVIES = [
    (1, "Toy Story (1995)", ["Adventure", "Animation", "Children", "Comedy", "Fantasy"]),
    (2, "Star Wars: Episode IV - A New Hope (1977)", ["Action", "Adventure", "Sci-Fi"]),
    (5, "Father of the Bride Part II (1995)", ["Comedy"]),
    (32, "Twelve Monkeys (a.k.a. 12 Monkeys) (1995)", ["Mystery", "Sci-Fi", "Thriller"]),
    (136, "Good, the Bad and the Ugly, The (Buono, il brutto, il cattivo, Il) (1966)", ["Action", "Western"]),
    (140, "Unrated Film", ["Drama"]),
    (8606, "Pull My Daisy (1958)", ["(no genres listed)"]),
]
LARGE_RATINGS = [
    (1, 1, 4.0, 1112486027),
    (1, 2, 3.5, 1112484676),
    (2, 8606, 0.5, 974820889),
    (2, 136, 5.0, 974820691),
    (3, 32, 2.5, 1230858821),
    (3, 5, 1.0, 1230858877),
    (7, 1, 4.5, 1573944200),
]


def write_grouplens_10m(d, ratings=LARGE_RATINGS, movies=LARGE_MOVIES):
    """ratings.dat and movies.dat with '::' (the folder GroupLens's ml-10m.zip unpacks to is ml-10M100K)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "ratings.dat").write_text("".join(f"{u}::{m}::{r:g}::{t}\n" for u, m, r, t in ratings))
    (d / "movies.dat").write_text("".join(f"{m}::{title}::{'|'.join(g)}\n" for m, title, g in movies))
    return d


def write_grouplens_csv(d, ratings=LARGE_RATINGS, movies=LARGE_MOVIES):
    """ratings.csv and movies.csv of MovieLens 20M and 25M (header, quoted titles)."""
    import csv

    d.mkdir(parents=True, exist_ok=True)
    (d / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n" + "".join(f"{u},{m},{r:.1f},{t}\n" for u, m, r, t in ratings)
    )
    with open(d / "movies.csv", "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["movieId", "title", "genres"])
        out.writerows([m, title, "|".join(g)] for m, title, g in movies)
    return d


GENRES_LARGE = [
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary", "Drama", "Fantasy",
    "Film-Noir", "Horror", "IMAX", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western",
]  # fmt: skip


def write_generated(d, layout: str, ratings: int, users: int, movies: int, seed: int = 0):
    """A MovieLens-shaped file set of the given size in ``layout`` ('ratings.dat': 10M's, 'ratings.csv':
    20M's and 25M's), for measuring: every user rates, popular movies often (some never), half stars
    over 1995-2019, 1-10 genres per movie and about 1 % "(no genres listed)", some titles with commas
    and no year. E.g. MovieLens 25M's size: ``write_generated(d, "ratings.csv", 25_000_095, 162_541,
    62_423)`` (about 700 MB, a few minutes)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    movie_ids = np.sort(rng.choice(np.arange(1, 4 * movies), movies, replace=False))
    years = rng.integers(1902, 2020, movies)
    titles = [
        f"Movie {i}, The ({y})" if i % 7 == 0 else f"Movie {i}" if i % 101 == 0 else f"Movie {i}: Part {i % 3} ({y})"
        for i, y in zip(movie_ids, years)
    ]
    counts = rng.integers(1, 11, movies)
    genres = [
        "(no genres listed)" if i % 97 == 0 else "|".join(rng.choice(GENRES_LARGE, c, replace=False))
        for i, c in zip(movie_ids, counts)
    ]
    popular = rng.permutation(movies)
    chunk = 1 << 22
    user_of = np.sort(np.concatenate([np.arange(1, users + 1), rng.integers(1, users + 1, ratings - users)]))
    sep = "," if layout == "ratings.csv" else "::"
    ext = "csv" if layout == "ratings.csv" else "dat"
    with open(d / f"ratings.{ext}", "w") as out:
        if ext == "csv":
            out.write("userId,movieId,rating,timestamp\n")
        for start in range(0, ratings, chunk):
            n = min(chunk, ratings - start)
            frame = pd.DataFrame(
                {
                    "u": user_of[start : start + n],
                    "m": movie_ids[popular[(movies * rng.random(n) ** 3).astype(np.int64)]],
                    "r": rng.integers(1, 11, n) * 0.5,
                    "t": rng.integers(789_652_009, 1_574_327_703, n),
                }
            )
            if ext == "dat":  # '::' is ':' around empty columns
                frame.insert(1, "a", "")
                frame.insert(3, "b", "")
                frame.insert(5, "c", "")
            frame.to_csv(out, sep=sep[0], header=False, index=False, float_format="%.1f" if ext == "csv" else "%g")
    rows = pd.DataFrame({"movieId": movie_ids, "title": titles, "genres": genres})
    if ext == "csv":
        rows.to_csv(d / "movies.csv", index=False)
    else:
        (d / "movies.dat").write_text("".join(f"{m}::{t}::{g}\n" for m, t, g in rows.itertuples(index=False)))
    return d
