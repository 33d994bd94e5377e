"""Command line: ``python -m fmlib <command> ...``.

    train --model fm|fwfm|dplr|rafm|rfm [...]         train, print one JSON line
    tune --model M --trials N [...]                     tune on the validation split, write presets/...
    rescore PRESET.json [...]                           a tuned recipe at 10 seeds, against the models it contains
    scorecard [--readme README.md]                      the papers' claims with intervals and verdicts
    presets [--readme README.md]                        every tuned preset: studies' bests, epochs, converged or why not
    data info | data fetch                              which source serves the data, its fields
    bench train                                         every model vs a plain FM and torchfm, s/epoch
and the topic commands listed in TOPIC_COMMANDS. Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import import_module
from pathlib import Path

# (group, command, help, module): module has add_arguments(parser) and run(args) -> int
TOPIC_COMMANDS = [
    ("bench", "train", "seconds per epoch of every model vs a plain PyTorch FM and torchfm", "fmlib.bench.train"),
    ("derivations", "check", "run every derivation check", "fmlib.derivations.cli"),
    (
        "reproduce",
        "rafm",
        "FM at each rank vs RaFM: test metric, #params, time (RaFM Fig. 3, Table 2)",
        "fmlib.experiments.rafm",
    ),
    (
        "reproduce",
        "compare",
        "any model against the FM (or another) on the same splits and settings: test metric per seed, verdict",
        "fmlib.experiments.compare",
    ),
    ("reproduce", "dplr", "DPLR paper Table 1: FM, FwFM, DPLR vs pruned FwFM over seeds", "fmlib.experiments.dplr"),
    (
        "reproduce",
        "fm-ablation",
        "the Adam FM with weight averaging, a larger lr and k 16 added one at a time: valid/test RMSE, seconds",
        "fmlib.experiments.fm_ablation",
    ),
    (
        "reproduce",
        "bfm",
        "the Bayesian FM (Gibbs) beside the Adam FM the fm-ablation chose, same splits: valid/test RMSE, seconds",
        "fmlib.experiments.bfm",
    ),
    (
        "reproduce",
        "features",
        "one FM as MF, SVD++ and a context-aware model by its feature set, beside Surprise SVD/SVD++: test RMSE, s/epoch",
        "fmlib.experiments.features",
    ),
    (
        "reproduce",
        "rfm",
        "the rotative FM vs the tuned FM over seeds: valid/test MSE, RMSE, MAE, paired interval",
        "fmlib.experiments.rfm",
    ),
    (
        "reproduce",
        "fmgrad",
        "FMGrad's memoised FM gradient: error against autograd (printed and corrected eq. 8), speed-up over the naive sum",
        "fmlib.experiments.fmgrad",
    ),
    (
        "reproduce",
        "inversion",
        "AttnInv's attack on planted instances: success and agreement of two starts vs γ, Wilson intervals",
        "fmlib.experiments.inversion",
    ),
    (
        "bench",
        "ranking",
        "per-item ranking cost of FM, FwFM, pruned FwFM, DPLR as multiples of the embedding_bag floor",
        "fmlib.bench.ranking",
    ),
    (
        "bench",
        "quality",
        "test RMSE/MAE and fit seconds: fmlib FM and Bayesian FM vs Surprise SVD and myFM, same splits",
        "fmlib.bench.quality",
    ),
    (
        "bench",
        "inversion",
        "attention inversion: success vs γ, GD vs Newton, MovieLens recovery",
        "fmlib.bench.inversion",
    ),
    (
        "bench",
        "classroom",
        "a class of browser sessions against one app server: time to a usable page, queue wait, errors",
        "fmlib.bench.classroom",
    ),
]


# (command, help, module) of the commands whose modules are imported only when they run (each
# pulls in what the train command does not need: Optuna, scipy)
COMMANDS = [
    ("tune", "tune a model on the validation split (Optuna) and write its preset", "fmlib.experiments.tune"),
    (
        "rescore",
        "train tuned presets' recipes at several seeds; judge them against the models they contain",
        "fmlib.experiments.rescore",
    ),
    ("scorecard", "each paper claim, what we measured with its interval, the verdict", "fmlib.experiments.scorecard"),
    (
        "presets",
        "every tuned preset: its studies' bests, epochs, scores over seeds, whether it converged",
        "fmlib.experiments.preset_table",
    ),
]


class Parser(argparse.ArgumentParser):
    """argparse that reports bad input in one line (and exit code 2) instead of the usage text."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message}\n")


