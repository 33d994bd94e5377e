import json
from types import SimpleNamespace

import pandas as pd

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
        "synthetic-16",
        [
            ("fm", 4, {"dim": 4}),
            ("fwfm", 4, {"dim": 4}),
            ("dplr", 1, {"dim": 4, "rank": 1}),
            ("dplr", 2, {"dim": 4, "rank": 2}),
        ],
    )
    args = ["reproduce", "dplr", "--dataset", "synthetic-16", "--seeds", "2", "--ranks", "1,2", "--dim", "4"]
    assert main([*args, "--finetune-epochs", "1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    frame, header = tables.read(tmp_path / "out" / "dplr_synthetic-16_rating.csv", columns=("seed", "mse", "valid_mse"))
    assert header["command"].startswith("python -m fmlib reproduce dplr --dataset synthetic-16")
    assert "--seeds 2" in header["command"] and "--finetune-epochs 1" in header["command"]
    assert set(frame.model) >= {"FM", "FwFM", "DPLR", "Pruned", "Pruned, no fine-tune"}
    assert (frame.mse - frame.rmse**2).abs().max() < 1e-6
    dplr_rows = frame[frame.model == "DPLR"]
    assert (dplr_rows.epochs <= 3 + 1).all()  # E + F: the pruned model's fine-tuning budget
    pruned = frame[frame.model == "Pruned"]
    assert (pruned.epochs <= 3 + 1).all()
    trained = frame[frame.model.isin(["FM", "FwFM", "DPLR", "Pruned"])]
    assert (trained.epoch_cap == trained.model.map({"FM": 3, "FwFM": 3, "DPLR": 3 + 1, "Pruned": 3 + 1})).all()
    assert ((1 <= trained.best_epoch) & (trained.best_epoch <= trained.epochs) & (trained.epochs >= 1)).all()
    made = frame[~frame.model.isin(["FM", "FwFM", "DPLR", "Pruned"])]  # no training of their own
    assert (made[["epochs", "best_epoch", "epoch_cap"]] == 0).all().all()
    assert set(dplr_rows.preset + " " + dplr_rows["rank"].astype(str)) == {"dplr-1 1", "dplr-2 2"}
    assert set(frame[frame.model == "FM"].preset) == {"fm-4"} and set(pruned.preset) == {"fwfm-4"}
    assert "Every rank ρ is trained with its own tuned preset (dplr-1 and dplr-2)." in out
    assert "DPLR beats the FwFM pruned to the same budget at ρ = 2" in out
    verdicts = measure_all(frame, dplr.claims("rating", [1, 2]))
    assert len(verdicts) == 4 and set(verdicts.verdict.map(outcome)) <= set(OUTCOMES)  # a margin claim's words too


def test_presets_must_share_the_embedding_size(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FMLIB_PRESETS", str(tmp_path / "presets"))
    write_presets(
        tmp_path / "presets",
        "synthetic-16",
        [("fm", 4, {"dim": 4}), ("fwfm", 4, {"dim": 4}), ("dplr", 1, {"dim": 8, "rank": 1})],
    )
    code = main(["reproduce", "dplr", "--dataset", "synthetic-16", "--ranks", "1", "--dim", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "embedding size 8, not 4" in err
    code = main(["reproduce", "dplr", "--dataset", "synthetic-16", "--ranks", "3", "--dim", "4"])
    assert code == 2 and "no tuned preset dplr-3 on synthetic-16" in capsys.readouterr().err
    assert json.loads((tmp_path / "presets" / "synthetic-16" / "fm-4.json").read_text())["hp"] == {"dim": 4}


def test_the_headline_ranks_lead_the_claims_and_the_others_name_the_share_of_R_they_keep():
    texts = [claim.text for claim in dplr.claims("rating", [1, 2, 3, 4, 5], fields=12)]
    beats = "DPLR beats the FwFM pruned to the same budget at "
    assert texts[:2] == [beats + "ρ = 1", beats + "ρ = 2"]  # 13 and 26 of 66 pairs: 20 % and 39 % of R
    assert texts[2].startswith("DPLR (ρ = 2) is about as accurate") and texts[3] == "DPLR of rank 1 is worse than an FM"
    assert texts[4:] == [beats + f"ρ = {rank} (keeps {share} % of R)" for rank, share in ((3, 59), (4, 79), (5, 98))]
    assert dplr.rank_label(2, 39.4) == "ρ = 2" and dplr.rank_label(3, 59.09) == "ρ = 3 (keeps 59 % of R)"


def fake_table(ranks=(1, 2, 3), seeds=2, epochs=None, presets_of=None):
    """Rows of a reproduction's per-seed table: percent_left as 12 fields give it, epochs of trained models."""
    rows = []
    for seed in range(seeds):
        for model, rank in [("FM", 0), ("FwFM", 0)] + [(m, r) for r in ranks for m in ("DPLR", "Pruned")]:
            left = 100.0 if rank == 0 else 100 * rank * 13 / 66
            row = {"seed": seed, "model": model, "rank": rank, "percent_left": left, "mse": 0.8, "rmse": 0.8**0.5}
            if epochs is not None:
                row.update(zip(("epochs", "best_epoch", "epoch_cap"), epochs(model, seed)))
            if presets_of is not None:
                row["preset"] = presets_of(model, rank)
            rows.append(row)
    return pd.DataFrame(rows)


def test_summary_rows_past_the_headline_name_the_share_of_R_kept_and_the_note_says_why():
    frame = fake_table()
    assert list(dplr.summary(frame, "mse")["Rank"]) == ["ρ = 1", "ρ = 2", "ρ = 3 (keeps 59 % of R)"]
    assert dplr.headline_note(frame) == (
        "The headline is ρ = 1 and 2, where the pruned FwFM keeps 20 % and 39 % of R; the claims lead with them. "
        "At ρ = 3 it keeps 59 % of R: those rows compare two tuned models more than two approximations of R."
    )


def test_epoch_columns_count_every_stage_and_keep_the_best_epoch_before_a_fine_tune_that_did_not_help():
    def run(cap, epochs, best):  # a Run's history: a record per epoch, "best" where the validation metric improved
        return SimpleNamespace(history=[{"epoch": e, "epochs": cap, "best": e in best} for e in range(1, epochs + 1)])

    fwfm = run(40, 10, range(1, 8))  # improved until epoch 7, stopped early at 10
    assert dplr.epoch_columns(fwfm) == {"epochs": 10, "best_epoch": 7, "epoch_cap": 40}
    assert dplr.epoch_columns(fwfm, run(5, 4, {2})) == {"epochs": 14, "best_epoch": 12, "epoch_cap": 45}
    no_help = run(5, 3, set())  # no fine-tuning epoch beat the pruned weights: they are kept
    assert dplr.epoch_columns(fwfm, no_help) == {"epochs": 13, "best_epoch": 7, "epoch_cap": 45}


def test_the_epoch_note_says_whether_the_cap_or_early_stopping_ended_the_trainings():
    early = fake_table(ranks=(1,), epochs=lambda model, seed: (12, 9, 40))
    assert dplr.epoch_note(early) == "Early stopping ended all 8 trainings before their epoch cap: no cap binds."
    capped = fake_table(ranks=(1,), epochs=lambda model, seed: (40, 40, 40) if model == "FM" else (12, 9, 40))
    assert dplr.epoch_note(capped) == (
        "2 of 8 trainings ran to their epoch cap (FM 2 of 2 seeds), 2 of them still improving in their last epoch: "
        "the cap, not early stopping, ended them."
    )
    assert "predates" in dplr.epoch_note(fake_table(ranks=(1,)))


def test_the_preset_note_says_whether_every_rank_had_its_own_preset_or_which_shared_one():
    own = fake_table(presets_of=lambda model, rank: f"dplr-{rank}" if model == "DPLR" else "fwfm-8")
    assert (
        dplr.preset_note(own, "rating")
        == "Every rank ρ is trained with its own tuned preset (dplr-1, dplr-2 and dplr-3)."
    )
    shared = fake_table(presets_of=lambda model, rank: "dplr-2" if model == "DPLR" else "fwfm-8")
    assert dplr.preset_note(shared, "rating") == "Not every rank has its own tuned preset: ρ = 1, 2 and 3 share dplr-2."
    assert "predates" in dplr.preset_note(fake_table(), "rating")
