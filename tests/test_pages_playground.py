"""AppTest of the Playground: the three toys and their Python side, what a move sent back does (kept,
or refused with the last valid state kept), the glossary on hover, and the movie map of a saved run."""

from __future__ import annotations

import numpy as np
import pytest
from apptest import app_page, assert_figures_labelled, figure
from streamlit.testing.v1 import AppTest

from fmlib import toy
from fmlib.glossary import GLOSSARY

PAGE = "app_pages/playground.py"


def test_the_page_mounts_three_toys_and_shows_their_starting_scores_from_fmlib():
    at = app_page(PAGE, dataset="synthetic")
    at.run()
    assert not at.exception
    mounted = [e.key for e in at.get("bidi_component")] or [
        e.key for e in at.main if e.key and e.key.startswith("toy_")
    ]
    assert {"toy_fm", "toy_fwfm", "toy_dplr"} <= set(mounted)
    start = toy.scores(toy.default_state()["V"])
    for k in range(3):  # the FwFM and DPLR toys start at the FM
        assert np.allclose(at.dataframe[k].value.to_numpy(), start)
    assert any("no movies" in i.value for i in at.info), "synthetic data: the movie map asks for MovieLens"


def test_every_symbol_of_the_page_shows_its_glossary_definition_on_hover():
    at = app_page(PAGE, dataset="synthetic")
    at.run()
    helps = {m.value: m.help for m in at.markdown if m.help}
    for key in ("ŷ", "R", "ρ", "U", "ω", "d", "e_f"):
        term = GLOSSARY[key]
        assert helps.get(f"${term.latex}$", "").startswith(f"**{term.name}.** {term.definition}"), key


def receiving(sent: dict | None = None, model: str = "fm"):
    """A script that keeps the toy's starting state (version 1), then gets ``sent`` from the browser
    (``receive``) and shows the message, the kept state's Ann x and the version."""

    def script(model, sent):
        import streamlit as st

        from app_pages._playground import _keys, receive
        from fmlib import toy

        _, state_key, version_key, message_key = _keys(model)
        if state_key not in st.session_state:
            st.session_state[state_key] = toy.default_state()
            st.session_state[version_key] = 1
            receive(model, sent)
        kind, text = st.session_state.get(message_key, ("info", "nothing"))
        getattr(st, kind)(text)
        st.text(f"{st.session_state[state_key]['V'][0][0]} {st.session_state[version_key]}")

    at = AppTest.from_function(script, args=(model, sent), default_timeout=30)
    at.run()
    assert not at.exception
    return at


def test_a_released_move_is_kept_and_python_says_how_it_changed_the_scores():
    state = toy.default_state()
    state["V"] = toy.move_toward(state["V"], "Ann", "Alien", 0.5).tolist()
    at = receiving({"state": state, "focus": ["Ann", "Alien"], "n": 1})
    assert "Your move of Ann changed Ann×Alien by -0.30 (4.71 → 4.41)" in at.success[0].value
    assert "the largest change" not in at.success[0].value, "Ann × Alien changed most"


def test_an_r_edit_names_the_entry_and_the_largest_other_change():
    state = toy.default_state()
    state["R"][1][2] = state["R"][2][1] = -1.0
    at = receiving({"state": state, "focus": ["Bob", "Titanic"], "n": 3}, model="fwfm")
    assert at.success[0].value.startswith("Your move of R[movie, genre] changed Bob×Titanic by ")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"V": "nan"}, "V: expected 7×2 numbers"),
        ({"Ann": float("nan")}, "Ann x: nan is not a finite number"),
        ({"Ann": 4.0}, "Ann x: 4 is out of range; use a number in [-1.5, 1.5]"),
        ({"R": 5.0}, "R[user, movie]: 5 is out of range"),
    ],
)
def test_a_bad_state_from_the_browser_is_refused_and_the_last_valid_one_stays(bad, message):
    state = toy.default_state()
    if "V" in bad:
        state["V"] = bad["V"]
    if "Ann" in bad:
        state["V"][0][0] = bad["Ann"]
    if "R" in bad:
        state["R"][0][1] = state["R"][1][0] = bad["R"]
    at = receiving({"state": state, "focus": ["Ann", "Alien"], "n": 2})
    assert message in at.error[0].value and "The last valid state stays." in at.error[0].value
    kept, version = at.text[0].value.split()
    assert float(kept) == toy.EMBEDDING["Ann"][0], "the starting state is kept"
    assert int(version) != 1, "a new version: the browser draws the kept state again"


@pytest.fixture
def saved_fm_runs(tmp_path, monkeypatch):
    """Save an FM run of seed 0 on MovieLens 100K (2 epochs) into this test's run store; returns a
    function that saves seed 1 of the same recipe."""
    from fmlib.data import movielens, split
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    try:
        data = split(movielens.load("ml-100k"), seed=0)
    except Exception as err:
        pytest.skip(f"MovieLens 100K is not available here: {err}")
    store = RunStore()

    def save(seed: int) -> str:
        return store.save(train_model("fm", data, TrainConfig(epochs=2, lr=1e-2, seed=seed), dim=4), f"fm-seed{seed}")

    save(0)
    return save


def test_the_movie_map_of_a_saved_run_then_the_agreement_of_a_second_seed(saved_fm_runs):
    at = app_page(PAGE, dataset="ml-100k", run_id="fm-seed0")
    at.run()
    assert not at.exception and not at.error
    fig = figure(at, 0)
    assert "principal components" in fig["layout"]["title"]["text"] and assert_figures_labelled(at) == 1
    assert int(fig["layout"]["title"]["text"].split()[0]) > 100, "the movies rated 20 times or more"
    assert {trace["name"] for trace in fig["data"]} >= {"Drama", "Comedy", "Action"}, "a trace per first genre"
    top, bottom = at.dataframe[-2].value, at.dataframe[-1].value
    assert list(top["bias"]) == sorted(top["bias"], reverse=True) and top["bias"].iloc[0] > bottom["bias"].iloc[0]
    assert any(b.label == "Train seed 1 of the same recipe (not saved)" for b in at.button)
    saved_fm_runs(1)
    at.run()
    assert not at.exception
    metrics = {m.label: float(m.value) for m in at.metric}
    assert -1 <= metrics["Spearman ρ of the movie biases"] <= 1 and metrics["movies compared"] > 100
    assert any(m.value.startswith("Seeds 0 and 1: Over ") for m in at.markdown)


def test_a_link_with_a_minimum_the_page_does_not_offer_falls_back_with_a_note(saved_fm_runs):
    at = app_page(PAGE, dataset="ml-100k", run_id="fm-seed0")
    at.query_params["map_min_ratings"] = "7"
    at.run()
    assert not at.exception
    assert any("The link's map_min_ratings = '7' is not valid" in w.value for w in at.warning)
    assert at.select_slider(key="map_min_ratings").value == 20
