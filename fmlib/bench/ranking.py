"""``python -m fmlib bench ranking``: per-item ranking latency as the number of fields grows.

Synthetic schemas m = 8 … 64 with half of the fields item fields, then m = 40 with 5 … 35 item
fields, then MovieLens (m = 12, 3 item fields) — FM, FwFM (full pass and cached context), pruned
FwFM and DPLR at ρ = 1 … 4, all timed in one run (``ranking_benchmark``), one
thread, median over repeats, ratios to FM of the same schema. Written to <out>/ranking_bench.csv.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from ..arguments import positive_int, positive_int_list
from ..data.schema import Schema
from ..models.dplr import DPLR
from ..models.fm import FM
from ..models.fwfm import FwFM
from ..ranking import assemble, layout, ranker


def synthetic_schema(m: int, item_fields: int, cardinality: int = 1000) -> Schema:
    """m single-valued fields, the last ``item_fields`` of them item fields."""
    if not 1 <= item_fields <= m - 1:
        raise ValueError(f"item_fields must be in 1..m−1 = 1..{m - 1}, got {item_fields}")
    roles = ["context"] * (m - item_fields) + ["item"] * item_fields
    return Schema.build([(f"f{j}", roles[j], "single", cardinality, 1) for j in range(m)])


def _random_rows(schema: Schema, slots: torch.Tensor, n: int, gen) -> tuple[torch.Tensor, torch.Tensor]:
    fields = [schema.fields[f] for f in schema.slot_fields()]
    index = torch.stack(
        [f.offset + torch.randint(0, f.cardinality, (n,), generator=gen) for f in (fields[s] for s in slots.tolist())],
        1,
    )
    weight = torch.stack([torch.full((n,), 1.0 / fields[s].slots) for s in slots.tolist()], 1)
    return index, weight


def benchmark_models(schema: Schema, ranks=(1, 2, 3, 4), dim: int = 16, seed: int = 0) -> list:
    """(label, model, rank) for FM, FwFM, pruned FwFM and DPLR at each rank; random weights, R ~ N(0, 1)."""
    from ..analysis.interactions import budget, prune, with_R

    torch.manual_seed(seed)
    m = schema.num_fields
    fwfm = FwFM(schema, dim)
    with torch.no_grad():
        fwfm.r_upper.normal_()
    out = [("FM", FM(schema, dim), 0), ("FwFM", fwfm, 0)]
    for rank in ranks:
        if rank > m - 1 or budget(m, rank) >= m * (m - 1) // 2:
            continue
        pruned = with_R(fwfm, prune(fwfm.R.detach().numpy(), budget(m, rank)))
        out += [("pruned FwFM", pruned, rank), ("DPLR", DPLR(schema, dim, rank), rank)]
    return [(label, model.eval(), rank) for label, model, rank in out]


def _interleaved_medians(fns: dict, repeats: int) -> dict:
    """Median seconds of each function, timed in turn within every repeat (so load drifts hit all)."""
    times = {name: [] for name in fns}
    for fn in fns.values():  # warm-up
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


@torch.no_grad()
def ranking_benchmark(
    schemas,
    ranks=(1, 2, 3, 4),
    n_items: int = 2000,
    dim: int = 16,
    repeats: int = 7,
    seed: int = 0,
    threads: int | None = 1,
    progress=None,
) -> pd.DataFrame:
    """Per-item ranking latency of FM, FwFM (full pass and cached context), pruned FwFM and DPLR.

    ``schemas``: list of (name, Schema). For each, one query (a random context) and ``n_items``
    random items are scored; the median over ``repeats`` of the item-scoring time, divided by
    ``n_items``, is the per-item latency (µs). The context's one-off cost is reported apart.
    ``ratio_to_fm`` divides by the cached FM of the same schema measured in the same run.
    ``max_abs_diff`` checks every cached score against the full forward pass.
    """
    for name, value in (("n_items", n_items), ("repeats", repeats)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    old_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    rows = []
    try:
        gen = torch.Generator().manual_seed(seed)
        for name, schema in schemas:
            lay = layout(schema)
            ctx_index, ctx_weight = (t[0] for t in _random_rows(schema, lay.context_slots, 1, gen))
            item_index, item_weight = _random_rows(schema, lay.item_slots, n_items, gen)
            full = assemble(lay, ctx_index, ctx_weight, item_index, item_weight)
            fns, info = {}, {}
            for label, model, rank in benchmark_models(schema, ranks, dim, seed):
                r = ranker(model)
                cache = r.cache(ctx_index, ctx_weight)
                diff = float((r.score(cache, item_index, item_weight) - model(*full)).abs().max())
                if label == "FwFM":
                    fns["FwFM (full pass)"] = lambda model=model, full=full: model(*full)
                    info["FwFM (full pass)"] = (rank, diff, None)
                    label = "FwFM (cached context)"
                elif label != "FM":
                    label = f"{label} ρ={rank}"
                fns[label] = lambda r=r, cache=cache, i=item_index, w=item_weight: r.score(cache, i, w)
                info[label] = (rank, diff, lambda r=r, i=ctx_index, w=ctx_weight: r.cache(i, w))
            item_seconds = _interleaved_medians(fns, repeats)
            context_seconds = _interleaved_medians({k: c for k, (_, _, c) in info.items() if c}, repeats)
            for label, (rank, diff, _) in info.items():
                rows.append(
                    {
                        "schema": name,
                        "m": schema.num_fields,
                        "item_fields": len(lay.item_fields),
                        "model": label,
                        "rank": rank,
                        "per_item_us": 1e6 * item_seconds[label] / n_items,
                        "context_us": 1e6 * context_seconds.get(label, 0.0),
                        "max_abs_diff": diff,
                    }
                )
            if progress is not None:
                progress(name)
    finally:
        torch.set_num_threads(old_threads)
    df = pd.DataFrame(rows)
    fm = df[df.model == "FM"].set_index("schema")["per_item_us"]
    df["ratio_to_fm"] = df["per_item_us"] / df["schema"].map(fm)
    return df[
        ["schema", "m", "item_fields", "model", "rank", "per_item_us", "ratio_to_fm", "context_us", "max_abs_diff"]
    ]


FIELD_SWEEP = (8, 16, 24, 32, 40, 48, 64)
ITEM_SWEEP = (5, 10, 30, 35)  # at m = 40; 20 is in the field sweep


def default_schemas(movielens_name: str | None = "ml-100k"):
    schemas = [(f"synthetic m={m}, |I|={m // 2}", synthetic_schema(m, m // 2)) for m in FIELD_SWEEP]
    schemas += [(f"synthetic m=40, |I|={i}", synthetic_schema(40, i)) for i in ITEM_SWEEP]
    if movielens_name:
        from ..data import movielens

        schemas.append((movielens_name, movielens.load(movielens_name).schema))
    return schemas


def add_arguments(p):
    p.add_argument("--items", type=positive_int, default=4000, help="items ranked per query")
    p.add_argument("--repeats", type=positive_int, default=15, help="timings per model; the median is kept")
    p.add_argument("--dim", type=positive_int, default=16, help="embedding size k")
    p.add_argument("--ranks", type=positive_int_list, default="1,2,3,4", help="comma-separated ranks ρ")
    p.add_argument(
        "--dataset",
        default="ml-100k",
        choices=["ml-100k", "ml-1m", "none"],
        help="MovieLens schema to include ('none' to skip)",
    )
    p.add_argument("--out", default="artifacts", help="output directory for ranking_bench.csv")


def run(args) -> int:
    schemas = default_schemas(None if args.dataset == "none" else args.dataset)
    df = ranking_benchmark(
        schemas,
        args.ranks,
        n_items=args.items,
        dim=args.dim,
        repeats=args.repeats,
        progress=lambda name: print(f"timed {name}", file=sys.stderr, flush=True),
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "ranking_bench.csv", index=False)
    print(f"per-item latency (µs, median of {args.repeats}, {args.items} items, 1 thread); ratio = / FM")
    for name, group in df.groupby("schema", sort=False):
        print(f"\n{name}")
        for row in group.itertuples():
            print(
                f"  {row.model:<24}{row.per_item_us:9.3f} µs  ×{row.ratio_to_fm:6.2f}"
                f"   (max |cached − full| {row.max_abs_diff:.1e})"
            )
    print(f"\nwritten: {out / 'ranking_bench.csv'}", file=sys.stderr)
    return 0
