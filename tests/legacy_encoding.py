"""The string-per-row encoding of ENCODING 1 (fmlib before the lean encoding), kept as the oracle
that the integer-code encoding must reproduce: same fields, value labels, value order, index values
and slot weights. Copied from fmlib/data/movielens.py as it was; demographic fields are left out when
the frames hold none (MovieLens 10M and later)."""

import re

import numpy as np
import pandas as pd

AGE_BUCKETS = [18, 25, 35, 45, 50, 56]
FIELDS = [
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


def fields_frame(frames) -> pd.DataFrame:
    df = frames.ratings.merge(frames.users, on="user_id", how="left").merge(frames.movies, on="movie_id", how="left")
    t = pd.to_datetime(df["timestamp"], unit="s", utc=True)
    raw = {"user_id": df["user_id"].astype(str)}
    if "age" in df:
        age = np.digitize(df["age"].to_numpy(), AGE_BUCKETS)
        age_labels = ["<18", "18-24", "25-34", "35-44", "45-49", "50-55", "56+"]
        raw |= {
            "age": [age_labels[a] for a in age],
            "gender": df["gender"],
            "occupation": df["occupation"].astype(str),
            "zip": df["zip"].str[:1],
        }
    return pd.DataFrame(
        raw
        | {
            "time_year": t.dt.year.astype(str),
            "time_month": t.dt.month.astype(str),
            "time_weekday": t.dt.day_name(),
            "time_hour": t.dt.hour.astype(str),
            "movie_id": df["movie_id"].astype(str),
            "release_year": df["year"].map(lambda y: "unknown" if np.isnan(y) else str(int(y))),
            "genres": df["genres"],
        }
    )


def _natural(v: str):
    return (0, float(v), "") if re.fullmatch(r"-?\d+(\.\d+)?", v) else (1, 0.0, v)


def encode(raw: pd.DataFrame):
    """(specs, values, index int64, weight float32) as ENCODING 1 built them."""
    specs, values, index_cols, weight_cols = [], [], [], []
    offset = 0
    for name, role, kind in [f for f in FIELDS if f[0] in raw]:
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
        idx = np.full((len(raw), slots), offset, dtype=np.int64)
        wts = np.zeros((len(raw), slots), dtype=np.float32)
        idx[rows, pos] = codes
        wts[rows, pos] = 1.0 / lengths[rows]
        specs.append((name, role, kind, len(vocab) + 1, slots))
        values.append(["<rare>", *vocab])
        index_cols.append(idx)
        weight_cols.append(wts)
        offset += len(vocab) + 1
    return specs, values, np.hstack(index_cols), np.hstack(weight_cols)
