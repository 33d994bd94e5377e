"""The committed FMGrad and AttnInv reproductions on the pages their scorecard rows link to."""

import pytest
from apptest import app_page, figure

from fmlib.experiments.verdict import DOES_NOT_HOLD, HOLDS


def verdicts(at) -> dict:
    """claim -> verdict, from the page's verdict tables."""
    return {claim: row["verdict"] for t in at.table if "verdict" in t.value for claim, row in t.value.iterrows()}


def test_attention_inversion_page_shows_success_vs_gamma_with_intervals(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))  # no recomputation: the committed table
    at = app_page("app_pages/attention_inversion.py", timeout=120)
    at.run()
    assert not at.exception and not at.error
    found = verdicts(at)
    assert (
        found["At Thm 4.2's γ every start reaches the same point (the regularised loss is convex; synthetic)"] == HOLDS
    )
    assert sum(v == DOES_NOT_HOLD for v in found.values()) == 2  # recovery, from random and near starts
    rates = [f for f in map(lambda k: figure(at, k), range(len(at.get("plotly_chart")))) if "Wilson" in str(f)]
    bars = [t for t in rates[0]["data"] if t.get("error_y")]
    assert len(bars) == 4  # success and agreement, random and near starts, each with its interval
    assert any("results/inversion_synthetic.csv" in c.value for c in at.caption)


@pytest.mark.usefixtures("derivation_results")  # every step already checked, once per session (conftest.py)
def test_derivations_page_shows_the_fm_gradient_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path))
    at = app_page("app_pages/derivations.py", timeout=120)
    at.run()
    assert not [t for t in at.table if "verdict" in t.value]  # only beside the FM gradient derivation
    at.selectbox(key="deriv_derivation").set_value("fm-gradient").run()
    assert not at.exception and not at.error
    found = verdicts(at)
    printed = next(c for c in found if c.startswith("The memoised gradient as printed"))
    assert found[printed] == DOES_NOT_HOLD and list(found.values()).count(HOLDS) >= 2
    assert any("results/fmgrad_synthetic.csv" in c.value for c in at.caption)
    axes = {}  # one quantity per axis: the errors on a log axis, the speed-ups on their own
    for k in range(len(at.get("plotly_chart"))):
        layout = figure(at, k)["layout"]
        axes[layout["title"]["text"]] = (layout["xaxis"]["title"]["text"], layout["xaxis"].get("type"))
    assert axes["Is eq. 8 the gradient? (random P and X)"] == ("largest error vs autograd", "log")
    assert axes["Is the memoised gradient cheaper?"] == ("speed-up (×), 95 % interval", "linear")


def test_success_figure_gives_a_label_one_colour_in_both_panels():
    import pandas as pd

    from fmlib.plots.inversion import success_figure

    table = pd.DataFrame({"gamma": [0.0, 1.0], "success_rate": [0.5, 0.0], "agree_rate": [0.1, 1.0]})
    table = table.assign(runs=10, median_rel_error=0.1)
    fig = success_figure({"a": table, "b": table})
    colours = {(t.name, t.xaxis): t.line.color for t in fig.data}
    assert colours[("a", "x")] == colours[("a", "x2")] != colours[("b", "x")] == colours[("b", "x2")]
