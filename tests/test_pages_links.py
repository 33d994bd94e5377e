"""AppTests that every view is a link: a URL restores the page's widgets, bad values fall back visibly."""

from __future__ import annotations

import re

import pytest
from apptest import ROOT, app_page, tiny_fwfm_run

from app_pages._ui import PAGES
from fmapp.lessons import lesson_files, load_lesson
from fmlib.train import quick_settings

QUICK, QUICK_HP = quick_settings("synthetic")  # the Train page's defaults on the synthetic data


def opened(path: str, params: dict, **state):
    """The page opened in a fresh session from a link carrying ``params``."""
    at = app_page(path, **state)
    for key, value in params.items():
        at.query_params[key] = str(value)
    return at.run()


def warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


def test_a_train_link_restores_every_setting():
    params = {"model": "dplr", "task": "click", "seed": 3, "epochs": 7, "lr": 0.02, "hp_dplr_dim": 8, "hp_dplr_rank": 3}
    at = opened("app_pages/train.py", params, dataset="synthetic")
    assert not at.exception and not at.warning
    assert at.selectbox(key="model").value == "dplr" and at.radio(key="task").value == "click"
    assert [at.number_input(key=k).value for k in ("seed", "epochs", "lr", "hp_dplr_dim", "hp_dplr_rank")] == [
        3,
        7,
        0.02,
        8,
        3,
    ]


def test_a_rank_set_link_restores_the_text():
    at = opened("app_pages/train.py", {"model": "rafm", "hp_rafm_ranks": "4,16"}, dataset="synthetic")
    assert not at.exception and at.text_input(key="hp_rafm_ranks").value == "4,16"


@pytest.mark.parametrize(
    ("params", "key", "default"),
    [
        ({"model": "xgboost"}, "model", "fm"),
        ({"epochs": "-3"}, "epochs", QUICK.epochs),
        ({"lr": "abc"}, "lr", QUICK.lr),
        ({"hp_fm_dim": "1e9"}, "hp_fm_dim", QUICK_HP["dim"]),
        ({"model": "rafm", "hp_rafm_ranks": "8,x"}, "hp_rafm_ranks", "8,32"),
    ],
)
def test_a_bad_train_link_value_falls_back_to_the_default_with_a_note(params, key, default):
    at = opened("app_pages/train.py", params, dataset="synthetic")
    assert not at.exception and not at.error
    assert f"The link's {key} = {params[key]!r} is not valid" in warnings(at)
    assert at.session_state[key] == default


def test_the_note_stays_until_the_setting_is_changed():
    at = opened("app_pages/train.py", {"epochs": "0"}, dataset="synthetic")
    assert "epochs" in warnings(at)
    at.run()
    assert "epochs" in warnings(at)
    at.number_input(key="epochs").set_value(5).run()
    assert not at.warning


def test_reset_to_defaults_and_the_link_to_this_view():
    at = opened("app_pages/train.py", {"model": "fwfm", "epochs": 7, "hp_fwfm_dim": 6}, dataset="synthetic")
    link = at.code[-1].value
    assert "model=fwfm" in link and "epochs=7" in link and "hp_fwfm_dim=6" in link and "dataset=synthetic" in link
    at.button(key="reset_view").click().run()
    assert not at.exception
    assert at.selectbox(key="model").value == "fm" and at.number_input(key="epochs").value == QUICK.epochs
    assert at.session_state["hp_fwfm_dim"] == QUICK_HP["dim"]
    assert "model=" not in at.code[-1].value and "epochs=" not in at.code[-1].value


def test_a_derivation_link_opens_its_step_and_the_step_survives_leaving_the_page():
    at = opened("app.py", {"deriv_derivation": "fm-gradient", "deriv_step": 7}, dataset="synthetic")
    at.switch_page("app_pages/derivations.py").run()
    assert not at.exception and "The link's" not in warnings(at)
    assert at.selectbox(key="deriv_derivation").value == "fm-gradient" and at.slider(key="deriv_step").value == 7
    at.button(key="deriv_next").click().run()
    at.switch_page("app_pages/train.py").run()
    at.switch_page("app_pages/derivations.py").run()
    assert at.slider(key="deriv_step").value == 8


@pytest.mark.parametrize(
    ("params", "key"),
    [({"deriv_derivation": "no-such-derivation"}, "deriv_derivation"), ({"deriv_step": "99"}, "deriv_step")],
)
def test_a_bad_derivation_link_falls_back_with_a_note(params, key):
    at = opened("app_pages/derivations.py", params)
    assert not at.exception
    assert f"The link's {key} = {params[key]!r} is not valid" in warnings(at)
    assert at.slider(key="deriv_step").value == 1


