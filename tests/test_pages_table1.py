"""AppTest of the Field interactions page's Table 1 section: verdicts read from a result table."""

import numpy as np
import pandas as pd
from apptest import app_page

from fmlib.analysis.interactions import budget, percent_left
from fmlib.experiments import tables


def fake_table(path, ranks=(1, 2), extra=lambda model, rank: {}):
    """A reproduction's per-seed table; ``extra(model, rank)``: more columns of a row (epochs, preset)."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(5):
        for model, rank, mse in [("FM", 0, 0.83), ("FwFM", 0, 0.82)] + [
            (name, rank, 0.82 + 0.01 * (name != "DPLR"))
            for rank in ranks
            for name in ("DPLR", "Pruned", "Pruned, no fine-tune", "Post-hoc DPLR (eig)", "Post-hoc DPLR (nuclear)")
        ]:
            value = mse + 0.001 * rng.standard_normal()
            left = percent_left(12, budget(12, rank)) if rank else 100.0
            row = {"seed": seed, "model": model, "rank": rank, "percent_left": left, "mse": value, "rmse": value**0.5}
            rows.append({**row, **extra(model, rank)})
    return tables.write(pd.DataFrame(rows), path, "python -m fmlib reproduce dplr --seeds 5")


def test_table1_shows_verdicts_with_interval_bars(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    fake_table(tmp_path / "dplr_ml-100k_rating.csv")
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="ml-100k")
    at.run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "reproduce dplr --seeds 5" in captions
    figures = [c for c in at.get("plotly_chart")]
    assert figures  # the verdict bars
    verdicts = at.dataframe[0].value
    assert "DPLR beats the FwFM pruned to the same budget at ρ = 2" in set(verdicts["claim"])
    assert (
        verdicts.set_index("claim").loc["DPLR beats the FwFM pruned to the same budget at ρ = 2", "verdict"] == "holds"
    )


def test_table1_leads_with_the_ranks_where_pruning_bites_and_says_which_presets_and_epochs_it_used(
    tmp_path, monkeypatch
):
    def extra(model, rank):
        trained = model in ("FM", "FwFM", "DPLR", "Pruned")
        preset = f"dplr-{rank}" if model == "DPLR" else "fm-8" if model == "FM" else "fwfm-8"
        return {"epochs": 12 * trained, "best_epoch": 9 * trained, "epoch_cap": 40 * trained, "preset": preset}

    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    fake_table(tmp_path / "dplr_ml-100k_rating.csv", ranks=(1, 2, 3), extra=extra)
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="ml-100k")
    at.run()
    assert not at.exception
    (note,) = [m.value for m in at.markdown if "Where pruning bites" in m.value]
    assert "The headline is ρ = 1 and 2, where the pruned FwFM keeps 20 % and 39 % of R" in note
    assert "At ρ = 3 it keeps 59 % of R" in note
    captions = " ".join(c.value for c in at.caption)
    assert "Every rank ρ is trained with its own tuned preset (dplr-1, dplr-2 and dplr-3)." in captions
    assert "Early stopping ended all 40 trainings before their epoch cap: no cap binds." in captions
    claims = list(at.dataframe[0].value["claim"])
    beats = "DPLR beats the FwFM pruned to the same budget at "
    assert claims[:2] == [beats + "ρ = 1", beats + "ρ = 2"] and claims[-1] == beats + "ρ = 3 (keeps 59 % of R)"
    ranks = [d.value["Rank"].tolist() for d in at.dataframe if "Rank" in d.value]
    assert ranks and all(r == ["ρ = 1", "ρ = 2", "ρ = 3 (keeps 59 % of R)"] for r in ranks)


def test_table1_is_measured_on_movielens_only():
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic")
    at.run()
    assert not at.exception
    assert any("Table 1 is measured on MovieLens" in c.value for c in at.caption)


def test_on_a_class_server_only_the_teacher_recomputes_table1_and_it_runs_in_the_queue(tmp_path, monkeypatch):
    import time

    from fmapp import recompute

    ran = []

    def fake_command(argv, report, cancelled):  # the real one trains 60 models in a child process
        ran.append(argv)
        report("seed 0 FM ...")
        return f"written: {tmp_path / 'dplr_ml-100k_rating.csv'}"

    monkeypatch.setattr(recompute, "run_command", fake_command)
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    monkeypatch.setenv("FMLIB_TEACHER_PASSCODE", "s3cret")
    student = app_page("app_pages/field_interactions.py", timeout=60, dataset="ml-100k")
    student.run()
    assert not student.exception and not [b for b in student.button if b.label.startswith("Recompute here")]
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="ml-100k", teacher=True)
    at.run()
    next(b for b in at.button if b.label.startswith("Recompute here")).click().run()
    deadline = time.monotonic() + 60
    while not at.success:
        assert time.monotonic() < deadline, "the recomputation did not end in time"
        time.sleep(0.2)
        at.run()
    assert not at.exception and ran == [
        ["reproduce", "dplr", "--dataset", "ml-100k", "--task", "rating", "--protocol", "ours"]
    ]
    assert "Recomputed: written:" in at.success[0].value
