"""A real browser follows the lesson as a class would, in projector mode at 1280×720 and at 150 % zoom.

At every stop: the question and its choices are above the fold, no button's label is cut; a guess, Reveal, then the
stop's prepared link opens its page with no exception, the view the stop describes drawn (Field interactions: the
ρ slider and the whole heatmaps above the fold, no two field names on an axis overlapping; a section the link opens in
view; a page's main figure wholly in view; no chart text cut or run into another),
and reloading the lesson's URL returns to the stop with the guess still there.
Screenshots of each stop's linked view go to tests/screenshots/lesson/ (ignored by git). The app server and Chromium
are the session's (browser_app.py); a wait is for a state of the page (``settle``, a scroll ``still``), never for a
fixed time.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from apptest import on_demand_keys
from browser_app import CHROMIUM, ROOT, act, settle, still
from patience import ms
from test_browser_projector import CHART_TEXT_PROBLEMS, CHARTS_DRAWN, SCREENS, cut_buttons, opened

from app_pages._view import LESSON_VIEW
from fmapp.lessons import lesson_files, load_lesson

SHOTS = ROOT / "tests" / "screenshots" / "lesson"
STOPS = load_lesson(lesson_files()[0]).stops

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is missing: `make browser-deps`"),
]


@pytest.fixture(scope="module")
def server(app_server):
    """The session's app server, with no starter runs: none of the MovieLens runs the stops name is in its store
    (browser_app.saved_runs holds tiny runs on synthetic data and two FMs on MovieLens), so that the class trains
    the Field interactions page's FwFM as on a fresh server."""
    return app_server.url


def opened_sections(stop) -> list[str]:
    """The sections drawn on demand that the stop's link opens (``key=true``)."""
    return [key for key in on_demand_keys(f"app_pages/{stop.page}.py") if stop.params.get(key) == "true"]


# The pairs of tick labels of one axis of a chart (the element it is called on) whose boxes overlap: field names
# that run into each other, as a heatmap of 12 fields drew them in a short figure with the projector's larger text.
TICKS_MEET = """(chart) => {
  const pairs = [];
  for (const axis of chart.querySelectorAll(".xaxislayer-above, .yaxislayer-above")) {
    const ticks = [...axis.querySelectorAll("text")].map((t) => [t.textContent, t.getBoundingClientRect()]);
    ticks.forEach(([a, b], i) => ticks.slice(i + 1).forEach(([c, d]) => {
      if (b.left < d.right - 1 && d.left < b.right - 1 && b.top < d.bottom - 1 && d.top < b.bottom - 1)
        pairs.push(`${a} / ${c}`);
    }));
  }
  return pairs;
}"""


