"""The cache of seeded trainings: a training asked for again is loaded, not run; anything that decides the run
(data, settings, seed, fmlib's source) makes another key; the newest few are kept; an unreadable one is replaced."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fmlib import trainings
from fmlib.data import split, synthetic
from fmlib.train import TrainConfig

CONFIG = TrainConfig(epochs=2, batch_size=256)
PLANTED = (synthetic.block_R(4), 600, 6, 2)  # R, samples, cardinality, embedding size: a few seconds' data


@pytest.fixture
def cache():
    return trainings.root()  # the test's own (conftest.isolated_runs)


@pytest.fixture(scope="module")
def data():
    return split(synthetic.make(*PLANTED, seed=0), seed=0)


def counted(monkeypatch) -> list:
    """The trainings ``trained`` runs (not loads), one entry each."""
    runs, train = [], trainings.train_model
    monkeypatch.setattr(trainings, "train_model", lambda *a, **k: runs.append(a[0]) or train(*a, **k))
    return runs


def test_a_training_asked_for_again_is_loaded_with_its_weights_history_and_metrics(cache, data, monkeypatch):
    runs, epochs = counted(monkeypatch), []
    first = trainings.trained("fwfm", data, CONFIG, epochs.append, dim=2)
    again = trainings.trained("fwfm", data, CONFIG, epochs.append, dim=2)
    assert runs == ["fwfm"] and len(epochs) == len(first.history), "trained once; the load reports no epochs"
    assert again.history == first.history and again.metrics == first.metrics and again.seconds == first.seconds
    for name, tensor in first.model.state_dict().items():
        assert torch.equal(again.model.state_dict()[name], tensor), name
    assert again.snapshots is not None and again.snapshots.count == first.snapshots.count
    assert [p.name for p in cache.iterdir()] == [trainings.key("fwfm", data, CONFIG, {"dim": 2})]
    assert trainings.kept(trainings.key("fwfm", data, CONFIG, {"dim": 2}))
    assert not trainings.kept(trainings.key("fwfm", data, CONFIG, {"dim": 3}))


def test_whatever_decides_the_run_makes_another_key(data, monkeypatch):
    key = trainings.key("fwfm", data, CONFIG, {"dim": 2})
    other_data = split(synthetic.make(*PLANTED, seed=1), seed=0)
    changed = [
        trainings.key("fm", data, CONFIG, {"dim": 2}),
        trainings.key("fwfm", data, CONFIG, {"dim": 3}),
        trainings.key("fwfm", data, dataclasses.replace(CONFIG, seed=1), {"dim": 2}),
        trainings.key("fwfm", data, dataclasses.replace(CONFIG, epochs=3), {"dim": 2}),
        trainings.key("fwfm", other_data, CONFIG, {"dim": 2}),
        trainings.key("fwfm", split(synthetic.make(*PLANTED, seed=0), seed=1), CONFIG, {"dim": 2}),
    ]
    monkeypatch.setattr(trainings, "source_digest", lambda: "an edited fmlib")
    changed.append(trainings.key("fwfm", data, CONFIG, {"dim": 2}))
    assert key not in changed and len(set(changed)) == len(changed)


def test_the_source_in_the_key_is_all_that_a_training_imports_of_fmlib():
    """``TRAINING_SOURCE`` decides a training: what it imports of fmlib, and the built-in models it loads by name,
    lie inside it, so an edit outside it (an experiment, a page) cannot change a kept run."""
    import grimp

    from fmlib.models import BUILT_IN

    graph = grimp.build_graph("fmlib", cache_dir=None)
    files = {path.relative_to(trainings.PACKAGE.parent).with_suffix("") for path in trainings.source_files()}
    inside = {".".join(f.parts[:-1] if f.name == "__init__" else f.parts) for f in files}
    loaded = {entry.partition(":")[0] for entry in BUILT_IN.values()}
    assert loaded <= inside, f"models loaded by name outside the key's source: {loaded - inside}"
    imported = {m for module in inside for m in graph.find_modules_directly_imported_by(module)}
    assert "fmlib.train" in inside and imported <= inside | {"fmlib"}, f"imported from outside: {imported - inside}"


def test_the_newest_trainings_are_kept_and_an_unreadable_one_is_trained_again(cache, data, monkeypatch):
    monkeypatch.setattr(trainings, "KEPT", 2)
    runs = counted(monkeypatch)
    for seed in range(3):
        trainings.trained("fm", data, dataclasses.replace(CONFIG, seed=seed), dim=2)
    kept = {p.name for p in cache.iterdir()}
    assert kept == {trainings.key("fm", data, dataclasses.replace(CONFIG, seed=s), {"dim": 2}) for s in (1, 2)}
    newest = trainings.key("fm", data, dataclasses.replace(CONFIG, seed=2), {"dim": 2})
    (cache / newest / "model.safetensors").write_bytes(b"not weights")
    run = trainings.trained("fm", data, dataclasses.replace(CONFIG, seed=2), dim=2)
    assert runs == ["fm"] * 4 and run.history
    assert trainings.trained("fm", data, dataclasses.replace(CONFIG, seed=2), dim=2).metrics == run.metrics
    assert runs == ["fm"] * 4, "the training kept in its place is loaded"
