"""The peers fmlib is measured against, fitted on fmlib's own splits: Surprise's SVD and SVD++
(user × movie only) and myFM's Bayesian FM (the same fields, as one sparse design matrix).

scikit-surprise and myfm are bench extras: ``optional_module`` names a missing one with the pip
command that installs it. Each ``*_method(...)`` returns ``fit(split) -> Fitted``; predictions
are clipped to the rating range, and the test part is read only when ``Fitted.test()`` is called.
"""

from __future__ import annotations

import importlib
import itertools
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from .data.dataset import Dataset, Split
from .data.features import first_slots, set_matrix

EXTRAS = {"surprise": "scikit-surprise==1.1.5", "myfm": "myfm==0.4.0 setuptools==80.9.0"}
SVD_GRID = {"n_factors": (50, 100), "n_epochs": (30, 60), "reg_all": (0.05, 0.1), "lr_all": (0.005,)}


@dataclass
class Fitted:
    """A method fitted on one split: ``test()`` -> its test metrics, fit seconds, what it chose on valid."""

    test: object
    seconds: float
    chose: str = ""


def optional_module(name: str):
    """The bench extra ``name``, or None with a line saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as err:  # myfm 0.4.0 also needs pkg_resources (setuptools < 81)
        print(f"skipping {name}: {err}; install the bench extra with `pip install {EXTRAS[name]}`")
        return None


def clipped_metrics(prediction: np.ndarray, data: Dataset) -> dict:
    """RMSE and MAE of predictions clipped to the rating range."""
    err = np.clip(prediction, *data.rating_range) - data.rating.numpy()
    return {"rmse": float(np.sqrt(np.mean(err**2))), "mae": float(np.mean(np.abs(err)))}


def design_matrix(data: Dataset) -> sparse.csr_matrix:
    """X (N × n): X[n, index[n, s]] += weight[n, s] — the fields as one sparse row per sample (a
    relation block's slot, its bucket, left out: ``relation_blocks`` gives its columns)."""
    n, slots = data.index.shape
    rows = np.repeat(np.arange(n), slots)
    weight = data.weight.numpy().astype(np.float64)
    weight[:, [s for s, j in enumerate(data.schema.slot_fields()) if data.schema.fields[j].kind == "block"]] = 0
    X = sparse.csr_matrix((weight.ravel(), (rows, data.index.numpy().ravel())), shape=(n, data.schema.num_features))
    X.eliminate_zeros()
    return X


def relation_blocks(myfm, data: Dataset) -> list:
    """myFM's ``RelationBlock`` of every block field ([Rendle2013]): each sample's key picks a row
    of the block's matrix (1/√|set| at each member of the key's set, [Koren2008] eq. 15)."""
    blocks, first = [], first_slots(data.schema)
    for f in data.schema.fields:
        if f.kind == "block":
            key = data.schema.field(f.key)
            keys = data.index[:, first[data.schema.names.index(f.key)]].numpy() - key.offset
            blocks.append(myfm.RelationBlock(keys.tolist(), set_matrix(f)))
    return blocks


def myfm_method(myfm, dim: int, iterations: int, seed: int):
    """myFM's Bayesian FM on the same fields, one prior group per field; a relation block of fmlib
    (rated, raters) is one of myFM's, its own group."""

    def fit(data: Split) -> Fitted:
        schema = data.schema
        groups = [g for g, f in enumerate(schema.fields) for _ in range(f.cardinality)]
        groups += [g for g, f in enumerate(schema.fields) if f.kind == "block" for _ in range(f.cardinality)]
        start = time.perf_counter()
        model = myfm.MyFMRegressor(rank=dim, random_seed=seed)
        model.fit(
            design_matrix(data.train),
            data.train.rating.numpy(),
            X_rel=relation_blocks(myfm, data.train),
            n_iter=iterations,
            grouping=groups,
        )
        seconds = time.perf_counter() - start

        def test():
            prediction = model.predict(design_matrix(data.test), relation_blocks(myfm, data.test))
            return clipped_metrics(prediction, data.test)

        return Fitted(test, seconds)

    return fit


def user_item(data: Dataset) -> list[tuple[int, int]]:
    """(user row, movie row) of every sample, from the shared index (unseen ones share their rare bucket)."""
    users = data.index[:, data.schema.names.index("user_id")].tolist()
    items = data.index[:, data.schema.names.index("movie_id")].tolist()
    return list(zip(users, items))


def svd_method(surprise, seed: int):
    """Surprise SVD fitted on train for every grid point; the lowest validation RMSE wins."""

    def fit(data: Split) -> Fitted:
        users, items = zip(*user_item(data.train))
        frame = pd.DataFrame({"user": users, "item": items, "rating": data.train.rating.numpy()})
        reader = surprise.Reader(rating_scale=data.train.rating_range)
        trainset = surprise.Dataset.load_from_df(frame, reader).build_full_trainset()
        best = None
        for values in itertools.product(*SVD_GRID.values()):
            params = dict(zip(SVD_GRID, values))
            start = time.perf_counter()
            algo = surprise.SVD(random_state=seed, **params).fit(trainset)
            seconds = time.perf_counter() - start
            rmse = clipped_metrics(_svd_predict(algo, data.valid), data.valid)["rmse"]
            if best is None or rmse < best[0]:
                best = (rmse, algo, seconds, params)
        _, algo, seconds, params = best
        chose = ", ".join(f"{k} {v}" for k, v in params.items())
        test = lambda: clipped_metrics(_svd_predict(algo, data.test), data.test)  # noqa: E731
        return Fitted(test, seconds, f"{chose} (valid RMSE {best[0]:.4f})")

    return fit


def svdpp_method(surprise, seed: int):
    """Surprise SVD++ ([Koren2008]) at its defaults, on the user × movie pairs of the train part."""

    def fit(data) -> Fitted:
        users, items = zip(*user_item(data.train))
        frame = pd.DataFrame({"user": users, "item": items, "rating": data.train.rating.numpy()})
        reader = surprise.Reader(rating_scale=data.train.rating_range)
        start = time.perf_counter()
        algo = surprise.SVDpp(random_state=seed).fit(surprise.Dataset.load_from_df(frame, reader).build_full_trainset())
        seconds = time.perf_counter() - start
        return Fitted(lambda: clipped_metrics(_svd_predict(algo, data.test), data.test), seconds)

    return fit


def _svd_predict(algo, data: Dataset) -> np.ndarray:
    return np.array([algo.predict(u, i).est for u, i in user_item(data)])
