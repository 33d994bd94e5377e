"""Results files: the folder from $FMLIB_RESULTS, atomic writes, reads that name what is missing."""

from __future__ import annotations

import pandas as pd
import pytest

from fmlib import results


def test_results_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("FMLIB_RESULTS", raising=False)
    assert str(results.results_dir()) == "artifacts"
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    assert results.results_dir() == tmp_path


def test_round_trips_leave_no_temporary_file(tmp_path):
    frame = pd.DataFrame({"model": ["FM", "DPLR"], "rmse": [0.91, 0.9]})
    csv = results.write_csv(tmp_path / "sub" / "t.csv", frame)
    pd.testing.assert_frame_equal(results.read_csv(csv, columns=("rmse",)), frame)
    data = {"ranks": [8, 32], "summary": []}
    assert results.read_json(results.write_json(tmp_path / "r.json", data), keys=("ranks",)) == data
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["r.json", "sub", "t.csv"]


def test_reads_name_the_file_and_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json: run `python -m fmlib x`"):
        results.read_json(tmp_path / "missing.json", made_by="python -m fmlib x")
    results.write_json(tmp_path / "r.json", {"ranks": [8]})
    with pytest.raises(ValueError, match="r.json .*lacks summary"):
        results.read_json(tmp_path / "r.json", keys=("ranks", "summary"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not an object"):
        results.read_json(tmp_path / "list.json")
    results.write_csv(tmp_path / "t.csv", pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="t.csv .*lacks b"):
        results.read_csv(tmp_path / "t.csv", columns=("a", "b"))
