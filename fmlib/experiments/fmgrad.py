"""``python -m fmlib reproduce fmgrad``: the FM weight gradient of [FMGrad] — is it exact, is it cheaper?

Synthetic: no data set. [FMGrad]'s notation: X ∈ ℝ^d, P ∈ ℝ^{k×d}, the pairwise FM
φ(X) = Σ_{j<j'} ⟨P_{:,j}, P_{:,j'}⟩ X_j X_j' (eqs. 1–3) and its gradient with respect to P,
for every example of a batch, computed four ways (float64):

* the reference: autograd through the explicit double sum over pairs (j, j');
* naive: ∂φ/∂P_ij = X_j Σ_{j'≠j} P_ij' X_j' (eq. 5 with the P_ij² terms cancelled), d − 1
  products per entry, O(d²k) per example (``naive_gradient``);
* memoised, eq. 8 with its coefficient corrected: X_j Z_i − P_ij X_j² with Z = PX computed
  once, O(dk) per example (``memoised_gradient``);
* memoised as printed: X_j Z_i − 2 P_ij X_j² (the note's eq. 7 drops the P_ij inside Z).

fmlib's FM trains with the memoised gradient in field form (``models.fm.FMFunction``: ∂φ/∂e_f =
Z − e_f); it is checked against autograd through the plain forward (first-order term plus the
double sum over field pairs) on a random batch of a schema with d fields, one multi-valued.

Each seed draws P ~ N(0, 0.5²), X ~ N(0, 1) and the FM's weights anew, and times the naive and
the memoised gradient of the same batch: ``ROUNDS`` rounds, each a block of ``calls`` calls of
one and then of the other, one torch thread, process CPU time (time spent waiting for a shared
machine's cores is not counted); each gradient's time is its fastest block, the one least
disturbed by other work (as ``timeit`` advises). speedup = naive seconds / memoised seconds,
paired within the seed. The default batch (256 examples: a gradient of 256·k·d numbers, 3 MB
at d = 192) stays in cache, so other processes' memory traffic disturbs the memoised gradient,
which only streams its output, less than with 1024 examples. Other work still disturbs caches
and clocks: compare timings only within one table.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..arguments import BadValue, positive_int, positive_int_list
from ..data.schema import Schema
from ..models import build_model
from ..results import results_dir
from . import tables
from .claims import Threshold

FIELDS = (12, 48, 192)  # 12: the MovieLens fields; 48 and 192 show how the gap grows with d
TOLERANCE = 1e-10  # float64: an exact formula differs from autograd by rounding only
ROUNDS = 5  # timed blocks per gradient and seed; the fastest counts
COLUMNS = (
    "seed", "model", "rank", "fields", "batch", "error_naive", "error_corrected", "error_printed",
    "error_fmlib", "cpu_seconds_naive", "cpu_seconds_memoised", "speedup",
)  # fmt: skip
DTYPE = torch.float64


def table_name(dataset: str = "", task: str = "") -> str:
    """Synthetic: one table whatever the data set and task."""
    return "fmgrad_synthetic.csv"


def pairwise(P: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """φ(X) = Σ_{j<j'} ⟨P_{:,j}, P_{:,j'}⟩ X_j X_j' by the explicit double sum ([FMGrad] eq. 3), one example."""
    pairs = (P.T @ P) * torch.outer(x, x)
    return torch.triu(pairs, diagonal=1).sum()


