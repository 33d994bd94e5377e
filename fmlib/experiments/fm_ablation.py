"""``python -m fmlib reproduce fm-ablation``: what the Adam-trained FM needs to come close to the Bayesian FM.

A Bayesian FM ([Rendle2010]'s model, sampled by Gibbs sweeps: ``fmlib.models.bfm``) differs from
the Adam FM in two ways: its L2 strengths are learned, one prior per field group, and its
prediction is the average of the FM over many posterior samples instead of one point estimate.
This experiment starts from the tuned Adam FM (preset ``fm-8``) and adds, one at a time:

* weight averaging from epoch 3 (``TrainConfig.average_from``: the mean of the end-of-epoch
  weights, the point-estimate analogue of averaging posterior samples), with 40 epochs;
* a larger learning rate (0.02), so the averaged end-of-epoch weights differ more;
* embedding size k = 16;

then removes the averaging from the last configuration. On MovieLens 100K (splits 0-2) only the
averaging lowers the mean validation RMSE; the larger learning rate and k = 16 do not, so the
chosen configuration (``WINNER``, preset ``fm``) is the tuned FM with averaging.

Each configuration trains on the splits ``split(data, seed=s)`` with training seed s; the table has
one row per (split, configuration) with the validation and test RMSE/MAE, the epochs run and the
training seconds (wall clock and process CPU time, one torch thread). Choices were made on the
validation part; the test part is read once per trained model, after training.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from .. import presets
from ..arguments import add_data_arguments, int_list
from ..data import split
from ..models import build_model
from ..results import results_dir
from ..train import TrainConfig, evaluate, fit
from . import tables
from .claims import Claim

BASE = "fm-8"  # the tuned preset the ablation starts from
# (label, changes to the base preset's hp and TrainConfig)
STEPS = (
    ("preset fm-8", {}),
    ("+ averaging", {"average_from": 3, "epochs": 40}),
    ("+ averaging, lr 0.02", {"average_from": 3, "epochs": 40, "lr": 0.02}),
    ("+ averaging, lr 0.02, k 16", {"average_from": 3, "epochs": 40, "lr": 0.02, "dim": 16}),
    ("k 16, lr 0.02, no averaging", {"epochs": 40, "lr": 0.02, "dim": 16}),
)
WINNER = "+ averaging"  # the lowest mean validation RMSE over splits 0-2
LARGE = "+ averaging, lr 0.02, k 16"
LARGE_NO_AVERAGING = "k 16, lr 0.02, no averaging"
TARGET_RMSE = 0.890  # the test RMSE (mean over splits 0-2) the Adam FM was asked to reach
COLUMNS = ("seed", "model", "rank", "valid_rmse", "rmse", "mae", "epochs", "train_seconds", "cpu_seconds")


def table_name(dataset: str, task: str = "rating") -> str:
    return f"fm_ablation_{dataset}_{task}.csv"


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: averaging helps the tuned FM, and the FM at k 16, lr 0.02.
    The labels already name k, so the rows' rank is dropped (set to 0)."""
    text = "Averaging the end-of-epoch weights improves the Adam FM"
    return frame.assign(rank=0), [
        Claim("fmlib", f"{text} (tuned preset fm-8)", (WINNER, 0), ((STEPS[0][0], 0),), "rmse"),
        Claim("fmlib", f"{text} (k 16, lr 0.02)", (LARGE, 0), ((LARGE_NO_AVERAGING, 0),), "rmse"),
    ]


def settings(dataset: str) -> dict:
    """Label -> (TrainConfig without its seed, model hp) of every step, from the base preset."""
    preset = presets.load(dataset, "fm", 8)
    out = {}
    for label, changes in STEPS:
        hp = {**presets.hyperparameters(preset), **{k: v for k, v in changes.items() if k == "dim"}}
        train = {k: v for k, v in changes.items() if k != "dim"}
        out[label] = (presets.train_config(preset, **train), hp)
    return out


