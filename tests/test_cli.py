"""The command line: JSON output, data info, one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from movielens_files import write_grouplens_100k


def cli(*args, env_runs=None):
    return subprocess.run([sys.executable, "-m", "fmlib", *args], capture_output=True, text=True, timeout=300)


def test_train_prints_one_json_line_and_saves_the_run(tmp_path):
    done = cli(
        "train", "--model", "fm", "--dataset", "ml-100k", "--epochs", "1", "--dim", "4", "--runs-dir", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    assert set(out) == {"run_id", "model", "dataset", "data_source", "config", "metrics", "seconds"}
    assert set(out["metrics"]["test"]) == {"rmse", "mae"} and out["metrics"]["test"]["rmse"] < 1.2
    assert "epoch" in done.stderr, "progress bar on stderr"
    assert (tmp_path / out["run_id"] / "model.safetensors").exists()


def test_data_info_lists_source_fields_and_counts():
    done = cli("data", "info")
    assert done.returncode == 0, done.stderr
    assert "source:" in done.stdout and "100000 ratings, 943 users, 1682 movies" in done.stdout
    assert "genres" in done.stdout and "multi" in done.stdout and "context" in done.stdout


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
def test_bad_input_is_one_line_with_exit_code_2(args, message):
    done = cli(*args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_data_directory_with_missing_files(tmp_path):
    d = write_grouplens_100k(tmp_path / "d")
    (d / "u.user").unlink()
    done = subprocess.run(
        [sys.executable, "-m", "fmlib", "data", "info", "--data-dir", str(d)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"FMLIB_CACHE": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "missing file(s) u.user" in done.stderr


def test_bench_train_times_models_and_baselines_and_ends_with_json():
    done = cli("bench", "train", "--repeats", "1", "--models", "fm,rafm")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(out["seconds"]) == {
        "fm",
        "rafm",
        "plain FM",
        "fm, 11 fields",
        "torchfm, 11 fields",
        "eval FM, dim 32",
        "eval rafm",
    }
    fm, plain = out["seconds"]["fm"], out["seconds"]["plain FM"]
    assert out["ratios"]["fm"]["median"] == pytest.approx(fm["median"] / plain["median"], rel=0.01)
    assert cli("bench", "train", "--models", "bfm").returncode == 2


def test_model_specific_flags(tmp_path):
    done = cli("train", "--model", "dplr", "--rank", "2", "--epochs", "1", "--dim", "4", "--runs-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["config"]["hp"] == {"dim": 4, "rank": 2}
    done = cli("train", "--model", "fm", "--rank", "2")
    assert done.returncode == 2 and "--rank does not apply to model 'fm'" in done.stderr
    done = cli("train", "--model", "dplr", "--rank", "12", "--epochs", "1")
    assert done.returncode == 2 and "rank" in done.stderr and "Traceback" not in done.stderr
    done = cli("train", "--model", "rafm", "--ranks", "32,8", "--epochs", "1")
    assert done.returncode == 2 and "strictly increasing" in done.stderr
