import json

from fmlib import presets
from fmlib.cli import main
from fmlib.experiments import dplr, tables
from fmlib.experiments.claims import measure_all
from fmlib.experiments.verdict import OUTCOMES, outcome


def write_presets(root, dataset, entries, dim=4, epochs=3):
    """Untuned presets, enough for a reproduction to run (the tests do not tune)."""
    for model, rank, hp in entries:
        preset = {
            "model": model,
            "dataset": dataset,
            "task": "rating",
            "rank": rank,
            "hp": hp,
            "train": {"lr": 2e-2, "weight_decay": 1e-5, "batch_size": 1024, "epochs": epochs, "patience": 2},
            "min_count": 1,
            "tuning": {},
        }
        presets.save(preset, presets.preset_path(dataset, model, rank, root=root))


def test_reproduce_writes_a_table_with_its_command_and_verdicts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    write_presets(
        tmp_path / "presets",
        "synthetic",
        [
            ("fm", 4, {"dim": 4}),
            ("fwfm", 4, {"dim": 4}),
            ("dplr", 1, {"dim": 4, "rank": 1}),
            ("dplr", 2, {"dim": 4, "rank": 2}),
        ],
    )
    args = ["reproduce", "dplr", "--dataset", "synthetic", "--seeds", "2", "--ranks", "1,2", "--dim", "4"]
    assert main([*args, "--finetune-epochs", "1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    frame, header = tables.read(tmp_path / "out" / "dplr_synthetic_rating.csv", columns=("seed", "mse", "valid_mse"))
    assert header["command"].startswith("python -m fmlib reproduce dplr --dataset synthetic")
    assert "--seeds 2" in header["command"] and "--finetune-epochs 1" in header["command"]
    assert set(frame.model) >= {"FM", "FwFM", "DPLR", "Pruned", "Pruned, no fine-tune"}
    assert (frame.mse - frame.rmse**2).abs().max() < 1e-6
    dplr_rows = frame[frame.model == "DPLR"]
    assert (dplr_rows.epochs <= 3 + 1).all()  # E + F: the pruned model's fine-tuning budget
    pruned = frame[frame.model == "Pruned"]
    assert (pruned.epochs <= 3 + 1).all()
    assert "DPLR beats the FwFM pruned to the same budget at ρ = 2" in out
    verdicts = measure_all(frame, dplr.claims("rating", [1, 2]))
    assert len(verdicts) == 4 and set(verdicts.verdict.map(outcome)) <= set(OUTCOMES)  # a margin claim's words too


def test_presets_must_share_the_embedding_size(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    write_presets(
        tmp_path / "presets",
        "synthetic",
        [("fm", 4, {"dim": 4}), ("fwfm", 4, {"dim": 4}), ("dplr", 1, {"dim": 8, "rank": 1})],
    )
    code = main(["reproduce", "dplr", "--dataset", "synthetic", "--ranks", "1", "--dim", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "embedding size 8, not 4" in err
    code = main(["reproduce", "dplr", "--dataset", "synthetic", "--ranks", "3", "--dim", "4"])
    assert code == 2 and "no tuned preset dplr-3 on synthetic" in capsys.readouterr().err
    assert json.loads((tmp_path / "presets" / "synthetic" / "fm-4.json").read_text())["hp"] == {"dim": 4}