def run_split(data, seed: int, steps: dict, log=None) -> list[dict]:
    """Train every step's FM on the split of ``seed``; one record each."""
    parts = split(data, seed=seed)
    records = []
    for label, (config, hp) in steps.items():
        config = TrainConfig(**{**asdict(config), "seed": seed})
        torch.manual_seed(seed)
        model = build_model("fm", parts.schema, **hp)
        cpu = time.process_time()
        run = fit(model, parts.train, parts.valid, config)
        cpu = time.process_time() - cpu
        test = evaluate(run.model, parts.test, config.task)  # read once, after training
        record = {
            "seed": seed,
            "model": label,
            "rank": hp["dim"],
            "valid_rmse": run.metrics["valid"]["rmse"],
            "rmse": test["rmse"],
            "mae": test["mae"],
            "epochs": len(run.history),
            "train_seconds": run.seconds,
            "cpu_seconds": cpu,
        }
        records.append(record)
        if log:
            log(
                f"split {seed} {label}: valid RMSE {record['valid_rmse']:.4f}, test RMSE {record['rmse']:.4f}, "
                f"{record['epochs']} epochs, {record['train_seconds']:.1f} s ({record['cpu_seconds']:.1f} s CPU)"
            )
    return records


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over splits of every column, per step, in the order of ``STEPS``."""
    order = [label for label, _ in STEPS if label in set(frame["model"])]
    stats = frame.drop(columns=["seed"]).groupby("model").agg(["mean", "std"])
    stats.columns = [f"{a}_{b}" for a, b in stats.columns]
    return stats.loc[order].reset_index()


def findings(frame: pd.DataFrame) -> dict:
    """The numbers the lessons quote: mean test/valid RMSE (and std, CPU seconds) of the tuned
    preset, the chosen configuration, and the k 16 / lr 0.02 FM with and without averaging;
    whether the chosen one meets ``TARGET_RMSE``."""
    rows = summary(frame).set_index("model")

    def of(label):
        r = rows.loc[label]
        return {
            "rmse": r["rmse_mean"],
            "rmse_std": r["rmse_std"],
            "valid": r["valid_rmse_mean"],
            "cpu": r["cpu_seconds_mean"],
        }

    final = of(WINNER)
    return {
        "splits": frame["seed"].nunique(),
        "base": of(STEPS[0][0]),
        "final": final,
        "large": of(LARGE),
        "large_no_averaging": of(LARGE_NO_AVERAGING),
        "best_valid": rows["valid_rmse_mean"].idxmin(),
        "target": TARGET_RMSE,
        "met": bool(final["rmse"] <= TARGET_RMSE),
    }


def format_table(frame: pd.DataFrame) -> str:
    rows = summary(frame)
    lines = [f"{'configuration':<30}{'valid RMSE':>18}{'test RMSE':>18}{'train s':>14}{'CPU s':>14}"]
    for _, r in rows.iterrows():
        lines.append(
            f"{r['model']:<30}{r['valid_rmse_mean']:>10.4f} ± {r['valid_rmse_std']:.4f}"
            f"{r['rmse_mean']:>10.4f} ± {r['rmse_std']:.4f}{r['train_seconds_mean']:>8.1f} ± {r['train_seconds_std']:.1f}"
            f"{r['cpu_seconds_mean']:>8.1f} ± {r['cpu_seconds_std']:.1f}"
        )
    return "\n".join(lines)


def load(path: Path) -> pd.DataFrame:
    frame, _ = tables.read(path, columns=COLUMNS)
    return frame


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--splits", type=int_list, default=(0, 1, 2), help="split seeds, e.g. 0,1,2 (default: 0,1,2)")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "fm-ablation", "--dataset", args.dataset]
    words += ["--splits", ",".join(map(str, args.splits))]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    from ..data import movielens

    torch.set_num_threads(1)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    steps = settings(args.dataset)
    data = movielens.load(args.dataset, data_dir=args.data_dir, log=log)
    records = [r for seed in args.splits for r in run_split(data, seed, steps, log)]
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(args.dataset), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
