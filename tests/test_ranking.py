"""Cached-context ranking (DPLR eq. 2c, Algorithm 1) equals the full forward pass; top-k equals a
sort; the benchmark's rows, agreement check and sentences follow from its numbers (no timings asserted)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from fmlib.analysis.interactions import budget
from fmlib.bench.ranking import (
    FLOOR,
    agree,
    benchmark_models,
    cache_payoff,
    headline,
    query_timing,
    ranking_benchmark,
    spread,
    sweep_rows,
    sweep_schemas,
    synthetic_schema,
)
from fmlib.cli import main
from fmlib.data import movielens, split
from fmlib.data.schema import Schema
from fmlib.models import build_model
from fmlib.plots.ranking import log_ticks, per_item_cost_figure
from fmlib.ranking import (
    DIFFERENT,
    SAME,
    SHARED_SEED,
    agreement,
    assemble,
    cached_equals_full,
    catalogue,
    context_of,
    full_batch,
    full_pass,
    layout,
    overlap_at_k,
    overlap_table,
    pair_kind,
    query_rows,
    rank_items,
    ranker,
    recipe,
    seed_noise_verdict,
    top_k,
    user_query,
)


def mixed_schema():
    """Context and item fields interleaved, and a multi-valued item field (like genres)."""
    return Schema.build(
        [
            ("user", "context", "single", 20, 1),
            ("movie", "item", "single", 30, 1),
            ("hour", "context", "single", 24, 1),
            ("genres", "item", "multi", 8, 3),
            ("year", "item", "single", 10, 1),
            ("weekday", "context", "single", 7, 1),
        ]
    )


def random_rows(schema, n, gen):
    index = torch.stack(
        [
            f.offset + torch.randint(0, f.cardinality, (n,), generator=gen)
            for f in schema.fields
            for _ in range(f.slots)
        ],
        1,
    )
    weight = torch.ones(index.shape)
    weight[:, 3:6] = torch.tensor([0.5, 0.5, 0.0])  # two genres and a padding slot
    return index, weight


def randomised(name, schema, **hp):
    """Random weights at the scale of a trained model (scores of a few units, float32)."""
    torch.manual_seed(0)
    model = build_model(name, schema, dim=5, **hp)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(std=0.5)
    return model.eval()


@pytest.mark.parametrize("name, hp", [("fm", {}), ("fwfm", {}), ("dplr", {"rank": 1}), ("dplr", {"rank": 3})])
@pytest.mark.parametrize("batch", [7, 4096])
def test_cached_context_equals_full_forward(name, hp, batch):
    """Chunks of 7 items (the last one short) and one chunk give the full pass's scores."""
    schema = mixed_schema()
    model = randomised(name, schema, **hp)
    lay = layout(schema)
    index, weight = random_rows(schema, 50, torch.Generator().manual_seed(1))
    ctx_index, ctx_weight = index[0, lay.context_slots], weight[0, lay.context_slots]
    items, item_weight = index[:, lay.item_slots], weight[:, lay.item_slots]
    cached = rank_items(model, ctx_index, ctx_weight, items, item_weight, batch)
    with torch.no_grad():
        full = model(*assemble(lay, ctx_index, ctx_weight, items, item_weight))
    assert torch.allclose(cached, full, atol=1e-5, rtol=0)
    assert torch.allclose(full_pass(model, ctx_index, ctx_weight, items, item_weight, batch), full, atol=1e-6, rtol=0)


@pytest.mark.parametrize("name, hp", [("fm", {}), ("dplr", {"rank": 1})])
def test_only_a_multi_valued_item_field(name, hp):
    schema = Schema.build([("user", "context", "single", 9, 1), ("genres", "item", "multi", 8, 3)])
    model = randomised(name, schema, **hp)
    index = torch.stack([torch.randint(0, 9, (20,)), *(9 + torch.randint(0, 8, (3, 20)))], 1)
    weight = torch.tensor([1.0, 0.5, 0.5, 0.0]).expand(20, 4)
    args = (index[0, :1], weight[0, :1], index[:, 1:], weight[:, 1:])
    assert torch.allclose(rank_items(model, *args), full_pass(model, *args), atol=1e-5, rtol=0)


