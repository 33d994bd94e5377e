"""A real browser on the Playground: drag a point, move one with the keys, edit R, U and ω, type bad numbers.

The scores are computed in the browser on every movement (no server round trip); this test drags
Ann's point halfway toward Alien's and reads the updated score, checks it against fmlib.toy on the
coordinates the browser shows, checks the lesson's answer (down), and measures how long a movement
takes to update the scores: in the page (from the pointer event's time stamp to the scores written,
and to the next animation frame) and from Playwright (a mouse move sent until the new score is
read back). Latencies go to tests/screenshots/playground/latency.json and are printed — a measurement
to report, not a timed assertion. Screenshots of each view go to tests/screenshots/playground/. The app server and
Chromium are the session's (browser_app.py); a wait is for a state of the page (``settle``), never for a fixed time.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time

import numpy as np
import pytest
from browser_app import CHROMIUM, ROOT, new_tab, settle

from fmlib import toy

SHOTS = ROOT / "tests" / "screenshots" / "playground"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is missing: `make browser-deps`"),
]


@pytest.fixture(scope="module")
def server(app_server):
    """The session's app server; its store holds two short FM runs on MovieLens 100K (seeds 0 and 1, same recipe)
    when the data is there, so that the movie map and the two-seed agreement are drawn (browser_app.saved_runs);
    without MovieLens the toy is tested all the same."""
    return app_server.url, app_server.movies


def idle(tab) -> None:
    settle(tab)


@pytest.fixture(scope="module")
def tab(server, browser):
    page = new_tab(browser, {"width": 1400, "height": 1000})
    page.sent_to_server = []  # the times of the messages the page sends over Streamlit's websocket
    page.on("websocket", lambda ws: ws.on("framesent", lambda _: page.sent_to_server.append(time.perf_counter())))
    page.goto(f"{server[0]}/playground")
    idle(page)
    page.wait_for_selector(".toy[data-model='fm'] .pt[data-name='Ann']")
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield page
    page.context.close()


def toy_of(tab, model: str):
    return tab.locator(f".toy[data-model='{model}']")


def score(box, user: str, movie: str) -> float:
    return float(box.locator(f"td.score[data-pair='{user}|{movie}'] .value").inner_text())


def centre(locator) -> tuple[float, float]:
    b = locator.locator("circle").bounding_box()
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


def shown_V(box) -> np.ndarray:
    """The coordinates the browser holds for every point (its data-x, data-y)."""
    return np.array(
        [
            [float(box.locator(f".pt[data-name='{n}']").get_attribute(a)) for a in ("data-x", "data-y")]
            for n in toy.FEATURES
        ]
    )


def test_dragging_ann_toward_alien_lowers_her_score_at_once_and_python_agrees(tab):
    fm = toy_of(tab, "fm")
    fm.scroll_into_view_if_needed()
    start = score(fm, "Ann", "Alien")
    assert start == round(toy.score(toy.default_state()["V"], "Ann", "Alien"), 2), (
        "the browser starts where fmlib.toy does"
    )
    (ax, ay), (bx, by) = centre(fm.locator(".pt[data-name='Ann']")), centre(fm.locator(".pt[data-name='Alien']"))
    tab.mouse.move(ax, ay)
    tab.mouse.down()
    sent_before = len(tab.sent_to_server)
    round_trips, seen = [], start
    steps = 20
    for i in range(1, steps + 1):  # halfway, in 20 movements: each must show a new score before the next
        x, y = ax + (bx - ax) * 0.5 * i / steps, ay + (by - ay) * 0.5 * i / steps
        began = time.perf_counter()
        tab.mouse.move(x, y)
        now = score(fm, "Ann", "Alien")
        round_trips.append(1000 * (time.perf_counter() - began))
        assert now <= seen + 1e-9, "moving toward Alien never raises Ann's score for Alien"
        seen = now
    live = fm.locator(".live").inner_text()
    tab.screenshot(path=str(SHOTS / "fm drag.png"))
    during = len(tab.sent_to_server) - sent_before
    assert during == 0, f"the drag sent {during} messages to the server: a class dragging at once would queue there"
    tab.mouse.up()
    dragged = score(fm, "Ann", "Alien")
    V = shown_V(fm)
    assert dragged < start - 0.2, f"Ann × Alien went {start} -> {dragged}: the lesson's answer is 'down'"
    assert abs(dragged - toy.score(V, "Ann", "Alien")) < 0.006, "the browser's score is fmlib.toy's on its coordinates"
    assert re.search(rf"{start:.2f} → {dragged:.2f} \(−", live), live
    assert score(fm, "Bob", "Alien") == round(toy.score(toy.default_state()["V"], "Bob", "Alien"), 2), "Bob's row stays"
    # on release the state went to Python once: its own computation says the same change
    message = tab.get_by_text(re.compile(r"^Your move of Ann changed Ann×Alien by"))
    message.wait_for()
    assert f"({start:.2f} → {dragged:.2f})" in message.inner_text()
    latency = tab.evaluate("() => window.__fmlibToyLatency.fm")
    report = {
        "movements": steps,
        "in page, event to scores written (ms)": summary(latency["handled"]),
        "in page, event to next animation frame (ms)": summary(latency["frame"]),
        "Playwright, mouse move sent to new score read (ms)": summary(round_trips),
        "messages to the server during the drag": during,
        "messages to the server for the release": len(tab.sent_to_server) - sent_before,
    }
    (SHOTS / "latency.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\nPlayground drag latency:", json.dumps(report, indent=2))
    idle(tab)
    tab.screenshot(path=str(SHOTS / "fm after release.png"))


def summary(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {
        "n": len(ms),
        "median": round(statistics.median(ms), 2),
        "p95": round(ms[int(0.95 * (len(ms) - 1))], 2),
        "max": round(ms[-1], 2),
    }


def test_arrow_keys_move_a_focused_point_and_bad_coordinates_are_refused(tab):
    fm = toy_of(tab, "fm")
    bob = fm.locator(".pt[data-name='Bob']")
    x0 = float(bob.get_attribute("data-x"))
    before = score(fm, "Bob", "Titanic")
    bob.focus()
    for _ in range(4):
        tab.keyboard.press("ArrowLeft")
    assert float(bob.get_attribute("data-x")) == pytest.approx(x0 - 0.2)
    assert score(fm, "Bob", "Titanic") == pytest.approx(toy.score(shown_V(fm), "Bob", "Titanic"), abs=0.006)
    assert score(fm, "Bob", "Titanic") != before
    tab.get_by_text(re.compile(r"^Your move of Bob changed")).wait_for()  # sent once the keys paused
    idle(tab)
    fm.locator("summary").click()
    for typed, why in (("abc", "is not a finite number"), ("9", "is out of range")):
        scores = [score(fm, u, m) for u in toy.USERS for m in toy.MOVIES]
        entry = fm.locator("input[data-entry='Ann x']")
        entry.fill(typed)
        entry.press("Enter")
        refused = fm.locator(".refused")
        assert why in refused.inner_text() and "[-1.5, 1.5]" in refused.inner_text()
        assert "bad" in entry.get_attribute("class")
        assert [score(fm, u, m) for u in toy.USERS for m in toy.MOVIES] == scores, "the last valid state stays"
    tab.screenshot(path=str(SHOTS / "fm refused coordinate.png"))
    entry.fill("0.5")
    entry.press("Enter")
    assert (
        fm.locator(".refused").inner_text() == ""
        and float(fm.locator(".pt[data-name='Ann']").get_attribute("data-x")) == 0.5
    )


def test_an_edited_cell_of_r_changes_the_fwfm_scores_and_a_bad_one_is_refused(tab):
    fwfm = toy_of(tab, "fwfm")
    fwfm.scroll_into_view_if_needed()
    cell = fwfm.locator("input[data-entry='R[user, movie]']")
    cell.fill("0")
    cell.press("Enter")
    R = toy.fm_R()
    R[0, 1] = R[1, 0] = 0.0
    expected = toy.scores(toy.default_state()["V"], R)
    shown = np.array([[score(fwfm, u, m) for m in toy.MOVIES] for u in toy.USERS])
    assert np.allclose(shown, expected, atol=0.006)
    assert fwfm.locator("input[data-entry='R[movie, user]']").input_value() == "0.00", "R stays symmetric"
    cell.fill("7")
    cell.press("Enter")
    assert 'R[user, movie] = "7" is out of range; use a number in [-3, 3]' in fwfm.locator(".refused").inner_text()
    assert np.allclose([[score(fwfm, u, m) for m in toy.MOVIES] for u in toy.USERS], expected, atol=0.006)
    tab.get_by_text(re.compile(r"^Your move of R\[user, movie\] changed")).wait_for()
    idle(tab)
    fwfm.screenshot(path=str(SHOTS / "fwfm R edited.png"))


def test_the_dplr_serves_every_pair_and_proposition_1_equals_the_pair_sum(tab):
    dplr = toy_of(tab, "dplr")
    dplr.scroll_into_view_if_needed()
    dplr.locator("button[data-rank='2']").click()
    for entry, value in (("U[2, user]", "1"), ("U[2, movie]", "-1"), ("ω[2]", "0.5")):
        box = dplr.locator(f"input[data-entry='{entry}']")
        box.fill(value)
        box.press("Enter")
    U, e = np.array([[1.0, 1, 1], [1, -1, 0]]), np.array([1.0, 0.5])
    expected = toy.dplr_scores(toy.default_state()["V"], U, e)
    shown = np.array([[score(dplr, u, m) for m in toy.MOVIES] for u in toy.USERS])
    assert np.allclose(shown, expected, atol=0.006)
    served = dplr.locator(".served").inner_text()
    assert served.count("served") == 3 and "switched off" not in served
    numbers = re.findall(r"([−-]?\d+\.\d{3})", dplr.locator(".prop1").inner_text())
    assert len(numbers) == 2 and numbers[0] == numbers[1], "Proposition 1 = the sum over the pairs"
    box = dplr.locator("input[data-entry='ω[1]']")
    box.fill("nan")
    box.press("Enter")
    assert "is not a finite number" in dplr.locator(".refused").inner_text()
    # the rank and the three entries were sent one by one; a busy server may take several in one rerun, and names
    # them all ("U[2, movie], ω[2]"), or only ρ when the rank changed with them
    tab.get_by_text(re.compile(r"^Your move of (.+, )?(ω\[2\]|ρ) changed")).wait_for()
    idle(tab)
    dplr.screenshot(path=str(SHOTS / "dplr.png"))


def test_the_movie_map_shows_titles_biases_and_two_seeds_agreement(server, tab):
    if not server[1]:
        pytest.skip("MovieLens 100K is not available here")
    section = tab.locator("[data-testid='stExpander'] summary").filter(has_text="What a trained model learned")
    section.click()  # the section is drawn when opened
    idle(tab)
    chart = tab.locator("[data-testid='stMain'] .js-plotly-plot").filter(has_text="principal components").first
    chart.scroll_into_view_if_needed()
    chart.wait_for()
    idle(tab)
    assert tab.get_by_text("Spearman ρ of the movie biases").count() == 1
    agreement = tab.locator("[data-testid='stMarkdownContainer']").filter(
        has_text=re.compile(r"Seeds [01] and [01]: Over")
    )
    assert re.search(r"Over \d+ movies, the two seeds rank the movie biases", agreement.first.inner_text())
    section.scroll_into_view_if_needed()
    tab.screenshot(path=str(SHOTS / "movie map.png"), full_page=False)
    assert tab.locator("[data-testid='stException']").count() == 0


def test_the_display_formula_stands_whole_at_1280_px(server, browser):
    tab = new_tab(browser, {"width": 1280, "height": 720})
    tab.goto(f"{server[0]}/playground")
    settle(tab)
    cut = tab.evaluate(
        """() => [...document.querySelectorAll("[data-testid='stMain'] .katex-display")]
            .filter((k) => k.scrollWidth > k.clientWidth + 4)  // wider than its box: the rest is cut (or scrolls)
            .map((k) => k.innerText.slice(0, 40))"""
    )
    assert not cut, f"display formulas cut at the right edge: {cut}"
    tab.context.close()
