"""``python -m fmlib bench train``: seconds per training epoch of every model, against baselines.

What users run: every fmlib model's default training step — ``fmlib.train.train_step`` itself, the
step ``fmlib.train.fit`` takes (the model's defaults and ``Model.prepare``, its Adam parameter groups and
grouped L2 from ``fmlib.train.optimizer_for``, ``fmlib.optim.Adam`` (torch's fused Adam kernel), the model's
``loss`` on ratings, the default batch of the device, a batch's rows taken as ``fit`` takes them,
``fmlib.train.OnDevice.batch``) — on
MovieLens' 12 fields, genres multi-valued. Two baselines, in the same process:

* **plain FM**: an FM written the way a PyTorch user would: ``nn.Embedding`` per single-valued
  field, ``nn.EmbeddingBag(mode="mean")`` for the genres (padding excluded), Rendle's identity
  ([Rendle2010] Lemma 3.1) on the stacked field embeddings, autograd, ``torch.optim.Adam``; same 12 fields,
  same rating target, same batches. Every fmlib model's ratio is taken to it.
* **torchfm**: torchfm's FactorizationMachineModel on the 11 single-valued fields (click task,
  so its sigmoid output fits its BCE loss), beside fmlib's FM on the same 11 fields with
  fmlib's training step (Adam groups with L2, as for the 12 fields).

Evaluation (RaFM Corollary 4): seconds to score the training rows without gradients, RaFM
against the FM of its largest rank D_m, on the 12 fields; beside it the multiply-adds Corollary 4
counts for these rows, Σ_k D_k · (slots in F_k), and those fmlib's evaluation does, both as a
multiple of D_m · slots (the FM's).

The floor the hardware allows: the multiply-adds of every entry's matrix products in one training
step (forward and backward, counted by torch's ``FlopCounterMode``), at the rate of a large float32
matrix product timed in the same run, give the seconds an epoch cannot go below
(elementwise work, memory traffic and Python are left out, so the true floor is higher).

``--synthetic --rows N``: instead of MovieLens, N training rows generated on the device with
MovieLens 25M's user and movie counts (162,541 and 62,423) in MovieLens 100K's 12-field layout
(``synthetic_rows``), so a GPU's speed at scale can be measured without the data set.

Every measured thing runs once to warm up, then ``--repeats`` times; repeats alternate between
all entries so machine load hits them alike, and each timing starts after a few untimed steps of
its own entry (as in training, where epochs follow each other: its tables are in the cache). Two tables, wall-clock seconds and the CPU seconds
of this process (steadier on a shared machine), and the JSON line give the median and the
min–max of the seconds, and of each ratio taken repeat by repeat; "fm, 12 / 11 fields" is the
cost of the multi-valued genres field, fmlib's FM on the 12 fields against it on the 11; "fm,
blocks / 12 fields" the cost of the relation blocks rated and raters ([Rendle2013]; SVD++'s
implicit feedback, ``fmlib.data.features``): fmlib's FM on ``all,rated,raters`` against it on the
12 fields (MovieLens only: the blocks are built from the training split's pairs).
"""

from __future__ import annotations

import json
import statistics
import time

import torch
from torch import nn

from ..arguments import add_data_arguments, positive_int
from ..data import load, split
from ..data.dataset import Dataset, slot_weights
from ..data.encoding import FIELDS
from ..data.features import with_features
from ..data.schema import Schema
from ..models import MODELS, build_model
from ..models.fm import fm_pairwise
from ..train import BATCH_SIZE, DEVICES, OnDevice, TrainConfig, loss_fn, optimizer_for, train_step

WARM_STEPS = 3  # untimed steps of an entry right before its timed epoch
BLOCKS = "all,rated,raters"  # the feature set of the relation-block entry (``fmlib.data.features``)
BLOCKS_ENTRY = "fm + rated, raters"


