"""``python -m fmlib tune``: tune a model on the validation split with Optuna, write its preset.

* Budget: up to ``--epochs`` (default 200) epochs a trial, stopped early on the validation metric
  (``--patience``): early stopping decides, the cap does not bind. Each trial records the epochs it
  used; the preset records its best trial's.
* Studies: ``--studies S`` (default 2) studies of the same model, the same space and the same number
  of trials, differing only in the sampler's seed. The preset is the best of them all; it records
  every study's best, and the tuning has *converged* when the best is matched, a second study's best within
  ``TOLERANCE`` of it (0.002 in the validation metric; ``runner_up_gap``: with two studies, they agree), no range binds (``at_edges``) and no study's best trial stopped at the epoch cap
  (``at_cap``). A study that has not converged says so; run again with more ``--trials``.
* Sampler: TPE, seeded by the study's sampler seed, the worker and the number of trials already
  stored (a resumed study does not replay its first random trials).
* Seeds from the models it contains: a study starts (Optuna's ``enqueue_trial``) from the best
  recipe of every tuned model that the tuned model contains (``CONTAINS``): an FwFM from the FM's
  recipe with R held at the FM's 11ᵀ − I, a DPLR of rank ρ from the FM's (held the same way) and from DPLR ρ − 1's, an
  FM of size k from the FMs of smaller sizes; and from the recipe of the preset it would replace (a model
  contains itself, ``previous_preset``), so a tuning in a new space starts where the old one ended. Every
  model is seeded the same way, so the terms stay equal, and no model need validate worse than a model it
  contains, or than the preset it replaces. A study added to a tuning later (``--studies`` raised) starts from
  the points its first study started from (``seeds_of``), not from the preset that tuning has written since.
* Pruner: the median pruner with epochs as steps, fed the validation metric after every epoch
  through ``fit``'s callback; a trial below the median of earlier trials at the same epoch stops early.
  ``--no-prune`` trains every trial to its early stop instead (``pruner_of``): the pruner stops a slow
  learner (a low learning rate) as readily as a hopeless trial.
* Seeds: every trial trains at one seed (``--seed``), so a study's best is partly that seed's luck.
  ``--trial-seeds N`` scores each trial that the pruner lets finish by its mean over N seeds instead
  (``--seed`` and the N − 1 after it; the pruner watches the first): slower, and less luck. The
  chosen recipe is trained again at ``--seeds N`` seeds (default 10: 0, …, N − 1, same split; spread over
  the ``--workers``), and the preset records those validation scores (``by_seed``). A model validates worse
  than a model it contains only when, over those seeds, the paired 95 % interval of the difference lies
  wholly above 0. A contained preset tuned before presets recorded those scores is trained at the same
  seeds first (``scored_alike``), so it is compared rather than left out.
* Objective: the best validation metric of the run (RMSE for ratings, logloss for clicks).
  The test split is never read while tuning; it is touched once, by the final model.
* Storage and workers: ``--workers N`` processes share each study through Optuna's storage, so
  tuning uses every core. By default a journal file per preset under the run store,
  ``<runs>/.studies/<dataset>/<name>.journal``; ``--storage URL`` (an RDB URL such as
  ``postgresql://user:pass@host/db``) shares the studies between machines: start the same command,
  with the same URL, on each of them. ``--trials N`` asks for N finished trials per study in all:
  run again after an interruption and the studies resume where they stopped. Each study counts its
  first N finished trials only, so every model gets the same tuning effort even when one study was
  run longer before. A trial left "running" by a worker of this machine that was killed inside it is
  marked failed when the study resumes, a seeded one queued again (``fail_orphans``).
* The search space of every model is in ``SEARCH_SPACES``: the same training ``TOOLS`` for every
  model (lr, L2, an L2 per field drawn on its own, weight averaging from an epoch drawn as an integer)
  plus the model's own sizes. A best recipe with a value at the end of its range has not converged
  either (``at_edges``): a wider range might find better, unless that value moved past the end, the rest of
  the recipe held, validates worse over the recipe's seeds (``edge_probes``, ``binding``). A size fixed by
  ``--rank`` (or ``--dim``) is taken out of the space. The space and the budget are part of the
  study's settings, so a study made with other ones is not resumed.
* The input can be drawn too: ``--draw-features SET [SET ...]`` adds the feature set
  (``fmlib.data.features``) to the space, one of the given sets per trial, for any model alike (a
  feature set one model may draw and another may not would decide a comparison, not the models).
  The preset records the set its best trial drew and goes where that set's presets live.
The best configuration is written to ``presets/<dataset>/<model>[-<rank>].json`` only after the
studies have at least one finished trial; a failed or broken study leaves the old preset alone, and
so does one whose best validation score is worse than the one the old preset records under the
same settings.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import shlex
import socket
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from .. import presets
from ..arguments import (
    add_data_arguments,
    add_features_argument,
    add_train_arguments,
    at_least_two,
    int_list,
    positive_int,
)
from ..data.features import with_features
from ..models import build_for, hyperparameters
from ..models.rafm_ranks import check_thresholds
from ..runs import default_root as runs_root
from ..train import MONITOR, TrainConfig, evaluate, fit
from .verdict import paired_interval

# name -> (low, high) for a log-uniform float, range(low, high + 1) for an integer, or a tuple of
# choices. TOOLS are the training tools every model gets, drawn from the same ranges for every model
# (a tool one model can take and the other cannot would decide a comparison, not the models): lr;
# weight_decay, Adam's L2 on every table row and weight matrix without an L2 of its own; field_l2,
# the L2 of one field's rows (a dict of ranges: field name -> range), drawn on its own rather than
# as a multiple of weight_decay, so a field can take a weak L2 while the others take a strong one
# (``train_values``); linear_decay, the multiple of a row's L2 on its linear weight w; average_from,
# the epoch from which the end-of-epoch weights are averaged (fmlib.train). Every L2 range starts at
# 1e-7, an L2 too weak to matter, so its lower end is "no L2" and never binds (``at_edges``). The
# ranges were widened after the first tunings, whose bests sat at their ends (README, Scorecard), and
# averaging is always on: no tuned preset chose it off, and a study that drew "off" early kept
# drawing it (a categorical choice locks in) at a validation RMSE 0.024 worse.
TOOLS = {
    "lr": (1e-3, 1e-1),
    "weight_decay": (1e-7, 1e-1),
    "field_l2": {"user_id": (1e-7, 1e-1), "movie_id": (1e-7, 1e-1)},
    "linear_decay": (1e-4, 10.0),
    "average_from": range(1, 11),
}
# r_l2: R's L2 toward the FM's (DPLR eq. 7), which an FwFM takes and a DPLR takes too (fmlib.models.dplr), drawn
# from one range for both. It starts at 1e-7, no pull, as every L2 does: its first lower end, 1e-4, still pulled a
# DPLR's R hard (README, "DPLR's pull toward the FM")
R_L2 = (1e-7, 1.0)
MODEL_SPACES = {
    "fm": {"dim": (8, 16, 32, 64)},
    "fwfm": {"dim": (8, 16, 32, 64), "r_l2": R_L2},
    "dplr": {"dim": (8, 16, 32, 64), "r_l2": R_L2},
    # c of Algorithm 1's consistency terms: its first range, 0.1-10, bound RaFM(8, 32) at both ends (c 8-10 in one
    # study's best trials, 0.13-0.18 in the other's; README, "The RaFMs and RFM")
    "rafm": {"consistency": (0.01, 100.0)},
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
PROTOCOL_SPACES = {"dplr-paper": {"lr": (1e-3, 5e-2)}}
PROTOCOLS = ("ours", *PROTOCOL_SPACES)
TRAIN_PARAMS = ("lr", "weight_decay", "average_from", "field_l2", "linear_decay")


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


def stored(space: dict) -> dict:
    """``space`` as the study's settings and the preset record it (JSON): an integer range as {"from", "to"}."""
    return json.loads(json.dumps(space, default=lambda r: {"from": r.start, "to": r.stop - 1}))


