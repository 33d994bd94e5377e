"""``python -m fmlib rescore PRESET.json [...]``: train tuned presets' recipes at several seeds, judge them again.

``python -m fmlib tune`` records in a preset the validation scores of its recipe at seeds 0, …, N − 1
(``tuning.by_seed``) and the models it contains that validate better over them (``tuning.better_inside``,
``convergence.better_inside``). This command writes that record for presets tuned before it existed, without tuning
again: it trains every given preset's recipe at the seeds on the split it was tuned on, then judges each
preset against the models it contains (read from the same presets folder, scored or not) and rewrites its
``converged``. Give a preset together with the presets it contains, so that all are scored alike.
``--workers N`` spreads each preset's seeds over N processes (``tune.spread_scores``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import presets
from ..arguments import at_least_two, positive_int
from ..train import MONITOR
from . import convergence, tune


def add_arguments(p) -> None:
    p.add_argument("presets", nargs="+", type=Path, help="preset files written by `python -m fmlib tune`")
    p.add_argument("--seeds", type=at_least_two, default=tune.SEEDS, help=f"seeds 0, …, N − 1 (default: {tune.SEEDS})")
    p.add_argument("--workers", type=positive_int, default=1, help="processes sharing the seeds (default: 1)")


def load_tuned(path: Path) -> dict:
    """The preset at ``path``; one tuned by studies (``python -m fmlib tune``), else ValueError."""
    try:
        preset = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(f"{presets.shown(path)} is not a preset ({err})") from None
    if "studies" not in preset.get("tuning", {}):
        raise ValueError(f"{presets.shown(path)} was not tuned by studies (`python -m fmlib tune`): nothing to rescore")
    return preset


def scored(preset: dict, seeds: int, workers: int = 1) -> dict:
    """``preset`` with ``tuning.by_seed``: its recipe trained at ``seeds`` seeds on the split it was tuned on,
    the seeds spread over ``workers`` processes (``tune.preset_scores``)."""
    by_seed = {f"valid_{MONITOR[preset['task']]}": tune.preset_scores(preset, seeds, workers)}
    return {**preset, "tuning": {**preset["tuning"], "by_seed": by_seed}}


def judged(preset: dict, root: Path) -> dict:
    """``preset`` with ``better_inside``, ``at_cap`` and ``converged`` from its studies and the presets in ``root`` it
    contains."""
    tuning = preset["tuning"]
    key = f"best_valid_{MONITOR[preset['task']]}"
    inside = convergence.better_inside(
        convergence.contained_by(preset, root), key, tuning["by_seed"], tuning["settings"]
    )
    capped = convergence.at_cap(tuning["studies"], tuning["settings"]["epochs"])
    converged = convergence.converged(
        [s[key] for s in tuning["studies"]], tuning["tolerance"], inside, tuning.get("at_edges", []), capped
    )
    return {**preset, "tuning": {**tuning, "better_inside": inside, "at_cap": capped, "converged": converged}}


def run(args) -> int:
    loaded = {path: load_tuned(path) for path in args.presets}  # every file checked before any training
    for number, (path, preset) in enumerate(loaded.items(), 1):
        print(f"[{number}/{len(loaded)}] {presets.shown(path)}: {args.seeds} seeds ...", file=sys.stderr, flush=True)
        presets.save(scored(preset, args.seeds, args.workers), path)
    for path in loaded:
        preset = judged(json.loads(path.read_text()), path.parents[1])
        presets.save(preset, path)
        print(f"{presets.shown(path)}: {convergence.convergence_line(preset)}")
    return 0
