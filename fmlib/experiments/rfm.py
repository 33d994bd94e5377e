"""``python -m fmlib reproduce rfm``: the rotative FM against the tuned FM, seed by seed.

[RFM] presents rotations as a better way to model feature interactions than FM's inner products;
the claim checked here is the one a reader takes from it: on rating prediction RFM is at least as
accurate as FM. For every seed (which seeds the split, the initialisation and the batch order)
this trains, on the same split:

* **FM**: the tuned FM preset at RFM's embedding size k, ``fm-<k>`` (``python -m fmlib tune
  --model fm --rank k``);
* **RFM**: the tuned RFM preset ``rfm`` (``python -m fmlib tune --model rfm``), tuned with the same
  training tools (L2, grouped L2 by field, weight averaging) and the same number of trials;

both with the same epoch budget — FM's epochs and patience (early stopping on the validation
RMSE) — and records the validation and test MSE, RMSE and MAE (MSE = RMSE², the paper's square
loss), the epochs run, the training seconds per epoch and the number of parameters. The claim is
the paired per-seed difference of test MSE with its 95 % t-interval (``claims``). Choices were
made on validation data (the presets); the test split is read once per trained model. ``--jobs N``
trains N seeds at once, one process and one torch thread each; the numbers do not depend on it, so
the table's command leaves it out.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from .. import presets
from ..arguments import add_data_arguments, add_device_argument, on_device, positive_int
from ..data import split
from ..models import build_model
from ..results import results_dir
from ..train import TrainConfig, evaluate, fit
from . import tables
from .claims import Claim

MODELS = {"FM": "fm", "RFM": "rfm"}  # table label -> model (and preset) name
METRICS = ("mse", "rmse", "mae")
COLUMNS = (
    "seed", "model", "rank", "epochs", "train_seconds_per_epoch", "parameters",
    *(f"valid_{m}" for m in METRICS), *METRICS,
)  # fmt: skip


def table_name(dataset: str, task: str = "rating") -> str:
    return f"rfm_{dataset}_{task}.csv"


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: RFM's test MSE against FM's, at the embedding sizes in the table."""
    size = {model: int(frame.loc[frame["model"] == model, "rank"].iloc[0]) for model in MODELS}
    text = "RFM predicts ratings better than FM (lower test MSE)"
    return frame, [Claim("RFM", text, ("RFM", size["RFM"]), (("FM", size["FM"]),), "mse")]


def settings(dataset: str) -> dict:
    """Label -> (TrainConfig without its seed, model hp, recipe) from the tuned presets: RFM's
    (``rfm``) and the FM's at RFM's embedding size (``fm-<k>``), both tuned with the same tools and
    trials; RFM with FM's epoch budget (epochs and patience)."""
    rfm = presets.load(dataset, "rfm")
    fm = presets.load(dataset, "fm", rfm["hp"]["dim"])
    budget = {k: fm["train"][k] for k in ("epochs", "patience")}
    out = {}
    for label, preset in (("FM", fm), ("RFM", rfm)):
        preset = {**preset, "train": {**preset["train"], **budget}}
        out[label] = (presets.train_config(preset), presets.hyperparameters(preset), presets.recipe(preset))
    return out


def metrics(run_model, data, task: str) -> dict:
    values = evaluate(run_model, data, task)
    return {"mse": values["rmse"] ** 2, "rmse": values["rmse"], "mae": values["mae"]}


def run_seed(data, seed: int, models: dict, log=None) -> list[dict]:
    """Train every model of ``models`` (label -> (TrainConfig, hp, recipe)) on the split of ``seed``."""
    parts = split(data, seed=seed)
    records = []
    for label, (config, hp, recipe) in models.items():
        config = TrainConfig(**{**asdict(config), "seed": seed})
        torch.manual_seed(seed)
        model = build_model(MODELS[label], parts.schema, **hp)
        run = fit(model, parts.train, parts.valid, config)
        valid = metrics(run.model, parts.valid, config.task)
        test = metrics(run.model, parts.test, config.task)  # read once, after training
        record = {
            "seed": seed,
            "model": label,
            "rank": run.model.dim,
            "epochs": len(run.history),
            "train_seconds_per_epoch": run.seconds / len(run.history),
            "parameters": sum(p.numel() for p in run.model.parameters()),
            **{f"valid_{k}": v for k, v in valid.items()},
            **test,
            "recipe": recipe,
        }
        records.append(record)
        if log:
            log(
                f"seed {seed} {label}: {record['epochs']} epochs, valid MSE {record['valid_mse']:.4f}, "
                f"test MSE {record['mse']:.4f} RMSE {record['rmse']:.4f} MAE {record['mae']:.4f}"
            )
    return records


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of every column, per model."""
    return tables.mean_std(frame).reset_index()


def format_table(frame: pd.DataFrame) -> str:
    lines = [f"{'model':<8}{'k':>4}{'valid MSE':>18}{'test MSE':>18}{'test RMSE':>18}{'test MAE':>18}{'s/epoch':>9}"]
    for _, r in summary(frame).iterrows():
        cells = "".join(f"{r[f'{c}_mean']:>10.4f} ± {r[f'{c}_std']:.4f}" for c in ("valid_mse", *METRICS))
        lines.append(f"{r['model']:<8}{r['rank_mean']:>4.0f}{cells}{r['train_seconds_per_epoch_mean']:>9.2f}")
    return "\n".join(lines)


def load(path: Path) -> pd.DataFrame:
    frame, _ = tables.read(path, columns=COLUMNS)
    return frame


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    add_device_argument(parser)
    parser.add_argument("--seeds", type=positive_int, default=5, help="seeds 0..N−1 (split, init, batches)")
    parser.add_argument(
        "--jobs", type=positive_int, default=1, help="seeds trained at once, one process and one torch thread each"
    )
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "rfm", "--dataset", args.dataset, "--seeds", str(args.seeds)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def seed_records(dataset: str, data_dir, seed: int, models: dict) -> list[dict]:
    """``run_seed`` on one torch thread, in a process of its own (``--jobs``)."""
    from ..data import load

    torch.set_num_threads(1)
    return run_seed(load(dataset, data_dir=data_dir), seed, models, log)


def run(args) -> int:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    models = on_device(settings(args.dataset), args.device)
    with ProcessPoolExecutor(min(args.jobs, args.seeds), mp_context=get_context("spawn")) as pool:
        jobs = [pool.submit(seed_records, args.dataset, args.data_dir, s, models) for s in range(args.seeds)]
        records = [r for job in jobs for r in job.result()]
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(args.dataset), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