def draw(trial, name: str, rng):
    """Log-uniform for a (low, high) float range, uniform for an integer range, categorical for a tuple of choices."""
    if isinstance(rng, range):
        return trial.suggest_int(name, rng.start, rng.stop - 1)
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


def train_values(params: dict) -> dict:
    """A point's training tools as TrainConfig takes them: each field's L2 (``field_l2``) as the multiple of
    ``weight_decay`` that ``fmlib.train.row_decay`` applies (``field_decay``)."""
    train = {k: v for k, v in params.items() if k in TRAIN_PARAMS}
    if "field_l2" in train:
        train["field_decay"] = {f: l2 / train["weight_decay"] for f, l2 in train.pop("field_l2").items()}
    return train


def point_values(train: dict) -> dict:
    """``train_values`` undone: a preset's training tools as the space draws them (``field_l2``)."""
    point = {k: v for k, v in train.items() if k != "field_decay"}
    if "field_decay" in train:
        point["field_l2"] = {f: m * train["weight_decay"] for f, m in train["field_decay"].items()}
    return point


def split_params(model: str, params: dict, fixed: dict) -> tuple[dict, dict]:
    """(TrainConfig overrides, model hyperparameters) of a trial's point plus the fixed sizes."""
    train = train_values(params)
    hp = {**fixed, **{k: v for k, v in params.items() if k not in TRAIN_PARAMS}}
    unknown = set(hp) - set(hyperparameters(model))
    if unknown:
        raise ValueError(f"model {model!r} has no hyperparameter {sorted(unknown)}")
    return train, hp


def build(model: str, data, seed: int, hp: dict):
    """The seeded model, prepared on the training split (``Model.prepare``: RaFM's eq. 17 ranks)."""
    torch.manual_seed(seed)
    return build_for(model, data.train, **hp)


TOLERANCE = 0.002  # studies whose bests differ by more (in the validation metric) have not converged
SEEDS = 10  # seeds the chosen recipe is trained at: the spread a model is compared with the models it contains by
EPOCHS = 200  # a trial's epoch cap; early stopping on validation decides where it ends
# container -> {contained model: the values of the container's own hyperparameters at which it is,
# or comes closest to, that model}. An FM of size k is an FM of size k' > k with zero extra factors.
# An FwFM with R = 11ᵀ − I is the FM (DPLR eq. 7), held there by the strongest L2 of R toward it; a
# DPLR's R is one an FwFM can learn, at the DPLR's own pull toward the FM. A DPLR of rank ρ contains the
# FM (U's first row 1ᵀ, e = (1, 0, …)), held there the same way, and every lower rank (zero rows of U).
CONTAINS = {
    "fm": {"fm": {}},
    "fwfm": {"fm": {"r_l2": R_L2[1]}, "dplr": {}},
    "dplr": {"fm": {"r_l2": R_L2[1]}, "dplr": {}},
}
# model -> the values of hyperparameters its presets tuned before the space drew them stand for: a DPLR
# preset without r_l2 trained with no pull toward the FM, of which the space's weakest is the nearest
ABSENT = {"dplr": {"r_l2": R_L2[0]}}


def contained_presets(model: str, fixed: dict, dataset: str, task: str, root) -> dict:
    """{name: preset} of the tuned models that ``model`` at the sizes ``fixed`` contains (``CONTAINS``):
    no larger embedding size k, for DPLR a lower rank ρ; never the preset being tuned itself."""
    found = {}
    for inner in CONTAINS.get(model, {}):
        for name in presets.available(dataset, inner, task, root):
            try:
                hp = presets.load_named(dataset, name, inner, task, root)["hp"]
            except ValueError:  # a broken preset seeds nothing
                continue
            same = inner == model and all(hp.get(k) == v for k, v in fixed.items())
            smaller = hp.get("dim", 0) <= fixed.get("dim", hp.get("dim", 0))
            lower = inner != "dplr" or hp["rank"] < fixed.get("rank", hp["rank"] + 1)
            if smaller and lower and not same:
                found[name] = presets.load_named(dataset, name, inner, task, root)
    return found


def contained_by(preset: dict, root) -> dict:
    """``contained_presets`` of a written preset: its model at its own sizes (``dim``, ``rank``), in ``root``."""
    fixed = {k: v for k, v in preset["hp"].items() if k in ("dim", "rank")}
    return contained_presets(preset["model"], fixed, preset["dataset"], preset["task"], root)


PREVIOUS = " (the preset it replaces)"  # how the preset a tuning would replace is named among the contained ones


def previous_preset(dataset: str, model: str, rank, task: str, root) -> dict:
    """{name: preset} of the readable preset a tuning of ``model`` (at ``rank``) in ``root`` would replace, named
    with ``PREVIOUS``. A model contains itself: that preset's recipe, found by an earlier tuning (perhaps in another
    space), is a point of the model's space where the space can draw its values, so a study starts from it too
    (``seed_points``), and a new recipe that validates worse than it over the same seeds has not converged
    (``better_inside``): a tuning never silently replaces a preset with a worse one."""
    try:
        return {presets.preset_name(model, rank, task) + PREVIOUS: presets.load(dataset, model, rank, task, root)}
    except ValueError:  # none yet, or a broken one
        return {}


def seed_points(model: str, contained: dict, space: dict) -> dict:
    """{name: Optuna parameters} that start a study at each contained model's recipe: its training
    values and sizes where the space draws them, plus ``CONTAINS``' values of the container's own
    hyperparameters (``ABSENT``'s where an older preset has none). A value the space cannot draw (outside a range,
    not a choice) is left to the sampler."""
    points = {}
    for name, preset in contained.items():
        own = CONTAINS.get(model, {}).get(preset["model"], {}) if preset["model"] != model else {}
        values = {**ABSENT.get(preset["model"], {}), **point_values(preset["train"]), **preset["hp"], **own}
        flat = flat_space(values)
        points[name] = {
            key: flat[key] for key, rng in flat_space(space).items() if key in flat and drawable(flat[key], rng)
        }
    return points


