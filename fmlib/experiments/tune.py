"""``python -m fmlib tune``: tune a model on the validation split with Optuna, write its preset.

This module runs the studies (storage, workers, seeding, the trials, the scores of the chosen recipe);
``search_space`` says what a study draws, ``convergence`` whether the tuning converged and what the preset records.

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
import multiprocessing
import os
import shlex
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, replace
from multiprocessing.connection import wait
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
from ..models import build_for
from ..models.rafm_ranks import check_thresholds
from ..runs import default_root as runs_root
from ..train import MONITOR, TrainConfig, evaluate, fit
from .convergence import (
    contained_presets,
    convergence_line,
    known_probes,
    make_preset,
    measured_alike,
    previous_preset,
    recorded_better,
    seed_points,
)
from .search_space import (
    PROTOCOLS,
    TRAIN_PARAMS,
    at_edges,
    flat_space,
    nested,
    past_the_end,
    search_space,
    split_params,
    stored,
    suggest,
)


def build(model: str, data, seed: int, hp: dict):
    """The seeded model, prepared on the training split (``Model.prepare``: RaFM's eq. 17 ranks)."""
    torch.manual_seed(seed)
    return build_for(model, data.train, **hp)


SEEDS = 10  # seeds the chosen recipe is trained at: the spread a model is compared with the models it contains by
EPOCHS = 200  # a trial's epoch cap; early stopping on validation decides where it ends


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


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # Linux: new at every start of the machine


def this_boot() -> str:
    """This machine and this start of it, ``host/boot id`` (the host alone where the system gives no boot id): a
    process id names one process only within one start of a machine."""
    try:
        return f"{socket.gethostname()}/{BOOT_ID.read_text().strip()}"
    except OSError:
        return socket.gethostname()


def worker_tag() -> str:
    """This process as a trial records it (``host/boot:pid``), so that a later tuning can tell a trial whose worker
    died (``fail_orphans``) from one that another worker is still running."""
    return f"{this_boot()}:{os.getpid()}"


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
    runs, or ran before the machine last started — a tuning killed inside a trial leaves it "running" in the storage
    for ever — and queue a seeded one's recipe again, so its study keeps that seed. A trial of a live worker, or of
    another machine, is left alone. A tag of the host alone (``host:pid``, older journals) is read as this start's.
    Returns the numbers of the trials failed."""
    import optuna

    now, failed = this_boot(), []
    host = now.partition("/")[0]
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        where, _, pid = t.user_attrs.get("worker", "").rpartition(":")
        if where.partition("/")[0] != host or (where in (now, host) and alive(int(pid))):
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


def valid_score(model: str, data, hp: dict, config: TrainConfig, seed: int) -> float:
    """The validation metric of the recipe (``hp``, ``config``) trained at ``seed`` (the model's initialisation and
    the order of its minibatches) on ``data``, the split it was tuned on."""
    run = fit(build(model, data, seed, hp), data.train, data.valid, replace(config, seed=seed), snapshots=False)
    return run.metrics["valid"][MONITOR[config.task]]


def seed_scores(model: str, data, hp: dict, config: TrainConfig, seeds: int = SEEDS) -> list[float]:
    """``valid_score`` of the recipe at seeds 0, …, ``seeds`` − 1, rounded to 5 decimals."""
    return [round(valid_score(model, data, hp, config, s), 5) for s in range(seeds)]


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
    exit_with_parent()
    sets = sets or load_sets(plan)
    study = open_study(plan.storage, plan.study_name(sampler_seed), sampler_seed, plan.settings, worker)
    data = sets if plan.drawn else sets[plan.sets[0]]
    seeds = plan.settings.get("trial_seeds", 1)
    optimize(plan.model, data, plan.trials, plan.base, plan.fixed, study, plan.timeout, True, plan.protocol, seeds)


def exit_with_parent() -> None:
    """In a spawned worker: end this process as soon as the tuning that started it ends, however it ends (a
    killed tuning's workers would go on drawing trials beside the ones a resumed tuning starts). The trial it
    was running stays "running" and is marked failed when the study resumes (``fail_orphans``)."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        watch = threading.Thread(target=lambda: (wait([parent.sentinel]), os._exit(1)), daemon=True)
        watch.start()


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


def run_studies(plan: Plan, count: int, points: dict, sets: dict) -> tuple[list, list]:
    """Run ``count`` studies (sampler seeds 0, 1, …) up to ``plan.trials`` finished trials each, every one started
    from the seeded ``points`` and resumed where its storage stopped; returns (their records, as ``make_preset``
    takes them; each study's best as (value, params))."""
    key = MONITOR[plan.base.task]
    studies, candidates = [], []
    for s in range(count):
        study = open_study(plan.storage, plan.study_name(s), s, plan.settings)
        seed_study(study, points)
        orphans = fail_orphans(study)
        if orphans:
            print(
                f"{study.study_name}: trial(s) {orphans} were left running by a worker that stopped; marked failed, "
                "a seeded one queued again",
                file=sys.stderr,
            )
        run_study(plan, s, sets)
        best = best_trial(study, plan.trials)
        params, value, epochs = recipe_of(best)
        candidates.append((value, params))
        studies.append(
            {
                "study": study.study_name,
                "sampler_seed": s,
                "finished_trials": min(plan.trials, len(finished(study))),
                f"best_valid_{key}": round(value, 5),
                "epochs": epochs,
                "best_is_seed": seed_of(best, points),
                f"best_drawn_valid_{key}": best_drawn(study, plan.trials),
            }
        )
    return studies, candidates


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
    studies, candidates = run_studies(plan, args.studies, points, sets)
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
