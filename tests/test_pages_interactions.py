"""AppTests for app_pages/field_interactions.py (synthetic data, tiny runs); the Ranking page's are in test_pages_ranking.py."""

import time

from apptest import app_page, figure, wait_for_training

from fmlib.data import split, synthetic
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


def page(name, **state):
    at = app_page(f"app_pages/{name}", timeout=60, **{"dataset": "synthetic", **state})
    at.run()
    assert not at.exception
    return at


def saved_run(name, **hp):
    data = split(synthetic.make(synthetic.demo_R(), n_samples=4000, cardinality=20, seed=0), seed=0)
    run = train_model(name, data, TrainConfig(epochs=1), dim=4, **hp)
    return RunStore().save(run)


def test_interactions_page_without_a_run_offers_a_quick_fwfm():
    at = page("field_interactions.py")
    assert any("No saved run is selected" in i.value for i in at.info)
    assert not at.get("plotly_chart")
    wait_for_training(at.button(key="quick_train").click().run(), key="interactions_quick_run_job")
    assert not at.exception and not at.error
    heatmaps = figure(at, 0)
    assert len(heatmaps["data"]) == 3 and heatmaps["data"][0]["x"][0] == "f0"
    assert any("% left" in m.label for m in at.metric)
    at.slider(key="rho").set_value(3).run()
    assert not at.exception and not at.error
    titles = [a["text"].replace("<br>", " ") for a in figure(at, 0)["layout"]["annotations"]]
    assert any("27 kept (96.4% left)" in t for t in titles)
    planted = figure(at, 1)
    assert [a["text"].replace("<br>", " ") for a in planted["layout"]["annotations"]] == [
        "planted R",
        "learned R, field scales aligned",
    ]
    (caption,) = [c.value for c in at.caption if "matches the planted one" in c.value]
    assert float(caption.rstrip(".").split()[-1]) >= 0.95


def test_interactions_page_on_a_saved_dplr_run_says_its_posthoc_dplr_is_exact_by_construction():
    run_id = saved_run("dplr", rank=2)
    at = page("field_interactions.py", run_id=run_id, fi_run=run_id)
    assert not at.error
    assert any("R implied by DPLR" in a["text"] for a in figure(at, 0)["layout"]["annotations"])
    (note,) = [i.value for i in at.info if "by construction" in i.value]
    assert "DPLR of rank ρ = 2 by construction" in note and "post-hoc DPLR of rank ρ ≥ 2 is exact" in note
    for rho in (2, 3):  # what the sentence says, on the page's own numbers
        at.slider(key="rho").set_value(rho).run()
        (error,) = [m.value for m in at.metric if m.label == "post-hoc DPLR: relative error"]
        assert error == "0.000", rho
    at.radio(key="method").set_value("nuclear").run()
    assert not at.exception and not at.error
    spectra = figure(at, 2)
    assert [t["name"] for t in spectra["data"]] == ["learned R", "R<sub>FM</sub> = 11ᵀ − I"]


def test_interactions_page_opens_on_the_fwfm_run_not_the_newer_dplr_one():
    """The starter runs: FwFM, then DPLR; the sidebar's default is the newest, the DPLR one."""
    fwfm_id = saved_run("fwfm")
    time.sleep(0.05)  # newer on disk: listed first
    dplr_id = saved_run("dplr", rank=2)
    assert RunStore().ids()[0] == dplr_id
    at = page("field_interactions.py", run_id=dplr_id)
    assert not at.error
    assert at.selectbox(key="fi_run").value == fwfm_id
    assert any(f"saved run **{fwfm_id}** (fwfm" in c.value for c in at.caption)
    titles = [a["text"] for a in figure(at, 0)["layout"]["annotations"]]
    assert "learned R" in titles and not any("DPLR" in t and "implied" in t for t in titles)
    assert not any("by construction" in i.value for i in at.info)
    assert any(f"The sidebar's run {dplr_id} is a DPLR run" in c.value for c in at.caption)
    at.selectbox(key="fi_run").set_value(dplr_id).run()  # the reader may still look at it, told what it is
    assert not at.exception and not at.error
    assert any("by construction" in i.value for i in at.info)


def test_interactions_page_with_only_a_dplr_run_offers_a_quick_fwfm_first():
    dplr_id = saved_run("dplr", rank=2)
    at = page("field_interactions.py", run_id=dplr_id)
    assert not at.error
    assert at.selectbox(key="fi_run").value != dplr_id and dplr_id in at.selectbox(key="fi_run").options[0]
    assert at.button(key="quick_train") and not at.get("plotly_chart")[1:]


def test_a_run_picked_in_the_sidebar_while_on_the_page_is_shown():
    fwfm_id = saved_run("fwfm")
    time.sleep(0.05)
    dplr_id = saved_run("dplr", rank=2)
    at = page("field_interactions.py", run_id=fwfm_id)
    assert at.selectbox(key="fi_run").value == fwfm_id
    at.session_state["run_id"] = dplr_id  # the sidebar's picker, changed
    at.run()
    assert not at.exception and at.selectbox(key="fi_run").value == dplr_id


def test_interactions_page_explains_a_run_that_is_not_field_weighted():
    at = page("field_interactions.py", run_id=saved_run("fm"))
    assert any("has no field interaction matrix R" in w.value for w in at.warning)
    assert at.button(key="quick_train")