def flat_space(space: dict) -> dict:
    """A space (or a point) as Optuna names it: a dict entry as ``<name>.<key>`` entries (``suggest``); an integer
    range as stored (``stored``: {"from", "to"}) stays one entry."""
    flat = {}
    for name, rng in space.items():
        if isinstance(rng, dict) and "from" not in rng:
            flat.update({f"{name}.{key}": r for key, r in rng.items()})
        else:
            flat[name] = rng
    return flat


def drawable(value, rng) -> bool:
    """Whether ``draw`` can give ``value``: inside a (low, high) float range, in an integer range, or one of the
    choices."""
    if isinstance(rng, range):
        return isinstance(value, int) and value in rng
    if len(rng) == 2 and isinstance(rng[0], float):
        return isinstance(value, (int, float)) and rng[0] <= value <= rng[1]
    return value in rng


def journal_path(dataset: str, name: str, root=None) -> Path:
    return Path(root or runs_root()) / ".studies" / dataset / f"{name}.journal"


def storage_of(spec: str):
    """Optuna's storage for ``spec``: an RDB URL (``postgresql://…``, ``sqlite:///…``) shared by
    several machines, else the path of a journal file shared by the processes of one machine."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if "://" in spec:
        from sqlalchemy.engine import make_url

        try:
            shown = make_url(spec).render_as_string(hide_password=True)
        except Exception:
            shown = "the given URL"
        try:
            return optuna.storages.RDBStorage(spec)
        except Exception as err:  # a driver missing, a host that does not answer, a refused login
            raise ValueError(f"cannot open the study storage {shown}: {type(err).__name__}") from None
    Path(spec).parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(spec))


def open_study(spec: str, name: str, sampler_seed: int, settings: dict, worker: int = 0):
    """Create or resume the study ``name`` in the storage ``spec`` (``storage_of``); a corrupt
    storage or a study of other settings: ValueError. The TPE sampler's seed combines the study's
    ``sampler_seed``, the ``worker`` and the trials already stored, so neither a second worker nor a
    resumed study replays the same random trials. The pruner (``pruner_of``) follows ``settings``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_of(spec)

    def corrupt(err):  # sqlalchemy and optuna raise many kinds for a damaged file
        return ValueError(
            f"study storage {spec} is corrupt or unreadable ({type(err).__name__}): delete it to start again"
        )

    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:  # a new study
        study = None
    except Exception as err:
        raise corrupt(err) from None
    if study is not None and study.user_attrs.get("settings") != settings:
        raise ValueError(
            f"study {name} in {spec} was run with other settings {study.user_attrs.get('settings')}: "
            "rerun with those, or delete it to start again"
        )
    done = 0 if study is None else len(study.trials)
    sampler = optuna.samplers.TPESampler(seed=10_000 * sampler_seed + 1_000 * worker + done)
    pruner = pruner_of(settings)
    try:
        created = optuna.create_study(
            study_name=name, storage=storage, sampler=sampler, pruner=pruner, direction="minimize", load_if_exists=True
        )
    except Exception as err:
        raise corrupt(err) from None
    if study is None:
        created.set_user_attr("settings", settings)
    return created


def pruner_of(settings: dict):
    """The median pruner (epochs as steps: a trial that trails the earlier ones' median at the same epoch stops
    there, after 8 unpruned trials and 5 epochs each), or none where ``settings`` say ``"prune": False``
    (``--no-prune``): it compares trials at the same epoch, so it stops a recipe that learns slowly and would
    end best (a low learning rate) as readily as a hopeless one."""
    import optuna

    if settings.get("prune", True):
        return optuna.pruners.MedianPruner(n_startup_trials=8, n_warmup_steps=5)
    return optuna.pruners.NopPruner()


def finished(study) -> list:
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return [t for t in study.trials if t.state in states]


def worker_tag() -> str:
    """This process as a trial records it (``host:pid``), so that a later tuning can tell a trial whose worker
    died (``fail_orphans``) from one that another worker is still running."""
    return f"{socket.gethostname()}:{os.getpid()}"


def alive(pid: int) -> bool:
    """Whether the process ``pid`` of this machine still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def fail_orphans(study) -> list[int]:
    """Mark failed every running trial whose worker (``worker_tag``) was a process of this machine that no longer
    runs — a tuning killed inside a trial leaves it "running" in the storage for ever — and queue a seeded one's
    recipe again, so its study keeps that seed. A trial of a live worker, or of another machine, is left alone.
    Returns the numbers of the trials failed."""
    import optuna

    host, failed = socket.gethostname(), []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        where, _, pid = t.user_attrs.get("worker", "").rpartition(":")
        if where != host or alive(int(pid)):
            continue
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        if "fixed_params" in t.system_attrs:
            study.enqueue_trial(t.system_attrs["fixed_params"], user_attrs={"seed": t.user_attrs.get("seed")})
        failed.append(t.number)
    return failed


def seed_study(study, points: dict) -> None:
    """Enqueue each of ``points`` ({name: parameters}) as the study's first trials (once: a
    resumed study is not seeded again)."""
    if not study.trials:
        for name, params in points.items():
            study.enqueue_trial(params, user_attrs={"seed": name}, skip_if_exists=True)


def seeds_of(study, named: dict) -> dict:
    """The points ``study`` was seeded with ({name: parameters}, in the order it ran them): a study added later to
    a tuning (``--studies`` raised) starts from these, its first study's, rather than from the presets as they are
    by then — among them the recipe the tuning itself chose — so that its studies differ in the sampler's seed
    alone. A seed of a journal made before trials named theirs takes the name of the point of ``named``
    (``seed_points``, from the presets as they are now) with its parameters, else its trial's."""
    names = {json.dumps(params, sort_keys=True): name for name, params in named.items()}
    points = {}
    for t in study.trials:
        params = t.system_attrs.get("fixed_params")
        if params is not None and params not in points.values():
            name = t.user_attrs.get("seed") or names.get(json.dumps(params, sort_keys=True))
            points[name or f"trial {t.number}'s seed"] = params
    return points