def test_a_gradient_growth_link_restores_its_settings_and_bad_values_fall_back():
    params = {"m_max": 16, "log_y": "false", "density": 0.6, "layout": "3, 3", "M": 1.2, "d": -3, "S": 99}
    at = opened("app_pages/gradient_growth.py", params)
    assert not at.exception and not at.error
    assert at.slider(key="m_max").value == 16 and at.toggle(key="log_y").value is False
    assert at.slider(key="density").value == 0.6 and at.text_input(key="layout").value == "3, 3"
    assert at.number_input(key="M").value == 1.2
    assert at.number_input(key="d").value == 8 and at.slider(key="S").value == 20.0
    assert "The link's d = '-3' is not valid" in warnings(at) and "The link's S = '99' is not valid" in warnings(at)


@pytest.mark.parametrize(
    ("key", "value", "default"),
    [
        ("eta", "-1", 1.0),
        ("theta", "0", 1.0),
        ("alpha", "1e999", 1.0),
        ("gamma", "abc", 1.0),
        ("M", "-2", 1.5),
        ("M", "1e9", 1.5),
        ("eps", "5", 0.25),
        ("eps", "nan", 0.25),
        ("exponent", "7", 1),
    ],
)
def test_a_bad_gradient_growth_bound_in_a_link_falls_back_to_the_default_with_a_note(key, value, default):
    at = opened("app_pages/gradient_growth.py", {key: value})
    assert not at.exception and not at.error
    assert f"The link's {key} = {value!r} is not valid" in warnings(at)
    assert at.number_input(key=key).value == default
    assert at.get("plotly_chart"), "the gradient chart is drawn with the default"


def test_several_bad_gradient_growth_bounds_in_one_link_each_fall_back_with_a_note():
    at = opened("app_pages/gradient_growth.py", {"eta": "-1", "M": "1e9", "eps": "x", "alpha": "1000"})
    assert not at.exception and not at.error
    for key, value in (("eta", "-1"), ("M", "1e9"), ("eps", "x")):
        assert f"The link's {key} = {value!r} is not valid" in warnings(at)
    assert [at.number_input(key=k).value for k in ("eta", "M", "eps", "alpha")] == [1.0, 1.5, 0.25, 1000.0]


@pytest.mark.parametrize(
    ("page", "params", "key", "default"),
    [
        ("lesson", {"lesson": "../intro"}, "lesson", "intro"),
        ("lesson", {"stop": "99"}, "stop", 1),
        ("lesson", {"stop": "x"}, "stop", 1),
        ("derivations", {"deriv_show_check": "maybe"}, "deriv_show_check", False),
        ("derivations", {"deriv_derivation": "fm-gradient", "deriv_step": 8, "deriv_wrong": "2"}, "deriv_wrong", False),
        (
            "derivations",
            {"deriv_derivation": "rafm-proposition-s3", "deriv_step": 7, "deriv_delta": "-1"},
            "deriv_delta",
            2.0,
        ),
        (
            "derivations",
            {"deriv_derivation": "rafm-proposition-s3", "deriv_step": 7, "deriv_label": "5"},
            "deriv_label",
            1,
        ),
        ("gradient_growth", {"sample": "999"}, "sample", 0),
        ("gradient_growth", {"sample": "-1"}, "sample", 0),
    ],
)
def test_every_other_tampered_link_value_falls_back_with_a_note(page, params, key, default):
    at = opened(f"app_pages/{page}.py", params, dataset="synthetic")
    assert not at.exception and not at.error
    assert f"The link's {key} = {params[key]!r} is not valid" in warnings(at)
    assert at.session_state[key] == default


@pytest.fixture
def fwfm_run_id():
    return tiny_fwfm_run(author="Ada")


@pytest.mark.parametrize("path", [page[0] for page in PAGES])
def test_every_page_has_a_link_to_this_view_and_a_reset_to_defaults(path, fwfm_run_id):
    at = opened("app.py", {"dataset": "synthetic", "run_id": fwfm_run_id})  # the run pages draw all once it is there
    at.switch_page(path).run()
    assert not at.exception
    assert [b for b in at.button if b.key == "reset_view" and b.label == "Reset to defaults"], "no reset"
    links = [p for p in at.get("popover") if p.proto.popover.label == "Link to this view"]
    assert len(links) == 1 and "dataset=synthetic" in links[0].get("code")[0].value


