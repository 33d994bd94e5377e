import pandas as pd
import pytest

from fmlib.experiments import tables


def test_write_read_round_trip(tmp_path):
    frame = pd.DataFrame({"seed": [0, 1], "model": ["FM", "FM"], "mse": [0.81, 0.82]})
    path = tables.write(frame, tmp_path / "t.csv", "python -m fmlib reproduce x --seeds 2")
    back, header = tables.read(path, columns=("seed", "mse"))
    pd.testing.assert_frame_equal(back, frame)
    assert header["command"] == "python -m fmlib reproduce x --seeds 2"
    assert header["commit"] and header["date"].endswith("UTC")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_read_names_what_is_missing(tmp_path):
    path = tables.write(pd.DataFrame({"seed": [0]}), tmp_path / "t.csv", "cmd")
    with pytest.raises(ValueError, match="lacks mse"):
        tables.read(path, columns=("mse",))
    bare = tmp_path / "bare.csv"
    bare.write_text("seed\n0\n")
    with pytest.raises(ValueError, match="lacks command"):
        tables.read(bare)


def test_newest_prefers_the_later_date(tmp_path):
    art, com = tmp_path / "artifacts", tmp_path / "results"
    assert tables.newest("t.csv", art, com) is None
    tables.write(pd.DataFrame({"a": [1]}), com / "t.csv", "cmd")
    assert tables.newest("t.csv", art, com) == com / "t.csv"
    path = tables.write(pd.DataFrame({"a": [2]}), art / "t.csv", "cmd")
    text = path.read_text().replace("# date: ", "# date: 9")  # a later date
    path.write_text(text)
    assert tables.newest("t.csv", art, com) == art / "t.csv"
