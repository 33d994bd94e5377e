"""``python -m fmlib bench ranking``: per-item cost of ranking a whole catalogue for one context.

For each catalogue size N (10³, 10⁴, 10⁵; 10⁶ with ``--large``) and each synthetic schema
(m = 8 … 64 with |I| = m/2 item fields, then m = 40 with |I| = 5 … 35), one random context
and N random items are scored by

* the floor: an ``embedding_bag`` sum of each item's |I| embedding rows — no model that reads
  its item's embeddings can score it with less;
* FM, FwFM and DPLR ρ with the context cached (``fmlib.ranking``), pruned FwFM ρ at the same
  budget ρ(m+1), and the full forward pass of FM and FwFM on pre-assembled rows (untimed);

all in one process, one thread, items in chunks of ``fmlib.ranking.BATCH`` (an FwFM's full pass in
chunks whose (chunk, m, m) Gram matrix stays under 2 MiB, ``full_batch``). Timing
(``timings``): a warm-up round, then ``repeats`` rounds that each time every scorer in turn,
so load drifts hit all alike; a timing scores the catalogue ⌈MIN_ITEMS / N⌉ times. Reported:
the per-item median and interquartile range (IQR), the context's one-off cost, and "× floor",
the median of the per-round ratios to the floor of the same round. The whole measurement runs
twice back to back; ``agree`` says whether each run's median lies within the other's min–max. Times are CPU times of
the scoring thread (``timings``), so other processes on a shared machine do not count.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..arguments import positive_int, positive_int_list
from ..data.schema import Schema
from ..models.dplr import DPLR
from ..models.fm import FM
from ..models.fwfm import FwFM
from ..ranking import BATCH, assemble, chunked, full_batch, full_pass, layout, ranker
from ..results import results_dir, write_csv

SIZES = (1_000, 10_000, 100_000)
LARGE = 1_000_000
MIN_ITEMS = 20_000  # a timing scores at least this many items (small catalogues are scored several times)
FIELD_SWEEP = (8, 16, 24, 32, 40, 48, 64)
ITEM_SWEEP = (5, 10, 30, 35)  # at m = 40; 20 is in the field sweep
HEADLINE = (40, 20)  # m, |I| of the targets
FLOOR = "floor (embedding_bag)"


def synthetic_schema(m: int, item_fields: int, cardinality: int = 1000) -> Schema:
    """m single-valued fields, the last ``item_fields`` of them item fields."""
    if not 1 <= item_fields <= m - 1:
        raise ValueError(f"item_fields must be in 1..m−1 = 1..{m - 1}, got {item_fields}")
    roles = ["context"] * (m - item_fields) + ["item"] * item_fields
    return Schema.build([(f"f{j}", roles[j], "single", cardinality, 1) for j in range(m)])


def sweep_schemas(fields=FIELD_SWEEP, item_sweep=ITEM_SWEEP) -> list:
    """(name, schema): m fields with |I| = m/2 for m in ``fields``, then m = 40 with |I| in ``item_sweep``."""
    schemas = [(f"synthetic m={m}, |I|={m // 2}", synthetic_schema(m, m // 2)) for m in fields]
    return schemas + [(f"synthetic m=40, |I|={i}", synthetic_schema(40, i)) for i in item_sweep]


def _random_rows(schema: Schema, slots: torch.Tensor, n: int, gen) -> tuple[torch.Tensor, torch.Tensor]:
    fields = [schema.fields[f] for f in schema.slot_fields()]
    index = torch.stack(
        [f.offset + torch.randint(0, f.cardinality, (n,), generator=gen) for f in (fields[s] for s in slots.tolist())],
        1,
    )
    weight = torch.stack([torch.full((n,), 1.0 / fields[s].slots) for s in slots.tolist()], 1)
    return index, weight


def benchmark_models(schema: Schema, ranks=(1, 2, 4), dim: int = 16, seed: int = 0) -> list:
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


def timings(fns: dict, repeats: int, loops: int = 1) -> dict:
    """CPU seconds per call of each function, ``repeats`` rounds after one warm-up round.

    Every round times each function in turn (so load drifts hit all of them); a timing is
    ``loops`` calls, divided by ``loops``. The clock is the calling thread's CPU time
    (``time.thread_time``; torch runs on this thread at one thread): on a shared machine wall
    time would also count the turns of other processes. Returns name -> array of ``repeats`` seconds.
    """
    times = {name: np.empty(repeats) for name in fns}
    for fn in fns.values():  # warm-up: first-call allocations and caches stay out of the timings
        fn()
    for i in range(repeats):
        for name, fn in fns.items():
            start = time.thread_time()
            for _ in range(loops):
                fn()
            times[name][i] = (time.thread_time() - start) / loops
    return times


def spread(values) -> tuple[float, float, float]:
    """(median, first quartile, third quartile)."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float(median), float(q1), float(q3)