def below_fold(tab, locator, height: int) -> float:
    box = locator.bounding_box()
    assert box is not None, "not drawn"
    return box["y"] + box["height"] - height


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_stop_fits_the_room_and_its_prepared_link_opens_the_described_view(server, window, screen):
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    height = SCREENS[screen][0]["height"]
    tab = opened(window, f"{server}/lesson?projector=true", screen)
    drawn = {}  # page -> seconds from the click on the prepared link to the page drawn and idle (reported only)
    for number, stop in enumerate(STOPS, 1):
        where = f"stop {number} at {screen}"
        expect(tab.get_by_text(f"Stop {number} of {len(STOPS)}")).to_be_visible()
        settle(tab)
        choices = tab.locator("[data-testid='stMain'] [data-testid='stRadio']").first
        assert below_fold(tab, choices, height) <= 0, f"{where}: the choices are below the fold"
        assert not cut_buttons(tab), f"{where}: buttons whose label is cut: {cut_buttons(tab)}"
        act(tab, choices.locator("[data-testid='stRadioOption']").first.click)
        act(tab, tab.get_by_role("button", name="Reveal", exact=True).click)
        prepared = tab.get_by_role("button", name=re.compile("page, prepared$"))
        expect(prepared).to_be_visible()  # the answer may load the data set
        settle(tab)
        lesson_url = tab.url  # with the guesses: a reload (a new session) must find them there
        start = time.monotonic()
        prepared.click()
        tab.wait_for_function(f"() => location.pathname.endsWith('/{stop.page}')")  # no page load
        settle(tab)
        drawn[f"stop {number}, {stop.page}"] = time.monotonic() - start
        errors = tab.locator("[data-testid='stException']")
        assert errors.count() == 0, f"{where}: {stop.page} shows {errors.first.inner_text()[:300]}"
        if stop.page == "field_interactions":
            tuned = tab.get_by_role("button", name=re.compile("^Train a tuned FwFM"))
            if tuned.count():  # no starter runs on this test server: the student trains the tuned preset's FwFM
                tuned.click()
            heatmaps = tab.locator("[data-testid='stMain'] .st-key-heatmaps .js-plotly-plot")  # the learned R's
            expect(heatmaps).to_be_visible(timeout=ms(400))  # trained once a machine (fmlib.trainings), then kept
            settle(tab)
            slider = tab.locator("[data-testid='stMain'] [data-testid='stSlider']").first
            assert below_fold(tab, slider, height) <= 0, f"{where}: the ρ slider is below the fold"
            top = heatmaps.bounding_box()["y"]  # a 400 px chart cannot fit under the controls at 480 px: its title must
            assert top < height - 100, f"{where}: the heatmaps start at {top:.0f} px, below a {height} px screen"
            meet = heatmaps.evaluate(TICKS_MEET)
            assert not meet, f"{where}: field names run together: {meet}"
        view = tab.locator(f"[data-testid='stMain'] .st-key-{LESSON_VIEW}")
        for key in opened_sections(stop):
            box = tab.locator(f"[data-testid='stMain'] .st-key-{key}").bounding_box()
            assert box is not None, f"{where}: the link did not open the section {key}"
        # the page starts at its figure (the box keyed LESSON_VIEW: inside an opened section, or the page's main one),
        # else at the section the link opened
        looked_at = [f".st-key-{LESSON_VIEW}"] if view.count() else [f".st-key-{k}" for k in opened_sections(stop)]
        for selector in looked_at:
            tab.wait_for_function(CHARTS_DRAWN)  # the arrival follows it while what lies above is drawn:
            still(tab, f"[data-testid='stMain'] {selector}")  # its last scroll has settled
            box = tab.locator(f"[data-testid='stMain'] {selector}").bounding_box()
            assert 0 <= box["y"] < height - 100, f"{where}: {selector} starts at {box['y']:.0f} px, out of view"
            if selector.endswith(LESSON_VIEW):  # the whole figure, drawn, at both screens
                tab.wait_for_function(CHARTS_DRAWN)
                box = tab.locator(f"[data-testid='stMain'] {selector}").bounding_box()
                bottom = box["y"] + box["height"]
                assert bottom <= height, f"{where}: the figure ends at {bottom:.0f} px, below the fold at {height} px"
        tab.wait_for_function(CHARTS_DRAWN)
        assert not tab.evaluate(CHART_TEXT_PROBLEMS), f"{where}: {tab.evaluate(CHART_TEXT_PROBLEMS)}"
        tab.screenshot(path=str(SHOTS / f"stop {number} {stop.page} {screen}.png"))
        tab.goto(lesson_url)
        expect(tab.get_by_text(f"Stop {number} of {len(STOPS)}")).to_be_visible()
        settle(tab)
        assert tab.locator("[data-testid='stMain'] [data-testid='stRadio'] input").first.is_checked(), (
            f"{where}: the guess is gone after a reload"
        )
        if number == len(STOPS):
            report = "\n".join(f"{visit}: {seconds:.1f} s" for visit, seconds in drawn.items())
            (SHOTS / f"drawn after the prepared link {screen}.txt").write_text(report + "\n")
        if number < len(STOPS):
            act(tab, tab.get_by_role("button", name="Next ▶").click)
            tab.screenshot(path=str(SHOTS / f"stop {number + 1} lesson {screen}.png"))
