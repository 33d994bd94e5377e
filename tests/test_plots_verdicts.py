import math

import pandas as pd

from fmlib.plots.verdicts import verdict_figure


def test_one_trace_per_verdict_with_interval_bars():
    rows = pd.DataFrame(
        {
            "claim": ["a", "b", "c"],
            "other": ["x", "y", "z"],
            "metric": ["mse"] * 3,
            "seeds": [5, 5, 1],
            "difference": [0.01, -0.02, 0.0],
            "low": [0.005, -0.03, -math.inf],
            "high": [0.015, -0.01, math.inf],
            "margin": [0.0, 0.008, 0.0],
            "verdict": ["holds", "does not hold", "no difference detectable at this sample size"],
        }
    )
    fig = verdict_figure(rows)
    assert [t.name for t in fig.data] == list(rows.verdict)
    holds = fig.data[0]
    assert abs(holds.error_x.array[0] - 0.005) < 1e-12
    assert abs(holds.error_x.arrayminus[0] - 0.005) < 1e-12
    assert list(fig.data[2].error_x.array) == [0]  # one seed: no bar
    assert any(shape.x0 == -0.008 for shape in fig.layout.shapes)  # the margin's line


def test_threshold_figure_draws_each_claim_with_its_interval_and_threshold():
    from fmlib.plots.verdicts import threshold_figure

    rows = pd.DataFrame(
        {
            "claim": ["fast", "exact"],
            "other": ["> 1", "< 1e-10"],
            "other_mean": [1.0, 1e-10],
            "difference": [2.0, 3e-15],
            "low": [1.5, 3e-15],
            "high": [2.5, 3e-15],
            "measured": ["speed-up 2.00× [1.50, 2.50]", "largest abs. error 3e-15"],
            "verdict": ["holds", "holds"],
        }
    )
    fig = threshold_figure(rows, "t", log_x=True)
    assert [t.name for t in fig.data] == ["holds", "threshold the claim needs"]
    assert list(fig.data[0].error_x.array) == [0.5, 0.0] and list(fig.data[0].error_x.arrayminus) == [0.5, 0.0]
    assert list(fig.data[1].x) == [1.0, 1e-10] and fig.layout.xaxis.type == "log"


def test_a_long_claim_is_wrapped_on_the_axis_and_the_figure_grows_a_line_for_each_of_its_lines():
    from fmlib.plots.verdicts import CLAIM_WIDTH, LINE, threshold_figure

    claim = "The memoised O(dk) gradient is faster than the naive O(d²k) sum (synthetic, d = 192)"
    rows = pd.DataFrame(
        {"claim": [claim, "short"], "other": ["> 1", "< 1"], "other_mean": [1.0, 1.0], "difference": [2.0, 0.5]}
        | {"low": [1.5, 0.4], "high": [2.5, 0.6], "measured": ["2×", "0.5"], "verdict": ["holds", "does not hold"]}
    )
    fig = threshold_figure(rows, "t")
    labels = [label for trace in fig.data[:2] for label in trace.y]
    assert [label.replace("<br>", " ") for label in labels] == [claim, "short"], "every claim, whole"
    lines = [line for label in labels for line in label.split("<br>")]
    assert len(lines) == 4 and all(len(line) <= CLAIM_WIDTH for line in lines)
    assert fig.layout.height >= LINE * len(lines)


def test_every_undecided_verdict_is_grey_whatever_its_words():
    words = [
        "holds",
        "does not hold",
        "no difference detectable at this sample size",
        "worse on every seed; whether by more than 1 % is undecided",
    ]
    rows = pd.DataFrame(
        {
            "claim": list("abcd"),
            "other": list("wxyz"),
            "metric": ["mse"] * 4,
            "seeds": [5] * 4,
            "difference": [0.01, -0.02, 0.0, -0.004],
            "low": [0.005, -0.03, -0.01, -0.0055],
            "high": [0.015, -0.01, 0.01, -0.0031],
            "margin": [0.0, 0.0, 0.0, 0.0032],
            "verdict": words,
        }
    )
    colours = {t.name: t.marker.color for t in verdict_figure(rows).data}
    assert colours[words[0]] == "#2ca02c" and colours[words[1]] == "#d62728"
    assert colours[words[2]] == colours[words[3]] == "#7f7f7f"
