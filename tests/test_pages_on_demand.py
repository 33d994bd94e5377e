"""AppTests of the sections a page draws on demand (``_view.on_demand``): closed on a visit and empty, drawn
when opened, opened by a link, and kept in "link to this view"."""

from __future__ import annotations

import pytest
from apptest import app_page, on_demand_keys, tiny_fwfm_run

from app_pages._ui import PAGES

PAGED = [(path, key) for path, *_ in PAGES for key in on_demand_keys(path)]
RUN_PAGES = ("app_pages/field_interactions.py", "app_pages/ranking.py")  # they stop early without a run


def test_the_seven_longest_pages_fold_their_later_sections():
    pages = {path for path, _ in PAGED}
    assert {f"app_pages/{p}.py" for p in ("rank_aware_fm", "gradient_growth", "attention_inversion", "train")} <= pages
    assert {f"app_pages/{p}.py" for p in ("ranking", "field_interactions", "playground")} <= pages


@pytest.mark.parametrize("path", sorted({path for path, _ in PAGED}))
def test_a_visit_draws_no_section_and_opening_one_draws_it(path):
    setup = {"dataset": "synthetic", "run_id": tiny_fwfm_run()} if path in RUN_PAGES else {}
    at = app_page(path, open_sections=False, **setup).run()
    assert not at.exception
    closed = [e for e in at.expander if not e.children]
    drawn_closed = {e.label for e in closed}
    keys = on_demand_keys(path)
    assert all(not at.session_state[key] for key in keys if key in at.session_state), "a visit opens none"
    first = keys[0]
    at.session_state[first] = True
    at.run()
    assert not at.exception
    opened = [e for e in at.expander if e.children and e.label in drawn_closed]
    assert len(opened) == 1, f"opening {first} draws exactly its own section"


def test_a_link_opens_a_section_and_link_to_this_view_keeps_it_open():
    at = app_page("app_pages/rank_aware_fm.py", open_sections=False)
    at.query_params["rafm_payoff"] = "true"  # as a lesson's prepared link or a copied link gives it
    at.run()
    assert not at.exception
    assert at.session_state["rafm_payoff"] is True
    assert not at.session_state["rafm_training"]
    link = next(p for p in at.get("popover") if p.proto.popover.label == "Link to this view").get("code")[0].value
    assert "rafm_payoff=true" in link and "rafm_training" not in link


def test_every_section_key_is_in_its_pages_url_state():
    """A section's key is declared in the page's URL state (``key=ON_DEMAND``): "link to this view" writes it only
    while it is open, and "Reset to defaults" closes it."""
    from pathlib import Path

    for path, key in PAGED:
        assert f"{key}=ON_DEMAND" in Path(path).read_text(), f"{path}: {key} is not declared in the page's UrlState"
