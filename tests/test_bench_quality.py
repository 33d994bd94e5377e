"""bench quality: the design matrix given to myFM, and the bench on a small data set with and without its extras."""

import json
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from fmlib import peers
from fmlib.bench import quality
from fmlib.cli import main
from fmlib.data import movielens, split, synthetic
from fmlib.data.schema import Schema


def small_movielens(*_args, **_kwargs):
    """A planted-FM data set whose first two fields are named like MovieLens' user and movie fields."""
    data = synthetic.make(synthetic.block_R(3, blocks=1, within=0.5), n_samples=3000, cardinality=12, dim=2, seed=4)
    names = ["user_id", "movie_id", "hour"]
    schema = Schema(tuple(replace(f, name=n) for f, n in zip(data.schema.fields, names)))
    return replace(data, schema=schema, rating_range=(1.0, 5.0))


def test_design_matrix_rows_are_the_weighted_slots():
    """X w = Σ_s weight_s w[index_s] (the FM's first-order term) for the multi-valued MovieLens encoding."""
    data = split(movielens.load("ml-100k"), seed=0).valid
    X = peers.design_matrix(data)
    w = torch.randn(data.schema.num_features, dtype=torch.float64)
    want = (w[data.index] * data.weight.double()).sum(1)
    np.testing.assert_allclose(X @ w.numpy(), want.numpy(), rtol=1e-9, atol=1e-9)
    assert X.shape == (len(data), data.schema.num_features) and (X.data > 0).all()


def run_bench(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(quality, "load", small_movielens)
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path))  # no tuned presets
    assert main(["bench", "quality", "--splits", "0,1", "--iterations", "8", "--dim", "2"]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("missing", ["myfm", "surprise"])
def test_a_missing_extra_is_named_and_the_rest_runs(monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # import fails as if not installed
    out, result = run_bench(monkeypatch, capsys, tmp_path)
    assert f"skipping {missing}" in out and f"pip install {peers.EXTRAS[missing]}" in out
    present = {"myfm": "Surprise SVD (valid-tuned)", "surprise": "myFM Bayesian FM"}[missing]
    bayesian = {"fmlib BFM (Gibbs)", *({"myFM Bayesian FM"} & {present})}  # the methods run with the blocks too
    expected = {"fmlib FM (defaults)", "fmlib BFM (Gibbs)", present, *(m + " + rated, raters" for m in bayesian)}
    assert set(result["methods"]) == expected
    for row in result["methods"].values():
        assert len(row["rmse"]) == 2 and row["rmse_mean"] == pytest.approx(np.mean(row["rmse"]), abs=1e-4)


def test_all_methods_side_by_side(monkeypatch, capsys, tmp_path):
    out, result = run_bench(monkeypatch, capsys, tmp_path)
    assert "skipping" not in out and "BFM − myFM test RMSE per split" in out and "BFM fit seconds / myFM" in out
    assert "Surprise SVD (valid-tuned) chose n_factors" in out
    assert "BFM − myFM + rated, raters test RMSE per split" in out
    bayesian = ["fmlib BFM (Gibbs)", "myFM Bayesian FM"]
    assert set(result["methods"]) == {
        "fmlib FM (defaults)",
        "Surprise SVD (valid-tuned)",
        *bayesian,
        *(m + " + rated, raters" for m in bayesian),
    }
    # on a planted FM the two Bayesian FMs, same rank and sweeps, land close together, with the blocks too
    for suffix in ("", " + rated, raters"):
        bfm, myfm = (result["methods"][m + suffix] for m in bayesian)
        assert abs(bfm["rmse_mean"] - myfm["rmse_mean"]) < 0.05


def test_bad_splits_flag_exits_2(capsys):
    assert main(["bench", "quality", "--splits", "0,x"]) == 2
    assert "--splits" in capsys.readouterr().err
