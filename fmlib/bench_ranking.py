"""``python -m fmlib bench ranking``: per-item ranking latency as the number of fields grows.

Synthetic schemas m = 8 … 64 with half of the fields item fields, then m = 40 with 5 … 35 item
fields, then MovieLens (m = 12, 3 item fields) — FM, FwFM (full pass and cached context), pruned
FwFM and DPLR at ρ = 1 … 4, all timed in one run (``fmlib.ranking.ranking_benchmark``), one
thread, median over repeats, ratios to FM of the same schema. Written to <out>/ranking_bench.csv.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .ranking import ranking_benchmark, synthetic_schema

FIELD_SWEEP = (8, 16, 24, 32, 40, 48, 64)
ITEM_SWEEP = (5, 10, 30, 35)  # at m = 40; 20 is in the field sweep


def default_schemas(movielens_name: str | None = "ml-100k"):
    schemas = [(f"synthetic m={m}, |I|={m // 2}", synthetic_schema(m, m // 2)) for m in FIELD_SWEEP]
    schemas += [(f"synthetic m=40, |I|={i}", synthetic_schema(40, i)) for i in ITEM_SWEEP]
    if movielens_name:
        from .data import movielens
        schemas.append((movielens_name, movielens.load(movielens_name).schema))
    return schemas


def add_arguments(p):
    from .cli import _positive
    p.add_argument("--items", type=_positive(int), default=4000, help="items ranked per query")
    p.add_argument("--repeats", type=_positive(int), default=15, help="timings per model; the median is kept")
    p.add_argument("--dim", type=_positive(int), default=16, help="embedding size k")
    p.add_argument("--ranks", default="1,2,3,4", help="comma-separated ranks ρ")
    p.add_argument("--dataset", default="ml-100k", choices=["ml-100k", "ml-1m", "none"],
                   help="MovieLens schema to include ('none' to skip)")
    p.add_argument("--out", default="artifacts", help="output directory for ranking_bench.csv")


def run(args) -> int:
    try:
        ranks = tuple(int(r) for r in args.ranks.split(","))
    except ValueError:
        raise ValueError(f"--ranks must be comma-separated integers, got {args.ranks!r}") from None
    if min(ranks) < 1:
        raise ValueError(f"--ranks must be >= 1, got {args.ranks}")
    schemas = default_schemas(None if args.dataset == "none" else args.dataset)
    df = ranking_benchmark(schemas, ranks, n_items=args.items, dim=args.dim, repeats=args.repeats,
                           progress=lambda name: print(f"timed {name}", file=sys.stderr, flush=True))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "ranking_bench.csv", index=False)
    print(f"per-item latency (µs, median of {args.repeats}, {args.items} items, 1 thread); ratio = / FM")
    for name, group in df.groupby("schema", sort=False):
        print(f"\n{name}")
        for row in group.itertuples():
            print(f"  {row.model:<24}{row.per_item_us:9.3f} µs  ×{row.ratio_to_fm:6.2f}"
                  f"   (max |cached − full| {row.max_abs_diff:.1e})")
    print(f"\nwritten: {out / 'ranking_bench.csv'}", file=sys.stderr)
    return 0
