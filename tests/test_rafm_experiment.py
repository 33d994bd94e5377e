"""`python -m fmlib reproduce rafm`: bad input, the summary table, saving and loading results."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fmlib.cli import main
from fmlib.experiments import rafm as rafm_experiment
from fmlib.experiments.claims import measure_all


@pytest.mark.parametrize(
    "ranks, message",
    [
        ("8", "at least two ranks"),
        ("32,8", "strictly increasing"),
        ("0,8", "positive"),
        ("8,x", "comma-separated integers"),
    ],
)
def test_bad_ranks_exit_2_with_one_line(ranks, message, capsys):
    assert main(["reproduce", "rafm", "--ranks", ranks]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def records():
    rows = []
    for seed, shift in [(0, 0.0), (1, 0.02)]:
        for model, params, rmse, sec in [
            ("FM(4)", 10, 0.91, 1.0),
            ("FM(16)", 40, 0.93, 2.0),
            ("RaFM(4, 16)", 30, 0.90, 1.5),
            ("RaFM-low", 10, 0.95, math.nan),
        ]:
            rows.append(
                {
                    "seed": seed,
                    "model": model,
                    "epochs": 3,
                    "parameters": params,
                    "test_rmse": rmse + shift,
                    "parameters_vs_top_fm": params / 40,
                    "train_time_vs_top_fm": sec / 2.0,
                    "test_time_vs_top_fm": sec / 2.0,
                }
            )
    return rows


def test_summary_mean_std_and_table():
    summary = rafm_experiment.summarize(records()).set_index("model")
    assert summary.loc["RaFM(4, 16)", "test_rmse_mean"] == pytest.approx(0.91)
    assert summary.loc["RaFM(4, 16)", "test_rmse_std"] == pytest.approx(0.02 / math.sqrt(2))
    assert summary.loc["FM(4)", "parameters_vs_top_fm"] == pytest.approx(0.25)
    result = {
        "dataset": "synthetic",
        "ranks": [4, 16],
        "seeds": [0, 1],
        "task": "rating",
        "summary": rafm_experiment.summarize(records()).to_dict("records"),
    }
    text = rafm_experiment.format_table(result)
    line = next(l for l in text.splitlines() if l.startswith("RaFM(4, 16)"))
    assert "0.9100 ± 0.0141" in line and "75.0%" in line and "0.75" in line
    low = next(l for l in text.splitlines() if l.startswith("RaFM-low"))
    assert "—" in low  # RaFM-low is trained jointly: no time of its own


def test_save_load_round_trip_and_claims(tmp_path):
    rows = [{**r, "kind": "rafm" if r["model"].startswith("RaFM(") else "rafm-low" if r["model"] == "RaFM-low" else "fm",
             "rank": int(r["model"][3:-1]) if r["model"].startswith("FM(") else 0,
             "valid_rmse": r["test_rmse"], "test_mse": r["test_rmse"] ** 2, "valid_mse": r["test_rmse"] ** 2}
            for r in records()]  # fmt: skip
    result = rafm_experiment.as_result("synthetic", [4, 16], [0, 1], "rating", rows)
    path = rafm_experiment.results_path("synthetic", "rating", tmp_path)
    assert rafm_experiment.save(result, path, "python -m fmlib reproduce rafm --seeds 2") == path
    back = rafm_experiment.load(path)
    assert back["ranks"] == [4, 16] and back["seeds"] == [0, 1] and "reproduce rafm --seeds 2" in back["made"]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind
    frame = rafm_experiment.claim_frame(pd.DataFrame(back["records"]))
    verdicts = measure_all(frame, rafm_experiment.claims("rating", [4, 16]))
    # best by validation, then the largest rank, then RaFM-low against FM(D_1) (Fig. 3)
    assert list(verdicts["other"]) == ["FM(4)", "FM(16)", "FM(4)"]
    assert list(verdicts["favoured"]) == ["RaFM", "RaFM", "RaFM-low"]
    with pytest.raises(FileNotFoundError, match="reproduce rafm"):
        rafm_experiment.load(tmp_path / "missing.csv")
    (tmp_path / "rafm_bad_rating.csv").write_text("# command: x\n# commit: y\n# date: z\nseed\n0\n")
    with pytest.raises(ValueError, match="lacks model, kind, rank, parameters"):
        rafm_experiment.load(tmp_path / "rafm_bad_rating.csv")


def test_variants_get_their_own_claims_and_shares(small_split):
    """Each way of setting k_i (eq. 17, cut-points) is its own RaFM row, with its share of slots
    and samples below the top rank, and its own three claims."""
    from fmlib.train import TrainConfig

    config = TrainConfig(epochs=1)
    settings = {
        "FM(2)": (config, {"dim": 2}, "r"),
        "FM(4)": (config, {"dim": 4}, "r"),
        "RaFM(2, 4)": (config, {"ranks": (2, 4)}, "r"),
        rafm_experiment.rafm_label((2, 4), (10_000,)): (config, {"ranks": (2, 4), "thresholds": (10_000,)}, "r"),
    }
    data = small_split.train
    records = rafm_experiment.run_seed(data, (2, 4), 0, settings)
    frame = pd.DataFrame(records)
    cut = frame[frame["cuts"] == "10000"]
    assert list(cut["kind"]) == ["rafm", "rafm-low"]
    assert cut["slots_below_top"].iloc[0] == 1.0 and cut["samples_below_top"].iloc[0] == 1.0  # every count <= 10000
    rows, claims = rafm_experiment.scorecard_claims(frame, "rating")
    assert len(claims) == 6 and {c.favoured[0] for c in claims} >= {"RaFM (k_i cut at n_i > 10000)"}
    verdicts = measure_all(rows, claims)
    assert list(verdicts["favoured"])[3:] == ["RaFM (k_i cut at n_i > 10000)"] * 2 + [
        "RaFM-low (k_i cut at n_i > 10000)"
    ]


def test_a_cut_point_read_back_as_a_number_is_named_as_an_integer():
    assert rafm_experiment.variant_suffix(40.0) == " (k_i cut at n_i > 40)"
    assert rafm_experiment.variant_suffix("16,256") == " (k_i cut at n_i > 16,256)"
    assert rafm_experiment.variant_suffix(float("nan")) == rafm_experiment.variant_suffix("") == ""


def test_a_variant_whose_dependent_factors_fit_y_is_named_and_parsed():
    """``+y`` (the authors' code: y reaches the dependent factors) is its own variant, also read back as text."""
    assert rafm_experiment.variants_arg("eq17,40,40+y") == ((None, False), ((40,), False), ((40,), True))
    assert rafm_experiment.variants_text(rafm_experiment.variants_arg("eq17,16/256+y")) == "eq17,16/256+y"
    named = " (k_i cut at n_i > 40; dependent factors also fit y)"
    assert rafm_experiment.variant_suffix(40.0, "True") == rafm_experiment.variant_suffix("40", True) == named
    assert rafm_experiment.rafm_label((2, 8), (40,), True) == "RaFM(2, 8)" + named
    with pytest.raises(ValueError, match="no tuned presets"):
        rafm_experiment.preset_settings("ml-100k", (8, 32), variants=((None, True),))


def test_the_planted_data_has_power_and_is_drawn_anew_for_every_seed():
    """The planted comparison's data: the interaction variances its docstring states (a frequent pair 1.0,
    0.75 of it beyond rank 2, a pair with a rare feature 0.25) against noise 0.25, and new data per seed."""
    import torch

    from fmlib.data import synthetic

    setup = rafm_experiment.planted_setup()
    assert (setup["n_samples"], setup["users"], setup["movies"], setup["zipf"]) == (50_000, 1500, 1500, 1.0)
    assert setup["variances"] == {
        "frequent pair": 1.0,
        "its last D_2 − D_1 coordinates": 0.75,
        "pair with a rare feature": 0.25,
        "noise": 0.25,
    }
    data_for = rafm_experiment.data_source(synthetic.PLANTED_RANKS)
    first, again, second = data_for(0), data_for(0), data_for(1)
    assert torch.equal(first.rating, again.rating) and torch.equal(first.rating, synthetic.planted_ranks(seed=0).rating)
    assert not torch.equal(first.index, second.index) and not torch.equal(first.rating, second.rating)
