"""AppTests for app_pages/field_interactions.py (synthetic data, tiny runs); the Ranking page's are in test_pages_ranking.py."""

import base64
import json
import time

import numpy as np
import pytest
from apptest import app_page, wait_for_training

from fmlib import presets
from fmlib.analysis.budget_toy import ODD
from fmlib.analysis.interactions import budget, dplr_posthoc, interaction_matrix, prune, r_summary
from fmlib.analysis.pair_contribution import pair_contribution, sample_embeddings
from fmlib.data import load, split, synthetic
from fmlib.plots.interactions import PAIR_OUTLINE
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model

LINKED = ("heatmaps", "pair_errors", "planted")  # every heatmap figure of a learned R on the synthetic data


def page(name, **state):
    at = app_page(f"app_pages/{name}", timeout=60, **{"dataset": "synthetic", **state})
    at.run()
    assert not at.exception
    return at


def synthetic_split():
    """The app's synthetic data set (``app_pages._ui.load_data``), split 0."""
    return split(load("synthetic"), seed=0)  # the app's synthetic set


def saved_run(name, **hp):
    run = train_model(name, synthetic_split(), TrainConfig(epochs=1), dim=4, **hp)
    return RunStore().save(run)


def chart_keys(at) -> list[str]:
    """The keys of the page's plotly charts, top to bottom (a keyed element's id ends with its key)."""
    return [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]


