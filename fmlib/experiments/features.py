"""``python -m fmlib reproduce features``: one FM becomes matrix factorization, SVD++ and a context-aware model through its input alone.

Rendle's argument for factorization machines ([Rendle2010] §V, [Rendle2012] §III): the famous
recommenders are FMs over chosen features. The same two models are trained on four feature sets
(``fmlib.data.features``), each step adding to the last:

  * MF — ``user_id,movie_id``: an FM over two fields is biased matrix factorization;
  * SVD++ — ``user_id,movie_id,rated``: adding the movies the user rated (train split, 1/√n each)
    gives SVD++ ([Koren2008] eq. 15);
  * context — ``all``: the 12 fields of ml-100k (demographics, rating time, release year, genres);
  * context + rated + raters — ``all,rated,raters``: both implicit blocks beside the context.

Models: the Adam FM with the recipe of the tuned preset ``presets/<dataset>/fm.json`` (its
learning rate, L2, grouped L2 on the fields it names, weight averaging and epochs, whatever the
feature set: the recipe was tuned on the 12 fields) and the Bayesian FM (Gibbs sampling, rank
``--dim``, ``--sweeps`` sweeps, no tuning: its priors are sampled). Peers on the same splits,
each beside its step: Surprise SVD beside MF (its factors, epochs and L2 chosen on the
validation part, ``bench quality``'s grid) and Surprise SVD++ beside SVD++ (its defaults).
Nothing is chosen on the test part: it is read once per trained model.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import presets
from ..arguments import add_data_arguments, int_list, positive_int
from ..data import split
from ..data.features import with_features
from ..models.bfm import SWEEPS
from ..peers import optional_module, svd_method, svdpp_method
from ..results import results_dir
from ..train import TrainConfig, train_model
from . import tables
from .claims import Claim
from .verdict import mean_interval, paired_interval

STEPS = {  # label -> --features
    "MF": "user_id,movie_id",
    "SVD++": "user_id,movie_id,rated",
    "context": "all",
    "context + rated + raters": "all,rated,raters",
}
ADAM, BFM = "FM (Adam, preset fm)", "Bayesian FM (Gibbs)"
PEERS = {"MF": "Surprise SVD (valid-tuned)", "SVD++": "Surprise SVD++ (defaults)"}
COLUMNS = ["seed", "features", "model", "valid_rmse", "rmse", "mae", "epochs", "train_seconds", "epoch_seconds"]
DIM = 10  # the Bayesian FM's rank (bench quality's and reproduce bfm's)


def table_name(dataset: str, task: str = "rating") -> str:
    """The table's file name; only the rating task is measured (another task's table never exists)."""
    return f"features_{dataset}_{task}.csv"


def adam_settings(dataset: str, schema, seed: int) -> tuple[TrainConfig, dict]:
    """The preset fm's config and hyperparameters; its grouped L2 kept for the fields ``schema`` has."""
    preset = presets.load(dataset, "fm")
    config = presets.train_config(preset, seed=seed)
    decay = {f: m for f, m in config.field_decay.items() if f in schema.names}
    return replace(config, field_decay=decay), presets.hyperparameters(preset)


def record(seed, step, model, run, seconds) -> dict:
    epochs = len(run.history)
    return {
        "seed": seed,
        "features": step,
        "model": model,
        "valid_rmse": run.metrics["valid"]["rmse"],
        "rmse": run.metrics["test"]["rmse"],
        "mae": run.metrics["test"]["mae"],
        "epochs": epochs,
        "train_seconds": seconds,
        "epoch_seconds": seconds / epochs,
    }


def peer_record(seed, step, model, fitted) -> dict:
    test = fitted.test()
    return {
        "seed": seed,
        "features": step,
        "model": model,
        "valid_rmse": np.nan,
        "rmse": test["rmse"],
        "mae": test["mae"],
        "epochs": np.nan,
        "train_seconds": fitted.seconds,
        "epoch_seconds": np.nan,
    }


