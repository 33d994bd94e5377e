"""Tuned presets: the best configuration a tuning study found, one small JSON file each.

    presets/<dataset>/<model>[-<rank>][-click].json

holds the model's hyperparameters (``hp``), the training settings (``train``: lr, weight decay,
batch size, epoch budget, patience), the split's ``min_count`` and how it was tuned — a
configuration, never data or weights. ``rank`` is the model's size parameter that an experiment
varies: the embedding size k for FM, FwFM and RFM (an FM "of rank D" has D factors per feature,
RaFM §3), ρ for DPLR, the rank set D_1,…,D_m for RaFM. The click task gets its own files.
Presets are written atomically (a temporary file renamed into place), so a broken tuning
study never leaves a half-written or overwritten preset behind.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

from .results import write_text
from .train import MONITOR, TrainConfig

TRAIN_KEYS = ("lr", "weight_decay", "batch_size", "epochs", "patience")  # what a preset fixes
OPTIONAL_TRAIN_KEYS = ("average_from", "field_decay", "linear_decay")  # fixed when present (older presets lack them)
RANK_HP = {"fm": "dim", "fwfm": "dim", "rfm": "dim", "dplr": "rank", "rafm": "ranks"}
REPOSITORY = Path(__file__).resolve().parents[1]
SIZE_LABEL = re.compile(r"-\d+(,\d+)*(-t\d+(,\d+)*)?")  # what follows the model in a file stem: "-8", "-8,32-t2000"


def default_root() -> Path:
    """``$FMLIB_PRESETS``, else the repository's presets/ folder."""
    return Path(os.environ.get("FMLIB_PRESETS", REPOSITORY / "presets"))


def shown(path, root=None) -> str:
    """A preset's ``path`` as a message names it, never absolute: relative to the repository
    (``presets/ml-100k/fm-8.json``), else to the folder that holds the presets ``root``."""
    path = Path(path).resolve()
    base = REPOSITORY if path.is_relative_to(REPOSITORY) else Path(root or default_root()).resolve().parent
    return str(path.relative_to(base)) if path.is_relative_to(base) else path.name


def protocol_root(protocol: str = "ours", root=None) -> Path:
    """Where the presets of a tuning ``protocol`` live: ours in the presets folder itself, a
    paper's own protocol (``fmlib.experiments.search_space.PROTOCOL_SPACES``) in a subfolder of its name."""
    base = Path(root or default_root())
    return base if protocol == "ours" else base / protocol


def features_root(features: str | None, root=None) -> Path:
    """Where the presets tuned on a feature set (``fmlib.data.features``) live: the presets folder
    for every field of the dataset (``all``, the default), else its subfolder ``features-<set>``
    (``all,rated,raters`` -> ``features-all+rated+raters``): a recipe is tuned for its inputs."""
    base = Path(root or default_root())
    return base if features in (None, "all") else base / ("features-" + features.replace(",", "+"))


def rank_label(rank) -> str:
    """8 -> "8", (8, 32) -> "8,32"."""
    return ",".join(map(str, rank)) if isinstance(rank, (tuple, list)) else str(rank)


def thresholds_label(ranks, cuts) -> str:
    """The rank label of a RaFM whose k_i come from count cut-points: (8, 32), (128,) -> "8,32-t128"."""
    return f"{rank_label(ranks)}-t{rank_label(cuts)}"


def preset_name(model: str, rank=None, task: str = "rating") -> str:
    """File stem: ``fm``, ``fm-32``, ``dplr-2``, ``rafm-8,32``, ``fm-click``."""
    return model + ("" if rank is None else f"-{rank_label(rank)}") + ("" if task == "rating" else f"-{task}")


def preset_path(dataset: str, model: str, rank=None, task: str = "rating", root=None) -> Path:
    return Path(root or default_root()) / dataset / f"{preset_name(model, rank, task)}.json"


def save(preset: dict, path: Path) -> Path:
    """Write ``preset`` atomically."""
    return write_text(path, json.dumps(preset, indent=1) + "\n")


def load(dataset: str, model: str, rank=None, task: str = "rating", root=None) -> dict:
    """The tuned preset of ``model`` on ``dataset`` (at ``rank``), checked against what was asked."""
    path = preset_path(dataset, model, rank, task, root)
    name, where = f"{preset_name(model, rank, task)} on {dataset}", shown(path, root)
    try:
        preset = json.loads(path.read_text())
        found = (preset["model"], preset["dataset"], preset["task"])
        TrainConfig(**train_settings(preset), task=preset["task"])
        preset["hp"].items(), preset["min_count"]
    except FileNotFoundError:
        rank_flag = "" if rank is None else f" --{'ranks' if model == 'rafm' else 'rank'} {rank_label(rank)}"
        raise ValueError(
            f"no tuned preset {name} ({where}): run `python -m fmlib tune --model {model} --dataset {dataset}"
            f"{rank_flag}{'' if task == 'rating' else f' --task {task}'} --trials 30` first"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"preset {where} is corrupt ({err})") from None
    if found != (model, dataset, task):
        raise ValueError(
            f"preset {where} was tuned for model {found[0]!r} on {found[1]!r} ({found[2]} task), "
            f"not for {model!r} on {dataset!r} ({task} task)"
        )
    return preset


def train_config(preset: dict, **fixed) -> TrainConfig:
    """The preset's ``TrainConfig``; ``fixed`` overrides fields (e.g. ``seed``)."""
    return TrainConfig(**{**train_settings(preset), "task": preset["task"], **fixed})


