"""AppTest of app_pages/attention_inversion.py."""

import time

import pytest
import torch
from apptest import app_page, figure
from page_order import block_tables, of_type, position, starts
from patience import limit

from fmapp.worked import attention_row
from fmlib.experiments import inversion, tables
from fmlib.inversion import invert, planted_instance

PAGE = "app_pages/attention_inversion.py"


def test_page_runs_and_shows_gd_vs_newton():
    at = app_page(PAGE, timeout=60)
    at.run()
    assert not at.exception
    fig = figure(at, 0)
    names = {t["name"] for t in fig["data"] if t.get("showlegend", True) is not False}
    assert {"gradient descent", "damped Newton"} <= names
    assert fig["layout"]["yaxis"]["type"] == "log" and fig["layout"]["yaxis2"]["type"] == "log"
    slips = next(t.value for t in at.table if t.value.index.name == "where")
    assert len(slips) == 2 and "Lemma A.17" in " ".join(slips.index)


def near_start_newton_error(seed, n=4, d=3, R=1.0):
    """What the page computes for a near start, straight from fmlib."""
    inst = planted_instance(n, d, R, seed)
    noise = torch.randn(d, n, generator=torch.Generator().manual_seed(1000 + seed), dtype=torch.float64)
    run = invert(inst.W, inst.V, inst.B, "newton", 0.0, steps=100, X0=inst.X_true + 0.3 * noise, X_true=inst.X_true)
    return run.trajectory["dist"].iloc[-1] / inst.X_true.norm().item()


def notice(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Notice** (this instance"))


def test_near_start_newton_result_matches_fmlib():
    seed = next(s for s in range(20) if near_start_newton_error(s) < 1e-6)
    at = app_page(PAGE, timeout=60)
    at.run()
    at.radio[0].set_value(at.radio[0].options[1])  # near the secret
    at.select_slider[2].set_value(200)  # gradient-descent steps: keep the test quick
    at.number_input[0].set_value(seed).run()
    assert not at.exception
    distance, unit = at.metric[1].value.split(" × ")  # in units of the secret's norm, said beside the number
    assert at.metric[1].label == "Newton: distance to the secret" and unit == "‖X_true‖" and float(distance) < 1e-6
    assert "Damped Newton recovers the secret" in notice(at)


def test_a_near_start_that_stops_short_is_described_as_it_is():
    """Seed 0 from a near start: Newton ends ~11 % of ‖X_true‖ away; the notice says so, from the numbers."""
    error = near_start_newton_error(0)
    assert error > 0.01
    at = app_page(PAGE, timeout=60)
    at.run()
    at.radio[0].set_value(at.radio[0].options[1])
    at.select_slider[2].set_value(200)
    at.run()
    assert not at.exception
    text = notice(at)
    assert f"Damped Newton ends {error:.2g}·‖X_true‖ from the secret after 100 steps" in text
    assert "Newton recovers" not in text and "reaches it" not in text
    committed = next(c.value for c in at.caption if c.value.startswith("Over many planted instances"))
    frame, _ = tables.read(tables.newest(inversion.table_name()), columns=inversion.COLUMNS)
    near = inversion.rates(frame).set_index(["start_kind", "gamma"]).loc[("near", 0.0)]
    rate = f"{near.success_rate:.0%} [{near.success_rate_low:.0%}, {near.success_rate_high:.0%}]"
    assert f"from a near start in {rate} of {int(near.runs)} instances" in committed


def test_trials_chart_and_both_outcomes():
    at = app_page(PAGE, timeout=60)
    at.run()
    at.select_slider[4].set_value(10)  # instances per γ
    at.button(key="inv_run_trials").click().run()
    assert not at.exception
    fig = figure(at, 1)
    assert fig["layout"]["xaxis"]["type"] == "category"
    rates = at.dataframe[0].value
    assert (rates["runs"] == 20).all() and rates["success_rate"].between(0, 1).all()


def recovery_charts(at) -> list[dict]:
    bars = [figure(at, k) for k in range(len(at.get("plotly_chart")))]
    return [f for f in bars if any(t.get("name") == "inversion attack" for t in f["data"])]


def test_movielens_twist_section():
    at = app_page(PAGE)
    at.run()
    at.select_slider[5].set_value(50)  # users attacked
    at.select_slider[6].set_value(100)  # attack steps
    at.button(key="inv_movielens").click().run()
    deadline = time.monotonic() + limit(240)  # a guard against a hang, stretched on a busy machine
    while not (recovery := recovery_charts(at)):  # the training and attack run as a job of the server's queue
        assert not at.exception and not at.error
        assert any("The tiny transformer and its attack" in p.proto.text for p in at.get("progress")) or any(
            "The tiny transformer and its attack" in i.value for i in at.info
        ), "its place in line or its progress is shown"
        assert time.monotonic() < deadline, "the experiment did not end in time"
        time.sleep(0.5)
        at.run()
    assert not at.exception
    assert not at.error
    assert len(recovery) == 2  # training users and held-out users
    table = at.dataframe[0].value
    assert table["step"].iloc[-1] == "truth"
    for bars, label in zip(recovery, ("training users", "held-out users")):
        notice = next(m.value for m in at.markdown if m.value.startswith(f"**Notice** ({label}):"))
        attack, popular = (
            next(t for t in bars["data"] if t["name"] == n)
            for n in ("inversion attack", "guess the most popular (training users)")
        )
        for metric, a, p in zip(attack["x"], attack["text"], popular["text"]):  # the bars' labels, e.g. 41.8%
            assert f"{metric}: attack {a}, popularity guess {p}" in notice
        assert any(w in notice for w in ("beats the attack", "the attack beats", "no difference from the popularity"))
    gap = next(i.value for i in at.info if i.value.startswith("The attack recovers"))
    assert "of held-out users'" in gap and "popularity guess" in gap


def test_the_page_opens_with_one_attention_row_traced_before_any_attack():
    """The worked example's numbers are fmapp.worked.attention_row's, and it comes before the controls and charts."""
    at = app_page(PAGE, timeout=60, open_sections=False)  # as a visit shows it: the sections below are closed
    at.run()
    assert not at.exception
    title = "One output row, traced: n = 3 tokens of length d = 2"
    row = attention_row(n=3, d=2, seed=0)
    [table] = block_tables(at, title)
    assert list(table.index) == [1, 2, 3]
    assert table["score s₁ⱼ"].tolist() == pytest.approx(row["scores"].tolist())
    assert table["weight α₁ⱼ"].tolist() == pytest.approx(row["weights"].tolist())
    assert table["α₁ⱼ read back from b₁"].tolist() == pytest.approx(row["weights"].tolist())
    assert f"{row['b'][0]:.2f}" in next(m.value for m in at.markdown if "the output row is $b_1" in m.value)
    sentence = next(m.value for m in at.markdown if "The attacker does not know" in m.value)
    assert "gives 6 numbers for the 6 unknowns" in sentence
    opens = position(at, starts(f"**{title}"))
    assert position(at, starts("**Question.**")) < opens < position(at, of_type("slider"))
    assert opens < position(at, of_type("plotly_chart"))