def agree(a, b) -> bool:
    """Two runs' timings agree within their spread: each run's median lies within the other's min–max."""
    return bool(min(b) <= np.median(a) <= max(b) and min(a) <= np.median(b) <= max(a))


def floor(items: torch.Tensor, table: torch.Tensor, batch: int = BATCH) -> None:
    """The floor: an ``embedding_bag`` sum of each item's rows of ``table``, chunk by chunk."""
    for start in range(0, len(items), batch):
        F.embedding_bag(items[start : start + batch], table, mode="sum")


@torch.no_grad()
def _scorers(schema: Schema, n_items: int, ranks, dim: int, seed: int, batch: int):
    """Scoring functions of one schema and catalogue, their context functions and max |cached − full|."""
    lay = layout(schema)
    gen = torch.Generator().manual_seed(seed)
    ctx_index, ctx_weight = (t[0] for t in _random_rows(schema, lay.context_slots, 1, gen))
    items, item_weight = _random_rows(schema, lay.item_slots, n_items, gen)
    full_rows = assemble(lay, ctx_index, ctx_weight, items, item_weight)
    models = benchmark_models(schema, ranks, dim, seed)
    table = models[0][1].embedding.weight.detach()
    fns = {FLOOR: lambda: floor(items, table, batch)}
    contexts, info = {}, {FLOOR: (0, 0.0)}

    def full_forward(model):  # on rows assembled once, before timing
        return chunked(lambda a, b: model(full_rows[0][a:b], full_rows[1][a:b]), n_items, full_batch(model, batch))

    for label, model, rank in models:
        r = ranker(model)
        cache = r.cache(ctx_index, ctx_weight)
        diff = float((r.score(cache, items, item_weight, batch) - full_forward(model)).abs().max())
        name = f"{label} ρ={rank}" if rank else f"{label} (cached)"
        if label in ("FM", "FwFM"):
            fns[f"{label} (full pass)"] = lambda model=model: full_forward(model)
            info[f"{label} (full pass)"] = (rank, 0.0)
        fns[name] = lambda r=r, cache=cache: r.score(cache, items, item_weight, batch)
        contexts[name] = lambda r=r: r.cache(ctx_index, ctx_weight)
        info[name] = (rank, diff)
    return fns, contexts, info


