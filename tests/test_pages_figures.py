"""Every chart on every page has a title and titled axes (the pages walked with AppTest, tiny runs)."""

from __future__ import annotations

import numpy as np
import pytest
from apptest import app_page, assert_figures_labelled, unlabelled

from fmlib.data import split, synthetic
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


@pytest.fixture(scope="module")
def data():
    return split(synthetic.make(synthetic.demo_R(), n_samples=2000, cardinality=20, seed=0), seed=0)


def visit(path, **state):
    at = app_page(path, timeout=120, dataset="synthetic", **state)
    at.run()
    assert not at.exception
    return at


def test_train_page_charts(data):
    run = train_model("fm", data, TrainConfig(epochs=2), dim=2)
    # the opening trace of one rating, the learning curves, their replay (an FM on synthetic data has no R and
    # no movies), and the lesson's ablation and feature-set charts (from the committed results tables)
    assert assert_figures_labelled(visit("app_pages/train.py", trained=run)) == 5


def test_field_interaction_charts(data):
    run_id = RunStore().save(train_model("fwfm", data, TrainConfig(epochs=1), dim=4))
    assert assert_figures_labelled(visit("app_pages/field_interactions.py", run_id=run_id)) >= 4


def test_rank_aware_fm_charts():
    assert assert_figures_labelled(visit("app_pages/rank_aware_fm.py")) >= 2


def test_gradient_growth_charts():
    assert assert_figures_labelled(visit("app_pages/gradient_growth.py")) >= 3


def test_derivation_chart():
    at = visit("app_pages/derivations.py")
    at.selectbox(key="deriv_derivation").set_value("rafm-proposition-s3").run()
    at.slider(key="deriv_step").set_value(7).run()
    assert assert_figures_labelled(at) == 1


def test_attention_inversion_charts():
    at = visit("app_pages/attention_inversion.py")
    at.select_slider[4].set_value(10)  # instances per γ
    at.button(key="inv_run_trials").click().run()
    assert assert_figures_labelled(at) == 5  # the attack, the trials, both outcomes; the committed rates and verdicts


def test_the_rafm_comparison_and_verdict_charts_outside_a_page():
    import pandas as pd

    from fmlib.plots.rafm import comparison_figure
    from fmlib.plots.verdicts import verdict_figure

    summary = {
        "model": ["FM(2)", "FM(4)", "RaFM(2, 4)"],
        "test_rmse_mean": [1.0, 0.9, 0.95],
        "test_rmse_std": [0.01, 0.01, 0.01],
        "parameters_vs_top_fm": [0.5, 1.0, 0.7],
        "train_time_vs_top_fm": [0.5, 1.0, 1.2],
        "test_time_vs_top_fm": [0.5, 1.0, 0.8],
    }
    result = {"summary": summary, "task": "rating", "ranks": [2, 4], "seeds": [0], "dataset": "synthetic"}
    verdicts = pd.DataFrame(
        {"claim": ["a"], "other": ["b"], "metric": ["rmse"], "seeds": [5], "difference": [0.1], "low": [0.0]}
        | {"high": [0.2], "margin": [0.0], "verdict": ["holds"]}
    )
    for fig in (comparison_figure(result), verdict_figure(verdicts)):
        assert not unlabelled(fig.to_plotly_json())


def test_the_s3_slack_heatmap_is_not_one_flat_colour():
    """The slack runs from 0 to thousands in the corners: a linear scale paints all but a corner alike."""
    from fmlib.plots.derivations import s3_slack_figure

    z = np.asarray(s3_slack_figure().data[0].z, dtype=float)
    spread = (np.percentile(z, [25, 75]) - z.min()) / (z.max() - z.min())
    assert spread[1] - spread[0] > 0.1, "half the heatmap sits in one tenth of the colour scale"


def test_two_runs_of_one_method_get_two_colours():
    from fmlib.inversion import invert, planted_instance
    from fmlib.plots.inversion import convergence_figure

    inst = planted_instance(3, 2, 1.0, 0)
    runs = {
        label: invert(inst.W, inst.V, inst.B, "newton", 0.0, steps=3, seed=seed, X_true=inst.X_true)
        for label, seed in (("recovered", 0), ("stalled", 1))
    }
    fig = convergence_figure(runs)
    colours = {t.legendgroup: t.line.color for t in fig.data}
    assert len(colours) == 2 and len(set(colours.values())) == 2


def test_a_long_trajectory_is_drawn_thinned_with_its_first_and_last_iteration():
    import pandas as pd

    from fmlib.plots.inversion import DRAWN_STEPS, drawn_steps

    for length in (1, 7, DRAWN_STEPS, DRAWN_STEPS + 1, 500, 2001):
        t = pd.DataFrame({"step": range(length), "loss": [1.0 / (i + 1) for i in range(length)]})
        drawn = drawn_steps(t)
        assert drawn["step"].iloc[0] == 0 and drawn["step"].iloc[-1] == length - 1
        assert len(drawn) <= DRAWN_STEPS + 1 and drawn["step"].is_monotonic_increasing
        assert len(drawn) == length if length <= DRAWN_STEPS else len(drawn) > DRAWN_STEPS // 2
