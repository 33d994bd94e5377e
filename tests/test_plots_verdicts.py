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
