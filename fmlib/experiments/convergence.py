"""When a tuning has converged (``python -m fmlib tune``), and the preset that records it.

The rule: the best of the studies is matched by a second study within ``TOLERANCE`` (``runner_up_gap``), no
model the tuned one contains validates better over the same seeds (``better_inside``; ``CONTAINS`` says which
models those are), no value of the best recipe lies at an end of its range that binds (``at_edges``,
``binding``) and no study's best trial stopped at the epoch cap (``at_cap``). ``make_preset`` writes the record,
``convergence_line`` says it in one line.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from .. import presets
from ..train import MONITOR, TrainConfig
from .search_space import R_L2, at_edges, drawable, flat_space, point_values, split_params
from .verdict import paired_interval

TOLERANCE = 0.002  # studies whose bests differ by more (in the validation metric) have not converged


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


def failed_checks(tuning: dict, key: str) -> list[str]:
    """The checks of ``converged`` that a preset's ``tuning`` record fails, in words (none: it converged); ``key`` is
    its studies' ``best_valid_<metric>``."""
    bests = [s[key] for s in tuning["studies"]]
    reasons = []
    if (gap := runner_up_gap(bests)) > tuning["tolerance"]:
        reasons.append(f"the best two studies differ by {gap:.4f}")
    if better := [name for name, v in tuning.get("better_inside", {}).items() if v is not None]:
        reasons.append(f"{', '.join(better)} validates better")
    if uncompared := [name for name, v in tuning.get("better_inside", {}).items() if v is None]:
        reasons.append(f"{', '.join(uncompared)} not compared")
    if tuning.get("at_edges"):
        reasons.append(f"{', '.join(tuning['at_edges'])} at the end of its range")
    if tuning.get("at_cap"):
        reasons.append("a best trial at the epoch cap")
    return reasons


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