def add_arguments(p):
    add_data_arguments(p)
    p.add_argument("--repeats", type=positive_int, default=3, help="timed epochs per entry (after one warm-up)")
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.add_argument("--batch-size", type=positive_int, default=None, help="default: the device's training default")
    p.add_argument(
        "--synthetic",
        action="store_true",
        help="time on --rows generated rows with MovieLens 25M's user and movie counts instead of the data set",
    )
    p.add_argument("--rows", type=positive_int, default=None, help="training rows of --synthetic (default 1,000,000)")
    p.add_argument(
        "--models",
        default=",".join(m for m in MODELS if m != "bfm"),
        help="fmlib models to time, comma-separated (bfm samples instead of taking Adam steps: not timed here)",
    )


class PlainFM(nn.Module):
    """An FM as a PyTorch user writes it: a table per field, genres averaged by an EmbeddingBag."""

    def __init__(self, cardinalities: list[int], genres: int, dim: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1))
        self.embed = nn.ModuleList(nn.Embedding(c, dim) for c in cardinalities)
        self.linear = nn.ModuleList(nn.Embedding(c, 1) for c in cardinalities)
        self.genre_embed = nn.EmbeddingBag(genres + 1, dim, mode="mean", padding_idx=genres)
        self.genre_linear = nn.EmbeddingBag(genres + 1, 1, mode="mean", padding_idx=genres)
        for table in [*self.embed, self.genre_embed]:
            nn.init.normal_(table.weight, std=0.01)

    def forward(self, x: torch.Tensor, genres: torch.Tensor) -> torch.Tensor:
        e = [table(x[:, j]) for j, table in enumerate(self.embed)] + [self.genre_embed(genres)]
        w = [table(x[:, j]) for j, table in enumerate(self.linear)] + [self.genre_linear(genres)]
        return self.bias + torch.cat(w, 1).sum(1) + fm_pairwise(torch.stack(e, 1))


def _check(args, models: list[str]) -> None:
    unknown = [m for m in models if m not in MODELS or m == "bfm"]
    if unknown:
        allowed = ", ".join(m for m in MODELS if m != "bfm")
        raise ValueError(f"--models: {', '.join(unknown)} cannot be timed; choose from {allowed}")
    if args.rows is not None and not args.synthetic:
        raise ValueError(
            "--rows sets the size of --synthetic: add --synthetic, or leave --rows out to time the data set"
        )
    TrainConfig(device=args.device)  # a clear error when cuda is asked for and absent


# MovieLens 100K's 12 fields (``fmlib.data.encoding.FIELDS``: names, roles, kinds) with MovieLens 25M's users
# and movies (the real 25M has 8 fields: no demographics): values per field, the rare bucket not counted.
# Genres: 19 values, 1 to GENRE_SLOTS of them a row.
SYNTHETIC_VALUES = {
    "user_id": 162_541,
    "age": 7,
    "gender": 2,
    "occupation": 21,
    "zip": 10,
    "time_year": 25,
    "time_month": 12,
    "time_weekday": 7,
    "time_hour": 24,
    "movie_id": 62_423,
    "release_year": 120,
    "genres": 19,
}
GENRE_SLOTS = 6


@torch.no_grad()
def synthetic_rows(rows: int, device: torch.device, seed: int = 0):
    """(schema, index, weight, rating) of ``rows`` samples generated on ``device``: each
    single-valued field's value drawn with a skew (value ⌊c·u²⌋ for u uniform, so low values
    are frequent, as popular users and movies are), 1–6 distinct genres averaged, ratings
    0.5–5 in half stars. Only sizes and layout matter here: the timings of a training step do
    not depend on what the ratings mean."""
    gen = torch.Generator(device=device).manual_seed(seed)
    schema = Schema.build(
        [
            (name, role, kind, SYNTHETIC_VALUES[name] + 1, GENRE_SLOTS if kind == "multi" else 1)
            for name, role, kind in FIELDS
        ]
    )
    cols = [  # local values 1 … c−1 (0 is the rare bucket), then the field's offset
        f.offset + 1 + ((f.cardinality - 1) * torch.rand(rows, generator=gen, device=device).pow(2)).long()
        for f in schema.fields[:-1]
    ]
    genre = schema.fields[-1]
    draws = torch.rand(rows, genre.cardinality - 1, generator=gen, device=device).argsort(1)[:, :GENRE_SLOTS]
    lengths = torch.randint(1, GENRE_SLOTS + 1, (rows, 1), generator=gen, device=device)  # distinct genres a row
    used = torch.arange(GENRE_SLOTS, device=device) < lengths
    genres = torch.where(used, genre.offset + 1 + draws, genre.offset)  # padding -> the rare bucket, weight 0
    index = torch.cat([torch.stack(cols, 1), genres], 1)
    rating = torch.randint(1, 11, (rows,), generator=gen, device=device) / 2
    return schema, index, slot_weights(schema, lengths), rating


