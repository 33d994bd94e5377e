"""``python -m fmlib bench train``: seconds per training epoch of fmlib's FM vs torchfm's.

Both train an FM on MovieLens' 11 single-valued fields (click task, so torchfm's sigmoid
output fits its BCE loss), on the same pre-encoded tensors, the same shuffled batches of
1024, the same embedding size and thread count, in one process. fmlib runs the step that
``fmlib.train.fit`` runs (its FM with the memoised O(mk) backward pass, fused Adam); torchfm
runs its FactorizationMachineModel with torch's default Adam, as its examples do. Epochs
alternate between the two so that machine load hits both alike; the median is reported.
"""

from __future__ import annotations

import json
import statistics
import time

import torch

from ..arguments import positive_int
from ..data import movielens, split
from ..data.schema import Schema
from ..models import build_model
from ..train import TrainConfig


def add_arguments(p):
    p.add_argument("--dataset", default="ml-100k", choices=list(movielens.SPECS))
    p.add_argument("--epochs", type=positive_int, default=5, help="timed epochs per library (after one warm-up)")
    p.add_argument("--dim", type=positive_int, default=16)
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--batch-size", type=positive_int, default=TrainConfig.batch_size)


def _epoch(step, n, batch_size, seed):
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    start = time.perf_counter()
    for i in range(0, n, batch_size):
        step(perm[i : i + batch_size])
    return time.perf_counter() - start


def run(args) -> int:
    from torchfm.model.fm import FactorizationMachineModel

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = split(movielens.load(args.dataset), seed=0).train
    fields = tuple(f for f in data.schema.fields if f.kind == "single")
    if data.schema.fields[: len(fields)] != fields:  # the slicing below needs them in the first columns
        raise RuntimeError(
            f"bench train needs the single-valued fields first; the schema's order is {data.schema.names}"
        )
    schema = Schema(fields)
    index = data.index[:, : len(fields)].contiguous()  # single-valued fields come first
    weight = data.weight[:, : len(fields)].contiguous()
    local = index - torch.tensor([f.offset for f in fields])  # torchfm adds its own offsets
    y = data.target("click")

    ours = build_model("fm", schema, dim=args.dim)
    ours_opt = torch.optim.Adam(ours.parameters(), lr=1e-3, fused=True)
    ours_loss = torch.nn.BCEWithLogitsLoss()
    theirs = FactorizationMachineModel([f.cardinality for f in fields], args.dim)
    theirs_opt = torch.optim.Adam(theirs.parameters(), lr=1e-3)
    theirs_loss = torch.nn.BCELoss()

    def ours_step(rows):
        ours_opt.zero_grad()
        ours_loss(ours(index[rows], weight[rows]), y[rows]).backward()
        ours_opt.step()

    def theirs_step(rows):
        theirs_opt.zero_grad()
        theirs_loss(theirs(local[rows]), y[rows]).backward()
        theirs_opt.step()

    times = {"fmlib": [], "torchfm": []}
    for epoch in range(args.epochs + 1):  # epoch 0 warms up
        for name, step in (("fmlib", ours_step), ("torchfm", theirs_step)):
            seconds = _epoch(step, len(y), args.batch_size, seed=epoch)
            if epoch:
                times[name].append(seconds)
        if epoch:
            print(f"epoch {epoch}: fmlib {times['fmlib'][-1]:.3f} s, torchfm {times['torchfm'][-1]:.3f} s")
    fmlib_s, torchfm_s = statistics.median(times["fmlib"]), statistics.median(times["torchfm"])
    print(
        f"\n{len(fields)} single-valued fields, {len(y)} rows, batch {args.batch_size}, dim {args.dim}, "
        f"{args.threads} thread(s)"
    )
    print(
        f"seconds/epoch (median of {args.epochs}): fmlib {fmlib_s:.3f}, torchfm {torchfm_s:.3f}, "
        f"ratio fmlib/torchfm {fmlib_s / torchfm_s:.2f}"
    )
    print(
        json.dumps(
            {
                "bench": "train",
                "fields": len(fields),
                "rows": len(y),
                "dim": args.dim,
                "threads": args.threads,
                "fmlib_s_per_epoch": round(fmlib_s, 4),
                "torchfm_s_per_epoch": round(torchfm_s, 4),
                "ratio": round(fmlib_s / torchfm_s, 3),
            }
        )
    )
    return 0
