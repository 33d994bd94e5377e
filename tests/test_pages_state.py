"""AppTests that a page never shows stale or contradictory state, and refuses bad input visibly."""

from __future__ import annotations

import pytest
from apptest import app_page, wait_for_training
from test_pages_foundation import results_charts

from fmlib.data import load, split, synthetic
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


@pytest.fixture(scope="module")
def run():
    data = synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0)
    return train_model("fm", split(data, seed=0), TrainConfig(epochs=1, batch_size=256), dim=2)


def texts(elements) -> str:
    return " ".join(e.value for e in elements)


def test_a_saved_run_is_listed_in_the_sidebar_on_the_same_rerun(run):
    at = app_page("app.py", dataset="synthetic", trained=run)
    at.run()
    at.switch_page("app_pages/train.py")
    at.run()
    assert "No saved runs yet" in texts(at.sidebar.caption)
    at.text_input(key="save_name").input("r1")
    at.text_input(key="save_author").input("Ada")
    next(b for b in at.button if b.label == "Save run").click().run()
    assert not at.exception
    assert "No saved runs yet" not in texts(at.sidebar.caption)
    assert at.sidebar.selectbox(key="run_id").value == "ada-r1"


def test_a_second_click_on_save_keeps_the_success_and_the_sidebars_pick(run):
    at = app_page("app.py", dataset="synthetic", trained=run)
    at.run()
    at.switch_page("app_pages/train.py").run()
    at.text_input(key="save_name").input("r1")
    at.text_input(key="save_author").input("Ada")
    for _ in range(2):
        next(b for b in at.button if b.label == "Save run").click().run()
        assert not at.exception and not at.error
        assert "Saved as r1:" in at.success[0].value and at.sidebar.selectbox(key="run_id").value == "ada-r1"
    assert RunStore().ids() == ["ada-r1"]
    at.text_input(key="save_name").input("r1-copy")
    next(b for b in at.button if b.label == "Save run").click().run()
    assert "Saved as r1-copy" in at.success[0].value, "another name saves a copy"
    assert sorted(RunStore().ids()) == ["ada-r1", "ada-r1-copy"]


def test_switching_the_model_hides_the_last_models_results(run):
    at = app_page("app_pages/train.py", dataset="synthetic", trained=run)
    at.run()
    assert results_subheaders(at) == ["fm on synthetic"]
    at.selectbox(key="model").set_value("fwfm").run()
    assert not at.exception
    assert not results_subheaders(at) and not results_charts(at) and not at.table, "fm's results under the FwFM form"
    assert "Your last training was fm" in texts(at.info)
    assert not [b for b in at.button if b.label == "Save run"]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epochs", 0, "Max epochs: 0 is out of range; use 1 to 200."),
        ("lr", 2.0, "Learning rate: 2 is out of range; use 1e-05 to 1."),
        ("seed", -1, "Seed: -1 is out of range; use 0 to 10000."),
        ("hp_fm_dim", 0, "dim (embedding size k): 0 is out of range; use 1 to 512."),
    ],
)
def test_an_out_of_range_number_is_refused_visibly_not_replaced_by_the_old_one(key, value, message):
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert at.number_input(key=key).value == value, "the field keeps what was typed"
    assert [e.value for e in at.error] == [message]
    assert not [b for b in at.button if b.label == "Train"], "nothing trains with a value the reader cannot see"


@pytest.mark.parametrize(
    ("name", "rule"), [("...", "use letters or digits"), ("x" * 300, "at most 76 letters, digits")]
)
def test_a_run_name_that_cannot_be_listed_is_refused_with_the_rule(run, name, rule):
    at = app_page("app_pages/train.py", dataset="synthetic", trained=run)
    at.run()
    at.text_input(key="save_name").input(name)
    at.text_input(key="save_author").input("Ada")
    next(b for b in at.button if b.label == "Save run").click().run()
    (error,) = [e.value for e in at.error]
    assert rule in error and "Errno" not in error
    assert RunStore().ids() == []


@pytest.mark.parametrize("text", ["8,100000", "2,513"])
def test_a_rank_set_above_the_largest_rank_is_refused(text):
    at = app_page("app_pages/rank_aware_fm.py", dataset="synthetic")
    at.run()
    at.text_input(key="rafm_ranks").set_value(text).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Rank set: ranks must be positive integers up to 512, got {tuple(int_(text))}"
    ]


def int_(text):
    return [int(p) for p in text.split(",")]


def test_trial_results_a_button_made_stay_when_another_widget_reruns_the_page():
    at = app_page("app_pages/attention_inversion.py", timeout=60)
    at.run()
    at.select_slider[4].set_value(10)  # instances per γ
    at.button(key="inv_run_trials").click().run()
    charts, tables = len(at.get("plotly_chart")), len(at.dataframe)
    assert charts >= 2 and tables == 1
    at.select_slider[5].set_value(50).run()  # users attacked in the MovieLens section: not a trial setting
    assert not at.exception
    assert (len(at.get("plotly_chart")), len(at.dataframe)) == (charts, tables), "the trials vanished"
    at.slider[0].set_value(5).run()  # tokens n: the trials shown were made for n = 4
    assert "made with n = 4" in texts(at.caption)


def test_a_fresh_comparison_replaces_the_no_comparison_message(monkeypatch, tmp_path):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path / "results"))
    at = app_page("app_pages/rank_aware_fm.py", timeout=60, dataset="synthetic")
    at.run()
    at.text_input(key="rafm_ranks").set_value("2,4").run()
    assert "No comparison saved" in texts(at.info)
    next(b for b in at.button if b.label.startswith("Run one seed here")).click().run()
    wait_for_training(at, key="rafm_seed_job")
    assert not at.exception and not at.error
    assert "No comparison saved" not in texts(at.info)
    assert "one seed, here" in texts(at.caption)


def test_a_quick_run_is_not_shown_under_the_wrong_run_warning():
    data = split(load("synthetic"), seed=0)  # the app's synthetic set
    run_id = RunStore().save(train_model("fm", data, TrainConfig(epochs=1), dim=4))
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic", run_id=run_id)
    at.run()
    assert "has no field interaction matrix R" in texts(at.warning)
    wait_for_training(at.button(key="quick_train").click().run(), key="interactions_quick_run_job")
    assert not at.exception and not at.error
    assert "has no field interaction matrix R" not in texts(at.warning)
    assert f"not the picked run {run_id}" in texts(at.caption)


def results_subheaders(at) -> list[str]:
    """The Train page's subheaders of the last training (its lesson sections' headings left out)."""
    return [h.value for h in at.subheader if not h.value.startswith(("The Bayesian FM", "An FM is a feature"))]