def train_settings(preset: dict) -> dict:
    """The ``TrainConfig`` fields the preset fixes: every one of ``TRAIN_KEYS``, and those of
    ``OPTIONAL_TRAIN_KEYS`` it holds."""
    train = preset["train"]
    return {**{k: train[k] for k in TRAIN_KEYS}, **{k: train[k] for k in OPTIONAL_TRAIN_KEYS if k in train}}


def hyperparameters(preset: dict) -> dict:
    """The preset's model hyperparameters, lists turned back into tuples (RaFM's rank set)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in preset["hp"].items()}


def available(dataset: str, model: str, task: str = "rating", root=None) -> list[str]:
    """Names of the presets of ``model`` on ``dataset`` for ``task`` (``fm``, ``fm-8``,
    ``rafm-8,32-t2000``, …), sorted."""
    suffix = "" if task == "rating" else f"-{task}"
    names = []
    for path in (Path(root or default_root()) / dataset).glob(f"{model}*{suffix}.json"):
        rank = path.stem.removesuffix(suffix).removeprefix(model)
        if rank == "" or SIZE_LABEL.fullmatch(rank):
            names.append(path.stem)
    return sorted(names)


def load_named(dataset: str, name: str, model: str, task: str = "rating", root=None) -> dict:
    """The preset called ``name`` (one of ``available``), checked to be for ``model``."""
    suffix = "" if task == "rating" else f"-{task}"
    rank = name.removesuffix(suffix).removeprefix(model).removeprefix("-") or None
    return load(dataset, model, rank, task, root)


def recipe(preset: dict) -> str:
    """How the preset's model is trained, in one line: the tools it uses (L2, grouped L2, R's L2 toward
    the FM, weight averaging), the epoch budget and how its values were chosen (trials, each study's where they
    differ; the seeds each trial was scored at when more than one, and whether trials were pruned)
    — what a verdict row names for each side, so a reader sees that both got the same tools and the
    same tuning."""
    train, tuning = preset["train"], preset.get("tuning", {})
    parts = [f"Adam lr {train['lr']:.2g}", f"L2 {train['weight_decay']:.2g}"]
    multiples = {**train.get("field_decay", {}), "w": train.get("linear_decay", 1.0)}
    multiples = {name: scale for name, scale in multiples.items() if scale != 1.0}
    if multiples:
        parts.append("grouped L2 " + ", ".join(f"{name} ×{scale:.2g}" for name, scale in multiples.items()))
    if "r_l2" in preset.get("hp", {}):  # an FwFM's or a DPLR's pull of R toward the FM's (λ_R)
        parts.append(f"R's L2 toward the FM {preset['hp']['r_l2']:.2g}")
    if train.get("average_from"):
        parts.append(f"averaging from epoch {train['average_from']}")
    parts.append(f"≤ {train['epochs']} epochs")
    trials = tuning.get("finished_trials")
    counts = [study.get("finished_trials", trials) for study in tuning.get("studies", ())]
    if len(set(counts)) > 1:  # a study stopped by --timeout ran fewer trials than the other
        counted = f"{len(counts)} studies of " + ", ".join(map(str, counts[:-1])) + f" and {counts[-1]}"
    else:
        counted = f"{len(counts)} studies × {trials}" if len(counts) > 1 else f"{trials}"
    settings = tuning.get("settings", {})
    seeds = settings.get("trial_seeds", 1)
    how = ([f"scored at {seeds} seeds"] if seeds > 1 else []) + (
        [] if settings.get("prune", True) else ["trained to its early stop"]
    )
    scored = ", each " + " and ".join(how) if how else ""
    chosen = f"{counted} Optuna trials on validation{scored}" if trials else "chosen by hand on validation"
    return ", ".join(parts) + f" ({chosen})"


def seed_scores(tuning: dict, metric: str) -> list[float]:
    """The validation ``metric`` (``valid_rmse``, ``valid_logloss``) of a preset's recipe at seeds 0, 1, … as its
    ``tuning`` record holds them (``by_seed``, written by ``tune``); [] when it holds none."""
    return tuning.get("by_seed", {}).get(metric, [])


def seed0_epochs(preset: dict) -> int | None:
    """The epochs the preset's recipe trained at seed 0 in its tuning before early stopping ended it
    (``tuning.epochs_used``; a list holds one per split, split 0's first), None where its record has none: what
    a training with the preset costs, where ``train.epochs`` is only its cap."""
    used = preset.get("tuning", {}).get("epochs_used")
    return used[0] if isinstance(used, list) else used


def tuning_summary(preset: dict) -> str:
    """How far the preset's numbers can be trusted, in a sentence or two from its record: the validation
    score of its best trial, its recipe's mean ± standard deviation over the seeds it was trained at
    (``tuning.by_seed``), and whether its studies converged."""
    tuning, metric = preset.get("tuning", {}), MONITOR[preset["task"]]
    best, shown = tuning.get(f"best_valid_{metric}"), metric.upper() if metric == "rmse" else metric
    if best is None:
        return "Chosen by hand: no tuning record."
    if "studies" not in tuning:
        return f"Chosen by an experiment among its configurations ({tuning.get('command', 'no command recorded')}): validation {shown} {best:.5f} as it measured it."
    words = [f"Its best trial validated at {shown} {best:.5f}"]
    scores = seed_scores(tuning, f"valid_{metric}")
    if len(scores) >= 2:
        words.append(
            f"its recipe at {len(scores)} seeds, {statistics.mean(scores):.5f} ± {statistics.stdev(scores):.5f}"
        )
    sentence = "; ".join(words) + "."
    if "converged" not in tuning:
        return sentence
    if tuning["converged"]:
        return f"{sentence} Its tuning converged."
    return f"{sentence} Its tuning did not converge (tests/test_presets_converged.py says why): treat it as a good recipe, not the best."