def optimize(
    model,
    data,
    trials: int,
    base: TrainConfig,
    fixed: dict,
    study,
    timeout=None,
    progress=True,
    protocol="ours",
    trial_seeds: int = 1,
):
    """Run trials until the study holds ``trials`` finished ones — this process's share when other
    workers run the same study on its storage. A trial's score is its best validation metric, or with
    ``trial_seeds`` > 1 the mean of that at ``base.seed`` and the seeds after it (each recorded in the
    trial's ``seed_scores``); the pruner watches the first seed's curve.

    ``data``: the split, or {feature set: split} to draw the feature set per trial (the best
    params then name it as ``features``); per-field ranges keep the fields every set has."""
    import optuna
    from optuna.study import MaxTrialsCallback

    sets = data if isinstance(data, dict) else {None: data}
    fields = set.intersection(*(set(d.schema.names) for d in sets.values()))
    space, key = search_space(model, fixed, fields, protocol), MONITOR[base.task]
    if isinstance(data, dict):
        space["features"] = tuple(sets)

    def objective(trial):
        trial.set_user_attr("worker", worker_tag())
        params = suggest(trial, space)
        data = sets[params.pop("features", None)]
        train, hp = split_params(model, params, fixed)
        config = TrainConfig(**{**asdict(base), **train})

        def report(record):
            trial.report(record[f"valid_{key}"], record["epoch"])
            if trial.should_prune():
                raise optuna.TrialPruned()

        run = fit(build(model, data, base.seed, hp), data.train, data.valid, config, report, snapshots=False)
        trial.set_user_attr("epochs", len(run.history))
        if trial_seeds == 1:
            return run.metrics["valid"][key]
        others = range(base.seed + 1, base.seed + trial_seeds)
        scores = [run.metrics["valid"][key]] + [valid_score(model, data, hp, config, s) for s in others]
        trial.set_user_attr("seed_scores", scores)
        return sum(scores) / len(scores)

    start, done_before = time.monotonic(), len(finished(study))

    def say(study, trial):
        if progress and trial.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED):
            done = len(finished(study))
            value = trial.value if trial.value is not None else trial.intermediate_values.get(trial.last_step)
            word = "pruned at" if trial.state == optuna.trial.TrialState.PRUNED else "stopped after"
            count = f"{done}/{trials}" if done <= trials else f"{done} (beyond the {trials} that count)"
            left = time_left(time.monotonic() - start, done - done_before, trials - done)
            print(
                f"{study.study_name}: trial {count}, valid {key} {value:.5f}, {word} epoch "
                f"{trial.last_step}; best {study.best_value:.5f}" + (f"; {left}" if left else ""),
                file=sys.stderr,
                flush=True,
            )

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    missing = trials - len(finished(study))
    if missing > 0:
        study.optimize(
            objective,
            n_trials=missing,
            timeout=timeout,
            catch=(RuntimeError, ValueError),
            callbacks=[MaxTrialsCallback(trials, states=states), say],
        )


def time_left(elapsed: float, finished: int, left: int) -> str:
    """How long the ``left`` trials of a study will take at the pace of the ``finished`` ones that this run has seen
    end in ``elapsed`` seconds (every worker's trials: the study's wall-clock pace), in words; "" before the first
    or after the last. Later trials of a TPE study tend to train longer than its first, random ones: a guide."""
    if finished <= 0 or left <= 0:
        return ""
    hours, minutes = divmod(round(elapsed / finished * left / 60), 60)
    words = f"about {hours} h {minutes} min" if hours else f"about {minutes} min" if minutes else "under a minute"
    return f"{words} left at this run's pace"


def best_of(study, trials: int):
    """The best of the study's first ``trials`` finished trials (a study run longer before gives no
    model more tuning): (params, valid metric, epochs it used)."""
    return recipe_of(best_trial(study, trials))


def recipe_of(trial) -> tuple:
    """A finished trial as a recipe: (params, valid metric, epochs it used)."""
    return nested(trial.params), trial.value, trial.user_attrs.get("epochs")