def test_a_field_interactions_link_restores_rho_and_method(fwfm_run_id):
    at = opened(
        "app_pages/field_interactions.py", {"rho": 3, "method": "nuclear"}, dataset="synthetic", run_id=fwfm_run_id
    )
    assert not at.exception and not at.error
    assert at.slider(key="rho").value == 3 and at.radio(key="method").value == "nuclear"


@pytest.mark.parametrize(("key", "value"), [("rho", "-2"), ("method", "svd")])
def test_a_bad_field_interactions_link_falls_back_with_a_note(fwfm_run_id, key, value):
    at = opened("app_pages/field_interactions.py", {key: value}, dataset="synthetic", run_id=fwfm_run_id)
    assert not at.exception and not at.error
    assert f"The link's {key} = {value!r} is not valid" in warnings(at)
    assert at.slider(key="rho").value == 2 and at.radio(key="method").value == "eig"


def test_a_run_link_selects_that_run_and_its_author_in_the_sidebar(fwfm_run_id):
    at = opened("app.py", {"run_id": fwfm_run_id, "dataset": "synthetic"})
    assert not at.exception and "The link's" not in warnings(at)
    assert at.sidebar.selectbox(key="run_id").value == fwfm_run_id
    assert at.session_state["run_owner"] == "Ada"


def test_a_run_link_selects_an_older_run_of_its_author_not_the_newest(fwfm_run_id):
    newer = tiny_fwfm_run(author="Ada")  # Ada's newest: the sidebar's default for her runs
    assert newer != fwfm_run_id
    at = opened("app.py", {"run_id": fwfm_run_id, "dataset": "synthetic"})
    assert not at.exception and "The link's" not in warnings(at)
    assert at.sidebar.selectbox(key="run_id").value == fwfm_run_id


@pytest.mark.parametrize("run_id", ["deleted-run", "../../etc/passwd", "a/b"])
def test_a_stale_or_tampered_run_link_falls_back_with_a_note_on_the_page(fwfm_run_id, run_id):
    at = opened("app.py", {"run_id": run_id, "dataset": "synthetic"})
    assert not at.exception
    assert f"The link's run_id = {run_id!r} is not valid" in warnings(at)
    assert "run_id" not in at.session_state  # the default: no run (the only saved one is another author's)
    from fmlib.runs import RunStore

    assert RunStore().ids() == [fwfm_run_id], "nothing written"


@pytest.mark.parametrize(("key", "value"), [("dataset", "ml-1b"), ("projector", "maybe")])
def test_a_bad_sidebar_link_value_falls_back_with_a_note(key, value):
    at = opened("app.py", {key: value})
    assert not at.exception
    assert f"The link's {key} = {value!r} is not valid" in warnings(at)


def test_a_ranking_link_restores_the_catalogue_size_and_a_bad_one_falls_back():
    at = opened("app_pages/ranking.py", {"catalogue": 10000}, dataset="synthetic")
    assert not at.exception and at.select_slider(key="catalogue").value == 10000
    at = opened("app_pages/ranking.py", {"catalogue": 7}, dataset="synthetic")
    assert not at.exception and at.select_slider(key="catalogue").value == 1000
    assert "The link's catalogue = '7' is not valid" in warnings(at)


def test_a_ranking_link_keeps_the_user_in_the_link_to_this_view_before_the_query_is_drawn():
    at = opened("app_pages/ranking.py", {"user": 42, "k": 5}, dataset="synthetic")
    link = at.code[0].value
    assert "user=42" in link and "k=5" in link


def test_an_inversion_link_restores_its_settings_and_bad_values_fall_back():
    params = {"inv_n": 3, "inv_gamma": "0.01", "inv_seed": 5, "inv_count": 50, "inv_d": 99, "inv_lr": "7"}
    at = opened("app_pages/attention_inversion.py", params)
    assert not at.exception and not at.error
    assert at.slider(key="inv_n").value == 3 and at.select_slider(key="inv_gamma").value == 0.01
    assert at.number_input(key="inv_seed").value == 5 and at.select_slider(key="inv_count").value == 50
    assert at.slider(key="inv_d").value == 3 and at.select_slider(key="inv_lr").value == 0.05
    assert "The link's inv_d = '99' is not valid" in warnings(
        at
    ) and "The link's inv_lr = '7' is not valid" in warnings(at)


def test_a_rank_set_link_on_the_rafm_page_falls_back_when_not_increasing():
    at = opened("app_pages/rank_aware_fm.py", {"rafm_ranks": "32,8"}, dataset="synthetic")
    assert not at.exception and not at.error
    assert at.text_input(key="rafm_ranks").value == "8,32" and "The link's rafm_ranks = '32,8'" in warnings(at)


