"""``python -m fmlib tune``: tune a model on the validation split with Optuna, write its preset.

* Sampler: TPE, seeded (the seed is offset by the number of trials already stored, so a
  resumed study does not replay its first random trials).
* Pruner: the median pruner, fed the validation metric after every epoch through ``fit``'s
  callback; a trial below the median of earlier trials at the same epoch stops early.
* Objective: the best validation metric of the run (RMSE for ratings, logloss for clicks).
  The test split is never read while tuning; it is touched once, by the final model.
* Storage: one SQLite file per study under the run store, ``<runs>/.studies/<dataset>/<name>.sqlite3``.
  ``--trials N`` asks for N finished trials in all: run again after an interruption and the
  study resumes where it stopped. The preset is the best of the study's first N finished trials,
  so every model gets the same tuning effort even when one study was run longer before.
* The search space of every model is in ``SEARCH_SPACES``: the same training ``TOOLS`` for every
  model (lr, L2, grouped L2 by field, weight averaging) plus the model's own sizes. A size fixed by
  ``--rank`` (or ``--dim``) is taken out of the space. The space is part of the study's settings,
  so a study made with another space is not resumed.
* The input can be drawn too: ``--draw-features SET [SET ...]`` adds the feature set
  (``fmlib.data.features``) to the space, one of the given sets per trial, for any model alike (a
  feature set one model may draw and another may not would decide a comparison, not the models).
  The preset records the set its best trial drew and goes where that set's presets live.
The best configuration is written to ``presets/<dataset>/<model>[-<rank>].json`` only after the
study has at least one finished trial; a failed or broken study leaves the old preset alone, and so
does a study whose best validation score is worse than the one the old preset records.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from .. import presets
from ..arguments import add_data_arguments, add_features_argument, add_train_arguments, int_list, positive_int
from ..data.features import with_features
from ..models import build_model, hyperparameters
from ..models.rafm_ranks import check_thresholds
from ..runs import default_root as runs_root
from ..train import MONITOR, TrainConfig, evaluate, fit

# name -> (low, high) for a log-uniform float, or a tuple of choices. TOOLS are the training tools
# every model gets, drawn from the same ranges for every model (a tool one model can take and the
# other cannot would decide a comparison, not the models): lr and weight_decay (Adam's L2 on tables
# and weight matrices); average_from, the epoch from which the end-of-epoch weights are averaged
# (0: off, see fmlib.train); grouped L2 (fmlib.train.row_decay): field_decay, a dict of ranges
# (field name -> multiple of weight_decay on its rows), and linear_decay. The rest are the model's
# own sizes and regularisers: r_l2 is FwFM's L2 of R toward R_FM = 11ᵀ − I (DPLR eq. 7).
TOOLS = {
    "lr": (1e-3, 5e-2),
    "weight_decay": (1e-6, 3e-2),
    "average_from": (0, 3, 5),
    "field_decay": {"user_id": (0.1, 10.0), "movie_id": (0.1, 10.0)},
    "linear_decay": (0.01, 10.0),
}
MODEL_SPACES = {
    "fm": {"dim": (8, 16, 32, 64)},
    "fwfm": {"dim": (8, 16, 32, 64), "r_l2": (1e-4, 1.0)},
    "dplr": {"dim": (8, 16, 32, 64)},
    "rafm": {"consistency": (0.1, 10.0)},
    "rfm": {  # one rotation layer (the default; a second doubles the cost of an epoch)
        "dim": (8, 16),
        "hidden": (8, 16, 32),
        "heads": (1, 2),
        "mlp_hidden": (16, 64),
        "dropout": (0.0, 0.2, 0.4),
    },
}
SEARCH_SPACES = {model: {**TOOLS, **own} for model, own in MODEL_SPACES.items()}
# A paper's own protocol, run beside ours so a verdict can be read under both (``--protocol``):
# [DPLR] §5 tunes only the learning rate with Optuna, at 8-dimensional embeddings with features
# seen fewer than 10 times in train as rare (``--dim 8 --min-count 10``); the rest stays at
# TrainConfig's defaults (one L2, no grouped L2, no averaging). Its presets go to presets/dplr-paper/.
PROTOCOL_SPACES = {"dplr-paper": {"lr": TOOLS["lr"]}}
PROTOCOLS = ("ours", *PROTOCOL_SPACES)
TRAIN_PARAMS = ("lr", "weight_decay", "average_from", "field_decay", "linear_decay")


def search_space(model: str, fixed: dict, fields=None, protocol: str = "ours") -> dict:
    """The model's space under ``protocol`` without the hyperparameters ``fixed`` holds. With
    ``fields`` (the data's field names), a dict of per-field ranges (``field_decay``) keeps the
    fields the data has."""
    if model not in SEARCH_SPACES:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(SEARCH_SPACES)}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    full = SEARCH_SPACES[model] if protocol == "ours" else PROTOCOL_SPACES[protocol]
    space = {k: v for k, v in full.items() if k not in fixed}
    for name, rng in list(space.items()):
        if isinstance(rng, dict) and fields is not None:
            space[name] = {f: r for f, r in rng.items() if f in fields}
            if not space[name]:
                del space[name]
    return space


def draw(trial, name: str, rng):
    """Log-uniform for a (low, high) float range, categorical for a tuple of choices."""
    if len(rng) == 2 and isinstance(rng[0], float):
        return trial.suggest_float(name, *rng, log=True)
    return trial.suggest_categorical(name, rng)


def suggest(trial, space: dict) -> dict:
    """One point of ``space``; a dict of ranges gives a dict, its entries drawn as ``<name>.<key>``."""
    return {
        name: {key: draw(trial, f"{name}.{key}", r) for key, r in rng.items()}
        if isinstance(rng, dict)
        else draw(trial, name, rng)
        for name, rng in space.items()
    }


def nested(params: dict) -> dict:
    """Optuna's flat parameters in ``suggest``'s form: ``field_decay.user_id`` back into ``field_decay``."""
    out = {}
    for name, value in params.items():
        head, dot, key = name.partition(".")
        if dot:
            out.setdefault(head, {})[key] = value
        else:
            out[name] = value
    return out


def split_params(model: str, params: dict, fixed: dict) -> tuple[dict, dict]:
    """(TrainConfig overrides, model hyperparameters) of a trial's point plus the fixed sizes."""
    train = {k: v for k, v in params.items() if k in TRAIN_PARAMS}
    hp = {**fixed, **{k: v for k, v in params.items() if k not in TRAIN_PARAMS}}
    unknown = set(hp) - set(hyperparameters(model))
    if unknown:
        raise ValueError(f"model {model!r} has no hyperparameter {sorted(unknown)}")
    return train, hp


def build(model: str, data, seed: int, hp: dict):
    """The seeded model; RaFM gets its eq. 17 ranks from the train counts."""
    torch.manual_seed(seed)
    if "counts" in hyperparameters(model):
        hp = {**hp, "counts": data.train.feature_counts().tolist()}
    return build_model(model, data.schema, **hp)


def study_path(dataset: str, name: str, root=None) -> Path:
    return Path(root or runs_root()) / ".studies" / dataset / f"{name}.sqlite3"


def open_study(path: Path, name: str, seed: int, settings: dict):
    """Create or resume the study stored at ``path``; a corrupt file or other settings: ValueError."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:  # a new study
        study = None
    except Exception as err:  # sqlalchemy/optuna raise many kinds for a damaged file
        raise ValueError(
            f"study database {path} is corrupt or unreadable ({type(err).__name__}): delete it to start again"
        ) from None
    if study is not None and study.user_attrs.get("settings") != settings:
        raise ValueError(
            f"study {name} in {path} was run with other settings {study.user_attrs.get('settings')}: "
            "rerun with those, or delete the file to start again"
        )
    done = 0 if study is None else len(study.trials)
    sampler = optuna.samplers.TPESampler(seed=seed + done)
    pruner = optuna.pruners.MedianPruner(n_startup_trials=8, n_warmup_steps=5)  # slow starters get 5 epochs
    study = optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, pruner=pruner, direction="minimize", load_if_exists=True
    )
    study.set_user_attr("settings", settings)
    return study


def finished(study) -> list:
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return [t for t in study.trials if t.state in states]


def tune(model, data, trials: int, base: TrainConfig, fixed: dict, study, timeout=None, progress=True, protocol="ours"):
    """Run the study up to ``trials`` finished trials; returns (best params, best valid metric).

    ``data``: the split, or {feature set: split} to draw the feature set per trial (the best
    params then name it as ``features``); per-field ranges keep the fields every set has."""
    import optuna

    sets = data if isinstance(data, dict) else {None: data}
    fields = set.intersection(*(set(d.schema.names) for d in sets.values()))
    space, key = search_space(model, fixed, fields, protocol), MONITOR[base.task]
    if isinstance(data, dict):
        space["features"] = tuple(sets)

    def objective(trial):
        params = suggest(trial, space)
        data = sets[params.pop("features", None)]
        train, hp = split_params(model, params, fixed)
        config = TrainConfig(**{**asdict(base), **train})

        def report(record):
            trial.report(record[f"valid_{key}"], record["epoch"])
            if trial.should_prune():
                raise optuna.TrialPruned()

        run = fit(build(model, data, base.seed, hp), data.train, data.valid, config, report)
        return run.metrics["valid"][key]

    missing = trials - len(finished(study))
    if missing > 0:
        study.optimize(
            objective, n_trials=missing, timeout=timeout, catch=(RuntimeError, ValueError), show_progress_bar=progress
        )
    # the best of the first ``trials`` finished trials: a study run longer before gives no model more tuning
    first = finished(study)[:trials]
    complete = [t for t in first if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(f"study {study.study_name}: every trial failed (diverged?); no preset written")
    best = min(complete, key=lambda t: t.value)
    return nested(best.params), best.value


def make_preset(
    model, dataset, rank, base: TrainConfig, fixed, params, value, study, min_count, command, trials
) -> dict:
    train, hp = split_params(model, params, fixed)
    config = {**asdict(base), **train}
    preset = {
        "model": model,
        "dataset": dataset,
        "task": base.task,
        "rank": rank,
        "hp": hp,
        "train": {k: config[k] for k in presets.TRAIN_KEYS + presets.OPTIONAL_TRAIN_KEYS},
        "min_count": min_count,
        "tuning": {
            "study": study.study_name,
            "finished_trials": min(trials, len(finished(study))),
            "seed": base.seed,
            f"best_valid_{MONITOR[base.task]}": round(value, 5),
            "command": command,
            "space": study.user_attrs.get("settings", {}).get("space"),
        },
    }
    preset["tuning"]["recipe"] = presets.recipe(preset)
    return preset


def recorded_better(path: Path, key: str, value: float, space: dict) -> float | None:
    """The validation score ``key`` recorded in the preset at ``path`` when it is better (lower)
    than ``value`` and was found in the same search ``space``, else None (no file, no score, a
    worse one, or one from another space — a preset tuned with other tools is no reference): a
    short study never replaces a better preset of the same space."""
    try:
        tuning = json.loads(path.read_text())["tuning"]
        recorded = tuning[key]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same_space = tuning.get("space") == space
    return recorded if same_space and isinstance(recorded, (int, float)) and recorded < value else None


def add_arguments(p) -> None:
    from ..models import MODELS

    p.add_argument("--model", required=True, choices=list(MODELS))
    add_data_arguments(p)
    add_features_argument(p)
    p.add_argument(
        "--draw-features",
        nargs="+",
        default=None,
        metavar="SET",
        help="draw the feature set per trial among these (e.g. user_id,movie_id all,rated,raters) instead of --features",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--rank", type=positive_int, default=None, help="fix the size: FM/FwFM/RFM embedding size k, DPLR's ρ"
    )
    size.add_argument("--ranks", type=int_list, default=None, help="RaFM: fix the rank set D_1 < … < D_m, e.g. 8,32")
    p.add_argument("--dim", type=positive_int, default=None, help="fix DPLR's embedding size k (the DPLR paper: 8)")
    p.add_argument(
        "--thresholds",
        type=int_list,
        default=None,
        help="RaFM with --ranks: count cut-points t_1 < … instead of eq. 17's (preset rafm-<ranks>-t<cuts>)",
    )
    p.add_argument("--trials", type=positive_int, required=True, help="finished trials in all (a rerun resumes)")
    p.add_argument("--timeout", type=positive_int, default=None, help="stop starting trials after this many seconds")
    p.add_argument("--min-count", type=positive_int, default=1, help="features seen fewer times in train: rare bucket")
    add_train_arguments(p, skip=TRAIN_PARAMS)
    p.add_argument("--runs-dir", default=None, help="run store holding the studies (default: $FMLIB_RUNS or ./runs)")
    p.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="ours",
        help="ours: every model draws the same training tools; dplr-paper: only lr, as [DPLR] §5 (presets/dplr-paper/)",
    )
    p.add_argument(
        "--presets-dir",
        default=None,
        help="where presets go (default: $FMLIB_PRESETS or ./presets; a paper's protocol: its subfolder there)",
    )


def fixed_sizes(args) -> tuple[dict, object]:
    """(hyperparameters fixed by --rank/--ranks/--dim, the preset's rank label)."""
    key = presets.RANK_HP.get(args.model)
    rank = args.ranks if args.ranks is not None else args.rank
    if rank is not None and (key is None or (key == "ranks") != (args.ranks is not None)):
        flag = "--ranks" if args.ranks is not None else "--rank"
        raise ValueError(f"{flag} does not apply to model {args.model!r}")
    fixed = {} if rank is None else {key: list(rank) if key == "ranks" else rank}
    label = None if rank is None else presets.rank_label(rank)
    if args.thresholds is not None:
        if args.ranks is None:
            raise ValueError("--thresholds applies to rafm with --ranks only")
        fixed["thresholds"] = list(check_thresholds(args.thresholds, args.ranks))
        label = presets.thresholds_label(args.ranks, args.thresholds)
    if args.dim is not None:
        if args.model != "dplr":
            raise ValueError("--dim applies to dplr only (for fm, fwfm and rfm the size is --rank)")
        fixed["dim"] = args.dim
    return fixed, label


def tune_command(args) -> str:
    """The command line that makes this preset (defaults included, so it stays exact)."""
    words = ["python", "-m", "fmlib", "tune", "--model", args.model, "--dataset", args.dataset]
    for flag in (
        "rank",
        "ranks",
        "thresholds",
        "dim",
        "trials",
        "min_count",
        "seed",
        "epochs",
        "patience",
        "batch_size",
        "task",
        "features",
    ):
        value = getattr(args, flag)
        if value is not None:
            words += ["--" + flag.replace("_", "-"), presets.rank_label(value)]
    if args.draw_features:
        words += ["--draw-features", *args.draw_features]
    if args.protocol != "ours":
        words += ["--protocol", args.protocol]
    return shlex.join(words)


def run(args) -> int:
    from ..arguments import train_config
    from ..data import movielens, split

    fixed, rank = fixed_sizes(args)
    drawn = args.draw_features
    if drawn and (args.features is not None or args.protocol != "ours" or len(set(drawn)) < len(drawn)):
        raise ValueError("--draw-features takes distinct sets, without --features, under --protocol ours")
    base = train_config(args, lr=1e-3)  # lr is drawn per trial; this value is never used
    protocol = "" if args.protocol == "ours" else f"-{args.protocol}"
    chosen = [args.features or "all"] if not drawn else drawn
    features = "" if chosen == ["all"] else "-" + ("draw-" if drawn else "") + "_".join(chosen).replace(",", "+")
    name = presets.preset_name(args.model, rank, base.task) + f"{protocol}{features}-seed{base.seed}"
    path = study_path(args.dataset, name, args.runs_dir)
    space = search_space(args.model, fixed, protocol=args.protocol)
    settings = {
        "fixed": fixed,
        "min_count": args.min_count,
        "features": drawn or args.features or "all",
        "space": json.loads(json.dumps({**space, "features": drawn} if drawn else space)),  # as stored
        **{k: v for k, v in asdict(base).items() if k not in TRAIN_PARAMS},
    }
    data = split(
        movielens.load(args.dataset, data_dir=args.data_dir, log=lambda m: print(m, file=sys.stderr)),
        seed=base.seed,
        min_count=args.min_count,
    )
    sets = {text: with_features(data, text) for text in chosen}  # a bad set is refused before the study opens
    study = open_study(path, name, base.seed, settings)
    params, value = tune(
        args.model,
        sets if drawn else sets[chosen[0]],
        args.trials,
        base,
        fixed,
        study,
        args.timeout,
        protocol=args.protocol,
    )
    features = params.pop("features", chosen[0])
    data = sets[features]
    command = tune_command(args)
    preset = make_preset(
        args.model, args.dataset, rank, base, fixed, params, value, study, args.min_count, command, args.trials
    )
    if features != "all":
        preset["features"] = features
    root = presets.features_root(features, presets.protocol_root(args.protocol, args.presets_dir))
    target = presets.preset_path(args.dataset, args.model, rank, base.task, root)
    key = f"best_valid_{MONITOR[base.task]}"
    better = recorded_better(target, key, value, settings["space"])
    if better is None:
        presets.save(preset, target)
    else:
        print(
            f"kept {target}: its recorded {key} {better} is better than this study's {value:.5f} "
            "(delete the file to replace it)",
            file=sys.stderr,
        )
    # the final model: the only time the test split is read
    model = build(args.model, data, base.seed, presets.hyperparameters(preset))
    final = fit(model, data.train, data.valid, presets.train_config(preset, seed=base.seed))
    print(
        json.dumps(
            {
                "preset": str(target),
                "written": better is None,
                "study": str(path),
                "finished_trials": preset["tuning"]["finished_trials"],
                "hp": preset["hp"],
                "train": preset["train"],
                "valid": final.metrics["valid"],
                "test": evaluate(final.model, data.test, base.task),
            }
        )
    )
    return 0
