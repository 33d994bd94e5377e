"""AppTests that a page never shows stale or contradictory state, and refuses bad input visibly."""

from __future__ import annotations

import pytest
from apptest import app_page

from fmlib.data import split, synthetic
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
    assert at.sidebar.selectbox(key="run_id").value == "r1"


def test_switching_the_model_hides_the_last_models_results(run):
    at = app_page("app_pages/train.py", dataset="synthetic", trained=run)
    at.run()
    assert [s.value for s in at.subheader] == ["fm on synthetic"]
    at.selectbox(key="model").set_value("fwfm").run()
    assert not at.exception
    assert not at.subheader and not at.get("plotly_chart") and not at.table, "fm's results under the FwFM form"
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


@pytest.mark.parametrize("name", ["." + "x", "x" * 300])
def test_a_run_name_that_cannot_be_listed_is_refused_with_the_rule(run, name):
    at = app_page("app_pages/train.py", dataset="synthetic", trained=run)
    at.run()
    at.text_input(key="save_name").input(name)
    at.text_input(key="save_author").input("Ada")
    next(b for b in at.button if b.label == "Save run").click().run()
    (error,) = [e.value for e in at.error]
    assert "use 1 to 80 letters, digits" in error and "Errno" not in error
    assert RunStore().ids() == []


@pytest.mark.parametrize("text", ["8,100000", "2,513"])
def test_a_rank_set_above_the_largest_rank_is_refused(text):
    at = app_page("app_pages/rank_aware_fm.py", dataset="synthetic")
    at.run()
    at.text_input(key="rafm_ranks").set_value(text).run()
    assert not at.exception
    assert [e.value for e in at.error] == [f"Rank set: ranks must be integers from 1 to 512, got {tuple(int_(text))}"]


def int_(text):
    return [int(p) for p in text.split(",")]