def run_split(data, seed: int, dataset: str, dim: int, sweeps: int, models, surprise, log=None) -> list[dict]:
    """Every model on every feature set of the split of ``seed``, its peer beside MF and SVD++."""
    parts, records = split(data, seed=seed), []
    peers = {} if surprise is None else {"MF": svd_method(surprise, seed), "SVD++": svdpp_method(surprise, seed)}
    for step, features in STEPS.items():
        chosen = with_features(parts, features)
        found = []
        if ADAM in models:
            config, hp = adam_settings(dataset, chosen.schema, seed)
            run = train_model("fm", chosen, config, **hp)
            found.append(record(seed, step, ADAM, run, run.seconds))
        if BFM in models:
            run = train_model("bfm", chosen, TrainConfig(epochs=sweeps, seed=seed), dim=dim)
            found.append(record(seed, step, BFM, run, run.seconds))
        if step in peers:
            found.append(peer_record(seed, step, PEERS[step], peers[step](parts)))
        for r in found if log else ():
            log(f"split {seed} {step:<26} {r['model']:<28} test RMSE {r['rmse']:.4f}, {r['train_seconds']:.1f} s")
        records += found
    return records


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (feature set, model): mean test RMSE with its 95 % t-interval over splits, mean
    validation RMSE, and mean seconds per epoch (per sweep for the Bayesian FM), in ``STEPS`` order."""
    rows = []
    for (step, model), group in frame.groupby(["features", "model"], sort=False):
        interval = mean_interval(group["rmse"])
        rows.append(
            {
                "features": step,
                "model": model,
                "splits": len(group),
                "rmse_mean": interval.mean,
                "rmse_low": interval.low,
                "rmse_high": interval.high,
                "valid_rmse_mean": group["valid_rmse"].mean(),
                "epoch_seconds_mean": group["epoch_seconds"].mean(),
            }
        )
    out = pd.DataFrame(rows)
    out["order"] = out["features"].map(list(STEPS).index)
    return out.sort_values(["order", "model"], kind="stable").drop(columns="order").reset_index(drop=True)


def gain(frame: pd.DataFrame, model: str, start: str, end: str):
    """How much lower ``model``'s test RMSE is on feature set ``end`` than on ``start``, paired
    split by split, with its 95 % t-interval (``verdict.paired_interval``: > 0 favours ``end``)."""
    rmse = frame[frame["model"] == model].pivot(index="seed", columns="features", values="rmse")
    return paired_interval(rmse[end], rmse[start], lower_is_better=True)


def claims(frame: pd.DataFrame, task: str = "rating"):
    """(rows, claims) for the scorecard: [Rendle2012] §III's FM that mimics MF and SVD++ by its input,
    against the peers on the same splits (at most 1 % worse), and the implicit block and the context
    lowering its test RMSE below MF's. A row's model is "<model> [<feature set>]", its rank 0."""
    rows = frame.assign(model=frame["model"] + " [" + frame["features"] + "]", rank=0)

    def fm(step, model=ADAM):
        return (f"{model} [{step}]", 0)

    as_good = "is as accurate as {} ({}), at most 1 % worse"
    return rows, [
        Claim("Rendle2012", "An FM on user and movie ids " + as_good.format("matrix factorization", PEERS["MF"]),
              fm("MF"), (fm("MF", PEERS["MF"]),), "rmse", margin=0.01),
        Claim("Rendle2012", "An FM on SVD++'s input " + as_good.format("SVD++", PEERS["SVD++"]),
              fm("SVD++"), (fm("SVD++", PEERS["SVD++"]),), "rmse", margin=0.01),
        Claim("Rendle2012", "The rated block (SVD++'s implicit feedback) lowers the FM's RMSE below MF's input's",
              fm("SVD++"), (fm("MF"),), "rmse"),
        Claim("Rendle2012", "The context fields and both blocks lower the FM's RMSE below MF's input's",
              fm("context + rated + raters"), (fm("MF"),), "rmse"),
    ]  # fmt: skip


def format_table(frame: pd.DataFrame) -> str:
    lines = [f"{'features':<26}{'model':<30}{'test RMSE [95 % interval]':>30}{'s/epoch':>10}"]
    for _, r in summary(frame).iterrows():
        per_epoch = "" if np.isnan(r["epoch_seconds_mean"]) else f"{r['epoch_seconds_mean']:.2f}"
        interval = f"{r['rmse_mean']:.4f} [{r['rmse_low']:.4f}, {r['rmse_high']:.4f}]"
        lines.append(f"{r['features']:<26}{r['model']:<30}{interval:>30}{per_epoch:>10}")
    return "\n".join(lines)


def load(path) -> pd.DataFrame:
    frame, _ = tables.read(Path(path), COLUMNS)
    return frame


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--splits", type=int_list, default=(0, 1, 2), help="split seeds, e.g. 0,1,2 (default: 0,1,2)")
    parser.add_argument("--dim", type=positive_int, default=DIM, help=f"rank of the Bayesian FM (default: {DIM})")
    parser.add_argument("--sweeps", type=positive_int, default=SWEEPS, help=f"Gibbs sweeps (default: {SWEEPS})")
    parser.add_argument(
        "--models", default="adam,bfm", help="adam, bfm or both, comma-separated (default: adam,bfm); peers always run"
    )
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    words = ["python", "-m", "fmlib", "reproduce", "features", "--dataset", args.dataset]
    words += ["--splits", ",".join(map(str, args.splits)), "--dim", str(args.dim), "--sweeps", str(args.sweeps)]
    words += ["--models", args.models]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    from ..data import load

    names = {"adam": ADAM, "bfm": BFM}
    unknown = set(args.models.split(",")) - set(names)
    if unknown:
        raise ValueError(f"--models: unknown {sorted(unknown)}; choose from adam, bfm")
    torch.set_num_threads(1)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    data = load(args.dataset, data_dir=args.data_dir, log=log)
    models = [names[m] for m in args.models.split(",")]
    surprise = optional_module("surprise")
    records = [
        r
        for seed in args.splits
        for r in run_split(data, seed, args.dataset, args.dim, args.sweeps, models, surprise, log)
    ]
    frame = pd.DataFrame(records, columns=COLUMNS)
    path = tables.write(frame, Path(args.out or results_dir()) / table_name(args.dataset), command(args))
    print(format_table(frame))
    print(f"saved: {path}")
    return 0