def chart(at, key: str) -> dict:
    """The plotly chart with this key, as JSON."""
    (found,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    return json.loads(found.proto.spec)


def values(array) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(array, dict):
        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        return flat.reshape([int(n) for n in str(array.get("shape", len(flat))).split(",")])
    return np.asarray(array, dtype=float)


def pair_table(at):
    """The pair panel's table (the one dataframe with a column "term"), as a pandas DataFrame, or None."""
    found = [d.value for d in at.dataframe if "term" in d.value.columns]
    assert len(found) <= 1
    return found[0] if found else None


def outlined(fig: dict) -> set[tuple[str, int, int]]:
    """(axis, row, column) of every cell outlined in ``fig``."""
    return {(s["xref"], round(s["y0"] + 0.5), round(s["x0"] + 0.5)) for s in fig["layout"].get("shapes", [])}


def heatmap_axes(fig: dict) -> list[str]:
    return [t.get("xaxis", "x") for t in fig["data"] if t["type"] == "heatmap"]


def test_interactions_page_without_a_run_offers_a_quick_fwfm():
    at = page("field_interactions.py")
    assert any("No saved run is selected" in i.value for i in at.info)
    assert chart_keys(at) == ["toy"], "only the toy before a run is there"
    wait_for_training(at.button(key="quick_train").click().run(), key="interactions_quick_run_job")
    assert not at.exception and not at.error
    heatmaps = chart(at, "heatmaps")
    assert [t["type"] for t in heatmaps["data"]] == ["heatmap"] * 3 + ["scatter"] * 3  # the cells' click targets
    assert heatmaps["data"][0]["x"][0] == "f0"
    assert any("% left" in m.label for m in at.metric)
    at.slider(key="rho").set_value(3).run()
    assert not at.exception and not at.error
    titles = [a["text"].replace("<br>", " ") for a in chart(at, "heatmaps")["layout"]["annotations"]]
    assert any("27 kept (96.4% left)" in t for t in titles)
    planted = chart(at, "planted")
    assert [a["text"].replace("<br>", " ") for a in planted["layout"]["annotations"]] == [
        "planted R",
        "learned R, field scales aligned",
    ]
    (caption,) = [c.value for c in at.caption if "matches the planted one" in c.value]
    assert float(caption.rstrip(".").split()[-1]) >= 0.95


@pytest.mark.usefixtures("movielens_sample")
def test_on_movielens_without_a_saved_fwfm_the_page_trains_the_tuned_one():
    at = page("field_interactions.py", dataset="ml-100k")
    preset = presets.load("ml-100k", "fwfm", 8)
    name = "tuned FwFM (preset fwfm-8)"
    cost = f"about {preset['tuning']['epochs_used']} epochs"
    assert at.button(key="quick_train").label == f"Train a {name} on ml-100k ({cost})"
    wait_for_training(at.button(key="quick_train").click().run(), key="interactions_quick_run_job")
    assert not at.exception and not at.error
    run = at.session_state["interactions_quick_run"]
    assert run.config["hp"] == {**run.config["hp"], **preset["hp"]}  # the preset's hyperparameters
    assert {k: run.config["train"][k] for k in preset["train"]} == preset["train"]  # and its training settings
    assert any(f"a {name} trained here" in c.value for c in at.caption)
    R = interaction_matrix(run.model)
    (sentence,) = [m.value for m in at.markdown if m.value.startswith("**How far R is from the FM's:**")]
    assert sentence.endswith(r_summary(R, run.model.schema.names, "this FwFM"))
    again = page("field_interactions.py", dataset="ml-100k")  # another session: the training is kept, not its cost
    assert (
        again.button(key="quick_train").label == f"Train a {name} on ml-100k (kept on this machine: it loads at once)"
    )


def test_interactions_page_on_a_saved_dplr_run_says_its_posthoc_dplr_is_exact_by_construction():
    run_id = saved_run("dplr", rank=2)
    at = page("field_interactions.py", run_id=run_id, fi_run=run_id)
    assert not at.error
    assert any("R implied by DPLR" in a["text"] for a in chart(at, "heatmaps")["layout"]["annotations"])
    (note,) = [i.value for i in at.info if "by construction" in i.value]
    assert "DPLR of rank ρ = 2 by construction" in note and "post-hoc DPLR of rank ρ ≥ 2 is exact" in note
    for rho in (2, 3):  # what the sentence says, on the page's own numbers
        at.slider(key="rho").set_value(rho).run()
        (error,) = [m.value for m in at.metric if m.label == "post-hoc DPLR: relative error"]
        assert error == "0.000", rho
    at.radio(key="method").set_value("nuclear").run()
    assert not at.exception and not at.error
    spectra = chart(at, "eigen")
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
    titles = [a["text"] for a in chart(at, "heatmaps")["layout"]["annotations"]]
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
    assert at.button(key="quick_train") and chart_keys(at) == ["toy"]


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


def test_the_page_opens_with_the_toy_before_the_learned_R_and_in_projector_mode_keeps_it_one_click_away():
    run_id = saved_run("fwfm")
    at = page("field_interactions.py", run_id=run_id)
    assert chart_keys(at)[:3] == ["toy", "heatmaps", "pair_errors"]  # the toy first, Table 1 after the heatmaps
    toy = chart(at, "toy")
    titles = [a["text"].replace("\xa0", " ") for a in toy["layout"]["annotations"]]
    assert titles == ["R (10 pairs)", "pruned: 6 kept", "DPLR, ρ = 1"]
    fields = toy["data"][0]["y"]
    odd = {(axis, fields.index(ODD[0]), fields.index(ODD[1])) for axis in ("x", "x2", "x3")}
    assert outlined(toy) == odd | {(axis, g, f) for axis, f, g in odd}  # the odd pair the sentence names
    (sentence,) = [m.value for m in at.markdown if m.value.startswith("Pruning keeps the 6 largest")]
    assert f"{ODD[0]} × {ODD[1]} ({ODD[2]:+.2f}, outlined)" in sentence and "zeroes the other 4" in sentence
    assert [p.proto.popover.label for p in at.get("popover")] == ["Link to this view"]

    replayed = chart(at, "replay_R")  # the run's R, epoch by epoch, from its snapshots
    assert len(replayed["frames"]) == 2 and chart_keys(at).index("replay_R") > chart_keys(at).index("heatmaps")

    projected = page("field_interactions.py", run_id=run_id, projector=True)  # the lesson's view
    assert chart_keys(projected)[0] == "heatmaps" and "toy" not in chart_keys(projected), "the learned R comes first"
    run_picker = projected.selectbox(key="fi_run")  # in one row with the ρ slider: the heatmaps stay above the fold
    assert run_picker.value == run_id and projected.slider(key="rho")
    projected.button(key="fi_toy").click().run()  # and the toy is one click away, in a window over the page
    assert not projected.exception and chart_keys(projected).count("toy") == 1
    assert any(m.value.startswith("Pruning keeps the 6 largest") for m in projected.markdown)


def test_a_link_naming_a_run_opens_on_it_though_the_sidebar_picks_another_fwfm():
    """A lesson's stop links the starter FwFM (tuned preset); a newer FwFM of the class is the sidebar's pick."""
    starter, newer = saved_run("fwfm"), saved_run("fwfm")
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic", run_id=newer)
    at.query_params["fi_run"] = starter
    at.run()
    assert not at.exception and at.selectbox(key="fi_run").value == starter
    assert any(f"saved run **{starter}**" in c.value for c in at.caption)


def test_the_learned_R_is_drawn_around_the_fms_one_with_a_sentence_on_how_far_it_is_from_it():
    run_id = saved_run("fwfm")
    at = page("field_interactions.py", run_id=run_id)
    R = interaction_matrix(RunStore().load(run_id).model)
    names = [f"f{i}" for i in range(len(R))]
    (sentence,) = [m.value for m in at.markdown if m.value.startswith("**How far R is from the FM's:**")]
    assert sentence.endswith(r_summary(R, names, "this FwFM"))
    heatmaps = [t for t in chart(at, "heatmaps")["data"] if t["type"] == "heatmap"]
    shown = [R, prune(R, budget(len(R), 2)), dplr_posthoc(R, 2).R]  # learned, pruned, post-hoc DPLR at ρ = 2
    spread = max(np.abs(M - 1)[~np.eye(len(R), dtype=bool)].max() for M in shown)
    assert len(heatmaps) == 3
    for trace in heatmaps:  # one scale for the three, white at the FM's 1; the diagonal blank
        assert (trace["zmin"], trace["zmax"]) == pytest.approx((1 - spread, 1 + spread))
        assert np.isnan(values(trace["z"]).diagonal()).all()


def test_a_pair_picked_by_its_fields_is_outlined_in_every_heatmap_and_traced_in_one_rating():
    run_id = saved_run("fwfm")
    at = page("field_interactions.py", run_id=run_id)
    assert (at.selectbox(key="fi_f").value, at.selectbox(key="fi_g").value) == ("f0", "f4")  # context × item
    at.selectbox(key="fi_f").set_value("f2").run()
    at.selectbox(key="fi_g").set_value("f6").run()
    at.number_input(key="fi_sample").set_value(7).run()
    assert not at.exception and not at.error
    (link,) = [p.get("code")[0].value for p in at.get("popover") if p.proto.popover.label == "Link to this view"]
    assert "fi_f=f2&fi_g=f6&fi_sample=7" in link  # the pair and the rating are part of the view's link
    for key in LINKED:  # every heatmap of the page outlines (f2, f6) and its mirror, nothing else
        fig = chart(at, key)
        axes = heatmap_axes(fig)
        assert len(axes) >= 2
        assert outlined(fig) == {(axis, i, j) for axis in axes for i, j in ((2, 6), (6, 2))}, key
        assert len(fig["layout"]["shapes"]) == 2 * len(PAIR_OUTLINE) * len(axes)

    # the panel's numbers are fmlib's: the pair's term under the learned, pruned and post-hoc DPLR R for row 7
    run = RunStore().load(run_id)
    R = interaction_matrix(run.model)
    expected = pair_contribution(
        sample_embeddings(run.model.eval(), synthetic_split().valid, 7),
        {"learned R": R, "pruned (18 kept)": prune(R, budget(8, 2)), "post-hoc DPLR": dplr_posthoc(R, 2).R},
        2,
        6,
    )
    shown = pair_table(at)
    assert list(shown["R"]) == list(expected["R"])
    for column in ("R_fg", "inner", "term", "interaction", "score"):
        np.testing.assert_allclose(shown[column], expected[column], rtol=1e-9, err_msg=column)
    (notice,) = [m.value for m in at.markdown if m.value.startswith("**Notice:** pruning") and "this pair" in m.value]
    moved = expected["interaction"][1] - expected["interaction"][0]
    assert f"moves by {moved:+.3g} (pruned)" in notice
    assert any(m.value.startswith("**Rating 7**: target y = ") for m in at.markdown)

    at.slider(key="rho").set_value(3).run()  # a new budget: the same pair, a new pruned row
    assert list(pair_table(at)["R"])[1] == "pruned (27 kept)"
    assert outlined(chart(at, "heatmaps")) == {(a, i, j) for a in ("x", "x2", "x3") for i, j in ((2, 6), (6, 2))}


def test_the_pair_panel_explains_the_diagonal_and_a_rating_out_of_range():
    at = page("field_interactions.py", run_id=saved_run("fwfm"))
    at.selectbox(key="fi_g").set_value("f0").run()  # f0 × f0
    assert not at.exception and any("on R's diagonal, which the model never uses" in i.value for i in at.info)
    assert pair_table(at) is None
    at.selectbox(key="fi_g").set_value("f1").run()
    at.number_input(key="fi_sample").set_value(10**6).run()
    assert not at.exception
    assert any("validation rating: 1e+06 is out of range; use 0 to 399." in e.value for e in at.error)
    assert chart_keys(at)[:3] == ["toy", "heatmaps", "pair_errors"], "the rest of the page is still drawn"


def test_a_link_restores_the_pair_and_the_rating_and_a_bad_one_falls_back_with_a_note():
    run_id = saved_run("fwfm")
    at = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic", run_id=run_id)
    for key, value in {"fi_f": "f3", "fi_g": "f5", "fi_sample": "4"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.warning
    assert (at.selectbox(key="fi_f").value, at.selectbox(key="fi_g").value, at.number_input(key="fi_sample").value) == (
        "f3",
        "f5",
        4,
    )
    assert outlined(chart(at, "heatmaps")) == {(a, i, j) for a in ("x", "x2", "x3") for i, j in ((3, 5), (5, 3))}
    at.button(key="reset_view").click().run()
    assert (at.selectbox(key="fi_f").value, at.selectbox(key="fi_g").value, at.number_input(key="fi_sample").value) == (
        "f0",
        "f4",
        0,
    )

    bad = app_page("app_pages/field_interactions.py", timeout=60, dataset="synthetic", run_id=run_id)
    bad.query_params["fi_f"], bad.query_params["fi_sample"] = "nope", "-3"
    bad.run()
    assert not bad.exception and not bad.error
    notes = " ".join(w.value for w in bad.warning)
    assert "The link's fi_f = 'nope' is not valid" in notes and "The link's fi_sample = '-3' is not valid" in notes
    assert bad.selectbox(key="fi_f").value == "f0" and bad.number_input(key="fi_sample").value == 0


def test_in_projector_mode_the_page_shows_math_as_math():
    """No raw sub/superscripts outside $…$ with the toy in its window (plain mode: test_pages_math)."""
    from test_pages_math import check

    at = page("field_interactions.py", run_id=saved_run("fwfm"), projector=True)
    check(at.button(key="fi_toy").click().run())


def test_runs_of_few_fields_get_their_one_budget_or_a_reason():
    """m = 4: one budget below the 6 pairs (ρ = 1, no slider); m = 3: none, said in one line."""
    for m, blocks in ((4, 2), (3, 1)):
        data = split(synthetic.make(synthetic.block_R(m, blocks), n_samples=400, cardinality=5, seed=0), seed=0)
        run_id = RunStore().save(train_model("fwfm", data, TrainConfig(epochs=1, batch_size=100), dim=2), f"m{m}")
        at = page("field_interactions.py", run_id=run_id, fi_run=run_id)
        if m == 4:
            assert (
                not at.error and not at.slider and any("rank ρ = 1 (budget ρ(m+1) = 5" in x.value for x in at.markdown)
            )
            assert "pruned: 5 kept" in " ".join(a["text"] for a in chart(at, "heatmaps")["layout"]["annotations"])
            assert any("No rating to trace: its split cannot be rebuilt here" in c.value for c in at.caption)
        else:
            assert [e.value for e in at.error] == [
                "This run has m = 3 fields, so R has 3 pairs and the smallest budget, ρ(m+1) = 4 numbers, keeps "
                "them all: there is nothing to prune. Pick a run with 4 fields or more."
            ]
