"""``python -m fmlib reproduce fm-ablation``: what the Adam-trained FM needs to come close to the Bayesian FM.

A Bayesian FM ([Rendle2010]'s model, sampled by Gibbs sweeps as [Rendle2012]: ``fmlib.models.bfm``)
differs from the Adam FM in two ways: its L2 strengths are learned, one prior per field group, and
its prediction is the average of the FM over many posterior samples instead of one point estimate.
This experiment starts from the tuned Adam FM (``BASE``: preset fm-8 as first tuned, 30 Optuna
trials without averaging, written out so that re-tuning fm-8 leaves this table as it is) and
changes one ingredient at a time:

* weight averaging from epoch 3 (``TrainConfig.average_from``: the mean of the end-of-epoch
  weights, the point-estimate analogue of averaging posterior samples);
* on top of averaging: a larger learning rate (0.02), and also k = 16; the learning rate and L2
  of preset fm-8 as re-tuned with averaging in its search space; minibatches of 512; a wider
  initialisation of v (std 0.05 instead of 0.01);
* grouped L2 (``TrainConfig.field_decay``, ``linear_decay``: ``fmlib.train.row_decay``), the
  point-estimate analogue of the per-group priors: the user rows' L2 times 0.25, the movie rows'
  times 2, the linear weights' times 0.1, one at a time and together (``GROUPED``, multiples
  chosen on the validation RMSE of splits 0-2);
* the chosen FM without averaging, and with k = 16 and lr 0.02 without averaging;
* an ensemble: the mean prediction of the chosen FM trained with three seeds (reported, not chosen).

Every configuration trains until early stopping on validation (patience 3) within ``EPOCHS`` = 200
epochs, a budget none of them reaches: the epochs each used are in the table.

Each configuration trains on the splits ``split(data, seed=s)`` with training seed s; the table has
one row per (split, configuration) with the validation and test RMSE/MAE, the epochs run and the
training seconds (wall clock and process CPU time, one torch thread). The configuration with the
lowest mean validation RMSE is ``WINNER``, the preset ``fm``; the test part is read once per trained
model, after training, and chooses nothing.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from ..arguments import add_data_arguments, add_device_argument, int_list, on_device
from ..data import split
from ..models import build_model
from ..results import results_dir
from ..train import TrainConfig, fit, predict
from . import tables
from .claims import Claim, Threshold

EPOCHS = 200  # the epoch budget of every configuration: early stopping decides, the budget never binds
# preset fm-8 as first tuned (python -m fmlib tune --model fm --rank 8 --trials 30 --epochs 30)
BASE = {
    "dim": 8,
    "lr": 0.010570046446158271,
    "weight_decay": 0.0002751110788207504,
    "batch_size": 1024,
    "epochs": EPOCHS,
}
MODEL_KEYS = ("dim", "init_std")  # what goes to build_model; the rest to TrainConfig
AVERAGING = {"average_from": 3}
RETUNED = {"lr": 0.017519193223077625, "weight_decay": 0.00019940378927187227}  # preset fm-8, re-tuned with averaging
GROUPED = {"field_decay": {"user_id": 0.25, "movie_id": 2.0}, "linear_decay": 0.1}
# (label, changes to BASE)
STEPS = (
    ("tuned FM", {}),
    ("+ averaging", AVERAGING),
    ("+ averaging, lr 0.02", {**AVERAGING, "lr": 0.02}),
    ("+ averaging, lr 0.02, k 16", {**AVERAGING, "lr": 0.02, "dim": 16}),
    ("+ averaging, re-tuned lr and L2", {**AVERAGING, **RETUNED}),
    ("+ averaging, batch 512", {**AVERAGING, "batch_size": 512}),
    ("+ averaging, init std 0.05", {**AVERAGING, "init_std": 0.05}),
    ("+ averaging, user L2 x0.25", {**AVERAGING, "field_decay": {"user_id": 0.25}}),
    ("+ averaging, movie L2 x2", {**AVERAGING, "field_decay": {"movie_id": 2.0}}),
    ("+ averaging, L2 of w x0.1", {**AVERAGING, "linear_decay": 0.1}),
    ("+ averaging, grouped L2", {**AVERAGING, **GROUPED}),
    ("grouped L2, no averaging", GROUPED),
    ("k 16, lr 0.02, no averaging", {"lr": 0.02, "dim": 16}),
)
AVERAGED = "+ averaging"
WINNER = "+ averaging, grouped L2"  # the lowest mean validation RMSE over splits 0-2
WINNER_NO_AVERAGING = "grouped L2, no averaging"
LARGE = "+ averaging, lr 0.02, k 16"
LARGE_NO_AVERAGING = "k 16, lr 0.02, no averaging"
# the chosen FM trained with ENSEMBLE_SEEDS training seeds, predictions averaged: an ensemble of FMs, not one
# FM (its CPU seconds are the members' sum); reported beside the single FMs, never chosen as preset fm
ENSEMBLE_SEEDS = 3
ENSEMBLE = f"ensemble of {ENSEMBLE_SEEDS} seeds of the chosen FM"
TARGET_RMSE = 0.890  # the test RMSE (mean over splits 0-2) the Adam FM was asked to reach
COLUMNS = ("seed", "model", "rank", "valid_rmse", "rmse", "mae", "epochs", "train_seconds", "cpu_seconds")


def table_name(dataset: str, task: str = "rating") -> str:
    return f"fm_ablation_{dataset}_{task}.csv"


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: averaging helps the tuned FM, the FM at k 16, lr 0.02 and the
    chosen FM; grouped L2 helps the averaged FM; the chosen FM reaches ``TARGET_RMSE``. The labels
    already name k, so the rows' rank is dropped (set to 0)."""
    text = "Averaging the end-of-epoch weights improves the Adam FM"
    first = STEPS[0][0]
    return frame.assign(rank=0), [
        Claim("fmlib", f"{text} (tuned FM)", (AVERAGED, 0), ((first, 0),), "rmse"),
        Claim("fmlib", f"{text} (k 16, lr 0.02)", (LARGE, 0), ((LARGE_NO_AVERAGING, 0),), "rmse"),
        Claim("fmlib", f"{text} (with grouped L2)", (WINNER, 0), ((WINNER_NO_AVERAGING, 0),), "rmse"),
        Claim("fmlib", "Grouped L2 improves the averaged Adam FM", (WINNER, 0), ((AVERAGED, 0),), "rmse"),
        Threshold(
            "fmlib",
            f"The Adam FM (preset fm) reaches test RMSE <= {TARGET_RMSE:.3f}",
            (("model", WINNER),),
            "rmse",
            "mean",
            TARGET_RMSE,
            False,
            "test RMSE",
        ),
    ]


