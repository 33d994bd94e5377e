"""Seeded trainings kept on disk: a long training that several places ask for runs once a machine.

The tuned FwFM (``presets/<dataset>/fwfm-8.json``, a few hundred epochs) is the model the Field
interactions page, the lesson's stop 4, the app's starter runs and notebook 02 all show. Each of them
used to train it again; ``trained`` runs it once and keeps the run in a ``RunStore`` under the cache
(``FMLIB_CACHE``, else ``~/.cache/fmlib``; folder ``trainings``), where the next one loads it.

A run is kept under a key made of everything that decides it: the model and its hyperparameters, the
``TrainConfig`` (its seed and epoch budget included), the split (the data's bytes, its seed, min count and
fields), the version of torch and the source of the parts of ``fmlib`` that train (``TRAINING_SOURCE``: an
edited model trains again, an edited experiment or page does not). Two processes
that ask at once both train and the first to finish keeps its run (``RunStore.save`` renames into place).
The newest ``KEPT`` trainings are kept (an edit to those parts makes new keys; the old runs go as new ones come).
What is not kept: Adam's moments at the end (``Run.optimizer_state``: only the experiments' fine-tunes use
them, and they train their own runs), and progress — a run loaded from the cache reports no epochs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from functools import cache
from pathlib import Path

import torch

from .data.dataset import Dataset, Split
from .data.movielens import cache_root
from .runs import Quota, RunError, RunStore
from .train import Run, TrainConfig, train_model

PACKAGE = Path(__file__).resolve().parent
# the parts of fmlib that decide a training (the data, the models, the training loop, its snapshots and the run
# store): their source is part of every key, so an edit there trains again and an edit elsewhere (an experiment, a
# page) does not. They import nothing else of fmlib (tests/test_trainings.py checks).
TRAINING_SOURCE = ("data", "models", "optim.py", "runs.py", "snapshots.py", "train.py", "trainings.py")
KEPT = 12  # the newest trainings kept; saving another deletes the oldest beyond them


def root() -> Path:
    """Where the kept trainings live: ``trainings`` in the data's cache folder."""
    return cache_root() / "trainings"


def source_files() -> list[Path]:
    """The Python files of ``TRAINING_SOURCE``, in a fixed order."""
    parts = (PACKAGE / part for part in TRAINING_SOURCE)
    return sorted(path for part in parts for path in (part.rglob("*.py") if part.is_dir() else [part]))


@cache
def source_digest() -> str:
    """A digest of the source that decides a training (``TRAINING_SOURCE``): a run trained by other code is another
    run."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _tensors(part: Dataset) -> list[torch.Tensor]:
    return [t for t in (part.index, part.weight, part.rating, part.counts) if t is not None]


def split_digest(data: Split) -> str:
    """A digest of the split's samples (every part's index, weights, ratings and counts) and its schema."""
    digest = hashlib.sha256(json.dumps(data.train.schema.to_dict(), sort_keys=True).encode())
    for part in (data.train, data.valid, data.test):
        for tensor in _tensors(part):
            digest.update(str((tensor.dtype, tuple(tensor.shape))).encode())
            digest.update(tensor.contiguous().numpy().tobytes())
    return digest.hexdigest()


def key(name: str, data: Split, config: TrainConfig, hp: dict) -> str:
    """The id a training is kept under: a digest of everything that decides its run (module docstring)."""
    what = {
        "model": name,
        "hp": hp,
        "config": dataclasses.asdict(config),
        "split": {"seed": data.seed, "min_count": data.min_count, "data": split_digest(data)},
        "torch": torch.__version__,
        "fmlib": source_digest(),
    }
    text = json.dumps(what, sort_keys=True, default=str)
    return f"{name}-{data.train.name}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def kept(run_id: str) -> bool:
    """Whether this machine keeps the training of id ``run_id`` (``key``): ``trained`` would load it at once."""
    return (root() / run_id / "run.json").is_file()


def trained(name: str, data: Split, config: TrainConfig, callback=None, **hp) -> Run:
    """``train_model(name, data, config, callback, **hp)``, loaded from the cache where this machine trained it
    before (no progress is reported then), else trained and kept there."""
    store, run_id = RunStore(root(), Quota(runs=KEPT + 1, bytes=Quota.bytes)), key(name, data, config, hp)
    try:
        return store.load(run_id)
    except RunError:  # not kept yet, or unreadable: trained again and kept in its place
        unreadable = [run_id] if (store.root / run_id).exists() else []
    run = train_model(name, data, config, callback, **hp)
    for old in store.ids()[KEPT - 1 :] + unreadable:
        shutil.rmtree(store.root / old, ignore_errors=True)
    try:
        store.save(run, run_id)
    except ValueError:  # another process kept the same training first, or the cache's bytes are full: not kept
        pass
    return run