def lesson_links():
    return [
        pytest.param(stop.page, stop.params, id=f"{path.stem}-{number}-{stop.page}")
        for path in lesson_files()
        for number, stop in enumerate(load_lesson(path).stops, 1)
        if stop.page not in ("field_interactions", "ranking")  # these draw their settings once a run is there
    ]


@pytest.mark.parametrize(("page", "params"), lesson_links())
def test_every_lesson_link_opens_its_page_in_the_prepared_state(page, params):
    page_params = {key: value for key, value in params.items() if key != "dataset"}  # the sidebar's, not the page's
    at = opened(f"app_pages/{page}.py", page_params, open_sections=False, dataset="synthetic")  # the link opens them
    assert not at.exception and "The link's" not in warnings(at)
    for key, value in page_params.items():
        shown = at.session_state[key]
        assert (str(shown).lower() if isinstance(shown, bool) else str(shown)) == str(value), key


def test_the_lesson_links_to_run_pages_name_only_settings_those_pages_bind():
    for path in lesson_files():
        for stop in load_lesson(path).stops:
            if stop.page in ("field_interactions", "ranking"):
                source = (ROOT / "app_pages" / f"{stop.page}.py").read_text()
                for key in set(stop.params) - {"dataset"}:  # in the page's UrlState
                    assert re.search(rf"\b{key}=(Bound\(|ON_DEMAND)", source), (stop.page, key)


def test_the_pages_bind_widgets_and_check_links_only_through_their_url_state():
    """Each bound widget's key, default and check are written once, in its page's ``UrlState`` table (a default or
    a check known only at run time where ``UrlState.widget`` draws it): no page binds a widget or checks a link
    value by hand beside it."""
    for path in [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]:
        if path.name in ("_view.py", "_ui.py"):  # the URL state itself, and bounded_number, a widget that applies it
            continue
        source = path.read_text()
        assert 'bind="query-params"' not in source, path.name
        assert not re.search(r"\b(link_check|checked_link|unless_set)\(", source), path.name


@pytest.mark.parametrize(
    ("page", "params", "key"),
    [
        ("attention_inversion", {"inversion_measured": "<script>alert(1)</script>"}, "inversion_measured"),
        ("gradient_growth", {"theorem_section": "1e400"}, "theorem_section"),
    ],
)
def test_a_link_value_no_widget_would_take_leaves_the_url_with_a_note(page, params, key):
    at = opened(f"app_pages/{page}.py", params, dataset="synthetic", open_sections=False)
    assert not at.exception and key not in at.query_params
    assert f"The link's {key} = {params[key]!r} is not valid" in warnings(at)
    assert not at.html or "<script>alert" not in " ".join(h.proto.body for h in at.html)


@pytest.fixture
def doubly_set(monkeypatch) -> list[str]:
    """The keys of the widgets drawn with a default value while the session also held a value set for them
    (Streamlit logs that once per process: here each is noted, every time)."""
    import streamlit.elements.lib.policies as policies

    keys, rules = [], policies.check_session_state_rules

    def noting(default_value, key, writes_allowed=True):
        if key is not None and default_value is not None and policies.get_session_state().is_new_state_value(key):
            keys.append(key)
        return rules(default_value, key, writes_allowed)

    monkeypatch.setattr(policies, "check_session_state_rules", noting)
    return keys


@pytest.mark.parametrize("path", [page[0] for page in PAGES])
def test_reset_to_defaults_sets_the_widgets_without_giving_them_a_default_too(path, fwfm_run_id, doubly_set):
    at = opened("app.py", {"dataset": "synthetic", "run_id": fwfm_run_id})
    at.switch_page(path).run()
    [reset] = [b for b in at.button if b.key == "reset_view"]
    reset.click().run()
    assert not at.exception and not doubly_set, f"drawn with a default and a value the reset set: {doubly_set}"


def test_a_link_falls_back_without_giving_the_widget_a_default_too(fwfm_run_id, doubly_set):
    """The fallback is set in the session on the rerun after the link is read, just before the widget is drawn."""
    at = opened("app_pages/field_interactions.py", {"fi_sample": "-1"}, dataset="synthetic", run_id=fwfm_run_id)
    assert not at.exception and "The link's fi_sample = '-1' is not valid" in warnings(at)
    assert not doubly_set, f"drawn with a default and the link's fallback: {doubly_set}"