def test_the_fm_table_is_algorithm_1_with_r_fm():
    """FM ranks as DPLR with U = 1ᵀ, e = 1, d = −1 (eq. 7): its table row j is (v_j, w_j − ½‖v_j‖²)."""
    schema = synthetic_schema(6, 3, cardinality=4)
    model = randomised("fm", schema)
    r = ranker(model)
    v, w = model.embedding.weight.detach(), model.linear.weight.detach()[:, 0]
    assert torch.allclose(r.table, torch.cat([v, (w - 0.5 * v.pow(2).sum(1))[:, None]], 1))


def test_pruned_fwfm_skips_pairs_and_still_matches():
    schema = synthetic_schema(40, 10, cardinality=5)
    models = {(label, rank): model for label, model, rank in benchmark_models(schema, ranks=(1,), dim=4)}
    pruned = models[("pruned FwFM", 1)]
    assert (pruned.R != 0).sum() == 2 * budget(40, 1)
    r = ranker(pruned)
    assert r.sparse and len(r.p) < 0.1 * 45
    lay = layout(schema)
    index = torch.randint(0, 5, (30, 40)) + torch.tensor([f.offset for f in schema.fields])
    weight = torch.ones(30, 40)
    args = (
        index[0, lay.context_slots],
        weight[0, lay.context_slots],
        index[:, lay.item_slots],
        weight[:, lay.item_slots],
    )
    assert torch.allclose(rank_items(pruned, *args), full_pass(pruned, *args), atol=1e-5, rtol=0)


def test_ranking_a_dataset(small_split):
    model = randomised("dplr", small_split.schema, rank=2)
    both = catalogue(small_split.train, small_split.test)
    items, item_weight = both.index, both.weight
    assert len(torch.unique(items, dim=0)) == len(items) == len(both.items)
    assert len(items) >= len(catalogue(small_split.train).index)
    first = small_split.schema.fields[3]  # the first item field
    assert both.items[first.name].tolist() == [first.values[int(i) - first.offset] for i in items[:, 0]]
    ctx_index, ctx_weight = context_of(small_split.test, 3)
    scores = rank_items(model, ctx_index, ctx_weight, items, item_weight)
    assert torch.allclose(scores, full_pass(model, ctx_index, ctx_weight, items, item_weight), atol=1e-5, rtol=0)


@pytest.mark.parametrize("k", [1, 10, 50])
def test_top_k_is_the_head_of_a_sort(k):
    scores = torch.randn(50, generator=torch.Generator().manual_seed(k))
    brute = sorted(range(50), key=lambda i: -float(scores[i]))[:k]
    assert top_k(scores, k).tolist() == brute
    with pytest.raises(ValueError, match="k must be in 1..50"):
        top_k(scores, 51)


def test_overlap_at_k():
    a, b = torch.tensor([3, 1, 4, 5]), torch.tensor([5, 9, 2, 3])
    assert overlap_at_k(a, b) == 0.5 and overlap_at_k(a, a.flip(0)) == 1.0
    assert overlap_at_k(a, torch.tensor([0, 2, 6, 7])) == 0.0
    table = overlap_table({"x": a, "y": b})
    assert table.loc["x", "y"] == table.loc["y", "x"] == 0.5 and table.loc["x", "x"] == 1.0
    with pytest.raises(ValueError, match="one length"):
        overlap_at_k(a, b[:3])


def test_top_k_over_every_movielens_movie():
    """All 1,682 movies of ml-100k, those the training split never saw included, for one user's latest context."""
    data = split(movielens.load("ml-100k"), seed=0)
    movies = catalogue(data.train, data.valid, data.test)
    assert len(movies.index) == len(movies.items) == 1682 and movies.items.movie_id.is_unique
    assert len(torch.unique(movies.index, dim=0)) < 1682  # unseen movies share the rare movie_id feature
    row = user_query(data.test, 1)
    frame = data.test.frame
    assert frame.user_id[row] == 1 and frame.timestamp[row] == frame.timestamp[frame.user_id == 1].max()
    for name, hp in (("fm", {}), ("dplr", {"rank": 2})):
        model = randomised(name, data.schema, **hp)
        context = context_of(data.test, row)
        top = top_k(rank_items(model, *context, movies.index, movies.weight), 10)
        assert torch.equal(top, top_k(full_pass(model, *context, movies.index, movies.weight), 10))
    toy_story = movies.items[movies.items.movie_id == 1].iloc[0]
    assert toy_story.title == "Toy Story" and toy_story.genres == "Animation|Children's|Comedy"
    with pytest.raises(ValueError, match="user_id 99999 has no sample"):
        user_query(data.test, 99999)


