"""The visits benchmark: seconds from a reader's press of a page's link to the page drawn, first visit of every
page and later ones, beside the floor of a bare Streamlit app measured in the same run (tests/bare_app.py).

A measurement to report, not a test: `make bench-visits` runs it (``pytest tests/bench_visits.py -s``; `make test`
does not collect it, as its name is not ``test_*.py``). It uses the browser tests' session (one app server, one
Chromium: conftest.py, browser_app.py); `make test` keeps what it checks beside its timings, every page visited
twice with no exception shown (test_browser.py's ``test_every_page_renders``).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest
import test_browser
from browser_app import act, new_tab, read, serve, settle
from patience import ms
from test_browser import SHOTS, no_exception

pytestmark = test_browser.pytestmark  # the browser tests' marks: Chromium is needed
# the server as a reader meets it: warming up in the background from its start (the tests turn that off, conftest.py)
os.environ["FMLIB_WARM_UP"] = "1"


@pytest.fixture(scope="module")
def server(app_server):
    """The session's app server: (url, pid)."""
    return app_server.url, app_server.pid


# A page is drawn when its script has run and is idle, no element waits for its code (Streamlit shows a skeleton
# while an element's script chunk loads: the first chart of a tab waits about 1 s for plotly.js here) and every
# plotly chart has drawn its SVG. The page itself notes the moment (performance.now(), milliseconds since it was
# opened), so that no round trip of the test to the browser is counted.
DRAWN = """() => {
  const visit = window.__visit ?? {ran: true};
  const state = document.querySelector("[data-testid='stApp']")?.getAttribute("data-test-script-state");
  const title = document.querySelector("[data-testid='stMain'] h1");
  const drawn = (visit.ran || (title && title.textContent !== visit.title)) && state === "notRunning"
    && title
    && !document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']")
    && [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
         .every((chart) => chart.querySelector(".main-svg"));
  if (drawn) window.__drawnAt = performance.now();
  return Boolean(drawn);
}"""

# What keeps a page from counting as drawn, for the message of a visit that never was.
NOT_DRAWN = """() => ({
  visit: window.__visit,
  state: document.querySelector("[data-testid='stApp']")?.getAttribute("data-test-script-state"),
  title: document.querySelector("[data-testid='stMain'] h1")?.textContent ?? null,
  path: location.pathname,
  skeletons: document.querySelectorAll("[data-testid='stMain'] [data-testid='stSkeleton']").length,
  charts_undrawn: [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
    .filter((chart) => !chart.querySelector(".main-svg")).length,
})"""

# Before a click: note when the button goes down, the page's title then, and whether the script has run since (a
# rerun sets the app's script state to "running" before the page changes; a MutationObserver sees every change of
# it; a script still running at the press, a rerun of the page before, runs the press's rerun next without changing
# it). A quick page can run and finish between two of React's renders, so that the state never shows "running"
# (seen on Derivations on a fast machine): a new title, drawn while the state is "notRunning", says the same.
BEFORE_CLICK = """() => {
  const title = document.querySelector("[data-testid='stMain'] h1")?.textContent;
  const visit = window.__visit = {ran: false, down: null, title};
  const app = document.querySelector("[data-testid='stApp']");
  const running = () => app.getAttribute("data-test-script-state") === "running";
  document.addEventListener("pointerdown", () => { visit.down = performance.now(); visit.ran ||= running(); },
    {capture: true, once: true});
  new MutationObserver((changes, observer) => {
    if (running()) { visit.ran = true; observer.disconnect(); }
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
}"""


VISITS = 4  # a first visit, then three more: their median is the "second visit" reported (one alone varies ±0.2 s)
FLOOR_READERS = 3  # new readers of the bare app (tests/bare_app.py): the floor reported is their median


