"""One real browser against a running app: every page, with a saved run of each kind, and the
interactions a class performs (train, save, switch the model, step, toggle, press the buttons).

Fails on an exception shown on a page, on a stale message it can detect, and on any warning or
traceback in the server's log. Screenshots go to tests/screenshots/ (ignored by git). The app server and Chromium
are the session's (browser_app.py); a wait is for a state of the page (``settle``), never for a fixed time.
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

import pytest
from browser_app import CHROMIUM, KINDS, ROOT, act, new_tab, read, sent, serve, settle
from patience import ms

SHOTS = ROOT / "tests" / "screenshots"
RUN_PAGES = ("Field interactions", "Ranking")  # the pages that use the run picked in the sidebar
LOG_PROBLEM = re.compile(r"Traceback|WARNING|Warning|\bError\b|Exception")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is missing: `make browser-deps` installs it"
    ),
]


@pytest.fixture(scope="module")
def server(app_server):
    """The session's app server (browser_app.serve_app: a tiny shared run of each kind in its store); (url, log
    path, the tiny runs' ids, pid)."""
    return app_server.url, app_server.log, app_server.runs, app_server.pid


@pytest.fixture(scope="module")
def page(server, browser):
    SHOTS.mkdir(exist_ok=True)
    tab = new_tab(browser, {"width": 1400, "height": 2400})
    # the first visit to a fresh server is a shared deep link: it must get the app's frame (this module's tests
    # are the first of the session's browser tests: conftest.GROUPS lists it first)
    tab.goto(f"{server[0]}/train?dataset=synthetic")
    settle(tab)
    yield tab
    tab.context.close()


def no_exception(page, where: str) -> None:
    errors = page.locator("[data-testid='stException']")
    assert errors.count() == 0, f"{where} shows an exception: {errors.first.inner_text()[:500]}"


def visit(page, title: str) -> None:
    act(page, page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first.click)
    no_exception(page, title)


