"""AppTest of the Train page's preset picker: the quick settings first, a tuned preset fills in the widgets."""

import pytest
from apptest import app_page

from fmlib import presets
from fmlib.train import quick_model_settings, quick_settings


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
        "tuning": {
            "best_valid_rmse": 0.9,
            "studies": [{"best_valid_rmse": 0.9}, {"best_valid_rmse": 0.95}],
            "by_seed": {"valid_rmse": [0.9, 0.92]},
            "converged": False,
        },
    }
    presets.save(preset, presets.preset_path("synthetic", "fm", 4, root=tmp_path))
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert at.selectbox(key="preset").options == [
        "quick: 40 epochs at lr 0.02",
        "fm-4: tuned, up to 7 epochs (0.17× the quick run's)",
    ]
    at.selectbox(key="preset").set_value("fm-4").run()
    assert not at.exception and not at.error
    assert at.number_input(key="lr").value == 0.0123
    assert at.number_input(key="epochs").value == 7
    assert at.number_input(key="average_from").value == 2
    assert at.number_input(key="hp_fm_dim").value == 4
    assert any("Grouped L2 from the preset" in c.value and "f0 × 0.5, w × 0.1" in c.value for c in at.caption)
    said = "Its best trial validated at RMSE 0.90000; its recipe at 2 seeds, 0.91000 ± 0.01414. Its tuning did not"
    assert any(c.value.startswith(said) for c in at.caption), [c.value for c in at.caption]
    at.selectbox(key="preset").set_value("defaults").run()
    assert not any("Grouped L2" in c.value or "Its best trial" in c.value for c in at.caption)
    config, hp = quick_settings("synthetic")
    assert at.number_input(key="hp_fm_dim").value == hp["dim"]
    assert at.number_input(key="epochs").value == config.epochs
    assert at.number_input(key="average_from").value == 0


@pytest.mark.parametrize("model", ["fm", "fwfm"])
def test_the_first_training_is_the_quick_one(model):
    """What a student trains on MovieLens without touching a widget: the quick settings (a few
    epochs), not a preset's budget (up to 200 epochs once re-tuned); the tuned presets are the other
    choices of the menu, each labelled with its epoch budget."""
    at = app_page("app_pages/train.py", open_sections=False, dataset="ml-100k", model=model)
    at.run()
    assert not at.exception and not at.error
    config, hp = quick_model_settings("ml-100k", model)
    assert config.epochs <= 4 and hp["dim"] <= 8
    assert at.selectbox(key="preset").value == "defaults"
    assert at.number_input(key="epochs").value == config.epochs
    assert at.number_input(key="lr").value == config.lr
    assert at.number_input(key="weight_decay").value == config.weight_decay
    assert at.number_input(key="average_from").value == config.average_from
    assert at.number_input(key=f"hp_{model}_dim").value == hp["dim"]
    labels = at.selectbox(key="preset").options
    assert labels[0] == f"quick: {config.epochs} epochs at lr {config.lr:g}"
    for name, label in zip(presets.available("ml-100k", model), labels[1:]):
        preset = presets.load_named("ml-100k", name, model)
        budget, used = presets.train_config(preset).epochs, presets.seed0_epochs(preset)
        times = round(used / config.epochs)
        assert label == f"{name}: tuned, up to {budget} epochs, {used} in its tuning ({times}× the quick run's)"


def test_a_corrupt_preset_is_an_error_on_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path))
    (tmp_path / "synthetic").mkdir()
    (tmp_path / "synthetic" / "fm.json").write_text("{")
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    at.selectbox(key="preset").set_value("fm").run()
    assert not at.exception
    assert "corrupt" in at.error[0].value


def test_every_lesson_stop_on_the_train_page_trains_quick():
    """A lesson stop that opens the Train page keeps its *Preset* on the quick settings (their batch
    size and patience: early stopping ends the stop's FM after a few epochs), never a tuned preset."""
    from fmapp.lessons import lesson_files, load_lesson

    stops = [stop for path in lesson_files() for stop in load_lesson(path).stops if stop.page == "train"]
    assert stops, "the intro lesson has a stop on the Train page"
    for stop in stops:
        assert "preset" not in stop.params
        at = app_page("app_pages/train.py", open_sections=False, dataset=stop.params.get("dataset", "ml-100k"))
        for key, value in stop.params.items():  # as the stop's link opens the page
            at.query_params[key] = value
        at.run()
        assert not at.exception and not at.error
        assert at.selectbox(key="preset").value == "defaults"
        assert at.number_input(key="epochs").value == int(stop.params["epochs"]) <= 30
