"""AppTest of the Field interactions page's Table 1 section: verdicts read from a result table."""

import numpy as np
import pandas as pd
from apptest import app_page

from fmlib.experiments import tables


def fake_table(path):
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(5):
        for model, rank, mse in [("FM", 0, 0.83), ("FwFM", 0, 0.82)] + [
            (name, rank, 0.82 + 0.01 * (name != "DPLR"))
            for rank in (1, 2)
            for name in ("DPLR", "Pruned", "Pruned, no fine-tune", "Post-hoc DPLR (eig)", "Post-hoc DPLR (nuclear)")
        ]:
            value = mse + 0.001 * rng.standard_normal()
            rows.append(
                {"seed": seed, "model": model, "rank": rank, "percent_left": 20.0, "mse": value, "rmse": value**0.5}
            )
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


def test_table1_is_measured_on_movielens_only():
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic")
    at.run()
    assert not at.exception
    assert any("Table 1 is measured on MovieLens" in c.value for c in at.caption)


def test_on_a_class_server_only_the_teacher_recomputes_table1_and_it_runs_in_the_queue(tmp_path, monkeypatch):
    import time

    from fmlib.experiments import recompute

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