def load_split(args, seed: int, min_count: int, log=None):
    """The data set named by --dataset/--data-dir, split by ``seed`` and ``min_count``, with the fields
    of --features."""
    from .data import load, split
    from .data.features import with_features

    data = load(args.dataset, data_dir=args.data_dir, log=log)
    return with_features(split(data, seed=seed, min_count=min_count), args.features or "all")


def given_hyperparameters(args) -> dict:
    """The model hyperparameters the command line gives: --hp, then --dim, --rank (DPLR's ρ) and
    --ranks (RaFM's rank set)."""
    from .models import hyperparameters

    try:
        hp = json.loads(args.hp)
    except ValueError:
        hp = None
    if not isinstance(hp, dict):
        raise ValueError(f"--hp must be a JSON object, e.g. '{{\"rank\": 2}}', got {args.hp!r}")
    accepted = hyperparameters(args.model)
    if "dim" in accepted and args.dim is not None:
        hp.setdefault("dim", args.dim)
    for key in ("rank", "ranks"):
        value = getattr(args, key)
        if value is not None:
            if key not in accepted:
                raise ValueError(
                    f"--{key} does not apply to model {args.model!r} (its hyperparameters: {', '.join(accepted)})"
                )
            hp[key] = value
    return hp


SIZE_FLAGS = {"dim": "--dim N", "rank": "--rank N", "ranks": "--ranks D1,D2,..."}  # presets.RANK_HP's flags


def chosen_preset(args, size, task: str, root) -> str:
    """The name of the preset --preset asks for: a name must be one of the model's presets; "tuned" takes
    the one the size flag (``size``: --dim, --rank or --ranks, None when not given) names, else the
    model's preset without a size, else its only one. Several and none picked: ValueError listing them."""
    from . import presets

    names = presets.available(args.dataset, args.model, task, root)
    where = f"{args.model} on {args.dataset}" + ("" if task == "rating" else f" ({task} task)")
    if args.preset != "tuned":
        if args.preset not in names:
            raise ValueError(
                f"--preset {args.preset}: no such preset of {where}; "
                + (f"its presets: {', '.join(names)}" if names else "it has none (run `python -m fmlib tune` first)")
            )
        return args.preset
    unsized = presets.preset_name(args.model, None, task)
    if size is None and len(names) > 1 and unsized not in names:
        flag = SIZE_FLAGS[presets.RANK_HP[args.model]]
        raise ValueError(
            f"several tuned presets of {where}: {', '.join(names)} — pick one with {flag} or --preset NAME"
        )
    return names[0] if size is None and len(names) == 1 else presets.preset_name(args.model, size, task)


def train_setup(args) -> tuple:
    """(TrainConfig, model hyperparameters, min count, what the run records of its preset) of the train
    command: the preset's values (--preset), replaced by each flag given on the command line."""
    from . import presets
    from .arguments import given_train_settings
    from .models.bfm import SWEEPS
    from .train import TrainConfig

    given, hp = given_train_settings(args), given_hyperparameters(args)
    if args.preset is None:
        config = TrainConfig(**{"epochs": SWEEPS if args.model == "bfm" else TrainConfig.epochs, **given})
        return config, hp, 1 if args.min_count is None else args.min_count, None
    task, root = given.get("task", TrainConfig.task), presets.features_root(args.features)
    name = chosen_preset(args, hp.get(presets.RANK_HP.get(args.model)), task, root)
    preset = presets.load_named(args.dataset, name, args.model, task, root)
    fixed = {**presets.train_settings(preset), **presets.hyperparameters(preset), "min_count": preset["min_count"]}
    explicit = {**given, **hp, **({} if args.min_count is None else {"min_count": args.min_count})}
    record = {
        "name": name,
        "file": presets.shown(Path(root) / args.dataset / f"{name}.json", root),
        "overridden": {
            key: {"preset": fixed[key], "given": value}
            for key, value in explicit.items()
            if key in fixed and value != fixed[key]  # the size that picked the preset replaces nothing
        },
    }
    config = presets.train_config(preset, **given)
    return config, {**presets.hyperparameters(preset), **hp}, explicit.get("min_count", preset["min_count"]), record


