"""AppTest of the Train page's feature sets: the Features box trains the set it names, refuses a name
the dataset lacks, and the section draws the committed ``reproduce features`` table."""

from __future__ import annotations

import pandas as pd
from apptest import app_page, button, figure, wait_for_training

from fmlib.experiments import features, tables


def test_a_feature_set_is_trained_and_recorded():
    at = app_page("app_pages/train.py", dataset="ml-100k")
    at.run()
    at.text_input(key="train_features").set_value("user_id,movie_id,rated").run()
    at.number_input(key="epochs").set_value(1)
    button(at, "Train").click().run()
    wait_for_training(at)
    assert not at.exception and not at.error
    assert at.session_state["trained"].config["split"]["features"] == ["user_id", "movie_id", "rated"]


def test_a_name_the_dataset_lacks_is_refused_in_one_line():
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    at.text_input(key="train_features").set_value("f0,rated").run()
    assert not at.exception
    assert "needs the fields user_id and movie_id" in at.error[0].value
    button(at, "Train").click().run()
    assert "train_job" not in at.session_state


def test_the_section_draws_the_committed_table(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    rows = []
    for seed in (0, 1):
        for i, step in enumerate(features.STEPS):
            models = [features.ADAM, features.BFM] + ([features.PEERS[step]] if step in features.PEERS else [])
            for j, model in enumerate(models):
                rmse = 0.90 - 0.01 * i - 0.003 * j + 0.001 * seed
                rows.append([seed, step, model, rmse, rmse, 0.7, 10, 5.0, 0.5])
    tables.write(pd.DataFrame(rows, columns=features.COLUMNS), tmp_path / features.table_name("ml-100k"), "test")
    at = app_page("app_pages/train.py", dataset="ml-100k")
    at.run()
    assert not at.exception
    fig = figure(at, len(at.get("plotly_chart")) - 1)
    assert fig["layout"]["title"]["text"].startswith("One FM, four inputs")
    assert {t["name"] for t in fig["data"]} == {features.ADAM, features.BFM, *features.PEERS.values()}
    text = "\n".join(m.value for m in at.markdown)
    assert "MF 0.9005 → context + rated + raters **0.8705**; paired split by split, 0.0300 lower" in text
    assert "Surprise SVD++ (defaults) 0.8845" in text
