"""``python -m fmlib bench train``: seconds per training epoch of every model, against baselines.

What users run: every fmlib model's default training step (the step of ``fmlib.train.fit``:
the model's defaults, its Adam parameter groups, ``fmlib.optim.Adam`` (torch's fused Adam kernel), MSE on ratings, the default batch
of the device, a batch's rows taken with ``index_select``) on MovieLens' 12 fields, genres multi-valued. Two baselines, in the same process:

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

Every measured thing runs once to warm up, then ``--repeats`` times; repeats alternate between
all entries so machine load hits them alike, and each timing starts after a few untimed steps of
its own entry (as in training, where epochs follow each other: its tables are in the cache). Two tables, wall-clock seconds and the CPU seconds
of this process (steadier on a shared machine), and the JSON line give the median and the
min–max of the seconds, and of each ratio taken repeat by repeat; "fm, 12 / 11 fields" is the
cost of the multi-valued genres field, fmlib's FM on the 12 fields against it on the 11.
"""

from __future__ import annotations

import json
import statistics
import time

import torch
from torch import nn

from ..arguments import add_data_arguments, positive_int
from ..data import movielens, split
from ..data.schema import Schema
from ..models import MODELS, build_model, hyperparameters
from ..models.fm import fm_pairwise
from ..optim import Adam
from ..train import BATCH_SIZE, DEVICES, TrainConfig, loss_fn, param_groups

WARM_STEPS = 3  # untimed steps of an entry right before its timed epoch