def best_trial(study, trials: int):
    """The best complete trial of the study's first ``trials`` finished ones (``best_of``)."""
    import optuna

    complete = [t for t in finished(study)[:trials] if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(f"study {study.study_name}: every trial failed (diverged?); no preset written")
    return min(complete, key=lambda t: t.value)


def best_drawn(study, trials: int) -> float | None:
    """The best value of the study's first ``trials`` finished trials that its sampler drew (a seeded recipe,
    ``seed_study``, is enqueued with fixed parameters), or None: what the study found on its own. Two studies
    whose best is the same seed agree by construction; how far their own draws trail it says how far each search
    got."""
    import optuna

    drawn = [
        t.value
        for t in finished(study)[:trials]
        if t.state == optuna.trial.TrialState.COMPLETE and "fixed_params" not in t.system_attrs
    ]
    return min(drawn) if drawn else None


def seed_of(best, points: dict) -> str | None:
    """The name of the seed (``seed_study``) that the trial ``best`` (a study's best, ``best_trial``) is, or None
    where its sampler drew that trial: a study whose best is a seed found nothing better than that recipe.
    A seeded trial records its seed's name; one of a journal made before it did is named by the seed point
    (``seed_points``, from the presets as they are now) with its recipe, else as seeded before."""
    if "fixed_params" not in best.system_attrs:
        return None
    if best.user_attrs.get("seed"):
        return best.user_attrs["seed"]
    flat = flat_space(nested(best.params))
    named = (name for name, p in points.items() if p and all(flat.get(k) == v for k, v in p.items()))
    return next(named, "a recipe seeded when the study began")


def tune(model, data, trials: int, base: TrainConfig, fixed: dict, study, **options):
    """Run the study in this process up to ``trials`` finished trials (``options``: ``optimize``'s timeout,
    progress, protocol, trial_seeds); returns (best params, best valid metric)."""
    optimize(model, data, trials, base, fixed, study, **options)
    return best_of(study, trials)[:2]


def make_preset(
    model,
    dataset,
    rank,
    base: TrainConfig,
    fixed,
    params,
    value,
    studies,
    min_count,
    command,
    settings,
    contained=None,
    scores=(),
    probes=None,
) -> dict:
    """The preset of the best ``params`` (validation ``value``) over ``studies``, a list of
    {study, sampler_seed, finished_trials, best_valid_<metric>, epochs, best_is_seed (``seed_of``)}. ``settings``: the studies'
    settings (space, budget, split); ``contained``: {name: preset} of the tuned models the model
    contains and of the preset it replaces (``previous_preset``), whose recipes started the studies; ``scores``: the validation metric of the recipe at
    seeds 0, 1, … (``seed_scores``); ``probes``: the recipe with a value at the end of its range moved past it
    (``edge_probes``). The tuning has ``converged`` when the best is matched by a second study
    within ``TOLERANCE`` (``runner_up_gap``), no contained model validates better over those seeds (``better_inside``) and no value
    of the best recipe lies at the end of its range that binds (``at_edges``, ``binding``)."""
    key = f"best_valid_{MONITOR[base.task]}"
    train, hp = split_params(model, params, fixed)
    config = {**asdict(base), **train}
    bests = [s[key] for s in studies]
    best = min(studies, key=lambda s: s[key])
    metric = f"valid_{MONITOR[base.task]}"
    by_seed = {metric: list(scores)}
    inside = better_inside(contained or {}, key, by_seed, settings)
    edges = binding(at_edges(params, settings["space"]), probes or {}, by_seed[metric], metric)
    capped = at_cap(studies, base.epochs)
    preset = {
        "model": model,
        "dataset": dataset,
        "task": base.task,
        "rank": rank,
        "hp": hp,
        "train": {k: config[k] for k in presets.TRAIN_KEYS + presets.OPTIONAL_TRAIN_KEYS},
        "min_count": min_count,
        "tuning": {
            "study": best["study"],
            "finished_trials": min(s["finished_trials"] for s in studies),
            "seed": base.seed,
            key: round(value, 5),
            "epochs_used": best["epochs"],
            "by_seed": by_seed,
            "studies": studies,
            "converged": converged(bests, TOLERANCE, inside, edges, capped),
            "tolerance": TOLERANCE,
            "seeded_from": list(contained or {}),
            "better_inside": inside,
            "at_edges": edges,
            **({"edge_probes": probes} if probes else {}),
            "at_cap": capped,
            "command": command,
            "space": settings["space"],
            "settings": settings,
        },
    }
    preset["tuning"]["recipe"] = presets.recipe(preset)
    return preset


def converged(bests: list, tolerance: float, inside: dict, edges: list, capped: list) -> bool:
    """The rule: the best of the studies' ``bests`` is matched within ``tolerance`` (``runner_up_gap``), no model the tuned one
    contains validates better, or is left uncompared (``better_inside``), no value of the best recipe lies at the
    end of its range (``at_edges``) and no study's best trial stopped at the epoch cap (``at_cap``)."""
    return runner_up_gap(bests) <= tolerance and not inside and not edges and not capped


def runner_up_gap(bests: list) -> float:
    """How far the runner-up of ``bests`` (one per study, lower is better) trails the best: within ``TOLERANCE``,
    a second study, from the same seeds (``seeds_of``) with another sampler seed, found the best again. With two
    studies that is their spread. A third study whose sampler settled in a worse region does not undo two that
    found the same best — it shows why one study is not enough — and is reported beside them."""
    ordered = sorted(bests)
    return (ordered[1:2] or ordered)[0] - ordered[0]


def at_cap(studies: list, cap: int) -> list[str]:
    """The names of the ``studies`` (``make_preset``'s records) whose best trial trained all ``cap`` epochs: early
    stopping did not end it, the budget did, and a larger one might find a better recipe."""
    return [s["study"] for s in studies if s["epochs"] >= cap]


EDGE = 0.05  # a value within this share of its range's width (log scale for a float) from an end lies at that end
NO_L2 = ("weight_decay", "field_l2", "linear_decay", "r_l2")  # ranges whose lower end is an L2 too weak to matter
# ranges whose upper end is a model the tuned one contains: λ_R = 1 holds R at the FM's 11ᵀ − I (``CONTAINS``), a
# stronger pull holds it closer to the same FM, whose own tuning covers beyond the end (README, "DPLR's pull")
HELD = ("r_l2",)


def at_edges(point: dict, space: dict) -> list[str]:
    """The names (Optuna's: ``field_l2.user_id``) of the values of ``point`` (a recipe as the space draws it,
    ``point_values``) that lie at an end of their range in ``space`` (as stored, ``stored``), within ``EDGE`` of its
    width: that range may bind, and a wider one might find a better recipe. Not counted: the lower end of an L2
    (``NO_L2``: "no L2"; a weaker one changes nothing), the upper end of a pull toward a contained model (``HELD``:
    that model, which the containment check compares), the lower end of an integer range (averaging from the first
    epoch) and a choice among values."""
    values, found = flat_space(point), []
    for name, rng in flat_space(space).items():
        if name not in values:
            continue
        value = values[name]
        if isinstance(rng, dict):
            low, high, at, lower_counts, upper_counts = rng["from"], rng["to"], value, False, True
        elif len(rng) == 2 and isinstance(rng[0], float):
            low, high, at = (math.log(v) for v in (*rng, value))
            lower_counts, upper_counts = name.partition(".")[0] not in NO_L2, name not in HELD
        else:
            continue
        share = (at - low) / (high - low)
        if share >= 1 - EDGE and upper_counts or share <= EDGE and lower_counts:
            found.append(name)
    return found


BEYOND = 2  # a probe moves a value at an end of its range past that end: a float this factor, an integer this many


def past_the_end(point: dict, name: str, space: dict) -> dict:
    """``point`` (``suggest``'s form) with its value ``name`` (Optuna's name, as ``at_edges`` gives it) moved past
    the end of its range in ``space`` (as stored) that it lies at: a float ``BEYOND`` times further on a log scale,
    an integer ``BEYOND`` steps. A value the space cannot draw, to ask whether the end binds (``edge_probes``)."""
    rng = flat_space(space)[name]
    head, _, key = name.partition(".")
    value = point[head][key] if key else point[head]
    if isinstance(rng, dict):
        upper = value - rng["from"] > rng["to"] - value
        moved = value + BEYOND if upper else value - BEYOND
    else:
        upper = math.log(value / rng[0]) > math.log(rng[1] / value)
        moved = value * BEYOND if upper else value / BEYOND
    return {**point, head: {**point[head], key: moved}} if key else {**point, head: moved}


def edge_probes(model: str, params: dict, fixed: dict, config: TrainConfig, space: dict, score) -> dict:
    """{name: {"value": v, "valid_<metric>": scores}} for every value of the best recipe (``params``, trained with
    ``config``) that lies at the end of its range (``at_edges``): the recipe with that value alone moved past the end
    (``past_the_end``), scored by ``score(model, hp, config)`` at the seeds the recipe was (``recipe_scores``).
    ``binding`` reads them."""
    probes = {}
    for name in at_edges(params, space):
        probe = past_the_end(params, name, space)
        train, hp = split_params(model, probe, fixed)
        print(f"training the best recipe with {name} past the end of its range ...", file=sys.stderr)
        value = flat_space(probe)[name]
        probes[name] = {"value": value, f"valid_{MONITOR[config.task]}": score(model, hp, replace(config, **train))}
    return probes


def known_probes(preset: dict, settings: dict) -> dict | None:
    """The ``edge_probes`` a ``preset`` records when it was tuned in the space of ``settings``: for its recipe (the
    chosen one, ``known_scores``) they are the probes that tuning would train again. None when it records none."""
    tuning = preset["tuning"]
    return tuning.get("edge_probes") if tuning.get("space") == settings["space"] else None


def probe_gap(probe: dict, scores: list, metric: str) -> float | None:
    """How much worse (> 0) a ``probe`` (``edge_probes``) validates than its recipe: the mean of its ``metric`` minus
    that of the recipe's ``scores``, over the same seeds; None where it was not scored at as many."""
    past = probe.get(metric, [])
    if not scores or len(past) != len(scores):
        return None
    return (sum(past) - sum(scores)) / len(scores)


def binding(edges: list, probes: dict, scores: list, metric: str) -> list[str]:
    """The ``edges`` (``at_edges``) that bind: a wider range might find a better recipe. An end binds unless its probe
    (``edge_probes``: that value moved past the end, the rest of the recipe held) validates worse on the mean over
    the same seeds as the recipe (``probe_gap`` > 0; ``scores``: the recipe's ``metric`` at those seeds): then the
    best lies inside along that value. A probe checks one value at a time, near the recipe, not what a search of a
    wider range would find."""
    bound = []
    for name in edges:
        gap = probe_gap(probes.get(name, {}), scores, metric)
        if gap is None or gap <= 0:
            bound.append(name)
    return bound


def valid_score(model: str, data, hp: dict, config: TrainConfig, seed: int) -> float:
    """The validation metric of the recipe (``hp``, ``config``) trained at ``seed`` (the model's initialisation and
    the order of its minibatches) on ``data``, the split it was tuned on."""
    run = fit(build(model, data, seed, hp), data.train, data.valid, replace(config, seed=seed), snapshots=False)
    return run.metrics["valid"][MONITOR[config.task]]


def seed_scores(model: str, data, hp: dict, config: TrainConfig, seeds: int = SEEDS) -> list[float]:
    """``valid_score`` of the recipe at seeds 0, …, ``seeds`` − 1, rounded to 5 decimals."""
    return [round(valid_score(model, data, hp, config, s), 5) for s in range(seeds)]


def better_inside(contained: dict, key: str, by_seed: dict, settings: dict) -> dict:
    """{name: [mean, low, high]} of the ``contained`` presets whose recipes validate better than the
    container's over the same seeds (``by_seed``: {valid_<metric>: scores at seeds 0, 1, …}): the
    paired 95 % t-interval of container − contained lies wholly above 0 (every metric here is a
    loss). A model whose tuning missed a point of its own space. Only presets measured alike count:
    tuned by studies (``make_preset``) on the same split (seed, min count) and task; a preset chosen
    otherwise (e.g. on a mean over splits) seeds a study but is no reference. One measured alike
    without scores at as many seeds is {name: None}: not compared, so not shown to be no better (``tune`` scores
    such presets first, ``scored_alike``; ``python -m fmlib rescore`` writes their scores)."""
    metric = key.removeprefix("best_")
    ours = by_seed.get(metric, [])
    found = {}
    for name, preset in contained.items():
        if not measured_alike(preset["tuning"], settings):
            continue
        scores = presets.seed_scores(preset["tuning"], metric)
        if not len(scores) == len(ours) >= 2:
            found[name] = None
            continue
        interval = paired_interval(scores, ours, lower_is_better=True)  # > 0: the contained model validates better
        if interval.low > 0:
            found[name] = [round(v, 5) for v in (interval.mean, interval.low, interval.high)]
    return found


def measured_alike(tuning: dict, settings: dict) -> bool:
    """Whether a preset's ``tuning`` was made by studies (``make_preset``) on the split (seed, min count) and task
    of a tuning with ``settings``: then the validation scores of the two recipes compare (``better_inside``)."""
    theirs = tuning.get("settings", {}) if "studies" in tuning else {}
    return all(theirs.get(k) == settings[k] for k in ("seed", "min_count", "task"))


def preset_scores(preset: dict, seeds: int, workers: int = 1, data_dir=None) -> list[float]:
    """``seed_scores`` of ``preset``'s recipe on the split it was tuned on, spread over ``workers`` processes
    (``recipe_scores``)."""
    tuned = preset["tuning"]["settings"]
    where = (preset["dataset"], data_dir, tuned["seed"], preset["min_count"], preset.get("features", "all"))
    hp, config = presets.hyperparameters(preset), presets.train_config(preset)
    return recipe_scores(preset["model"], hp, config, seeds, workers, where)


def recipe_scores(model: str, hp: dict, config: TrainConfig, seeds: int, workers: int, where: tuple, data=None):
    """``seed_scores`` of a recipe on the split ``where`` says (``score_worker``'s arguments): in this process on
    ``data`` (that split, loaded here when not given) for one worker, else spread over ``workers`` processes."""
    from ..data import load, split

    if workers > 1:
        return spread_scores(model, hp, config, seeds, workers, where)
    if data is None:
        dataset, data_dir, seed, min_count, features = where
        data = with_features(split(load(dataset, data_dir=data_dir), seed=seed, min_count=min_count), features)
    return seed_scores(model, data, hp, config, seeds)


def scored_alike(contained: dict, settings: dict, metric: str, seeds: int, workers: int, data_dir=None) -> dict:
    """``contained`` (``make_preset``'s) with every preset measured alike (``measured_alike``) that has no
    ``metric`` scores at ``seeds`` seeds (one tuned before presets recorded them) scored there (``preset_scores``),
    so that ``better_inside`` compares it with the new recipe instead of leaving it "not compared". Only this
    tuning uses those scores; the contained presets' files are left as they are."""
    found = {}
    for name, preset in contained.items():
        tuning = preset["tuning"]
        if measured_alike(tuning, settings) and len(presets.seed_scores(tuning, metric)) != seeds:
            print(f"training {name}'s recipe at seeds 0-{seeds - 1} too (it has no scores there) ...", file=sys.stderr)
            tuning = {**tuning, "by_seed": {metric: preset_scores(preset, seeds, workers, data_dir)}}
        found[name] = {**preset, "tuning": tuning}
    return found


def known_scores(
    contained: dict, model: str, hp: dict, config: TrainConfig, features: str, settings: dict, metric: str, seeds: int
):
    """(name, ``metric`` scores at seeds 0, …, ``seeds`` − 1) of a ``contained`` preset that records them for this
    very recipe (the same model, sizes, training values and features, measured alike: ``measured_alike``), else
    None. Each score is one seeded training on one thread, so the same recipe scores the same: a resumed tuning
    whose best recipe is the preset it replaces (scored here if it had no scores, ``scored_alike``) trains nothing
    again."""
    sizes = presets.hyperparameters({"hp": hp})
    for name, preset in contained.items():
        scores = presets.seed_scores(preset["tuning"], metric)
        same = (
            preset["model"] == model
            and presets.hyperparameters(preset) == sizes
            and presets.train_config(preset, seed=config.seed) == config
            and preset.get("features", "all") == features
            and measured_alike(preset["tuning"], settings)
        )
        if same and len(scores) == seeds:
            return name, list(scores)
    return None


def recorded_better(path: Path, key: str, value: float, settings: dict) -> float | None:
    """The validation score ``key`` recorded in the preset at ``path`` when it is better (lower)
    than ``value`` and was found under the same study ``settings`` (space, epoch budget, split),
    else None (no file, no score, a worse one, or other settings — a preset tuned with other tools
    or budget is no reference): a short study never replaces a better preset of the same settings."""
    try:
        tuning = json.loads(path.read_text())["tuning"]
        recorded = tuning[key]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = tuning.get("settings") == settings
    return recorded if same and isinstance(recorded, (int, float)) and recorded < round(value, 5) else None


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
    p.add_argument(
        "--trials", type=positive_int, required=True, help="finished trials per study in all (a rerun resumes)"
    )
    p.add_argument(
        "--studies",
        type=positive_int,
        default=2,
        help="studies of different sampler seeds; converged when a second study's best comes within 0.002 of the "
        "best (default: 2)",
    )
    p.add_argument(
        "--seeds",
        type=at_least_two,
        default=SEEDS,
        help=f"seeds the chosen recipe is trained at, to compare it with the models it contains (default: {SEEDS})",
    )
    p.add_argument(
        "--trial-seeds",
        type=positive_int,
        default=1,
        help="score each trial by its mean over this many seeds (--seed and the next ones; default: 1)",
    )
    p.add_argument(
        "--no-prune",
        action="store_true",
        help="train every trial to its early stop (default: a median pruner stops a trial that trails the others "
        "at the same epoch, which stops slow learners too)",
    )
    p.add_argument(
        "--workers", type=positive_int, default=1, help="processes sharing each study (e.g. the cores; default: 1)"
    )
    p.add_argument(
        "--storage",
        default=None,
        help="an RDB URL (postgresql://user:pass@host/db) shared by several machines running the same command "
        "(default: a journal file per preset under the run store)",
    )
    p.add_argument(
        "--timeout", type=positive_int, default=None, help="stop starting a study's trials after this many seconds"
    )
    p.add_argument("--min-count", type=positive_int, default=1, help="features seen fewer times in train: rare bucket")
    add_train_arguments(p, skip=TRAIN_PARAMS, epochs=EPOCHS)
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
        "studies",
        "seeds",
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
    if args.trial_seeds > 1:
        words += ["--trial-seeds", str(args.trial_seeds)]
    if args.no_prune:
        words.append("--no-prune")
    return shlex.join(words)


@dataclass(frozen=True)
class Plan:
    """What every worker of a tuning needs (picklable: a worker is a new process)."""

    model: str
    dataset: str
    data_dir: str | None
    min_count: int
    sets: tuple[str, ...]  # the feature sets: one, or those drawn per trial
    drawn: bool
    base: TrainConfig
    fixed: dict
    protocol: str
    storage: str
    name: str
    settings: dict
    trials: int
    workers: int
    timeout: int | None

    def study_name(self, sampler_seed: int) -> str:
        return f"{self.name}-sampler{sampler_seed}"


def load_sets(plan: Plan, log=None) -> dict:
    """{feature set: split} of the plan's data (a bad set is refused here, before any study opens)."""
    from ..data import load, split

    data = split(load(plan.dataset, data_dir=plan.data_dir, log=log), seed=plan.base.seed, min_count=plan.min_count)
    return {text: with_features(data, text) for text in plan.sets}


def work(plan: Plan, sampler_seed: int, worker: int, sets=None) -> None:
    """One worker's share of one study: trials until the study holds ``plan.trials`` finished ones.

    One torch thread a worker, the cores go to workers: minibatches of small tensors train as fast on one
    thread (FM(8) on ml-100k, 5 epochs, an idle 2-core machine: 0.60 s of wall-clock time on one thread,
    0.71 s and twice the CPU on two). A spawned worker starts with torch's default, a thread a core."""
    torch.set_num_threads(1)
    sets = sets or load_sets(plan)
    study = open_study(plan.storage, plan.study_name(sampler_seed), sampler_seed, plan.settings, worker)
    data = sets if plan.drawn else sets[plan.sets[0]]
    seeds = plan.settings.get("trial_seeds", 1)
    optimize(plan.model, data, plan.trials, plan.base, plan.fixed, study, plan.timeout, True, plan.protocol, seeds)


_SPLIT: list = []  # a scoring worker's split (``score_worker``)


def score_worker(dataset: str, data_dir, seed: int, min_count: int, features: str) -> None:
    """Start a process of ``spread_scores``' pool: one torch thread (as ``work``), the split loaded once."""
    from ..data import load, split

    torch.set_num_threads(1)
    _SPLIT.append(with_features(split(load(dataset, data_dir=data_dir), seed=seed, min_count=min_count), features))


def score_at(model: str, hp: dict, config: TrainConfig, seed: int) -> float:
    """In a scoring worker: ``valid_score`` at ``seed``, rounded to 5 decimals."""
    return round(valid_score(model, _SPLIT[0], hp, config, seed), 5)


def spread_scores(model: str, hp: dict, config: TrainConfig, seeds: int, workers: int, where: tuple) -> list[float]:
    """``seed_scores`` with the seeds spread over ``workers`` processes, each loading the split ``where`` says
    (``score_worker``'s arguments) and training its seeds alone on one thread, so the scores do not depend on
    how many workers share them."""
    context = multiprocessing.get_context("spawn")  # torch and fork do not mix
    with context.Pool(min(workers, seeds), initializer=score_worker, initargs=where) as pool:
        return pool.starmap(score_at, [(model, hp, config, s) for s in range(seeds)])


def run_study(plan: Plan, sampler_seed: int, sets: dict) -> None:
    """Run one study with ``plan.workers`` processes (this one alone when there is one worker)."""
    if plan.workers == 1:
        return work(plan, sampler_seed, 0, sets)
    context = multiprocessing.get_context("spawn")  # torch and fork do not mix
    procs = [context.Process(target=work, args=(plan, sampler_seed, w)) for w in range(plan.workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    failed = [w for w, proc in enumerate(procs) if proc.exitcode != 0]
    if failed:
        raise RuntimeError(f"study {plan.study_name(sampler_seed)}: worker(s) {failed} failed; see above")


def run(args) -> int:
    from ..arguments import train_config

    fixed, rank = fixed_sizes(args)
    drawn = args.draw_features
    if drawn and (args.features is not None or args.protocol != "ours" or len(set(drawn)) < len(drawn)):
        raise ValueError("--draw-features takes distinct sets, without --features, under --protocol ours")
    base = train_config(args, lr=1e-3)  # lr is drawn per trial; this value is never used
    protocol = "" if args.protocol == "ours" else f"-{args.protocol}"
    chosen = [args.features or "all"] if not drawn else drawn
    features = "" if chosen == ["all"] else "-" + ("draw-" if drawn else "") + "_".join(chosen).replace(",", "+")
    name = presets.preset_name(args.model, rank, base.task) + f"{protocol}{features}-seed{base.seed}"
    space = search_space(args.model, fixed, protocol=args.protocol)
    settings = {
        "fixed": fixed,
        "min_count": args.min_count,
        "features": drawn or args.features or "all",
        "space": stored({**space, "features": drawn} if drawn else space),
        **{k: v for k, v in asdict(base).items() if k not in TRAIN_PARAMS},
        **({"trial_seeds": args.trial_seeds} if args.trial_seeds > 1 else {}),  # one seed: as studies made before
        **({"prune": False} if args.no_prune else {}),  # pruned: as studies made before
    }
    plan = Plan(
        args.model,
        args.dataset,
        args.data_dir,
        args.min_count,
        tuple(chosen),
        bool(drawn),
        base,
        fixed,
        args.protocol,
        args.storage or str(journal_path(args.dataset, name, args.runs_dir)),
        name,
        settings,
        args.trials,
        args.workers,
        args.timeout,
    )
    sets = load_sets(plan, log=lambda m: print(m, file=sys.stderr))
    root = presets.protocol_root(args.protocol, args.presets_dir)
    where = presets.features_root(chosen[0], root)
    contained = contained_presets(args.model, fixed, args.dataset, base.task, where)
    contained |= previous_preset(args.dataset, args.model, rank, base.task, where)
    points = seed_points(args.model, contained, space if not drawn else {**space, "features": tuple(drawn)})
    first = open_study(plan.storage, plan.study_name(0), 0, settings)  # settings checked before any work
    if first.trials:  # a resumed tuning: every study starts where its first one did
        points = seeds_of(first, points)
    key = MONITOR[base.task]
    studies, candidates = [], []
    for s in range(args.studies):
        study = open_study(plan.storage, plan.study_name(s), s, settings)
        seed_study(study, points)
        orphans = fail_orphans(study)
        if orphans:
            print(
                f"{study.study_name}: trial(s) {orphans} were left running by a worker that stopped; marked failed, "
                "a seeded one queued again",
                file=sys.stderr,
            )
        run_study(plan, s, sets)
        best = best_trial(study, args.trials)
        params, value, epochs = recipe_of(best)
        candidates.append((value, params))
        count = min(args.trials, len(finished(study)))
        studies.append(
            {
                "study": study.study_name,
                "sampler_seed": s,
                "finished_trials": count,
                f"best_valid_{key}": round(value, 5),
                "epochs": epochs,
                "best_is_seed": seed_of(best, points),
                f"best_drawn_valid_{key}": best_drawn(study, args.trials),
            }
        )
    value, params = min(candidates, key=lambda c: c[0])
    features = params.pop("features", chosen[0])
    data = sets[features]
    train, hp = split_params(args.model, params, fixed)
    config = TrainConfig(**{**asdict(base), **train})
    contained = scored_alike(contained, settings, f"valid_{key}", args.seeds, args.workers, args.data_dir)
    known = known_scores(contained, args.model, hp, config, features, settings, f"valid_{key}", args.seeds)
    where = (args.dataset, args.data_dir, base.seed, args.min_count, features)
    if known is None:
        print(f"training the chosen recipe at seeds 0-{args.seeds - 1} ...", file=sys.stderr)
        scores = recipe_scores(args.model, hp, config, args.seeds, args.workers, where, data)
    else:
        print(
            f"the chosen recipe is {known[0]}'s: its scores at seeds 0-{args.seeds - 1} are known, not trained again",
            file=sys.stderr,
        )
        scores = known[1]
    probes = known_probes(contained[known[0]], settings) if known else None
    if probes is None:
        probes = edge_probes(
            args.model,
            params,
            fixed,
            config,
            settings["space"],
            lambda model, hp, probed: recipe_scores(model, hp, probed, args.seeds, args.workers, where, data),
        )
    else:
        print(f"the probes past the ends of its ranges are {known[0]}'s too, not trained again", file=sys.stderr)
    preset = make_preset(
        args.model,
        args.dataset,
        rank,
        base,
        fixed,
        params,
        value,
        studies,
        args.min_count,
        tune_command(args),
        settings,
        contained,
        scores,
        probes,
    )
    if features != "all":
        preset["features"] = features
    target = presets.preset_path(args.dataset, args.model, rank, base.task, presets.features_root(features, root))
    better = recorded_better(target, f"best_valid_{key}", value, settings)
    if better is None:
        presets.save(preset, target)
    else:
        print(
            f"kept {presets.shown(target, root)}: its recorded best_valid_{key} {better} is better than these studies' "
            f"{value:.5f} (delete the file to replace it)",
            file=sys.stderr,
        )
    print(convergence_line(preset), file=sys.stderr)
    # the final model: the only time the test split is read
    model = build(args.model, data, base.seed, presets.hyperparameters(preset))
    final = fit(model, data.train, data.valid, presets.train_config(preset, seed=base.seed), snapshots=False)
    print(
        json.dumps(
            {
                "preset": presets.shown(target, root),
                "written": better is None,
                "studies": studies,
                "converged": preset["tuning"]["converged"],
                "finished_trials": preset["tuning"]["finished_trials"],
                "hp": preset["hp"],
                "train": preset["train"],
                "epochs_used": len(final.history),
                "valid": final.metrics["valid"],
                "test": evaluate(final.model, data.test, base.task),
            }
        )
    )
    return 0


def convergence_line(preset: dict) -> str:
    """One line: every study's best, whether the best is matched within the tolerance (``runner_up_gap``), and
    any contained model that validates better."""
    tuning = preset["tuning"]
    key = next(k for k in tuning if k.startswith("best_valid_"))
    values = [s[key] for s in tuning["studies"]]
    gap, tolerance = runner_up_gap(values), tuning["tolerance"]
    agree = gap <= tolerance
    words = [
        f"the studies' bests ({', '.join(f'{v:.5f}' for v in values)}) "
        + ("" if len(values) <= 2 else "– the best two – ")
        + (f"agree within {gap:.4f} <= " if agree else f"differ by {gap:.4f} > ")
        + str(tolerance)
    ]
    if agree and (apart := [s["study"] for s in tuning["studies"] if s[key] - min(values) > tolerance]):
        words.append(f"{', '.join(apart)} settled in a worse region: one study is not enough")
    inside = tuning.get("better_inside", {})
    if better := {name: v for name, v in inside.items() if v is not None}:
        seeds = len(presets.seed_scores(tuning, key.removeprefix("best_")))
        words.append(
            f"models it contains (or the preset it replaces) validate better over {seeds} seeds: "
            + ", ".join(f"{n} by {m:.5f} [{lo:.5f}, {hi:.5f}]" for n, (m, lo, hi) in better.items())
        )
    if seeded := {s["study"]: s for s in tuning["studies"] if s.get("best_is_seed")}:
        drawn = key.replace("best_", "best_drawn_", 1)
        words.append(
            ", ".join(
                f"{study}'s best is the recipe of {s['best_is_seed']}"
                + (f" (its own draws' best: {s[drawn]:.5f})" if s.get(drawn) is not None else "")
                for study, s in seeded.items()
            )
        )
    metric = key.removeprefix("best_")
    ours = presets.seed_scores(tuning, metric)
    for name, probe in tuning.get("edge_probes", {}).items():
        gap = probe_gap(probe, ours, metric)
        words.append(
            f"the best recipe's {name} lies at the end of its range, and {name} {probe['value']:.3g} past it validates "
            + (f"worse by {gap:.5f}" if gap > 0 else f"better by {-gap:.5f}")
            + f" over {len(ours)} seeds"
        )
    if edges := tuning.get("at_edges"):
        words.append(f"the best recipe's {', '.join(edges)} at the end of the range: widen it")
    if capped := tuning.get("at_cap"):
        cap = tuning["settings"]["epochs"]
        words.append(
            f"the best trial of {', '.join(capped)} stopped at the {cap}-epoch cap: tune with a larger --epochs"
        )
    if unscored := [name for name, v in inside.items() if v is None]:
        words.append(
            f"not compared with {', '.join(unscored)} (no scores at the same seeds: `python -m fmlib rescore`)"
        )
    if tuning["converged"]:
        return "converged: " + "; ".join(words)
    if not agree:
        words.append("run again with more --trials (the studies resume)")
    elif better:
        words.append("the studies agree, so more trials are unlikely to help: its recipes do not train it to those")
    return "not converged: " + "; ".join(words)
