"""The command line: JSON output, data info, one-line errors with exit code 2.

``main([...])`` runs in this process (capsys reads its output); one test runs ``python -m fmlib``
in a subprocess, the way a person does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from movielens_files import write_grouplens_100k

from fmlib.cli import main


def cli(capsys, *args):
    """(exit code, stdout, stderr) of ``python -m fmlib *args``, run in this process."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_train_prints_one_json_line_and_saves_the_run(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fmlib", "train", "--model", "fm", "--epochs", "1", "--dim", "4"]
        + ["--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    assert set(out) == {"run_id", "model", "dataset", "data_source", "config", "metrics", "seconds"}
    assert set(out["metrics"]["test"]) == {"rmse", "mae"} and out["metrics"]["test"]["rmse"] < 1.2
    assert "epoch" in done.stderr, "progress bar on stderr"
    assert (tmp_path / out["run_id"] / "model.safetensors").exists()


def test_data_info_lists_source_fields_and_counts(capsys):
    code, out, err = cli(capsys, "data", "info")
    assert code == 0, err
    assert "source:" in out and "100000 ratings, 943 users, 1682 movies" in out
    assert "genres" in out and "multi" in out and "context" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--model", "xfm"], "invalid choice: 'xfm'"),
        (["train", "--model", "fm", "--dataset", "ml-7"], "invalid choice: 'ml-7'"),
        (["train", "--model", "fm", "--epochs", "0"], "must be > 0"),
        (["train", "--model", "fm", "--lr", "-1"], "must be > 0"),
        (["train", "--model", "fm", "--dim", "abc"], "expected an integer"),
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(capsys, args, message):
    code, _, err = cli(capsys, *args)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_data_directory_with_missing_files(capsys, tmp_path, monkeypatch):
    d = write_grouplens_100k(tmp_path / "d")
    (d / "u.user").unlink()
    monkeypatch.setenv("FMLIB_CACHE", str(tmp_path / "c"))
    code, _, err = cli(capsys, "data", "info", "--data-dir", str(d))
    assert code == 2 and "Traceback" not in err
    assert "missing file(s) u.user" in err


def test_bench_train_times_models_and_baselines_and_ends_with_json(capsys):
    code, stdout, err = cli(capsys, "bench", "train", "--repeats", "1", "--models", "fm,rafm")
    assert code == 0, err
    out = json.loads(stdout.strip().splitlines()[-1])
    assert set(out["seconds"]) == {
        "fm",
        "rafm",
        "fm + rated, raters",
        "plain FM",
        "fm, 11 fields",
        "torchfm, 11 fields",
        "eval FM, dim 32",
        "eval rafm",
    }
    fm, plain = out["seconds"]["fm"], out["seconds"]["plain FM"]
    assert out["ratios"]["fm"]["median"] == pytest.approx(fm["median"] / plain["median"], rel=0.01)
    assert out["floor"]["fm"]["multiply_adds_per_row"] > 0  # the genres field's x_f V_f products
    assert out["floor"]["fm"]["seconds"] < fm["median"]
    assert out["ratios"]["fm, blocks / 12 fields"]["median"] > 0  # the relation blocks' epoch against the 12 fields
    assert 0 < out["floor"]["fm"]["products_alone_seconds"] < fm["median"]  # the products replayed alone
    assert out["rafm_eval_multiply_adds"]["corollary 4"] > 1
    assert cli(capsys, "bench", "train", "--models", "bfm")[0] == 2


def test_model_specific_flags(capsys):
    code, out, err = cli(capsys, "train", "--model", "dplr", "--rank", "2", "--epochs", "1", "--dim", "4")
    assert code == 0, err
    assert json.loads(out)["config"]["hp"] == {"dim": 4, "rank": 2, "r_l2": 0.0}
    code, _, err = cli(capsys, "train", "--model", "fm", "--rank", "2")
    assert code == 2 and "--rank does not apply to model 'fm'" in err
    code, _, err = cli(capsys, "train", "--model", "dplr", "--rank", "12", "--epochs", "1")
    assert code == 2 and "rank" in err and "Traceback" not in err
    code, _, err = cli(capsys, "train", "--model", "rafm", "--ranks", "32,8", "--epochs", "1")
    assert code == 2 and "strictly increasing" in err


@pytest.mark.skipif(sys.modules["torch"].cuda.is_available(), reason="checks the message of a machine without a GPU")
@pytest.mark.parametrize(
    "args",
    [
        ["train", "--model", "fm"],
        ["tune", "--model", "fm", "--trials", "1"],
        ["reproduce", "dplr"],
        ["reproduce", "rafm"],
        ["reproduce", "rfm"],
        ["reproduce", "fm-ablation"],
        ["bench", "train"],
    ],
)
def test_every_training_command_takes_device_cuda_and_says_when_there_is_none(capsys, args):
    code, _, err = cli(capsys, *args, "--device", "cuda")
    assert code == 2 and "torch sees no CUDA GPU" in err and len(err.strip().splitlines()) == 1


def test_bench_train_on_synthetic_rows(capsys):
    """``--synthetic --rows N``: rows generated with MovieLens 25M's users and movies; ``--rows``
    alone is refused (it sizes the generated rows only)."""
    code, stdout, err = cli(
        capsys, "bench", "train", "--synthetic", "--rows", "3000", "--repeats", "1", "--models", "fm"
    )
    assert code == 0, err
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["data"] == "generated (--synthetic)" and out["rows"] == 3000
    assert out["floor"]["fm"]["measured_to_floor"] > 1
    code, _, err = cli(capsys, "bench", "train", "--rows", "3000")
    assert code == 2 and "--synthetic" in err


def test_synthetic_rows_have_the_layout_of_the_data_set():
    import torch

    from fmlib.bench.train import synthetic_rows

    schema, index, weight, rating = synthetic_rows(5000, torch.device("cpu"))
    assert schema.field("user_id").cardinality == 162_542 and schema.field("movie_id").cardinality == 62_424
    for j, f in enumerate(schema.fields[:-1]):  # single-valued: a real value (not the rare bucket)
        assert (index[:, j] > f.offset).all() and (index[:, j] < f.offset + f.cardinality).all()
    genres = schema.fields[-1]
    used = weight[:, -genres.slots :] > 0
    assert used.any(1).all() and torch.allclose(weight[:, -genres.slots :].sum(1), torch.ones(5000))
    assert ((rating * 2).round() == rating * 2).all() and rating.min() >= 0.5 and rating.max() <= 5