def drawn_in(tab, action, start: str, what: str) -> float:
    """Seconds from ``start`` (a page's expression in milliseconds) to the page drawn (``DRAWN``), after ``action``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    action()
    try:
        tab.wait_for_function(DRAWN, polling="raf", timeout=ms(120))
    except PlaywrightTimeout:
        raise AssertionError(f"{what} was not drawn in {ms(120) / 1000:.0f} s: {tab.evaluate(NOT_DRAWN)}") from None
    return round(tab.evaluate(f"() => (window.__drawnAt - ({start})) / 1000"), 2)


def opening(tab, url: str) -> float:
    """Seconds from the start of the navigation to ``url`` to its page drawn."""
    return drawn_in(tab, lambda: tab.goto(url), "0", url)


def pressing(tab, title: str) -> float:
    """Seconds from the press of the sidebar's link ``title`` to its page drawn. The mouse rests on the link before
    the press, as a reader's hand does, so that neither its hover nor the test's own checks of the link count."""
    settle(tab)  # no rerun of the page before still under way
    link = tab.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first
    link.scroll_into_view_if_needed()
    box = link.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.evaluate(FRAMES)  # the hover's restyle is drawn
    tab.evaluate(BEFORE_CLICK)
    return drawn_in(tab, lambda: (tab.mouse.down(), tab.mouse.up()), "window.__visit.down", title)


# Two animation frames: what the page changed before is drawn.
FRAMES = "() => new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(() => drawn(true))))"


def warmed(browser, url: str) -> None:
    """Another session visits every page first, as in a class: the server has built what it shares."""
    warm = new_tab(browser, {"width": 1280, "height": 900})
    warm.goto(url)
    settle(warm)
    for link in warm.locator("[data-testid='stSidebarNav'] a").all():
        act(warm, link.click)
    warm.context.close()


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def floor(browser, tmp: Path) -> dict[str, float]:
    """The same clock on the bare app, warmed the same way: its opening, and its first chart's visit."""
    with serve(tmp, "tests/bare_app.py") as (url, _):
        warmed(browser, url)
        opened, charted = [], []
        for _ in range(FLOOR_READERS):
            tab = new_tab(browser, {"width": 1280, "height": 900})
            opened.append(opening(tab, url))
            charted.append(pressing(tab, "Chart"))
            tab.context.close()
    return {"opened": median(opened), "first chart": median(charted)}


def test_first_and_second_visits_are_timed(server, browser, tmp_path):
    """A new reader on the default dataset, on a warm server: seconds to drawn, by the browser's own clock, first
    visit of every page (from the press of its link in the sidebar) and the median of three later ones; the
    opening of Home from the start of its navigation. Beside each time, where it went: the seconds the browser's
    main thread was busy (Chromium's TaskDuration) and the CPU seconds of the server process. Beside the app, in
    the same run, its floor: a bare Streamlit app's opening and the visit of its page with one chart, the first of
    its tab, as the tab's first chart in the app waits for plotly.js too. Written to tests/screenshots/visits.json
    and printed: a measurement to report, not a timed assertion."""
    import json

    SHOTS.mkdir(exist_ok=True)
    warmed(browser, server[0])
    tab = new_tab(browser, {"width": 1280, "height": 900})  # a new session
    devtools = tab.context.new_cdp_session(tab)
    devtools.send("Performance.enable")
    ticks = os.sysconf("SC_CLK_TCK")

    def busy() -> tuple[float, float]:
        """(browser main thread busy, server CPU) in seconds so far."""
        metrics = {m["name"]: m["value"] for m in devtools.send("Performance.getMetrics")["metrics"]}
        stat = Path(f"/proc/{server[1]}/stat").read_text().rsplit(")", 1)[1].split()
        return metrics["TaskDuration"], (int(stat[11]) + int(stat[12])) / ticks

    def timed(measure) -> list[float]:
        """[seconds to drawn, browser busy, server CPU] of ``measure``."""
        before = busy()
        drawn = measure()
        after = busy()
        return [drawn, round(after[0] - before[0], 2), round(after[1] - before[1], 2)]

    timings = {"Home (opened)": [timed(partial(opening, tab, server[0]))]}
    links = tab.locator("[data-testid='stSidebarNav'] a")
    titles = [read(links.nth(i).inner_text).strip().split("\n")[-1].strip() for i in range(links.count())]
    first_chart = None  # the page whose first visit showed the tab's first chart
    for _ in range(VISITS):  # first visits, then later ones
        for title in titles[1:] + titles[:1]:
            timings.setdefault(title, []).append(timed(partial(pressing, tab, title)))
            no_exception(tab, title)
            if first_chart is None and tab.locator("[data-testid='stMain'] [data-testid='stPlotlyChart']").count():
                first_chart = title
    tab.context.close()
    bare = floor(browser, tmp_path)
    (SHOTS / "visits.json").write_text(json.dumps({**timings, "bare app (floor)": bare}, indent=1))
    print(f"\n[seconds to drawn, browser busy, server CPU]: first visit; median of visits 2 to {VISITS} (by drawn)")
    for title, visits in timings.items():
        assert all(drawn > 0 and browser >= 0 and cpu >= 0 for drawn, browser, cpu in visits)
        shown = visits[:1] + ([median(visits[1:])] if visits[1:] else [])
        print(f"  {title:<22}" + "   ".join(f"{drawn:5.2f} {browser:5.2f} {cpu:5.2f}" for drawn, browser, cpu in shown))
    assert first_chart is not None and all(seconds > 0 for seconds in bare.values())
    print(
        f"Floor, a bare Streamlit app in the same run (median of {FLOOR_READERS} new readers): opened in "
        f"{bare['opened']:.2f} s (Home: {timings['Home (opened)'][0][0] / bare['opened']:.2f}×); its page with one "
        f"chart, the tab's first, in {bare['first chart']:.2f} s ({first_chart}, the app's tab's first chart: "
        f"{timings[first_chart][0][0] / bare['first chart']:.2f}×)"
    )
