"""AppTests for app_pages/ranking.py: the benchmark charts, one user's ranking, top-k agreement between runs."""

import pytest
from apptest import app_page, figure, wait_for_training
from page_order import block_tables, position, starts

from fmapp.worked import context_split
from fmlib.bench.ranking import ranking_benchmark, sweep_schemas
from fmlib.data import load, movielens, split, synthetic
from fmlib.experiments import tables
from fmlib.ranking import agreement, catalogue, query_rows, recipe, seed_noise_verdict, top_lists
from fmlib.results import write_csv
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model

COMMITTED = tables.committed_root


@pytest.fixture(autouse=True)
def results(tmp_path, monkeypatch):
    """An empty results folder, and quick benchmarks that score each catalogue once per timing."""
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr("fmlib.bench.ranking.MIN_ITEMS", 1)
    monkeypatch.setattr("fmlib.experiments.tables.committed_root", lambda: tmp_path / "committed")
    return tmp_path / "results"


def test_a_fresh_server_shows_the_committed_benchmark(tmp_path, monkeypatch):
    """No benchmark of its own: the per-item cost charts come from results/ranking_bench.csv (the lesson's stop 4)."""
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path / "empty"))
    monkeypatch.setattr("fmlib.experiments.tables.committed_root", COMMITTED)
    at = page()
    assert not at.error and len(at.get("plotly_chart")) >= 2
    assert any(c.value.startswith("From results/ranking_bench.csv") for c in at.caption)


def page(**state):
    at = app_page("app_pages/ranking.py", timeout=180, **{"dataset": "synthetic", **state})
    at.run()
    assert not at.exception
    return at


def saved_run(name, data=None, **hp):
    data = data or split(synthetic.make(synthetic.block_R(8), n_samples=4000, cardinality=20, seed=0), seed=0)
    return RunStore().save(train_model(name, data, TrainConfig(epochs=1), dim=4, **hp))


def test_a_saved_run_is_timed_on_equal_terms_and_compared_with_quick_models():
    at = page(run_id=saved_run("fwfm"))
    assert not at.error
    labels = [m.label for m in at.metric]
    assert labels == ["cached context, per query", "full pass, per query", "full / cached"]
    ratio = float(at.metric[2].value.rstrip("×"))
    sentence = next(m.value for m in at.markdown if "Both timed alike" in m.value)
    assert "context holds 4 of the 8 slots" in sentence and f"{ratio:.1f}×" in sentence
    assert ("× faster: it pays" in sentence) == (ratio > 1) and ("× slower: it does not pay" in sentence) == (
        ratio <= 1
    )
    assert len(at.dataframe[0].value) == 10
    same = next(m.value for m in at.markdown if m.value.startswith("No: the cache computes the same sum"))
    difference = float(same.split("by at most **")[1].split("**")[0])
    assert 0 <= difference < 1e-4 and "overlap at **1.00**" in same
    assert any("1 saved FM/FwFM/DPLR run" in i.value and "one recipe, two seeds" in i.value for i in at.info)
    wait_for_training(at.button(key="quick_models").click().run(), key="ranking_quick_models_job")
    assert not at.exception and not at.error
    compared, overlaps, pairs = at.dataframe[1].value, at.dataframe[2].value, at.dataframe[3].value
    assert len(compared) == 7 and set(compared.model) == {"fm", "fwfm", "dplr"}
    assert sorted(compared.seed) == [0, 0, 0, 0, 1, 1, 1]
    assert (overlaps.values.diagonal() == 1).all() and ((0 <= overlaps.values) & (overlaps.values <= 1)).all()
    assert (pairs.pair == "one recipe, two seeds").sum() == 3  # each quick model with its other seed
    assert {"different models, different seeds", "different models, one seed"} <= set(pairs.pair)
    assert any(m.value.startswith("**Notice:** Over ") for m in at.markdown)
    at.slider(key="k").set_value(3).run()
    assert not at.exception and not at.error and len(at.dataframe[2].value) == 7
    assert any("overlap@3 is" in m.value for m in at.markdown)


def test_quick_benchmark_charts_and_the_cache_sentence():
    at = page()
    wait_for_training(at.button(key="quick_train").click().run(), key="ranking_quick_run_job")
    assert not at.exception and not at.error
    assert not at.get("plotly_chart")
    at.button(key="bench").click().run()
    assert not at.exception and not at.error
    by_m, by_items = figure(at, 0), figure(at, 1)
    assert {t["name"] for t in by_m["data"]} >= {"floor (embedding_bag)", "FM (cached)", "FwFM (full pass)", "DPLR ρ=2"}
    assert [t["x"] for t in by_m["data"]][0] == [8, 16, 32, 64] and "error_y" in by_m["data"][0]
    assert "1,000 items" in by_m["layout"]["title"]["text"] and "µs" in by_m["layout"]["yaxis"]["title"]["text"]
    assert by_items["layout"]["xaxis"]["title"]["text"].startswith("item fields")
    assert any("caching the context made FwFM" in m.value for m in at.markdown)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("From the quick benchmark run here: 1,000 items") for c in captions)
    assert not any("writes the full benchmark (10³" in c for c in captions)  # no stale "nothing measured" line