def test_bad_input_is_refused(small_split):
    with pytest.raises(ValueError, match="RFM has no bilinear_form"):
        rank_items(
            build_model("rfm", small_split.schema),
            torch.zeros(3, dtype=torch.long),
            torch.ones(3),
            torch.zeros(2, 3, dtype=torch.long),
            torch.ones(2, 3),
        )
    model = build_model("fm", small_split.schema)
    with pytest.raises(ValueError, match="expected context slots"):
        rank_items(
            model,
            torch.zeros(2, dtype=torch.long),
            torch.ones(2),
            torch.zeros(2, 3, dtype=torch.long),
            torch.ones(2, 3),
        )
    with pytest.raises(ValueError, match="at least one context field and one item field"):
        layout(Schema.build([("a", "item", "single", 3, 1), ("b", "item", "single", 3, 1)]))
    with pytest.raises(ValueError, match="item_fields must be in 1..m−1"):
        synthetic_schema(8, 8)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        ranking_benchmark(sweep_schemas((8,), ()), sizes=(10,), batch=0)


def test_spread_and_agreement():
    assert spread([5, 1, 3, 2, 4]) == (3.0, 2.0, 4.0)
    assert agree([1, 2, 3, 4, 5], [2.5, 3.5, 6]) and agree([1, 2, 3], [1, 2, 3])
    assert not agree([1, 2, 3], [2.5, 4, 6])  # 4 is above 3, the first run's maximum
    assert not agree([1, 2, 6], [3, 3.5, 4])  # 2 is below 3, the second run's minimum


def test_benchmark_rows(monkeypatch):
    monkeypatch.setattr("fmlib.bench.ranking.MIN_ITEMS", 1)  # the rows' shape, not their precision
    df = ranking_benchmark(sweep_schemas((10,), ()), sizes=(30, 70), ranks=(1, 2), repeats=2, batch=16)
    assert list(df[df["items"] == 30].model) == [
        FLOOR,
        "FM (full pass)",
        "FM (cached)",
        "FwFM (full pass)",
        "FwFM (cached)",
        "pruned FwFM ρ=1",
        "DPLR ρ=1",
        "pruned FwFM ρ=2",
        "DPLR ρ=2",
    ]
    assert (df[df.model == FLOOR].x_floor == 1.0).all()
    assert (df.per_item_q1 <= df.per_item_us).all() and (df.per_item_us <= df.per_item_q3).all()
    assert (df.max_abs_diff < 1e-4).all() and df.agree.dtype == bool


def synthetic_frame(gains: dict) -> pd.DataFrame:
    """A benchmark frame at m = 40 where FwFM's full pass costs 10 µs and caching divides it by ``gains[|I|]``."""
    rows = []
    for i, gain in gains.items():
        for model, us in (
            ("FM (cached)", 0.2),
            ("DPLR ρ=2", 0.25),
            ("FwFM (full pass)", 10.0),
            ("FwFM (cached)", 10.0 / gain),
        ):
            rows.append(
                {
                    "items": 1000,
                    "schema": f"synthetic m=40, |I|={i}",
                    "m": 40,
                    "item_fields": i,
                    "model": model,
                    "per_item_us": us,
                    "x_floor": us / 0.05,
                }
            )
    return pd.DataFrame(rows)


def test_cache_payoff_sentence_and_headline_come_from_the_numbers():
    df = synthetic_frame({5: 8.0, 20: 2.0, 35: 1.25})
    sentence = cache_payoff(df, 1000)
    assert "8.0× cheaper per item with 35 context fields" in sentence and "only 1.2× with 5" in sentence
    assert headline(df) == {
        1000: {
            "x_floor": {"FM (cached)": 4.0, "DPLR ρ=2": 5.0},
            "dplr_faster_than_fwfm_full": 40.0,
            "dplr_over_fm": 1.25,
        }
    }


def test_query_timing_reports_both_ways_with_spread(small_split):
    model = randomised("fm", small_split.schema)
    items = catalogue(small_split.train)
    timing = query_timing(model, *context_of(small_split.test, 0), items.index, items.weight, repeats=3)
    for name in ("cached", "full"):
        median, q1, q3 = timing[name]
        assert 0 < q1 <= median <= q3