def choose(page, label: str, option: str, tries: int = 3) -> None:
    """Pick ``option`` in the select box labelled ``label``. The open list closes when the page moves under it
    (a scroll, a rerun redrawing the box): on a busy machine that can happen after the click, so a list that
    did not show the option in 10 s (stretched on a busy machine) is opened again, as a reader would."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    for attempt in range(tries):
        settle(page)
        picked = option in read(box.inner_text).splitlines()  # picked already: the click asks for no rerun
        box.scroll_into_view_if_needed()  # a long scroll first, as a reader's; the click waits until the box is still
        box.click()
        try:
            pick = partial(page.get_by_role("option", name=option, exact=True).first.click, timeout=ms(10))
            if picked:
                pick()
                settle(page)
            else:
                act(page, pick)
            break
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def shows(page, text: str) -> bool:
    return page.get_by_text(text).count() > 0


def test_every_page_renders(page):
    from app_pages._ui import PAGES

    links = page.locator("[data-testid='stSidebarNav'] a")
    assert links.count() == len(PAGES), "the sidebar lists every page (and nothing else)"
    assert page.get_by_text("Served by: synthetic").count() == 1, "the frame's sidebar ran"
    titles = [read(links.nth(i).inner_text).strip().split("\n")[-1].strip() for i in range(links.count())]
    for i, title in enumerate(titles):
        visit(page, title)
        page.screenshot(path=str(SHOTS / f"{i:02d}-{title.replace(' ', '_')}.png"))


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


def test_first_and_second_visits_are_timed(server, page, tmp_path):
    """A new reader on the default dataset, on a warm server: seconds to drawn, by the browser's own clock, first
    visit of every page (from the press of its link in the sidebar) and the median of three later ones; the
    opening of Home from the start of its navigation. Beside each time, where it went: the seconds the browser's
    main thread was busy (Chromium's TaskDuration) and the CPU seconds of the server process. Beside the app, in
    the same run, its floor: a bare Streamlit app's opening and the visit of its page with one chart, the first of
    its tab, as the tab's first chart in the app waits for plotly.js too. Written to tests/screenshots/visits.json
    and printed: a measurement to report, not a timed assertion."""
    import json

    browser = page.context.browser
    warmed(browser, server[0])
    tab = new_tab(browser, {"width": 1280, "height": 900})  # a new session
    devtools = tab.context.new_cdp_session(tab)
    devtools.send("Performance.enable")
    ticks = os.sysconf("SC_CLK_TCK")

    def busy() -> tuple[float, float]:
        """(browser main thread busy, server CPU) in seconds so far."""
        metrics = {m["name"]: m["value"] for m in devtools.send("Performance.getMetrics")["metrics"]}
        stat = Path(f"/proc/{server[3]}/stat").read_text().rsplit(")", 1)[1].split()
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


def test_train_refuses_a_bad_number_trains_saves_and_switching_the_model_hides_the_old_results(page):
    visit(page, "Train")
    epochs = page.get_by_label("Max epochs")
    epochs.fill("0")  # typed, no Enter: the click elsewhere commits it
    act(page, page.get_by_text("Train a model").first.click)
    refused = page.get_by_text("Max epochs: 0 is out of range; use 1 to 200.")
    assert refused.count() > 0, "an out-of-range number is refused visibly"
    assert button(page, "Train").count() == 0
    epochs.fill("3")
    act(page, partial(epochs.press, "Enter"))
    button(page, "Train").click()
    page.get_by_text("Save run").first.wait_for()  # the page polls its queued job
    settle(page)
    assert page.get_by_role("heading", name="fm on synthetic", exact=True).count() == 1
    no_exception(page, "Train after training")
    page.get_by_role("textbox", name="Run name (optional)").fill("browser-run")
    page.get_by_role("textbox", name="Your name").fill("Ada")
    act(page, button(page, "Save run").click)
    assert shows(page, "Saved as browser-run")
    sidebar = page.locator("[data-testid='stSidebar']")
    picked = sidebar.locator("[data-testid='stSelectbox']").evaluate_all(
        "boxes => boxes.map(b => [b.innerText, ...[...b.querySelectorAll('input')].map(i => i.value)].join(' '))"
    )
    assert any("browser-run" in box for box in picked), f"the sidebar picks the saved run at once: {picked}"
    assert sidebar.get_by_text("No saved runs yet").count() == 0
    page.screenshot(path=str(SHOTS / "train-saved.png"))
    choose(page, "Model", "fwfm")
    page.screenshot(path=str(SHOTS / "train-switched-model.png"))
    assert page.get_by_role("heading", name="fm on synthetic", exact=True).count() == 0, (
        "the FM's results under the FwFM form"
    )
    assert shows(page, "Your last training was fm")


@pytest.mark.parametrize("kind", list(KINDS))
def test_run_pages_with_a_saved_run_of_each_kind(page, kind):
    visit(page, "Home")
    choose(page, "Whose runs", "shared")
    choose(page, "Saved run", f"tiny-{kind}")
    for title in RUN_PAGES:
        visit(page, title)
        page.screenshot(path=str(SHOTS / f"{title.replace(' ', '_')}-{kind}.png"))


def test_field_interactions_shows_a_learned_R_when_the_sidebar_holds_an_fm(page):
    """An FM has no R: with an FM run picked in the sidebar, Field interactions shows a run of its own
    picker (an FwFM or DPLR run, or a quick FwFM) instead of a warning about the sidebar's run."""
    visit(page, "Home")
    choose(page, "Whose runs", "shared")
    choose(page, "Saved run", "tiny-fm")
    visit(page, "Field interactions")
    page.get_by_text("Run whose R is shown").first.wait_for()
    settle(page)
    no_exception(page, "Field interactions with an FM run in the sidebar")
    assert not shows(page, "has no field interaction matrix R"), "the page never shows a run without R"
    assert "fi_run=tiny-" in page.url, "the page's own pick is in the URL"


def test_derivations_keys_buttons_toggle_and_check(page):
    """N and B pressed faster than the page reruns each count (they are counted in the browser)."""
    visit(page, "Derivations")
    choose(page, "Derivation", "FM weight gradient in O(dk)")  # 9 steps
    page.mouse.click(700, 5)  # the page, not a text box, has the keys
    settle(page)
    before = sent(page)
    for key in "nnnnb":
        page.keyboard.press(key)
        page.wait_for_timeout(30)  # presses 30 ms apart, faster than the page reruns (not a wait for the page)
    page.wait_for_function(KEYS_SENT)  # the presses are counted in the browser and sent once they pause
    settle(page, since=before)
    assert "deriv_step=4" in page.url, f"five quick presses N N N N B from step 1 reach step 4: {page.url}"
    for _ in range(2):
        act(page, page.get_by_role("button", name="Next ▶").click)
    act(page, page.get_by_text("Show the check (what sympy compared)").click)
    toggle = page.get_by_text("Show a wrong variant prepared for class")
    if toggle.count():
        act(page, toggle.click)
    no_exception(page, "Derivations after stepping and toggling")
    page.screenshot(path=str(SHOTS / "derivations-stepped.png"))


# The step keys' component (app_pages/_keys.py) has sent the step its presses reached: no press waits to be sent.
KEYS_SENT = "() => Object.values(window.__fmlibStepKeys ?? {}).every((keys) => keys.timer === null)"


def open_section(page, label: str) -> None:
    """Open the section drawn on demand whose expander reads ``label``."""
    act(page, page.locator("[data-testid='stExpander'] summary").filter(has_text=label).first.click)


def test_attention_inversion_trials_stay_when_the_page_reruns(page):
    visit(page, "Attention inversion")
    open_section(page, "How often does the attack work?")
    act(page, button(page, "Run trials").click)
    title = "How often the Newton attack works"  # its first line: a long chart title is wrapped
    assert shows(page, title)
    act(page, page.get_by_text("near the secret", exact=True).click)  # another widget: the page reruns
    assert shows(page, title), "the trials a button made vanished on the next rerun"
    no_exception(page, "Attention inversion after the trials")
    page.screenshot(path=str(SHOTS / "attention-trials.png"))


def test_the_server_log_has_no_warning_or_traceback(server, page):
    lines = [line for line in server[1].read_text().splitlines() if LOG_PROBLEM.search(line)]
    assert not lines, "server log:\n" + "\n".join(lines[:40])