def test_a_saved_benchmark_offers_its_catalogue_sizes_and_an_old_one_is_named(results):
    write_csv(
        results / "ranking_bench.csv",
        ranking_benchmark(sweep_schemas((8,), (5, 35)), sizes=(200,), ranks=(2,), repeats=1),
    )
    at = page()
    at.select_slider(key="catalogue").set_value(200).run()
    assert not at.exception and not at.error
    assert "200 items" in figure(at, 0)["layout"]["title"]["text"]
    write_csv(
        results / "ranking_bench.csv",
        ranking_benchmark(sweep_schemas((8,), ()), sizes=(200,), repeats=1).drop(columns="x_floor"),
    )
    at = page()
    assert any("lacks x_floor" in w.value for w in at.warning)


def test_top_k_for_a_movielens_user_over_every_movie():
    data = split(movielens.load("ml-100k"), seed=0)
    fm, dplr = saved_run("fm", data), saved_run("dplr", data, rank=2)
    at = page(dataset="ml-100k", run_id=dplr)
    assert not at.error
    assert "1,682 items in the catalogue" in " ".join(c.value for c in at.caption)
    at.selectbox(key="user").set_value(7).run()
    assert not at.exception and not at.error
    assert any(c.value.startswith("Context: user 7 at") for c in at.caption)
    top = at.dataframe[0].value
    assert {"title", "movie_id", "genres", "score"} <= set(top) and top.score.is_monotonic_decreasing
    overlaps = at.dataframe[2].value
    assert list(overlaps.index) == [dplr, fm] and overlaps.loc[dplr, dplr] == 1
    huge = "99999999999999999999999"  # a test sample number, larger than an int64, in a MovieLens link
    linked = app_page("app_pages/ranking.py", timeout=180, dataset="ml-100k", run_id=dplr)
    linked.query_params["query"] = huge
    linked.run()
    assert not linked.exception and "query" not in linked.query_params
    assert any(f"The link's query = {huge!r} is not valid (on MovieLens" in w.value for w in linked.warning)


def test_models_are_compared_with_one_recipe_trained_with_two_seeds():
    """Two saved DPLR seeds and an FM of a third seed: the page's pairs and its verdict are fmlib's,
    over the same queries (the first test rows: synthetic data, the app's own)."""
    data = split(load("synthetic"), seed=0)  # the app's synthetic set
    store = RunStore()
    runs = {
        store.save(train_model(kind, data, TrainConfig(epochs=1, seed=seed), dim=4, **hp)): seed
        for kind, hp, seed in (("dplr", {"rank": 2}, 0), ("dplr", {"rank": 2}, 1), ("fm", {}, 2))
    }
    at = page(run_id=next(iter(runs)))
    assert not at.error
    assert not any(b.key == "quick_models" for b in at.button)  # the baseline is there: nothing to train
    pairs = at.dataframe[3].value
    assert sorted(pairs.pair) == ["different models, different seeds"] * 2 + ["one recipe, two seeds"]
    loaded = {run_id: store.load(run_id) for run_id in store.ids()}
    tops = top_lists(
        {label: r.model for label, r in loaded.items()},
        data.test,
        query_rows(data.test, 50),
        catalogue(data.train, data.valid, data.test),
        50,
    )
    expected = agreement(
        tops,
        {label: recipe(r.config) for label, r in loaded.items()},
        {label: r.config["train"]["seed"] for label, r in loaded.items()},
        10,
    )
    assert sorted(pairs.overlap) == pytest.approx(sorted(expected.overlap.round(3)))
    notice = next(m.value for m in at.markdown if m.value.startswith("**Notice:**"))
    assert notice == f"**Notice:** {seed_noise_verdict(expected, 10)['sentence']}"


def test_the_page_opens_with_one_users_scores_split_into_once_and_per_movie(tmp_path, monkeypatch):
    """fmapp.worked.context_split's numbers, shown after the question and before the per-item cost charts."""
    monkeypatch.setattr("fmlib.experiments.tables.committed_root", COMMITTED)
    at = page()
    assert not at.error
    title = "One user, three movies, traced: Ann on a Friday at 20 h"
    split = context_split()
    [table] = block_tables(at, title)
    movies = split["movies"]
    assert list(table.index) == movies["movie"].tolist()
    assert table["ŷ"].tolist() == pytest.approx(movies["score"].tolist())
    assert table["pairs, eq. 2c"].tolist() == pytest.approx(movies["pairwise"].tolist())
    once = next(m.value for m in at.markdown if "**Once** for Ann" in m.value)
    assert f"{split['norms_C']:.2f}" in once and f"{split['bias_C']:.2f}" in once
    assert any("instead of all 10 pairs of m = 5 fields" in m.value for m in at.markdown)
    opens = position(at, starts(f"**{title}"))
    assert position(at, starts("**Question.**")) < opens < position(at, starts("Per-item cost as the number"))
    assert opens < position(at, lambda e: getattr(e, "type", None) == "plotly_chart")


def test_a_second_session_is_given_the_quick_run_the_first_trained_instead_of_training_it_again():
    first = page()
    wait_for_training(first.button(key="quick_train").click().run(), key="ranking_quick_run_job")
    second = page()
    second.button(key="quick_train").click().run()
    assert not second.exception and not second.error
    assert "ranking_quick_run_job" not in second.session_state  # nothing queued
    assert second.session_state["ranking_quick_run"] is first.session_state["ranking_quick_run"]
    assert len(second.dataframe[0].value) == 10  # its ranking drawn at once