def bench_rows(args, device: torch.device):
    """(schema, index, weight, rating) of the rows to time, on ``device``, and the same rows with
    the relation blocks added (``all,rated,raters``: schema, index, weight; None for
    ``--synthetic``, which has no training pairs to build them from): the training split of the
    data set, or ``--synthetic`` rows."""
    if args.synthetic:
        return *synthetic_rows(args.rows or 1_000_000, device), None
    parts = split(load(args.dataset, data_dir=args.data_dir), seed=0)
    train, blocks = parts.train, with_features(parts, BLOCKS).train
    return (
        train.schema,
        train.index.to(device),
        train.weight.to(device),
        train.target("rating").to(device),
        (blocks.schema, blocks.index.to(device), blocks.weight.to(device)),
    )


def _timed(fn, device) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, time.process_time() - cpu


def run(args) -> int:
    from torchfm.model.fm import FactorizationMachineModel

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    _check(args, models)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    batch = args.batch_size or BATCH_SIZE[args.device]
    torch.manual_seed(0)
    schema, index, weight, rating, with_blocks = bench_rows(args, device)
    rows = len(index)
    if batch > rows:
        raise ValueError(f"--batch-size {batch} is larger than the {rows} training rows")
    single = [f for f in schema.fields if f.kind == "single"]
    if [f.kind for f in schema.fields] != ["single"] * len(single) + ["multi"]:
        raise RuntimeError(f"bench train needs the single-valued fields first, then genres; got {schema.names}")
    n_single = len(single)
    click = (rating >= 4).float()  # the click task of ``Dataset.target``
    local = index[:, :n_single] - torch.tensor([f.offset for f in single], device=device)
    genre_field = schema.fields[-1]
    genres = torch.where(  # EmbeddingBag input: local genre ids, padding -> its own index
        weight[:, n_single:] > 0, index[:, n_single:].long() - genre_field.offset, genre_field.cardinality
    )
    train = Dataset(schema, index, weight, rating)  # for ``Model.prepare`` (RaFM: the counts n_i of eq. 17)
    config = TrainConfig(device=args.device)

    def fmlib_step(name, data, task="rating"):
        """``fmlib.train.train_step`` of model ``name`` on ``data``'s rows, set up as ``fit`` sets it up."""
        model = build_model(name, data.schema)
        model.prepare(data)
        model.to(device).train()
        optimizer, decays = optimizer_for(model, config)
        criterion, rows = loss_fn(task), OnDevice.of(data, task, device)
        return lambda r: train_step(model, optimizer, criterion, *rows.batch(r), decays)

    def baseline_step(model, forward, target, loss):
        """A PyTorch user's step: torch's Adam, autograd, no L2."""
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)

        def step(rows):
            optimizer.zero_grad()
            loss(forward(rows), target.index_select(0, rows)).backward()
            optimizer.step()

        return step

    steps = {name: fmlib_step(name, train) for name in models}
    if with_blocks is not None and "fm" in models:  # the relation blocks' cost: the same FM, two fields more
        steps[BLOCKS_ENTRY] = fmlib_step("fm", Dataset(*with_blocks, rating))
    plain = PlainFM([f.cardinality for f in single], genre_field.cardinality, 16).to(device)
    steps["plain FM"] = baseline_step(plain, lambda r: plain(local[r], genres[r]), rating, loss_fn("rating"))
    single_fields = Dataset(
        Schema(tuple(single)), index[:, :n_single].contiguous(), weight[:, :n_single].contiguous(), rating
    )
    steps["fm, 11 fields"] = fmlib_step("fm", single_fields, task="click")
    theirs = FactorizationMachineModel([f.cardinality for f in single], 16).to(device)
    steps["torchfm, 11 fields"] = baseline_step(theirs, lambda r: theirs(local[r]), click, nn.BCELoss())

    def epoch(step, seed):
        perm = torch.randperm(rows, generator=torch.Generator().manual_seed(seed)).to(device)
        return lambda: [step(perm[i : i + batch]) for i in range(0, rows, batch)]

    # Training runs epochs back to back, so its tables stay in the cache: before each timing, an
    # entry takes WARM_STEPS untimed steps (or scores one batch) after the other entries ran.
    first = torch.arange(batch, device=device)
    warm = {name: lambda s=step: [s(first) for _ in range(WARM_STEPS)] for name, step in steps.items()}
    evals = {}
    rafm_cost = None
    if "rafm" in models:
        rafm = build_model("rafm", schema)
        rafm.prepare(train)
        rafm.to(device).eval()
        fm_top = build_model("fm", schema, dim=rafm.ranks[-1]).to(device).eval()
        for label, model in ((f"FM, dim {rafm.ranks[-1]}", fm_top), ("rafm", rafm)):
            evals[f"eval {label}"] = lambda m=model: _predict(m, index, weight)
            warm[f"eval {label}"] = lambda m=model: _predict(m, index[:batch], weight[:batch])
        rafm_cost = rafm_cost_ratios(rafm, index, weight, dense=device.type == "cuda")

    peak = peak_multiply_adds(device)
    per_row = {name: multiply_adds_per_row(step, first) for name, step in steps.items()}
    alone = {name: product_seconds(step, first, device) / batch for name, step in steps.items() if per_row[name]}

    times = {name: [] for name in [*steps, *evals]}
    cpu_times = {name: [] for name in times}
    for repeat in range(args.repeats + 1):  # repeat 0 warms up
        runs = [(name, epoch(step, repeat)) for name, step in steps.items()] + list(evals.items())
        for name, fn in runs:
            warm[name]()
            seconds, cpu = _timed(fn, device)
            if repeat:
                times[name].append(seconds)
                cpu_times[name].append(cpu)
    source = "generated (--synthetic)" if args.synthetic else args.dataset
    print(
        f"\n{rows} training rows of {source}, {n_single + 1} fields (genres multi-valued) unless marked, "
        f"batch {batch}, device {args.device}, {args.threads} thread(s), {args.repeats} repeats"
    )
    summary = {}
    for label, measured in (("wall", times), ("cpu", cpu_times)):
        summary[label] = report(measured, label, evals)
    floor = report_floor(per_row, alone, peak, rows, cpu_times if device.type == "cpu" else times)
    if rafm_cost:
        print(
            f"\nrafm evaluation, multiply-adds of the second-order term as a multiple of FM's (dim {rafm.ranks[-1]}): "
            f"Corollary 4 {rafm_cost['corollary 4']:.3f}, fmlib {rafm_cost['fmlib']:.3f}"
        )
    print(
        json.dumps(
            {
                "bench": "train",
                "data": source,
                "rows": rows,
                "batch_size": batch,
                "device": args.device,
                "threads": args.threads,
                "repeats": args.repeats,
                "seconds": summary["wall"]["seconds"],
                "ratios": summary["wall"]["ratios"],
                "cpu_seconds": summary["cpu"]["seconds"],
                "cpu_ratios": summary["cpu"]["ratios"],
                "peak_multiply_adds_per_s": round(peak),
                "floor": floor,
                **({"rafm_eval_multiply_adds": rafm_cost} if rafm_cost else {}),
            }
        )
    )
    return 0


