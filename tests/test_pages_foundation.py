"""AppTest of the frame (app.py), the home page and the Train page."""

from __future__ import annotations

from apptest import app_page as page
from apptest import button, wait_for_training

from fmlib.runs import RunStore


def test_frame_shows_dataset_source_and_empty_run_store():
    at = page("app.py", dataset="synthetic")
    at.run()
    assert not at.exception
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "Served by: synthetic" in captions and "No saved runs yet" in captions


def test_home_links_every_page():
    at = page("app.py", dataset="synthetic")  # home is the default page of the frame
    at.run()
    assert not at.exception
    from app_pages._ui import PAGES

    links = [el for el in at.get("page_link")]
    assert len(links) == len(PAGES) - 1


def test_the_app_warms_up_once_in_the_background_unless_turned_off(monkeypatch):
    """app.py starts ``warm_up`` once per server: the attack's first gradient and Hessian, and the first line of every
    derivation checked, in a thread. The tests turn it off (``FMLIB_WARM_UP=0``, conftest.py)."""
    from app_pages import _ui
    from fmlib.derivations import catalog

    done = []
    monkeypatch.setattr(_ui.attack, "warm_up", lambda: done.append("attack"))
    monkeypatch.setattr(_ui, "check_step", lambda derivation, index: done.append((derivation.key, index)))
    _ui.warm_up.clear()
    try:
        assert _ui.warm_up() is None and not done  # off, as in every test
        monkeypatch.setenv("FMLIB_WARM_UP", "1")
        _ui.warm_up.clear()
        thread = _ui.warm_up()
        thread.join()
        assert done == ["attack", *((derivation.key, 0) for derivation in catalog())]
        assert _ui.warm_up() is thread  # once per server
    finally:
        _ui.warm_up.clear()


def test_train_page_trains_shows_metrics_and_saves():
    at = page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert not at.exception
    at.number_input(key="epochs").set_value(3)
    at.number_input(key="lr").set_value(0.02)
    wait_for_training(button(at, "Train").click().run())
    assert not at.exception and not at.error
    assert "in line" in at.success[0].value
    table = at.table[0].value
    assert list(table.columns) == ["valid", "test"] and "rmse" in table.index
    spec = results_charts(at)[-1].proto.spec
    assert '"train loss"' in spec
    at.text_input(key="save_name").input("teaching-run")
    at.text_input(key="save_author").input("Ada")
    button(at, "Save run").click().run()
    assert not at.exception
    assert "Saved as teaching-run" in at.success[0].value
    assert RunStore().ids() == ["ada-teaching-run"]


def test_train_page_model_hyperparameters_follow_the_model():
    at = page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert "rank" not in {n.label for n in at.number_input}  # fm has only dim
    at.selectbox(key="model").set_value("dplr").run()
    assert not at.exception
    assert "rank" in {n.label for n in at.number_input}  # DPLR's ρ


def test_frame_lists_saved_runs(small_split):
    from fmlib.train import TrainConfig, train_model

    RunStore().save(train_model("fm", small_split, TrainConfig(epochs=1), dim=2), "r1")
    at = page("app.py", dataset="synthetic")
    at.run()
    assert not at.exception
    assert at.sidebar.selectbox(key="run_id").value == "r1"


def test_train_page_trains_the_bayesian_fm_by_gibbs_sweeps():
    at = page("app_pages/train.py", dataset="synthetic")
    at.run()
    at.selectbox(key="model").set_value("bfm").run()
    assert {n.label for n in at.number_input} >= {"dim (embedding size k)", "burn_in"}
    at.number_input(key="epochs").set_value(8)
    wait_for_training(button(at, "Train").click().run())
    assert not at.exception and not at.error
    assert '"rmse"' in results_charts(at)[-1].proto.spec  # the running posterior-mean valid RMSE per sweep
    assert at.table[0].value.loc["rmse", "test"] > 0


def results_charts(at) -> list:
    """The page's charts of the last training (the Train page's opening example, key trace, and its lesson
    charts, keys fm_ablation and feature_sets, left out)."""
    lesson = ("trace", "fm_ablation", "feature_sets")
    return [c for c in at.get("plotly_chart") if not c.proto.id.endswith(lesson)]