def add_arguments(p):
    add_data_arguments(p)
    p.add_argument("--repeats", type=positive_int, default=3, help="timed epochs per entry (after one warm-up)")
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.add_argument("--batch-size", type=positive_int, default=None, help="default: the device's training default")
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
    TrainConfig(device=args.device)  # a clear error when cuda is asked for and absent


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
    data = split(movielens.load(args.dataset, data_dir=args.data_dir), seed=0)
    train = data.train
    if batch > len(train):
        raise ValueError(f"--batch-size {batch} is larger than the {len(train)} training rows")
    schema = train.schema
    single = [f for f in schema.fields if f.kind == "single"]
    if [f.kind for f in schema.fields] != ["single"] * len(single) + ["multi"]:
        raise RuntimeError(f"bench train needs the single-valued fields first, then genres; got {schema.names}")
    n_single = len(single)
    index, weight = train.index.to(device), train.weight.to(device)
    rating, click = train.target("rating").to(device), train.target("click").to(device)
    local = (train.index[:, :n_single] - torch.tensor([f.offset for f in single])).to(device)
    genre_field = schema.fields[-1]
    genres = torch.where(  # EmbeddingBag input: local genre ids, padding -> its own index
        train.weight[:, n_single:] > 0, train.index[:, n_single:] - genre_field.offset, genre_field.cardinality
    ).to(device)
    criterion = loss_fn("rating")

    def adam_step(model, optimizer, forward, target, loss):
        def step(rows):
            optimizer.zero_grad()
            out = loss(forward(rows), target.index_select(0, rows))
            if hasattr(model, "extra_loss"):  # RaFM: Algorithm 1's consistency terms
                out = out + model.extra_loss(loss)
            out.backward()
            optimizer.step()

        return step

    config = TrainConfig()
    steps = {}
    for name in models:
        hp = {"counts": train.feature_counts().tolist()} if "counts" in hyperparameters(name) else {}
        model = build_model(name, schema, **hp).to(device).train()
        opt = Adam(param_groups(model, config.lr, config.weight_decay), lr=config.lr)
        steps[name] = adam_step(
            model, opt, lambda r, m=model: m(index.index_select(0, r), weight.index_select(0, r)), rating, criterion
        )
    plain = PlainFM([f.cardinality for f in single], genre_field.cardinality, 16).to(device)
    steps["plain FM"] = adam_step(
        plain,
        torch.optim.Adam(plain.parameters(), lr=config.lr),
        lambda r: plain(local[r], genres[r]),
        rating,
        criterion,
    )
    ours11 = build_model("fm", Schema(tuple(single))).to(device)
    index11, weight11 = index[:, :n_single].contiguous(), weight[:, :n_single].contiguous()
    steps["fm, 11 fields"] = adam_step(
        ours11,
        Adam(param_groups(ours11, config.lr, config.weight_decay), lr=config.lr),
        lambda r: ours11(index11.index_select(0, r), weight11.index_select(0, r)),
        click,
        nn.BCEWithLogitsLoss(),
    )
    theirs = FactorizationMachineModel([f.cardinality for f in single], 16).to(device)
    steps["torchfm, 11 fields"] = adam_step(
        theirs, torch.optim.Adam(theirs.parameters(), lr=config.lr), lambda r: theirs(local[r]), click, nn.BCELoss()
    )

    def epoch(step, seed):
        perm = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed)).to(device)
        return lambda: [step(perm[i : i + batch]) for i in range(0, len(train), batch)]

    # Training runs epochs back to back, so its tables stay in the cache: before each timing, an
    # entry takes WARM_STEPS untimed steps (or scores one batch) after the other entries ran.
    first = torch.arange(batch, device=device)
    warm = {name: lambda s=step: [s(first) for _ in range(WARM_STEPS)] for name, step in steps.items()}
    evals = {}
    rafm_cost = None
    if "rafm" in models:
        rafm = build_model("rafm", schema, counts=train.feature_counts().tolist()).to(device).eval()
        fm_top = build_model("fm", schema, dim=rafm.ranks[-1]).to(device).eval()
        for label, model in ((f"FM, dim {rafm.ranks[-1]}", fm_top), ("rafm", rafm)):
            evals[f"eval {label}"] = lambda m=model: _predict(m, index, weight)
            warm[f"eval {label}"] = lambda m=model: _predict(m, index[:batch], weight[:batch])
        rafm_cost = rafm_cost_ratios(rafm, index, weight)

    peak = peak_multiply_adds(device)
    per_row = {name: multiply_adds_per_row(step, first) for name, step in steps.items()}

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
    print(
        f"\n{len(train)} training rows, {n_single + 1} fields (genres multi-valued) unless marked, batch {batch}, "
        f"device {args.device}, {args.threads} thread(s), {args.repeats} repeats"
    )
    summary = {}
    for label, measured in (("wall", times), ("cpu", cpu_times)):
        summary[label] = report(measured, label, evals)
    floor = report_floor(per_row, peak, len(train), cpu_times)
    if rafm_cost:
        print(
            f"\nrafm evaluation, multiply-adds of the second-order term as a multiple of FM's (dim {rafm.ranks[-1]}): "
            f"Corollary 4 {rafm_cost['corollary 4']:.3f}, fmlib {rafm_cost['fmlib']:.3f}"
        )
    print(
        json.dumps(
            {
                "bench": "train",
                "rows": len(train),
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
    for i in range(0, len(index), batch):
        model(index[i : i + batch], weight[i : i + batch])


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


def rafm_cost_ratios(model, index: torch.Tensor, weight: torch.Tensor) -> dict:
    """Multiply-adds of RaFM's second-order term over these rows, as a multiple of D_m · slots
    (the FM of rank D_m): Corollary 4's Σ_k D_k · (slots in F_k), and fmlib's evaluation
    (``RaFM.predict``: every slot at D_m, and the 2 D_p columns of level p < m only in the samples
    with a feature of rank index p)."""
    D, slot = model.ranks, weight > 0
    k = torch.where(slot, model.k[index], 0)  # rank index of every slot, 0 for padding
    fm = D[-1] * int(slot.sum())
    corollary = sum(d * int((k >= p).sum()) for p, d in enumerate(D, start=1))
    touched = [int(slot[(k == p).any(1)].sum()) for p in range(1, len(D))]
    fmlib = fm + sum(2 * d * t for d, t in zip(D, touched))
    return {"corollary 4": round(corollary / fm, 4), "fmlib": round(fmlib / fm, 4)}


def report_floor(per_row: dict, peak: float, rows: int, cpu_times: dict) -> dict:
    """Print the floor of every trained entry with matrix products: their multiply-adds per row, the
    seconds an epoch of ``rows`` takes at the ``peak`` rate, and that floor as a multiple of fmlib
    FM's measured CPU seconds; return them for the JSON line."""
    fm = statistics.median(cpu_times["fm"]) if "fm" in cpu_times else None
    print(f"\nmatmul floor at {peak / 1e9:.1f} G multiply-adds/s (a large float32 matrix product, this run)")
    print(f"{'entry':<22}{'mult-adds/row':>14}{'floor s/epoch':>15}{'× fm measured':>15}")
    floor = {}
    for name, n in per_row.items():
        if not n:  # gathers and elementwise work only: no matrix product to bound it
            continue
        seconds = n * rows / peak
        floor[name] = {"multiply_adds_per_row": round(n), "seconds": round(seconds, 4)}
        line = f"{name:<22}{n:>14,.0f}{seconds:>15.4f}"
        if fm:
            floor[name]["to_fm"] = round(seconds / fm, 3)
            line += f"{seconds / fm:>15.2f}"
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
