"""``python -m fmlib reproduce compare``: a model against the FM (or any other) on equal terms, with a verdict.

Every seed s splits the data set by s and trains both models on that split with the same training
settings (``TrainConfig``: lr, L2, epochs, early stopping, batch; the same seed) and the same embedding
size k, through the same loop (``fmlib.train.train_model``). By default those are the quick settings every
page trains with (``fmlib.train.quick_settings``); each flag given replaces one. The claim "``model`` predicts better than
``against``" is read from the paired per-seed differences of the test metric (RMSE for ratings,
logloss for clicks) and their 95 % t-interval (``fmlib.experiments.verdict``), as the papers' claims
are. Works for every registered model, yours (``FMLIB_MODELS``) included.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, replace

import pandas as pd

from ..arguments import add_train_arguments, given_train_settings, positive_int
from ..data import DATASETS, load, split
from ..models import MODELS, hyperparameters
from ..train import MONITOR, TrainConfig, quick_settings, train_model
from .verdict import Interval, paired_interval, verdict


def compare(model: str, against: str, dataset: str, seeds: int, config: TrainConfig, dim: int, log=None):
    """(one row per seed and model: seed, model, test metric, epochs; the paired interval; the verdict).
    ``dim``: the embedding size k of every model that takes one."""
    data, key, rows = load(dataset), MONITOR[config.task], []
    for seed in range(seeds):
        parts = split(data, seed=seed)
        for name in (model, against):
            hp = {"dim": dim} if "dim" in hyperparameters(name) else {}
            run = train_model(name, parts, replace(config, seed=seed), snapshots=False, **hp)
            rows.append({"seed": seed, "model": name, key: run.metrics["test"][key], "epochs": len(run.history)})
            if log:
                log(f"seed {seed}: {name} test {key} {rows[-1][key]:.4f} after {rows[-1]['epochs']} epochs")
    frame = pd.DataFrame(rows)
    scores = [frame[frame.model == name].sort_values("seed")[key].to_numpy() for name in (model, against)]
    interval = paired_interval(*scores, lower_is_better=True)
    return frame, interval, verdict(interval)


def sentence(model: str, against: str, key: str, interval: Interval, words: str) -> str:
    """The verdict in one line, built from the interval it reads."""
    return (
        f"{model} predicts better than {against} (test {key}, lower is better): {words}; "
        f"mean difference {interval.mean:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}] over {interval.n} seeds "
        "(> 0 favours " + model + ")"
    )


def add_arguments(p) -> None:
    p.add_argument("--model", required=True, choices=list(MODELS), help="the model the claim is about")
    p.add_argument("--against", default="fm", choices=list(MODELS), help="the model it is compared with")
    p.add_argument("--dataset", default="synthetic", choices=DATASETS)
    p.add_argument("--seeds", type=positive_int, default=3, help="splits (and training seeds) 0..N−1")
    p.add_argument(
        "--dim", type=positive_int, default=None, help="embedding size k of both (default: the quick settings')"
    )
    add_train_arguments(p, skip=("seed",), unset=True)


def run(args) -> int:
    quick, hp = quick_settings(args.dataset)
    config = TrainConfig(**{**asdict(quick), **given_train_settings(args)})
    frame, interval, words = compare(
        args.model,
        args.against,
        args.dataset,
        args.seeds,
        config,
        args.dim or hp["dim"],
        log=lambda m: print(m, file=sys.stderr),
    )
    key = MONITOR[config.task]
    print(frame.pivot(index="seed", columns="model", values=key).round(4).to_string())
    print(sentence(args.model, args.against, key, interval, words))
    return 0
