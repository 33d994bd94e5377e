"""``train --preset``: which preset ``tuned`` or a name picks, flags given on the command line
replacing the preset's values (and recorded in the saved run), one-line errors that name presets
by their place in the presets folder, never by an absolute path.

Every test writes its own presets into a temporary folder ($FMLIB_PRESETS) and trains one epoch."""

from __future__ import annotations

import json

import pytest

from fmlib import presets
from fmlib.cli import main
from fmlib.runs import RunStore

TRAIN = {"lr": 0.02, "weight_decay": 1e-4, "batch_size": 4096, "epochs": 3, "patience": 2}


def write_preset(root, model, rank, hp, task="rating", **train):
    """A preset as ``tune`` writes it (untuned values), for ``model`` at ``rank`` on ml-100k."""
    preset = {
        "model": model,
        "dataset": "ml-100k",
        "task": task,
        "rank": rank,
        "hp": hp,
        "train": {**TRAIN, **train},
        "min_count": 2,
        "tuning": {},
    }
    return presets.save(preset, presets.preset_path("ml-100k", model, rank, task, root))


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A presets folder with one FwFM, two DPLR ranks, an FM without size and one with, and a click FwFM."""
    folder = tmp_path / "presets"
    monkeypatch.setenv("FMLIB_PRESETS", str(folder))
    write_preset(folder, "fwfm", 4, {"dim": 4})
    write_preset(folder, "fwfm", 4, {"dim": 4}, task="click", lr=0.03)
    write_preset(folder, "dplr", 1, {"dim": 4, "rank": 1}, lr=0.01)
    write_preset(folder, "dplr", 2, {"dim": 4, "rank": 2}, lr=0.03)
    write_preset(folder, "fm", None, {"dim": 4}, lr=0.04)
    write_preset(folder, "fm", 6, {"dim": 6})
    return folder


def train(capsys, *args):
    """(exit code, the printed JSON or None, stderr) of ``python -m fmlib train *args``."""
    code = main(["train", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def test_tuned_takes_the_only_preset_of_the_model_and_its_values(root, capsys):
    code, out, err = train(capsys, "--model", "fwfm", "--preset", "tuned", "--runs-dir", str(root.parent / "runs"))
    assert code == 0, err
    config = out["config"]
    assert config["hp"]["dim"] == 4 and config["split"]["min_count"] == 2
    assert {k: config["train"][k] for k in TRAIN} == TRAIN  # every value from the preset: no flag given
    assert config["preset"] == {"name": "fwfm-4", "file": "presets/ml-100k/fwfm-4.json", "overridden": {}}
    assert "preset presets/ml-100k/fwfm-4.json" in err and str(root) not in err


def test_flags_given_replace_the_preset_values_and_the_saved_run_records_them(root, capsys):
    runs = root.parent / "runs"
    args = ["--model", "fwfm", "--preset", "tuned", "--epochs", "1", "--lr", "0.005", "--min-count", "1"]
    code, out, err = train(capsys, *args, "--runs-dir", str(runs))
    assert code == 0, err
    saved = RunStore(runs).load(out["run_id"]).config
    assert saved["train"]["epochs"] == 1 and saved["train"]["lr"] == 0.005 and saved["split"]["min_count"] == 1
    assert saved["train"]["weight_decay"] == TRAIN["weight_decay"] and saved["train"]["batch_size"] == 4096
    assert saved["preset"]["overridden"] == {
        "epochs": {"preset": 3, "given": 1},
        "lr": {"preset": 0.02, "given": 0.005},
        "min_count": {"preset": 2, "given": 1},
    }
    assert "--epochs 1 (the preset's: 3)" in err and "--lr 0.005 (the preset's: 0.02)" in err
    code, out, err = train(capsys, "--model", "fwfm", "--preset", "tuned", "--epochs", "3", "--runs-dir", str(runs))
    assert code == 0 and out["config"]["preset"]["overridden"] == {}, "a flag equal to the preset's changes nothing"


def test_several_presets_need_a_size_or_a_name(root, capsys):
    code, _, err = train(capsys, "--model", "dplr", "--preset", "tuned")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "several tuned presets of dplr on ml-100k: dplr-1, dplr-2 — pick one with --rank N or --preset NAME" in err
    code, out, err = train(capsys, "--model", "dplr", "--preset", "tuned", "--rank", "2", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["preset"]["name"] == "dplr-2" and out["config"]["train"]["lr"] == 0.03
    code, out, err = train(capsys, "--model", "dplr", "--preset", "dplr-1", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["hp"] == {"dim": 4, "rank": 1, "r_l2": 0.0} and out["config"]["train"]["lr"] == 0.01


def test_a_name_takes_its_preset_and_size_flags_then_replace_its_size(root, capsys):
    code, out, err = train(capsys, "--model", "dplr", "--preset", "dplr-1", "--rank", "2", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["train"]["lr"] == 0.01 and out["config"]["hp"]["rank"] == 2
    assert out["config"]["preset"]["overridden"] == {
        "epochs": {"preset": 3, "given": 1},
        "rank": {"preset": 1, "given": 2},
    }


def test_the_preset_without_size_is_taken_when_no_size_is_given(root, capsys):
    code, out, err = train(capsys, "--model", "fm", "--preset", "tuned", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["preset"]["name"] == "fm" and out["config"]["train"]["lr"] == 0.04
    code, out, err = train(capsys, "--model", "fm", "--preset", "tuned", "--dim", "6", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["preset"]["name"] == "fm-6" and out["config"]["hp"]["dim"] == 6


def test_the_task_picks_its_own_presets(root, capsys):
    code, out, err = train(capsys, "--model", "fwfm", "--preset", "tuned", "--task", "click", "--epochs", "1")
    assert code == 0, err
    assert out["config"]["preset"]["file"] == "presets/ml-100k/fwfm-4-click.json"
    assert out["config"]["train"]["lr"] == 0.03 and set(out["metrics"]["test"]) >= {"logloss", "auc"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "dplr", "--preset", "dplr-7"], "--preset dplr-7: no such preset of dplr on ml-100k; its presets: dplr-1, dplr-2"),
        (["--model", "fwfm", "--preset", "fm-6"], "--preset fm-6: no such preset of fwfm on ml-100k; its presets: fwfm-4"),
        (["--model", "rafm", "--preset", "rafm-8,32"], "no such preset of rafm on ml-100k; it has none"),
        (["--model", "dplr", "--preset", "tuned", "--rank", "3"], "no tuned preset dplr-3 on ml-100k (presets/ml-100k/dplr-3.json): run `python -m fmlib tune --model dplr"),
        (["--model", "rafm", "--preset", "tuned"], "no tuned preset rafm on ml-100k (presets/ml-100k/rafm.json)"),
        (["--model", "dplr", "--preset", "dplr-1", "--task", "click"], "no such preset of dplr on ml-100k (click task); it has none"),
    ],
)  # fmt: skip
def test_bad_preset_is_one_line_with_exit_code_2_and_no_absolute_path(root, capsys, args, message):
    code, _, err = train(capsys, *args)
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and str(root) not in err


def test_a_corrupt_preset_is_named_by_its_place_in_the_presets_folder(root, capsys):
    (root / "ml-100k" / "dplr-2.json").write_text("{")
    code, _, err = train(capsys, "--model", "dplr", "--preset", "dplr-2")
    assert code == 2 and "preset presets/ml-100k/dplr-2.json is corrupt" in err and str(root) not in err


def test_messages_name_the_repository_presets_relative_to_the_repository():
    with pytest.raises(ValueError, match=r"no tuned preset fwfm-99 on ml-100k \(presets/ml-100k/fwfm-99.json\)"):
        presets.load("ml-100k", "fwfm", 99, root=presets.REPOSITORY / "presets")
    protocol = presets.protocol_root("dplr-paper", presets.REPOSITORY / "presets")
    assert presets.shown(protocol / "ml-100k" / "fm-8.json", protocol) == "presets/dplr-paper/ml-100k/fm-8.json"


def test_available_lists_sizes_and_rafm_cut_points(tmp_path):
    for stem in ("rafm-8,32", "rafm-8,32-t2000", "rafm-8,32-t2000-click", "rafm-x", "rafmx", "rafm-8,32-t"):
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "d" / f"{stem}.json").write_text("{}")
    assert presets.available("d", "rafm", root=tmp_path) == ["rafm-8,32", "rafm-8,32-t2000"]
    assert presets.available("d", "rafm", "click", root=tmp_path) == ["rafm-8,32-t2000-click"]


def test_a_presets_tuning_summary_says_what_its_record_holds():
    def said(**tuning):
        return presets.tuning_summary({"task": "click", "tuning": tuning})

    assert said() == "Chosen by hand: no tuning record."
    assert said(best_valid_logloss=0.5, command="reproduce x").startswith("Chosen by an experiment among its")
    record = {"best_valid_logloss": 0.5, "studies": [], "by_seed": {"valid_logloss": [0.5, 0.6, 0.7]}}
    assert said(**record, converged=True) == (
        "Its best trial validated at logloss 0.50000; its recipe at 3 seeds, 0.60000 ± 0.10000. Its tuning converged."
    )
    assert "did not converge" in said(**record, converged=False)
    assert said(best_valid_logloss=0.5, studies=[]) == "Its best trial validated at logloss 0.50000."


def test_a_presets_cost_is_the_epochs_its_tuning_trained_at_seed_0():
    assert presets.seed0_epochs({"tuning": {"epochs_used": 219}}) == 219
    assert presets.seed0_epochs({"tuning": {"epochs_used": [56, 43, 81]}}) == 56  # one per split: split 0's
    assert presets.seed0_epochs({"tuning": {}}) is None
    assert presets.seed0_epochs({}) is None