def settings() -> dict:
    """Label -> (TrainConfig without its seed, model hp) of every step: ``BASE`` with its changes."""
    out = {}
    for label, changes in STEPS:
        point = {**BASE, **changes}
        hp = {k: v for k, v in point.items() if k in MODEL_KEYS}
        out[label] = (TrainConfig(**{k: v for k, v in point.items() if k not in MODEL_KEYS}), hp)
    return out


def train_one(parts, seed: int, config: TrainConfig, hp: dict):
    """(trained FM, seconds, CPU seconds) of one configuration on one split, training seed ``seed``."""
    config = TrainConfig(**{**asdict(config), "seed": seed})
    torch.manual_seed(seed)
    model = build_model("fm", parts.schema, **hp)
    cpu = time.process_time()
    run = fit(model, parts.train, parts.valid, config)
    return run, run.seconds, time.process_time() - cpu


def mean_prediction_metrics(models, data) -> dict:
    """RMSE and MAE of the mean prediction of ``models``, clipped to the rating range after averaging."""
    score = torch.stack([predict(m, data) for m in models]).mean(0)
    if data.rating_range is not None:
        score = score.clamp(*data.rating_range)
    err = score - data.target("rating")
    return {"rmse": float(err.pow(2).mean().sqrt()), "mae": float(err.abs().mean())}