@torch.no_grad()
def _predict(model, index, weight, batch: int = 8192) -> None:
    """Score every row in batches of ``fmlib.train.predict``'s size (evaluation, as users run it)."""
    for i in range(0, len(index), batch):
        model(index[i : i + batch].long(), weight[i : i + batch])  # int64 rows, as ``Dataset.batch`` gives


def peak_multiply_adds(device: torch.device, repeats: int = 5) -> float:
    """Multiply-adds per second of the fastest of ``repeats`` products of two size × size float32
    matrices (1024 on a CPU, 8192 on a GPU): about the best rate of this device and thread count;
    a model's smaller products run slower."""
    size = 1024 if device.type == "cpu" else 8192
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    a @ b
    return size**3 / min(_timed(lambda: a @ b, device)[0] for _ in range(repeats))


def multiply_adds_per_row(step, rows: torch.Tensor) -> float:
    """Multiply-adds of the matrix products (mm, bmm, addmm, …) of one training ``step`` on the
    batch ``rows``, forward and backward, per row: torch's ``FlopCounterMode`` counts 2 FLOPs each
    (it skips in-place products such as ``addmm_``, which fmlib's models therefore do not use)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step(rows)
    return counter.get_total_flops() / 2 / len(rows)


PRODUCTS = ("mm", "bmm", "addmm", "baddbmm")  # the matrix products FlopCounterMode counts in these models


def product_seconds(step, rows: torch.Tensor, device: torch.device, repeats: int = 5) -> float:
    """Seconds of the matrix products of one training ``step`` alone, at their own shapes and
    memory layouts: every product the step runs (forward and backward) is recorded, then replayed
    on random data of the same shapes and strides; the fastest of ``repeats`` replays. What the
    step's products cost on this device however little else it did — a floor that small or
    oddly shaped products, which run below the large product's rate, cannot beat."""
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = []

    def layout(a):
        return (a.shape, a.stride(), a.dtype) if isinstance(a, torch.Tensor) else a

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func.overloadpacket.__name__ in PRODUCTS:
                calls.append((func, [layout(a) for a in args], {k: layout(a) for k, a in kwargs.items()}))
            return func(*args, **kwargs)

    with Record():
        step(rows)

    def like(a):
        if not isinstance(a, tuple):
            return a
        shape, stride, dtype = a
        return torch.empty_strided(shape, stride, dtype=dtype, device=device).normal_()

    replay = [(func, [like(a) for a in args], {k: like(a) for k, a in kwargs.items()}) for func, args, kwargs in calls]

    def run():
        for func, args, kwargs in replay:
            func(*args, **kwargs)

    run()
    return min(_timed(run, device)[0] for _ in range(repeats))


