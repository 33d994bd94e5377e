"""One real browser against a running app: every page, with a saved run of each kind, and the
interactions a class performs (train, save, switch the model, step, toggle, press the buttons).

Fails on an exception shown on a page, on a stale message it can detect, and on any warning or
traceback in the server's log. Screenshots go to tests/screenshots/ (ignored by git).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"
KINDS = {  # tiny hyperparameters of each model the run picker can hold
    "fm": {"dim": 4},
    "fwfm": {"dim": 4},
    "dplr": {"dim": 4, "rank": 2},
    "rafm": {"ranks": (2, 4)},
    "rfm": {"dim": 4, "hidden": 8, "mlp_hidden": 8},
}
RUN_PAGES = ("Field interactions", "Ranking")  # the pages that use the run picked in the sidebar
LOG_PROBLEM = re.compile(r"Traceback|WARNING|Warning|\bError\b|Exception")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is missing: `make browser-deps` installs it"
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def saved_runs(root: Path) -> list[str]:
    """A tiny shared run of each kind on the app's synthetic data, as `python -m fmlib train --save` leaves them."""
    from fmlib.data import split, synthetic
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    data = split(synthetic.make(synthetic.demo_R(), n_samples=4000, cardinality=20, seed=0), seed=0)
    store = RunStore(root)
    return [
        store.save(train_model(kind, data, TrainConfig(epochs=1), **hp), f"tiny-{kind}") for kind, hp in KINDS.items()
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on a free port, with the tiny runs in a temporary run store; yields (url, log path)."""
    tmp = tmp_path_factory.mktemp("browser")
    runs = saved_runs(tmp / "runs")
    log = tmp / "server.log"
    env = {**os.environ, "FMLIB_RUNS": str(tmp / "runs"), "FMLIB_STARTER_RUNS": "0"}
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    command += ["--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not become healthy within 60 s:\n" + log.read_text()[-2000:])
    yield url, log, runs, proc.pid
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(exist_ok=True)
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    args += ["--disable-sync", "--no-first-run", "--disable-quic"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        tab = browser.new_page(viewport={"width": 1400, "height": 2400})
        # the first visit to a fresh server is a shared deep link: it must get the app's frame
        tab.goto(f"{server[0]}/train?dataset=synthetic")
        wait_idle(tab)
        yield tab
        browser.close()


def wait_idle(page, timeout=120_000):
    page.wait_for_timeout(300)
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=timeout)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)


def no_exception(page, where: str) -> None:
    errors = page.locator("[data-testid='stException']")
    assert errors.count() == 0, f"{where} shows an exception: {errors.first.inner_text()[:500]}"


def visit(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first.click()
    wait_idle(page)
    no_exception(page, title)


def choose(page, label: str, option: str, tries: int = 3) -> None:
    """Pick ``option`` in the select box labelled ``label``. The open list closes when the page moves under it
    (a scroll, a rerun redrawing the box): on a busy machine that can happen after the click, so a list that
    did not show the option in 10 s is opened again, as a reader would."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    for attempt in range(tries):
        box.scroll_into_view_if_needed()  # a long scroll first, as a reader's
        page.wait_for_timeout(300)
        box.click()
        try:
            page.get_by_role("option", name=option, exact=True).first.click(timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)
    wait_idle(page)


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def shows(page, text: str) -> bool:
    return page.get_by_text(text).count() > 0


def test_every_page_renders(page):
    from app_pages._ui import PAGES

    links = page.locator("[data-testid='stSidebarNav'] a")
    assert links.count() == len(PAGES), "the sidebar lists every page (and nothing else)"
    assert page.get_by_text("Served by: synthetic").count() == 1, "the frame's sidebar ran"
    titles = [links.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(links.count())]
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


def drawn_in(tab, act, start: str, what: str) -> float:
    """Seconds from ``start`` (a page's expression in milliseconds) to the page drawn (``DRAWN``), after ``act``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    act()
    try:
        tab.wait_for_function(DRAWN, polling="raf", timeout=120_000)
    except PlaywrightTimeout:
        raise AssertionError(f"{what} was not drawn in 120 s: {tab.evaluate(NOT_DRAWN)}") from None
    return round(tab.evaluate(f"() => (window.__drawnAt - ({start})) / 1000"), 2)


def opening(tab, url: str) -> float:
    """Seconds from the start of the navigation to ``url`` to its page drawn."""
    return drawn_in(tab, lambda: tab.goto(url), "0", url)


def pressing(tab, title: str) -> float:
    """Seconds from the press of the sidebar's link ``title`` to its page drawn. The mouse rests on the link before
    the press, as a reader's hand does, so that neither its hover nor the test's own checks of the link count."""
    wait_idle(tab)  # no rerun of the page before still under way
    link = tab.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first
    link.scroll_into_view_if_needed()
    box = link.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.wait_for_timeout(100)  # the hover's restyle is drawn
    tab.evaluate(BEFORE_CLICK)
    return drawn_in(tab, lambda: (tab.mouse.down(), tab.mouse.up()), "window.__visit.down", title)


def warmed(browser, url: str) -> None:
    """Another session visits every page first, as in a class: the server has built what it shares."""
    warm = browser.new_page(viewport={"width": 1280, "height": 900})
    warm.goto(url)
    wait_idle(warm)
    for link in warm.locator("[data-testid='stSidebarNav'] a").all():
        link.click()
        warm.wait_for_timeout(50)
        wait_idle(warm)
    warm.close()


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def floor(browser, tmp: Path) -> dict[str, float]:
    """The same clock on the bare app, warmed the same way: its opening, and its first chart's visit."""
    from test_browser_projector import serve

    with serve(tmp, "tests/bare_app.py") as url:
        warmed(browser, url)
        opened, charted = [], []
        for _ in range(FLOOR_READERS):
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            opened.append(opening(tab, url))
            charted.append(pressing(tab, "Chart"))
            tab.close()
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
    tab = browser.new_page(viewport={"width": 1280, "height": 900})  # a new session
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
    titles = [links.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(links.count())]
    first_chart = None  # the page whose first visit showed the tab's first chart
    for _ in range(VISITS):  # first visits, then later ones
        for title in titles[1:] + titles[:1]:
            timings.setdefault(title, []).append(timed(partial(pressing, tab, title)))
            no_exception(tab, title)
            if first_chart is None and tab.locator("[data-testid='stMain'] [data-testid='stPlotlyChart']").count():
                first_chart = title
    tab.close()
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
    page.get_by_text("Train a model").first.click()
    wait_idle(page)
    refused = page.get_by_text("Max epochs: 0 is out of range; use 1 to 200.")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:  # the rerun may start after wait_idle's first look on a busy machine: give the message time to appear
        refused.first.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        pass
    assert refused.count() > 0, "an out-of-range number is refused visibly"
    assert button(page, "Train").count() == 0
    epochs.fill("3")
    epochs.press("Enter")
    wait_idle(page)
    button(page, "Train").click()
    page.get_by_text("Save run").first.wait_for(timeout=120_000)  # the page polls its queued job
    wait_idle(page)
    assert page.get_by_role("heading", name="fm on synthetic", exact=True).count() == 1
    no_exception(page, "Train after training")
    page.get_by_role("textbox", name="Run name (optional)").fill("browser-run")
    page.get_by_role("textbox", name="Your name").fill("Ada")
    button(page, "Save run").click()
    wait_idle(page)
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
    page.get_by_text("Run whose R is shown").first.wait_for(timeout=60_000)
    wait_idle(page)
    no_exception(page, "Field interactions with an FM run in the sidebar")
    assert not shows(page, "has no field interaction matrix R"), "the page never shows a run without R"
    assert "fi_run=tiny-" in page.url, "the page's own pick is in the URL"


def test_derivations_keys_buttons_toggle_and_check(page):
    """N and B pressed faster than the page reruns each count (they are counted in the browser)."""
    visit(page, "Derivations")
    choose(page, "Derivation", "FM weight gradient in O(dk)")  # 9 steps
    page.mouse.click(700, 5)  # the page, not a text box, has the keys
    for key in "nnnnb":
        page.keyboard.press(key)
        page.wait_for_timeout(30)
    page.wait_for_timeout(600)
    wait_idle(page)
    assert "deriv_step=4" in page.url, f"five quick presses N N N N B from step 1 reach step 4: {page.url}"
    for _ in range(2):
        page.get_by_role("button", name="Next ▶").click()
        wait_idle(page)
    page.get_by_text("Show the check (what sympy compared)").click()
    wait_idle(page)
    toggle = page.get_by_text("Show a wrong variant prepared for class")
    if toggle.count():
        toggle.click()
        wait_idle(page)
    no_exception(page, "Derivations after stepping and toggling")
    page.screenshot(path=str(SHOTS / "derivations-stepped.png"))


def open_section(page, label: str) -> None:
    """Open the section drawn on demand whose expander reads ``label``."""
    page.locator("[data-testid='stExpander'] summary").filter(has_text=label).first.click()
    wait_idle(page)


def test_attention_inversion_trials_stay_when_the_page_reruns(page):
    visit(page, "Attention inversion")
    open_section(page, "How often does the attack work?")
    button(page, "Run trials").click()
    wait_idle(page)
    title = "How often the Newton attack works"  # its first line: a long chart title is wrapped
    assert shows(page, title)
    page.get_by_text("near the secret", exact=True).click()  # another widget: the page reruns
    wait_idle(page)
    assert shows(page, title), "the trials a button made vanished on the next rerun"
    no_exception(page, "Attention inversion after the trials")
    page.screenshot(path=str(SHOTS / "attention-trials.png"))


def test_the_server_log_has_no_warning_or_traceback(server, page):
    lines = [line for line in server[1].read_text().splitlines() if LOG_PROBLEM.search(line)]
    assert not lines, "server log:\n" + "\n".join(lines[:40])