def test_bench_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("fmlib.bench.ranking.MIN_ITEMS", 1)  # the command's output, not its precision
    args = [
        "bench",
        "ranking",
        "--sizes",
        "20",
        "--repeats",
        "1",
        "--ranks",
        "2",
        "--fields",
        "8",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "20 items · synthetic m=8, |I|=4" in out and "DPLR ρ=2" in out and "× floor" in out
    record = json.loads(out.strip().splitlines()[-1])
    assert record["bench"] == "ranking" and record["threads"] == 1
    assert (tmp_path / "ranking_bench.csv").exists()
    assert main(["bench", "ranking", "--ranks", "0"]) == 2
    assert main(["bench", "ranking", "--fields", "1"]) == 2


def test_log_ticks_are_labelled_in_full():
    ticks = log_ticks(0.03, 7)
    assert ticks == pytest.approx([0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10])
    with pytest.raises(ValueError, match="0 < low <= high"):
        log_ticks(0, 1)


def test_per_item_cost_figure_has_spread_bars_title_and_units(monkeypatch):
    monkeypatch.setattr("fmlib.bench.ranking.MIN_ITEMS", 1)
    df = ranking_benchmark(sweep_schemas((8, 12), ()), sizes=(40,), ranks=(1,), repeats=2)
    fig = per_item_cost_figure(sweep_rows(df, 40, "m"), "m", title="cost per item")
    assert fig.layout.title.text == "cost per item" and "µs" in fig.layout.yaxis.title.text
    assert fig.layout.xaxis.title.text.startswith("fields m")
    floor = next(t for t in fig.data if t.name == FLOOR)
    assert list(floor.x) == [8, 12] and min(floor.error_y.array) >= 0 and min(floor.error_y.arrayminus) >= 0
    assert list(fig.layout.yaxis.ticktext) == [f"{t:g}" for t in fig.layout.yaxis.tickvals]


def test_full_batch_caps_an_fwfm_gram_matrix():
    schema = synthetic_schema(40, 20, cardinality=3)
    fwfm, fm = build_model("fwfm", schema), build_model("fm", schema)
    assert full_batch(fwfm) == 2**21 // (4 * 40 * 40) == 327 and full_batch(fwfm, 100) == 100
    assert full_batch(fm) == 4096 and full_batch(build_model("fwfm", synthetic_schema(8, 4))) == 4096


def test_cached_equals_full_reports_the_largest_difference_to_the_full_pass(small_split, monkeypatch):
    model = randomised("dplr", small_split.schema, rank=2)
    items = catalogue(small_split.train, small_split.test)
    context = context_of(small_split.test, 3)
    report = cached_equals_full(model, *context, items.index, items.weight, k=5)
    full = full_pass(model, *context, items.index, items.weight)
    gap = (rank_items(model, *context, items.index, items.weight) - full).abs().max()
    assert report["max_abs_difference"] == pytest.approx(float(gap)) and report["max_abs_difference"] < 1e-5
    assert report["overlap"] == 1.0 and report["k"] == 5 and report["items"] == len(items.index)
    assert report["largest_score"] == pytest.approx(float(full.abs().max()))
    # a cache that changed the scores would show: shift the cached scores of the full pass's top item
    best = int(full.argmax())

    def broken(*args, **kwargs):
        scores = rank_items(*args, **kwargs)
        scores[best] -= 100.0
        return scores

    monkeypatch.setattr("fmlib.ranking.rank_items", broken)
    wrong = cached_equals_full(model, *context, items.index, items.weight, k=1)
    assert wrong["max_abs_difference"] == pytest.approx(100.0, rel=1e-3) and wrong["overlap"] == 0.0


def test_a_recipe_is_the_config_without_the_training_seed():
    config = {
        "model": "dplr",
        "hp": {"dim": 4, "rank": 2},
        "train": {"lr": 0.01, "seed": 0},
        "dataset": "ml-100k",
        "split": {"seed": 0, "min_count": 1},
        "data_source": "cache",
    }
    other_seed = {**config, "train": {"lr": 0.01, "seed": 7}}
    assert recipe(config) == recipe(other_seed)
    assert recipe(config) != recipe({**config, "hp": {"dim": 4, "rank": 3}})
    assert recipe(config) != recipe({**config, "train": {"lr": 0.02, "seed": 0}})
    assert recipe(config) != recipe({**config, "split": {"seed": 1, "min_count": 1}})
    assert pair_kind("a", 0, "a", 1) == SAME and pair_kind("a", 0, "b", 1) == DIFFERENT
    assert pair_kind("a", 0, "b", 0) == SHARED_SEED and pair_kind("a", 0, "a", 0) is None


def test_agreement_and_the_seed_noise_verdict_by_hand():
    """Three queries, k = 2: a and a' are one recipe with two seeds, b another recipe."""
    t = torch.tensor
    tops = {
        "a": t([[0, 1, 2], [0, 1, 2], [0, 1, 2]]),
        "a'": t([[0, 1, 5], [0, 3, 5], [0, 1, 5]]),  # overlap@2 with a: 1, 0.5, 1
        "b": t([[0, 4, 1], [3, 4, 0], [6, 7, 1]]),  # overlap@2 with a: 0.5, 0, 0; with a': 0.5, 0.5, 0
    }
    recipes, seeds = {"a": "A", "a'": "A", "b": "B"}, {"a": 0, "a'": 1, "b": 2}
    pairs = agreement(tops, recipes, seeds, 2).set_index(["a", "b"])
    assert pairs.loc[("a", "a'"), "pair"] == SAME and pairs.loc[("a", "b"), "pair"] == DIFFERENT
    assert pairs.loc[("a", "a'"), "per_query"] == [1.0, 0.5, 1.0]
    assert pairs.loc[("a", "b"), "overlap"] == pytest.approx(1 / 6)
    assert pairs.loc[("a'", "b"), "per_query"] == [0.5, 0.5, 0.0]
    verdict = seed_noise_verdict(pairs.reset_index(), 2)
    diff = np.array([1.0, 0.5, 1.0]) - np.array([0.5, 0.25, 0.0])  # seeds minus models, per query
    half = 4.302652729911275 * diff.std(ddof=1) / np.sqrt(3)  # t(0.975, 2)
    assert verdict["difference"] == pytest.approx(diff.mean())
    assert verdict["low"] == pytest.approx(diff.mean() - half) and verdict["high"] == pytest.approx(diff.mean() + half)
    assert verdict["same"] == pytest.approx(2.5 / 3) and verdict["different"] == pytest.approx(0.75 / 3)
    expected = "more than one model" if verdict["low"] > 0 else "about as much as one model"
    assert expected in verdict["sentence"] and "Over 3 queries, overlap@2 is 0.25" in verdict["sentence"]
    # one seed shared by two different models: reported apart, left out of the verdict
    shared = agreement({**tops, "c": tops["a"]}, {**recipes, "c": "C"}, {**seeds, "c": 0}, 2)
    assert shared.set_index(["a", "b"]).loc[("a", "c"), "pair"] == SHARED_SEED
    assert seed_noise_verdict(shared, 2)["different"] != verdict["different"]  # c adds DIFFERENT pairs with a', b
    assert "started from one seed agree at 1.00 (1 pairs)" in seed_noise_verdict(shared, 2)["sentence"]
    with pytest.raises(ValueError, match="no 'one recipe, two seeds' pair"):
        seed_noise_verdict(agreement(tops, {"a": "A", "a'": "A2", "b": "B"}, seeds, 2), 2)


def test_the_verdict_names_the_side_its_interval_is_on():
    def pairs(same, different):
        return pd.DataFrame(
            [
                {"a": "x", "b": "x2", "pair": SAME, "overlap": np.mean(same), "per_query": same},
                {"a": "x", "b": "y", "pair": DIFFERENT, "overlap": np.mean(different), "per_query": different},
            ]
        )

    assert (
        "disagree more than one model trained with two seeds, by 0.50"
        in seed_noise_verdict(pairs([0.9, 0.8, 0.9, 0.8], [0.4, 0.3, 0.4, 0.3]), 10)["sentence"]
    )
    assert (
        "agree more than one model's two seeds do"
        in seed_noise_verdict(pairs([0.4, 0.3, 0.4, 0.3], [0.9, 0.8, 0.9, 0.8]), 10)["sentence"]
    )
    assert "no difference detectable" in seed_noise_verdict(pairs([0.5, 0.3, 0.4], [0.4, 0.4, 0.4]), 10)["sentence"]


def test_query_rows_are_the_latest_sample_of_each_user():
    data = split(movielens.load("ml-100k"), seed=0)
    rows = query_rows(data.test, 5)
    users = sorted(data.test.frame.user_id.unique())[:5]
    assert rows == [user_query(data.test, u) for u in users]
    with pytest.raises(ValueError, match="count must be >= 1"):
        query_rows(data.test, 0)