def rafm_cost_ratios(model, index: torch.Tensor, weight: torch.Tensor, dense: bool = False) -> dict:
    """Multiply-adds of RaFM's second-order term over these rows, as a multiple of D_m · slots
    (the FM of rank D_m): Corollary 4's Σ_k D_k · (slots in F_k), and fmlib's evaluation on this
    device: ``RaFM.predict`` (the CPU's: every slot at D_m, and the 2 D_p columns of level p < m
    only in the samples with a feature of rank index p), or with ``dense``, ``RaFM.predict_dense``
    (a GPU's: D_m + Σ_{p<m} 2 D_p columns for every slot)."""
    D, slot = model.ranks, weight > 0
    k = torch.where(slot, model.k[index], 0)  # rank index of every slot, 0 for padding
    fm = D[-1] * int(slot.sum())
    corollary = sum(d * int((k >= p).sum()) for p, d in enumerate(D, start=1))
    if dense:
        fmlib = fm * (D[-1] + 2 * sum(D[:-1])) / D[-1]
    else:
        touched = [int(slot[(k == p).any(1)].sum()) for p in range(1, len(D))]
        fmlib = fm + sum(2 * d * t for d, t in zip(D, touched))
    return {"corollary 4": round(corollary / fm, 4), "fmlib": round(fmlib / fm, 4)}