def preset_line(record: dict) -> str:
    """One line for stderr: the preset used and the flags that replaced its values."""
    changes = ", ".join(
        f"--{key.replace('_', '-')} {value['given']} (the preset's: {value['preset']})"
        for key, value in record["overridden"].items()
    )
    return f"preset {record['file']}" + (f"; given: {changes}" if changes else "")


def cmd_train(args) -> int:
    from tqdm import tqdm

    from .runs import RunStore
    from .train import check_field_decay, train_model

    config, hp, min_count, preset = train_setup(args)

    def log(msg):
        return print(msg, file=sys.stderr)

    if preset:
        log(preset_line(preset))
    data = load_split(args, config.seed, min_count, log)
    check_field_decay(data.schema, config)  # before the progress bar: bad input is one line
    start = time.perf_counter()
    metric = "valid_rmse" if config.task == "rating" else "valid_logloss"
    with tqdm(total=config.epochs, desc=f"train {args.model}", unit="epoch", file=sys.stderr) as bar:

        def progress(record):
            bar.set_postfix(loss=f"{record['train_loss']:.4f}", **{metric: f"{record[metric]:.4f}"})
            bar.update(1)

        run = train_model(args.model, data, config, progress, **hp)
    if preset:
        run.config["preset"] = preset
    run_id = RunStore(args.runs_dir).save(run)
    print(
        json.dumps(
            {
                "run_id": run_id,
                "model": args.model,
                "dataset": args.dataset,
                "data_source": data.train.source,
                "config": run.config,
                "metrics": run.metrics,
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
    )
    return 0


def cmd_data_info(args) -> int:
    import resource

    from .data import load, movielens

    start = time.perf_counter()
    data = load(args.dataset, data_dir=args.data_dir, log=lambda m: print(m, file=sys.stderr))
    seconds = time.perf_counter() - start
    users, rated = (data.schema.field(f).cardinality - 1 for f in ("user_id", "movie_id"))  # values that occur
    print(f"dataset: {args.dataset}")
    print(f"source:  {data.source}")
    print(
        f"rows:    {len(data)} ratings, {users} users, {len(data.movies)} movies ({rated} rated), "
        f"ratings {data.rating_range[0]:g}–{data.rating_range[1]:g}"
    )
    absent = movielens.absent_fields(data.schema)
    print(
        f"fields:  {data.schema.num_fields}"
        + (f"; the files describe no users, so no {', '.join(absent)}" if absent else "")
    )
    print(f"\n{'field':<14}{'role':<9}{'kind':<8}{'cardinality':>12}")
    for f in data.schema.fields:
        print(f"{f.name:<14}{f.role:<9}{f.kind:<8}{f.cardinality - 1:>12}")
    print("\n(cardinality: distinct values; every field also has one rare bucket)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    print(
        f"index:   {tuple(data.index.shape)} {str(data.index.dtype).removeprefix('torch.')}, "
        f"loaded in {seconds:.1f} s, peak resident memory {peak:.2f} GiB"
    )
    return 0


def cmd_data_fetch(args) -> int:
    from .data import movielens

    frames, source = movielens.load_frames(
        args.dataset, data_dir=args.data_dir, log=lambda m: print(m, file=sys.stderr)
    )
    if args.data_dir:  # a folder the user unzipped fills the cache too: the app finds it from then on
        root = movielens.cache_root()
        movielens.write_cache(args.dataset, root, frames, source)
        movielens.encode_into_cache(args.dataset, root, frames)
    print(f"{args.dataset}: served by {source}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .arguments import add_data_arguments, add_features_argument, add_train_arguments, int_list, positive_int
    from .data import DATASETS
    from .models import MODELS
    from .models.bfm import SWEEPS
    from .train import TrainConfig

    parser = Parser(prog="python -m fmlib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a model and save the run")
    p.add_argument("--model", required=True, choices=list(MODELS))
    add_data_arguments(p, choices=DATASETS)
    add_features_argument(p)
    add_train_arguments(p, skip=("epochs",), unset=True)  # a flag given replaces the preset's value
    p.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help=f"epochs (Adam models, default: {TrainConfig.epochs}) or Gibbs sweeps (bfm, default: {SWEEPS})",
    )
    p.add_argument("--dim", type=positive_int, default=None, help="embedding size k (default: the model's)")
    p.add_argument(
        "--min-count",
        type=positive_int,
        default=None,
        help="features seen fewer times in train go to the rare bucket (default: the preset's, else 1)",
    )
    p.add_argument("--rank", type=positive_int, default=None, help="DPLR: rank ρ of R (1..m-1)")
    p.add_argument("--ranks", type=int_list, default=None, help="RaFM: rank set D_1 < ... < D_m, e.g. 8,32")
    p.add_argument("--hp", default="{}", help="extra model hyperparameters as JSON, e.g. '{\"rank\": 2}'")
    p.add_argument(
        "--preset",
        default=None,
        metavar="tuned|NAME",
        help="lr, weight decay, epochs, hyperparameters and min count from presets/<dataset>/<NAME>.json; tuned: "
        "the model's preset of the size --dim/--rank/--ranks give, else its only one; NAME: one of the model's "
        "presets, e.g. dplr-2. Each flag given replaces the preset's value",
    )
    p.add_argument("--runs-dir", default=None, help="run store (default: $FMLIB_RUNS or ./runs)")
    p.set_defaults(func=cmd_train)

    for command, text, _module in COMMANDS:  # their arguments: see main()
        sub.add_parser(command, help=text)

    data = sub.add_parser("data", help="MovieLens data").add_subparsers(dest="data_command", required=True)
    for name, func, text in [
        ("info", cmd_data_info, "source, fields and counts"),
        ("fetch", cmd_data_fetch, "make sure the data is in the cache"),
    ]:
        p = data.add_parser(name, help=text)
        add_data_arguments(p)
        p.set_defaults(func=func)

    groups = {}
    for group, command, text, _module in TOPIC_COMMANDS:
        if group not in groups:
            groups[group] = sub.add_parser(group, help=f"{group} commands").add_subparsers(
                dest=f"{group}_command", required=True
            )
        groups[group].add_parser(command, help=text)  # its arguments: see main()
    return parser


def main(argv=None) -> int:
    import torch

    torch.set_num_threads(1)  # minibatches of small tensors: one thread is as fast, and robust
    argv = sys.argv[1:] if argv is None else argv
    topics = {(group, command): module for group, command, _, module in TOPIC_COMMANDS}
    topics.update({(command,): module for command, _, module in COMMANDS})
    words = next((n for n in (2, 1) if tuple(argv[:n]) in topics), 0)
    try:
        if words:  # topic command: its module adds its own arguments
            module = import_module(topics[tuple(argv[:words])])
            p = Parser(prog=f"python -m fmlib {' '.join(argv[:words])}", description=module.__doc__.split("\n")[0])
            module.add_arguments(p)
            args = p.parse_args(argv[words:])
            func = module.run
        else:
            args = build_parser().parse_args(argv)
            func = args.func
    except SystemExit as done:  # bad arguments (2) or --help (0): argparse has printed why
        return done.code
    try:
        return func(args)
    except (ValueError, KeyError, RuntimeError, OSError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"error: {message}", file=sys.stderr)
        return 2