def run_split(data, seed: int, steps: dict, log=None) -> list[dict]:
    """Train every step's FM on the split of ``seed``, then the ensemble (``ENSEMBLE``: the chosen
    FM and ENSEMBLE_SEEDS - 1 more of it, trained with seeds seed + 1000 j); one record each."""
    parts = split(data, seed=seed)
    records, runs = [], {}
    for label, (config, hp) in steps.items():
        run, seconds, cpu = train_one(parts, seed, config, hp)
        runs[label] = (run, seconds, cpu)
        records.append(record_of(seed, label, hp, [run], [run.model], parts, seconds, cpu))
    if WINNER in steps:
        config, hp = steps[WINNER]
        members = [runs[WINNER]] + [train_one(parts, seed + 1000 * j, config, hp) for j in range(1, ENSEMBLE_SEEDS)]
        seconds, cpu = sum(m[1] for m in members), sum(m[2] for m in members)
        models = [m[0].model for m in members]
        records.append(record_of(seed, ENSEMBLE, hp, [m[0] for m in members], models, parts, seconds, cpu))
    if log:
        for r in records:
            log(
                f"split {seed} {r['model']}: valid RMSE {r['valid_rmse']:.4f}, test RMSE {r['rmse']:.4f}, "
                f"{r['epochs']} epochs, {r['train_seconds']:.1f} s ({r['cpu_seconds']:.1f} s CPU)"
            )
    return records


def record_of(seed, label, hp, runs, models, parts, seconds, cpu) -> dict:
    """One table row: validation and test metrics of the (mean) prediction of ``models``, epochs
    and seconds summed over them. The test part is read here, once, after training."""
    valid = mean_prediction_metrics(models, parts.valid)
    test = mean_prediction_metrics(models, parts.test)
    return {
        "seed": seed,
        "model": label,
        "rank": hp["dim"],
        "valid_rmse": valid["rmse"],
        "rmse": test["rmse"],
        "mae": test["mae"],
        "epochs": sum(len(r.history) for r in runs),
        "train_seconds": seconds,
        "cpu_seconds": cpu,
    }


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over splits of every column, per step, in the order of ``STEPS``, the ensemble last."""
    order = [label for label in [*(label for label, _ in STEPS), ENSEMBLE] if label in set(frame["model"])]
    return tables.mean_std(frame).loc[order].reset_index()


def findings(frame: pd.DataFrame) -> dict:
    """The numbers the lessons quote: mean test/valid RMSE (and std, CPU seconds) of the tuned FM,
    the tuned FM with averaging, the chosen configuration (``WINNER``) with and without averaging,
    the k 16 / lr 0.02 FM with and without averaging, and the ensemble (None when the table has none);
    the single FM with the best validation RMSE; whether the chosen one meets ``TARGET_RMSE``."""
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
        "averaged": of(AVERAGED),
        "final": final,
        "final_no_averaging": of(WINNER_NO_AVERAGING),
        "large": of(LARGE),
        "large_no_averaging": of(LARGE_NO_AVERAGING),
        "ensemble": of(ENSEMBLE) if ENSEMBLE in rows.index else None,
        "best_valid": rows["valid_rmse_mean"].drop(ENSEMBLE, errors="ignore").idxmin(),
        "target": TARGET_RMSE,
        "met": bool(final["rmse"] <= TARGET_RMSE),
    }


def format_table(frame: pd.DataFrame) -> str:
    rows = summary(frame)
    lines = [f"{'configuration':<38}{'valid RMSE':>18}{'test RMSE':>18}{'train s':>14}{'CPU s':>14}"]
    for _, r in rows.iterrows():
        lines.append(
            f"{r['model']:<38}{r['valid_rmse_mean']:>10.4f} ± {r['valid_rmse_std']:.4f}"
            f"{r['rmse_mean']:>10.4f} ± {r['rmse_std']:.4f}{r['train_seconds_mean']:>8.1f} ± {r['train_seconds_std']:.1f}"
            f"{r['cpu_seconds_mean']:>8.1f} ± {r['cpu_seconds_std']:.1f}"
        )
    return "\n".join(lines)


def load(path: Path) -> pd.DataFrame:
    frame, _ = tables.read(path, columns=COLUMNS)
    return frame


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    add_device_argument(parser)
    parser.add_argument("--splits", type=int_list, default=(0, 1, 2), help="split seeds, e.g. 0,1,2 (default: 0,1,2)")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "fm-ablation", "--dataset", args.dataset]
    words += ["--splits", ",".join(map(str, args.splits))]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    from ..data import load

    torch.set_num_threads(1)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    steps = on_device(settings(), args.device)
    data = load(args.dataset, data_dir=args.data_dir, log=log)
    records = [r for seed in args.splits for r in run_split(data, seed, steps, log)]
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(args.dataset), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