def report_floor(per_row: dict, alone: dict, peak: float, rows: int, measured: dict) -> dict:
    """Print the floor of every trained entry with matrix products: their multiply-adds per row,
    the seconds an epoch of ``rows`` takes at the ``peak`` rate (the floor), the seconds its
    products take alone at their own shapes (``alone``, per row; ``product_seconds``), and the
    entry's ``measured`` epoch (CPU seconds on a CPU, wall seconds on a GPU; median) as a multiple
    of each, and the floor as a multiple of fmlib FM's measured epoch; return them for the JSON line."""
    fm = statistics.median(measured["fm"]) if "fm" in measured else None
    print(f"\nmatmul floor at {peak / 1e9:.1f} G multiply-adds/s (a large float32 matrix product, this run)")
    print(
        f"{'entry':<22}{'mult-adds/row':>14}{'floor s/epoch':>15}{'measured/floor':>16}"
        f"{'products alone s':>18}{'measured/alone':>16}{'floor/fm':>10}"
    )
    floor = {}
    for name, n in per_row.items():
        if not n:  # gathers and elementwise work only: no matrix product to bound it
            continue
        seconds, own = n * rows / peak, alone[name] * rows
        took = statistics.median(measured[name])
        floor[name] = {
            "multiply_adds_per_row": round(n),
            "seconds": round(seconds, 4),
            "measured_to_floor": round(took / seconds, 3),
            "products_alone_seconds": round(own, 4),
            "measured_to_products_alone": round(took / own, 3),
        }
        line = f"{name:<22}{n:>14,.0f}{seconds:>15.4f}{took / seconds:>16.2f}{own:>18.4f}{took / own:>16.2f}"
        if fm:
            floor[name]["to_fm"] = round(seconds / fm, 3)
            line += f"{seconds / fm:>10.2f}"
        print(line)
    return floor


def _spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def report(times: dict, label: str, evals: dict) -> dict:
    """Print one table of ``label`` (wall or cpu) seconds and their ratios, median and min–max
    over repeats; return {"seconds": ..., "ratios": ...} for the JSON line."""
    ratios, to = {}, {}
    for name, ts in times.items():
        if name in evals or name == "plain FM":
            continue
        to[name] = "torchfm, 11 fields" if name == "fm, 11 fields" else "plain FM"
        ratios[name] = [t / b for t, b in zip(ts, times[to[name]])]
    if "fm" in times:  # the multi-valued genres field against the same FM on the 11 single-valued fields
        ratios["fm, 12 / 11 fields"] = [t / b for t, b in zip(times["fm"], times["fm, 11 fields"])]
        to["fm, 12 / 11 fields"] = "fm, 11 fields"
    if BLOCKS_ENTRY in times:  # the blocks' epoch against the 12-field FM's (the aim: at most 2x)
        ratios["fm, blocks / 12 fields"] = [t / b for t, b in zip(times[BLOCKS_ENTRY], times["fm"])]
        to["fm, blocks / 12 fields"] = "fm"
    if len(evals) == 2:
        fm_top, rafm = evals
        ratios["eval rafm"] = [r / f for r, f in zip(times[rafm], times[fm_top])]
        to["eval rafm"] = fm_top
    print(f"\n{label} seconds")
    print(f"{'entry':<22}{'s/epoch median':>16}{'min–max':>18}{'ratio':>8}{'min–max':>14}  to")
    for name in [*times, *(r for r in ratios if r not in times)]:
        line = f"{name:<22}"
        if name in times:
            s = _spread(times[name])
            line += f"{s['median']:>16.3f}{s['min']:>10.3f}–{s['max']:<7.3f}"
        else:
            line += " " * 34
        if name in ratios:
            r = _spread(ratios[name])
            line += f"{r['median']:>8.2f}{r['min']:>8.2f}–{r['max']:<5.2f}  {to[name]}"
        print(line)
    return {
        "seconds": {name: _spread(ts) for name, ts in times.items()},
        "ratios": {name: _spread(rs) for name, rs in ratios.items()},
    }