def ranking_benchmark(
    schemas,
    sizes=SIZES,
    ranks=(1, 2, 4),
    dim: int = 16,
    repeats: int = 7,
    batch: int = BATCH,
    seed: int = 0,
    progress=None,
) -> pd.DataFrame:
    """Per-item cost of every scorer for each (catalogue size, schema), measured in two back-to-back runs.

    ``schemas``: list of (name, Schema). Columns: per_item_us with per_item_q1/q3 (both runs'
    rounds pooled), run1_us and run2_us (each run's median), agree (``agree`` of the two runs),
    x_floor with x_floor_q1/q3 (per-round ratio to the floor), context_us (the context cache's
    one-off cost per query) and max_abs_diff (cached scores against the full forward pass).
    """
    for name, value in (("repeats", repeats), ("batch", batch), *(("size", s) for s in sizes)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same thread setting for every scorer
    rows = []
    try:
        for n_items in sizes:
            loops = math.ceil(MIN_ITEMS / n_items)
            for name, schema in schemas:
                fns, contexts, info = _scorers(schema, n_items, ranks, dim, seed, batch)
                with torch.no_grad():
                    runs = [timings(fns, repeats, loops) for _ in range(2)]
                    context_s = timings(contexts, repeats, loops)
                for label, (rank, diff) in info.items():
                    per_item = [1e6 * run[label] / n_items for run in runs]
                    ratio = np.concatenate([run[label] / run[FLOOR] for run in runs])
                    pooled, x_floor = spread(np.concatenate(per_item)), spread(ratio)
                    first, second = spread(per_item[0]), spread(per_item[1])
                    rows.append(
                        {
                            "items": n_items,
                            "schema": name,
                            "m": schema.num_fields,
                            "item_fields": len(layout(schema).item_fields),
                            "model": label,
                            "rank": rank,
                            "per_item_us": pooled[0],
                            "per_item_q1": pooled[1],
                            "per_item_q3": pooled[2],
                            "run1_us": first[0],
                            "run2_us": second[0],
                            "agree": agree(*per_item),
                            "x_floor": x_floor[0],
                            "x_floor_q1": x_floor[1],
                            "x_floor_q3": x_floor[2],
                            "context_us": 1e6 * float(np.median(context_s[label])) if label in contexts else 0.0,
                            "max_abs_diff": diff,
                        }
                    )
                if progress is not None:
                    progress(f"{n_items} items, {name}")
    finally:
        torch.set_num_threads(old_threads)
    return pd.DataFrame(rows)


def sweep_rows(df: pd.DataFrame, n_items: int, x: str) -> pd.DataFrame:
    """The rows of one sweep at one catalogue size: x = "m" (|I| = m/2) or "item_fields" (m = 40)."""
    g = df[(df["items"] == n_items) & df.schema.str.startswith("synthetic")]
    if x == "m":
        return g[g.item_fields * 2 == g.m]
    if x == "item_fields":
        return g[g.m == HEADLINE[0]]
    raise ValueError(f"x must be 'm' or 'item_fields', got {x!r}")


def headline(df: pd.DataFrame) -> dict:
    """The targets at m = 40, |I| = 20 for each catalogue size: × floor of cached FM and DPLR ρ=2, and
    DPLR ρ=2 against FwFM's full pass and FM, as ratios of their × floor (per-round ratios, robust to load)."""
    m, i = HEADLINE
    out = {}
    for n_items, group in df[(df.m == m) & (df.item_fields == i)].groupby("items"):
        x = group.set_index("model")["x_floor"]
        if "DPLR ρ=2" not in x.index:
            continue
        out[int(n_items)] = {
            "x_floor": {k: round(float(x[k]), 2) for k in ("FM (cached)", "DPLR ρ=2")},
            "dplr_faster_than_fwfm_full": round(float(x["FwFM (full pass)"] / x["DPLR ρ=2"]), 2),
            "dplr_over_fm": round(float(x["DPLR ρ=2"] / x["FM (cached)"]), 2),
        }
    return out


def cache_payoff(df: pd.DataFrame, n_items: int) -> str:
    """One sentence, from the measured numbers, on when caching the context pays off (FwFM, cached vs full)."""
    g = df[(df["items"] == n_items) & df.schema.str.startswith("synthetic")]
    full = g[g.model == "FwFM (full pass)"].set_index("schema")
    cached = g[g.model == "FwFM (cached)"].set_index("schema")
    gain = (full.per_item_us / cached.per_item_us).dropna()
    context = full.m - full.item_fields
    best, worst = gain.idxmax(), gain.idxmin()
    return (
        f"At {n_items:,} items, caching the context made FwFM {gain[best]:.1f}× cheaper per item with "
        f"{context[best]} context fields (m = {full.m[best]}), but only {gain[worst]:.1f}× with "
        f"{context[worst]} (m = {full.m[worst]}): the cache removes the context's share of the pairs, "
        "so it pays off when many fields are context fields and hardly at all when few are."
    )


@torch.no_grad()
def query_timing(model, context_index, context_weight, item_index, item_weight, repeats: int = 7) -> dict:
    """CPU seconds per query on equal terms: warm-up, ``repeats`` interleaved rounds, one thread.

    "cached" builds the context cache and scores every item (the scorer's per-row table is built
    once per model, before timing, like loading the model); "full" assembles the full rows and
    runs the forward pass. Returns {"cached": (median, q1, q3), "full": (median, q1, q3)}.
    """
    model.eval()
    r = ranker(model)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        times = timings(
            {
                "cached": lambda: r.score(r.cache(context_index, context_weight), item_index, item_weight),
                "full": lambda: full_pass(model, context_index, context_weight, item_index, item_weight),
            },
            repeats,
        )
    finally:
        torch.set_num_threads(old_threads)
    return {name: spread(t) for name, t in times.items()}


def add_arguments(p):
    p.add_argument(
        "--sizes", type=positive_int_list, default=",".join(map(str, SIZES)), help="catalogue sizes (items per query)"
    )
    p.add_argument("--large", action="store_true", help=f"also a catalogue of {LARGE:,} items")
    p.add_argument("--repeats", type=positive_int, default=7, help="timed rounds per run (after one warm-up round)")
    p.add_argument("--batch", type=positive_int, default=BATCH, help="items scored per chunk")
    p.add_argument("--dim", type=positive_int, default=16, help="embedding size k")
    p.add_argument("--ranks", type=positive_int_list, default="1,2,4", help="comma-separated ranks ρ")
    p.add_argument("--fields", type=positive_int_list, default=",".join(map(str, FIELD_SWEEP)), help="m of the sweep")
    p.add_argument("--out", default=None, help="output directory for ranking_bench.csv (default: $FMLIB_RESULTS)")


def _figure(value, q1, q3, unit="") -> str:
    return f"{value:.3f}{unit} [{q1:.3f}–{q3:.3f}]"


def run(args) -> int:
    if min(args.fields) < 2:
        raise ValueError(f"--fields: every m must be >= 2, got {args.fields}")
    sizes = tuple(args.sizes) + ((LARGE,) if args.large else ())
    df = ranking_benchmark(
        sweep_schemas(args.fields),
        sizes,
        args.ranks,
        dim=args.dim,
        repeats=args.repeats,
        batch=args.batch,
        progress=lambda name: print(f"timed {name}", file=sys.stderr, flush=True),
    )
    out = Path(args.out or results_dir())
    write_csv(out / "ranking_bench.csv", df)
    print(
        f"per-item CPU time, µs: median [IQR] of 2 runs × {args.repeats} rounds (after a warm-up), 1 thread, "
        f"chunks of {args.batch} items (FwFM's full pass: Gram matrix ≤ 2 MiB), k = {args.dim}; × floor = per-round ratio to an embedding_bag sum "
        "of the item's rows; run 1 / run 2 medians, ✓ when each lies within the other run's min–max"
    )
    for (n_items, name), group in df.groupby(["items", "schema"], sort=False):
        print(f"\n{n_items:,} items · {name}")
        for row in group.itertuples():
            print(
                f"  {row.model:<22}{_figure(row.per_item_us, row.per_item_q1, row.per_item_q3, ' µs'):>30}"
                f"  ×{_figure(row.x_floor, row.x_floor_q1, row.x_floor_q3):>22} floor"
                f"  runs {row.run1_us:.3f}/{row.run2_us:.3f} {'✓' if row.agree else '✗'}"
                f"  (context {row.context_us:.0f} µs, max |cached − full| {row.max_abs_diff:.0e})"
            )
    print(f"\n{cache_payoff(df, max(sizes))}")
    m, i = HEADLINE
    rows = df[(df.m == m) & (df.item_fields == i)]
    print(
        json.dumps(
            {
                "bench": "ranking",
                "m": m,
                "item_fields": i,
                "batch": args.batch,
                "threads": 1,
                "repeats": args.repeats,
                "headline": headline(df),
                "rows": rows[
                    ["items", "model", "per_item_us", "per_item_q1", "per_item_q3", "run1_us", "run2_us", "agree"]
                    + ["x_floor", "x_floor_q1", "x_floor_q3"]
                ]
                .round(4)
                .to_dict("records"),
            },
            ensure_ascii=False,
        )
    )
    print(f"written: {out / 'ranking_bench.csv'}", file=sys.stderr)
    return 0