def autograd_gradient(P: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """∂φ/∂P for every row of X (B, d) -> (B, k, d), by autograd through ``pairwise``."""
    return torch.func.vmap(torch.func.grad(pairwise), in_dims=(None, 0))(P, X)


def naive_gradient(P: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """∂φ/∂P_ij = X_j Σ_{j'≠j} P_ij' X_j' ([FMGrad] eq. 5 simplified): O(d²k) per example."""
    d = P.shape[1]
    others = torch.ones(d, d, dtype=P.dtype) - torch.eye(d, dtype=P.dtype)  # [j' ≠ j]
    return X[:, None, :] * ((P[None] * X[:, None, :]) @ others)


def memoised_gradient(P: torch.Tensor, X: torch.Tensor, coefficient: float = 1.0) -> torch.Tensor:
    """∂φ/∂P_ij = X_j Z_i − c·P_ij X_j² with Z = PX memoised ([FMGrad] eq. 8): O(dk) per example.
    c = 1 is the exact gradient; c = 2 is eq. 8 as printed."""
    Z = X @ P.T  # (B, k)
    return X[:, None, :] * Z[:, :, None] - coefficient * P[None] * (X * X)[:, None, :]


def schema_with(fields: int) -> Schema:
    """``fields`` fields: fields − 1 single-valued ones of 5 values, then one multi-valued (6 values, 3 slots)."""
    specs = [(f"f{j}", "context", "single", 5, 1) for j in range(fields - 1)]
    return Schema.build(specs + [("g", "item", "multi", 6, 3)])


def random_batch(schema: Schema, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(index, weight) of n random rows; a multi-valued field holds 1..slots values of equal weight."""
    index, weight = [], []
    for f in schema.fields:
        index.append(f.offset + torch.randint(0, f.cardinality, (n, f.slots), generator=gen))
        lengths = torch.randint(1, f.slots + 1, (n, 1), generator=gen)
        weight.append((torch.arange(f.slots) < lengths).to(DTYPE) / lengths)
    return torch.cat(index, 1), torch.cat(weight, 1)


def fmlib_error(fields: int, rank: int, seed: int, n: int = 32) -> float:
    """Max |fmlib's FM gradient − autograd's| over the linear and embedding weights, float64."""
    torch.manual_seed(seed)
    schema = schema_with(fields)
    model = build_model("fm", schema, dim=rank, init_std=0.5).to(DTYPE)
    index, weight = random_batch(schema, n, torch.Generator().manual_seed(seed))
    e = model.field_embeddings(index, weight)
    plain = model.first_order(index, weight) + torch.triu(e @ e.transpose(1, 2), diagonal=1).sum((1, 2))
    params = [table for table, _, _ in model.field_tables()]  # w and v, the tables of feature rows
    upstream = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)
    exact = torch.autograd.grad(plain, params, upstream)
    fast = torch.autograd.grad(model(index, weight), params, upstream)
    return max((a - b).abs().max().item() for a, b in zip(fast, exact))


def seconds(func, calls: int) -> float:
    """Process CPU seconds of ``calls`` calls of ``func``."""
    start = time.process_time()
    for _ in range(calls):
        func()
    return time.process_time() - start


def fastest_blocks(funcs, calls: int, rounds: int) -> list[float]:
    """Per function, the CPU seconds of its fastest block of ``calls`` calls over ``rounds``
    rounds; within a round the functions take turns."""
    times = [[seconds(func, calls) for func in funcs] for _ in range(rounds)]
    return [min(column) for column in zip(*times)]


def run_seed(seed: int, fields: int, rank: int, batch: int, calls: int) -> dict:
    """One row of the table: the four gradients' errors and the paired timing at d = ``fields``."""
    gen = torch.Generator().manual_seed(seed)
    P = 0.5 * torch.randn(rank, fields, generator=gen, dtype=DTYPE)
    X = torch.randn(batch, fields, generator=gen, dtype=DTYPE)
    check = X[:32]
    exact = autograd_gradient(P, check)

    def error(grad):
        return (grad - exact).abs().max().item()

    naive, memoised = (lambda: naive_gradient(P, X)), (lambda: memoised_gradient(P, X))
    memoised(), naive()  # warm-up
    t_naive, t_memo = fastest_blocks((naive, memoised), calls, ROUNDS)
    return {
        "seed": seed,
        "model": "FM",
        "rank": rank,
        "fields": fields,
        "batch": batch,
        "error_naive": error(naive_gradient(P, check)),
        "error_corrected": error(memoised_gradient(P, check)),
        "error_printed": error(memoised_gradient(P, check, coefficient=2.0)),
        "error_fmlib": fmlib_error(fields, rank, seed),
        "cpu_seconds_naive": t_naive,
        "cpu_seconds_memoised": t_memo,
        "speedup": t_naive / t_memo,
    }


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: eq. 8 as printed and corrected against autograd, fmlib's
    backward against autograd (the largest error over every seed and d), the speed-up at the
    smallest and the largest d."""
    small, large = int(frame["fields"].min()), int(frame["fields"].max())

    def exact(text, column):
        return Threshold("FMGrad", text, (), column, "max", TOLERANCE, False, "largest abs. error", "runs (seeds × d)")

    out = [
        exact(
            "The memoised gradient as printed (eq. 8: Xⱼ Zᵢ − 2 Pᵢⱼ Xⱼ²) is the FM's gradient (synthetic)",
            "error_printed",
        ),
        exact("Eq. 8 with coefficient 1 (Xⱼ Zᵢ − Pᵢⱼ Xⱼ²) is the FM's gradient (synthetic)", "error_corrected"),
        exact(
            "fmlib's FM backward (each field gets the memoised Z minus its own embedding) equals autograd (synthetic)",
            "error_fmlib",
        ),
    ]
    for d in sorted({small, large}):
        text = f"The memoised O(dk) gradient is faster than the naive O(d²k) sum (synthetic, d = {d})"
        out.append(Threshold("FMGrad", text, (("fields", d),), "speedup", "ratio", 1.0, True, "speed-up"))
    return frame, out


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per d: the largest error of each gradient, the median CPU seconds and the geometric-mean speed-up."""
    out = frame.groupby("fields").agg(
        error_naive=("error_naive", "max"),
        error_corrected=("error_corrected", "max"),
        error_printed=("error_printed", "max"),
        error_fmlib=("error_fmlib", "max"),
        cpu_seconds_naive=("cpu_seconds_naive", "median"),
        cpu_seconds_memoised=("cpu_seconds_memoised", "median"),
        speedup=("speedup", lambda s: float(np.exp(np.log(s).mean()))),
        seeds=("seed", "size"),
    )
    return out.reset_index()


def fields_list(text: str) -> tuple[int, ...]:
    values = positive_int_list(text)
    if min(values) < 2:
        raise BadValue(f"every d must be >= 2 (an FM needs two fields), got {text}")
    return values


def add_arguments(parser) -> None:
    parser.add_argument(
        "--seeds", type=positive_int, default=20, help="seeds 0..N-1, each one paired timing (default 20)"
    )
    parser.add_argument("--fields", type=fields_list, default=FIELDS, help="values of d, e.g. 12,48,192 (each >= 2)")
    parser.add_argument("--rank", type=positive_int, default=8, help="k, rows of P (default 8)")
    parser.add_argument("--batch", type=positive_int, default=256, help="examples per timed gradient (default 256)")
    parser.add_argument(
        "--calls",
        type=positive_int,
        default=10,
        help="calls per timed block (default 10; 5 blocks per gradient and seed)",
    )
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "fmgrad", "--seeds", str(args.seeds)]
    words += ["--fields", ",".join(map(str, args.fields)), "--rank", str(args.rank)]
    words += ["--batch", str(args.batch), "--calls", str(args.calls)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def format_table(frame: pd.DataFrame) -> str:
    lines = [f"{'d':>5}{'naive':>10}{'eq.8 c=1':>10}{'eq.8 c=2':>10}{'fmlib':>10}{'naive s':>10}{'memo s':>10}{'×':>7}"]
    for r in summary(frame).itertuples():
        lines.append(
            f"{r.fields:>5}{r.error_naive:>10.1e}{r.error_corrected:>10.1e}{r.error_printed:>10.1e}"
            f"{r.error_fmlib:>10.1e}{r.cpu_seconds_naive:>10.4f}{r.cpu_seconds_memoised:>10.4f}{r.speedup:>7.2f}"
        )
    return "max |error| against autograd per d; median CPU seconds per seed; geometric-mean speed-up\n" + "\n".join(
        lines
    )


def run(args) -> int:
    torch.set_num_threads(1)
    records = []
    for d in args.fields:
        for seed in range(args.seeds):
            records.append(run_seed(seed, d, args.rank, args.batch, args.calls))
        print(f"d = {d}: {args.seeds} seeds done", file=sys.stderr, flush=True)
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
