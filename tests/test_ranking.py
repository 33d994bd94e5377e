"""Cached-context ranking (DPLR eq. 2c, Algorithm 1) equals the full forward pass; the benchmark runs."""

import pytest
import torch

from fmlib.analysis.interactions import budget
from fmlib.bench.ranking import benchmark_models, ranking_benchmark, synthetic_schema
from fmlib.cli import main
from fmlib.data.schema import Schema
from fmlib.models import build_model
from fmlib.ranking import assemble, context_of, item_candidates, layout, rank_items, ranker


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
def test_cached_context_equals_full_forward(name, hp):
    schema = mixed_schema()
    model = randomised(name, schema, **hp)
    lay = layout(schema)
    index, weight = random_rows(schema, 50, torch.Generator().manual_seed(1))
    ctx_index, ctx_weight = index[0, lay.context_slots], weight[0, lay.context_slots]
    items, item_weight = index[:, lay.item_slots], weight[:, lay.item_slots]
    cached = rank_items(model, ctx_index, ctx_weight, items, item_weight)
    with torch.no_grad():
        full = model(*assemble(lay, ctx_index, ctx_weight, items, item_weight))
    assert torch.allclose(cached, full, atol=1e-5, rtol=0)


def test_pruned_fwfm_skips_pairs_and_still_matches():
    schema = synthetic_schema(40, 10, cardinality=5)
    models = {(label, rank): model for label, model, rank in benchmark_models(schema, ranks=(1,), dim=4)}
    pruned = models[("pruned FwFM", 1)]
    assert (pruned.R != 0).sum() == 2 * budget(40, 1)
    r = ranker(pruned)
    assert r.sparse and len(r.p) < 0.1 * 45
    lay = layout(schema)
    index, weight = torch.randint(0, 5, (30, 40)) + torch.tensor([f.offset for f in schema.fields]), torch.ones(30, 40)
    cached = rank_items(
        pruned,
        index[0, lay.context_slots],
        weight[0, lay.context_slots],
        index[:, lay.item_slots],
        weight[:, lay.item_slots],
    )
    with torch.no_grad():
        full = pruned(
            *assemble(
                lay,
                index[0, lay.context_slots],
                weight[0, lay.context_slots],
                index[:, lay.item_slots],
                weight[:, lay.item_slots],
            )
        )
    assert torch.allclose(cached, full, atol=1e-5, rtol=0)


def test_ranking_a_dataset(small_split):
    model = randomised("dplr", small_split.schema, rank=2)
    items, item_weight, rows = item_candidates(small_split.train)
    assert len(torch.unique(items, dim=0)) == len(items) == len(rows)
    ctx_index, ctx_weight = context_of(small_split.test, 3)
    scores = rank_items(model, ctx_index, ctx_weight, items, item_weight)
    with torch.no_grad():
        full = model(*assemble(layout(small_split.schema), ctx_index, ctx_weight, items, item_weight))
    assert torch.allclose(scores, full, atol=1e-5, rtol=0)


def test_bad_input_is_refused(small_split):
    with pytest.raises(ValueError, match="supports fm, fwfm and dplr"):
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


def test_benchmark_rows_and_ratios():
    df = ranking_benchmark([("m=10", synthetic_schema(10, 4, cardinality=10))], ranks=(1, 2), n_items=50, repeats=1)
    assert list(df.model) == [
        "FM",
        "FwFM (full pass)",
        "FwFM (cached context)",
        "pruned FwFM ρ=1",
        "DPLR ρ=1",
        "pruned FwFM ρ=2",
        "DPLR ρ=2",
    ]
    assert df.loc[df.model == "FM", "ratio_to_fm"].item() == 1.0
    assert (df.per_item_us > 0).all() and (df.max_abs_diff < 1e-4).all()


def test_bench_cli(tmp_path, capsys):
    assert (
        main(
            [
                "bench",
                "ranking",
                "--items",
                "20",
                "--repeats",
                "1",
                "--ranks",
                "1",
                "--dataset",
                "none",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "synthetic m=64, |I|=32" in out and "DPLR ρ=1" in out
    assert (tmp_path / "ranking_bench.csv").exists()
    assert main(["bench", "ranking", "--ranks", "0"]) == 2
