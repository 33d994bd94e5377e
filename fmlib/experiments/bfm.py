"""``python -m fmlib reproduce bfm``: the Bayesian FM beside the Adam FM that ``reproduce fm-ablation`` chose.

The Bayesian FM ([Rendle2012]'s MCMC FM, ``fmlib.models.bfm``: Gibbs sampling, one prior per field
group, the prediction averaged over the posterior samples) and the Adam FM of the ablation's chosen
configuration (``fm_ablation.WINNER``: weight averaging, grouped L2, early stopping within 200
epochs — the same training as that table's row) are trained on the same splits
``split(data, seed=s)``, the Bayesian FM with ``--sweeps`` Gibbs sweeps at rank ``--dim`` and seed s,
the Adam FM with training seed s. The table has one row per (split, model), the columns of the
ablation's table: validation and test RMSE/MAE, epochs (Gibbs sweeps for the Bayesian FM),
wall-clock and CPU seconds (one torch thread). The test part is read once per model, after training, and chooses nothing.

The scorecard's claim: the Bayesian FM predicts ratings better than that Adam FM (paired per-split
difference of the test RMSE, 95 % t-interval).
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from ..arguments import add_data_arguments, int_list, positive_int
from ..data import split
from ..results import results_dir
from ..train import TrainConfig, train_model
from . import fm_ablation, tables
from .claims import Claim

BFM = "Bayesian FM (Gibbs)"
ADAM = fm_ablation.WINNER  # the Adam FM that the ablation chose, under the ablation's own label
MODELS = (BFM, ADAM)
COLUMNS = fm_ablation.COLUMNS
DIM, SWEEPS = 10, 200  # the Bayesian FM's rank and Gibbs sweeps (bench quality's rank; 200 sweeps: ~1 min a split)


def table_name(dataset: str, task: str = "rating") -> str:
    return f"bfm_{dataset}_{task}.csv"


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: the Bayesian FM has a lower test RMSE than the ablation's Adam FM.
    The labels name the models, so the rows' rank is dropped (set to 0)."""
    text = "The Bayesian FM (Gibbs sampling) predicts ratings better than the Adam FM with averaging and grouped L2"
    return frame.assign(rank=0), [Claim("fmlib", text, (BFM, 0), ((ADAM, 0),), "rmse")]


def run_split(data, seed: int, dim: int, sweeps: int, log=None) -> list[dict]:
    """Both models on the split of ``seed``: one record each (``COLUMNS``)."""
    parts = split(data, seed=seed)
    config, hp = fm_ablation.settings()[ADAM]
    run, seconds, cpu = fm_ablation.train_one(parts, seed, config, hp)
    records = [fm_ablation.record_of(seed, ADAM, hp, [run], [run.model], parts, seconds, cpu)]
    start = time.process_time()
    run = train_model("bfm", parts, TrainConfig(epochs=sweeps, seed=seed), dim=dim)
    cpu = time.process_time() - start
    records.append(fm_ablation.record_of(seed, BFM, {"dim": dim}, [run], [run.model], parts, run.seconds, cpu))
    if log:
        for r in records:
            log(
                f"split {seed} {r['model']}: valid RMSE {r['valid_rmse']:.4f}, test RMSE {r['rmse']:.4f}, "
                f"{r['epochs']} epochs/sweeps, {r['train_seconds']:.1f} s ({r['cpu_seconds']:.1f} s CPU)"
            )
    return records


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over splits of every column, per model (``MODELS`` order)."""
    return tables.mean_std(frame).loc[[m for m in MODELS if m in set(frame["model"])]].reset_index()


def format_table(frame: pd.DataFrame) -> str:
    lines = [f"{'model':<38}{'valid RMSE':>18}{'test RMSE':>18}{'train s':>14}"]
    for _, r in summary(frame).iterrows():
        lines.append(
            f"{r['model']:<38}{r['valid_rmse_mean']:>10.4f} ± {r['valid_rmse_std']:.4f}"
            f"{r['rmse_mean']:>10.4f} ± {r['rmse_std']:.4f}{r['train_seconds_mean']:>8.1f} ± {r['train_seconds_std']:.1f}"
        )
    return "\n".join(lines)


load = fm_ablation.load  # the same columns (``COLUMNS``), read the same way


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--splits", type=int_list, default=(0, 1, 2), help="split seeds, e.g. 0,1,2 (default: 0,1,2)")
    parser.add_argument("--dim", type=positive_int, default=DIM, help=f"rank of the Bayesian FM (default: {DIM})")
    parser.add_argument("--sweeps", type=positive_int, default=SWEEPS, help=f"Gibbs sweeps (default: {SWEEPS})")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "bfm", "--dataset", args.dataset]
    words += ["--splits", ",".join(map(str, args.splits)), "--dim", str(args.dim), "--sweeps", str(args.sweeps)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    from ..data import load

    torch.set_num_threads(1)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    data = load(args.dataset, data_dir=args.data_dir, log=log)
    records = [r for seed in args.splits for r in run_split(data, seed, args.dim, args.sweeps, log)]
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(args.dataset), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
