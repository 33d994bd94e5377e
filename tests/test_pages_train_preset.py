"""AppTest of the Train page's preset picker: a tuned preset fills in the widgets."""

from apptest import app_page

from fmlib import presets


def test_tuned_preset_fills_the_widgets(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path))
    preset = {
        "model": "fm",
        "dataset": "synthetic",
        "task": "rating",
        "rank": "4",
        "hp": {"dim": 4},
        "train": {
            "lr": 0.0123,
            "weight_decay": 2e-5,
            "batch_size": 1024,
            "epochs": 7,
            "patience": 3,
            "average_from": 2,
            "field_decay": {"f0": 0.5},
            "linear_decay": 0.1,
        },
        "min_count": 1,
        "tuning": {},
    }
    presets.save(preset, presets.preset_path("synthetic", "fm", 4, root=tmp_path))
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert at.selectbox(key="preset").options == ["defaults", "fm-4"]
    at.selectbox(key="preset").set_value("fm-4").run()
    assert not at.exception and not at.error
    assert at.number_input(key="lr").value == 0.0123
    assert at.number_input(key="epochs").value == 7
    assert at.number_input(key="average_from").value == 2
    assert at.number_input(key="hp_fm_dim").value == 4
    assert any("Grouped L2 from the preset" in c.value and "f0 × 0.5, w × 0.1" in c.value for c in at.caption)
    at.selectbox(key="preset").set_value("defaults").run()
    assert not any("Grouped L2" in c.value for c in at.caption)
    assert at.number_input(key="hp_fm_dim").value == 16
    assert at.number_input(key="average_from").value == 0


def test_a_corrupt_preset_is_an_error_on_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path))
    (tmp_path / "synthetic").mkdir()
    (tmp_path / "synthetic" / "fm.json").write_text("{")
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    at.selectbox(key="preset").set_value("fm").run()
    assert not at.exception
    assert "corrupt" in at.error[0].value
