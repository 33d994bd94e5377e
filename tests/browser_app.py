"""What the browser tests share: Debian's Chromium, one app server per session, and waits for a state of the page
(the script idle and answered, charts drawn, a scroll settled), never for a fixed number of seconds.

conftest.py holds the fixtures (``browser``, one Chromium per test module; ``app_server``, one per session); `make
test` runs every browser test on one worker (the group "browser"), so one server serves them all. Every time limit here guards
against a hang and is stretched by how busy the machine is (patience.limit).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from patience import limit, ms

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
ARGS += ["--disable-sync", "--no-first-run", "--disable-quic"]
KINDS = {  # tiny hyperparameters of each model the run picker can hold
    "fm": {"dim": 4},
    "fwfm": {"dim": 4},
    "dplr": {"dim": 4, "rank": 2},
    "rafm": {"ranks": (2, 4)},
    "rfm": {"dim": 4, "hidden": 8, "mlp_hidden": 8},
}
WAIT = 120  # seconds an idle machine gives any one wait of a browser test (stretched by patience.limit)

# Added to every page before its own scripts: counts the messages the page sends over Streamlit's websocket and
# notes when it last sent one, last received one, and when the document last changed.
WATCH = """
(() => {
  const s = window.__st = {sent: 0, lastSent: -1, lastReceived: -1, lastChange: performance.now()};
  const Socket = window.WebSocket;
  window.WebSocket = class extends Socket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", () => { s.lastReceived = performance.now(); });
    }
    send(data) { s.sent += 1; s.lastSent = performance.now(); return super.send(data); }
  };
  const watch = () => new MutationObserver(() => { s.lastChange = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch); else watch();
})();
"""

# How often a wait for a state of the page looks at it, in ms. Not at every animation frame ("raf"): that kept the
# renderer drawing frames for the whole wait (test_browser_projector.py: 46.0 s of the renderer's CPU, 42.6 s so).
POLL = 20

# The page has settled: connected, the script not running, the server has answered the last message the page sent
# (a rerun it asked for has begun), no element waits for its code (Streamlit's skeleton), every plotly chart has
# drawn its SVG, and neither the document nor the websocket has changed for ``quiet`` ms. With ``since``: the page
# has also sent a message since it had sent ``since`` (the action's rerun was asked for), or nothing has changed
# for a second (an action that asked for nothing, such as picking the option already picked).
SETTLED = """([quiet, since]) => {
  const s = window.__st;
  const app = document.querySelector("[data-testid='stApp']");
  if (!s || !app) return false;
  const now = performance.now();
  return app.getAttribute("data-test-connection-state") === "CONNECTED"
    && app.getAttribute("data-test-script-state") === "notRunning"
    && (since === null || s.sent > since || now - s.lastChange >= 1000)
    && s.lastReceived >= s.lastSent
    && !document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']")
    && [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
         .every((chart) => chart.querySelector(".main-svg"))
    && now - s.lastChange >= quiet && now - s.lastReceived >= quiet;
}"""

# Why a page did not settle, for the message of a wait that timed out.
UNSETTLED = """() => {
  const s = window.__st ?? {};
  const app = document.querySelector("[data-testid='stApp']");
  const now = performance.now();
  return {
    connection: app?.getAttribute("data-test-connection-state"),
    script: app?.getAttribute("data-test-script-state"),
    sent: s.sent, unanswered: s.lastSent > s.lastReceived,
    skeletons: document.querySelectorAll("[data-testid='stMain'] [data-testid='stSkeleton']").length,
    charts_undrawn: [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
      .filter((chart) => !chart.querySelector(".main-svg")).length,
    ms_since_change: Math.round(now - s.lastChange), ms_since_message: Math.round(now - s.lastReceived),
  };
}"""

# An element's top stays put: ``key`` names the element's probe (one per element), ``selector`` finds it; true once
# its top has not moved for ``quiet`` ms (a page that scrolls to a section follows it while what lies above it
# is drawn).
STILL = """([selector, key, quiet]) => {
  const el = document.querySelector(selector);
  if (!el) return false;
  const top = Math.round(el.getBoundingClientRect().top), now = performance.now();
  const probe = (window.__still ??= {})[key] ??= {top, since: now};
  if (probe.top !== top) Object.assign(probe, {top, since: now});
  return now - probe.since >= quiet;
}"""


def launch():
    """Debian's Chromium under Playwright (a context manager)."""

    @contextlib.contextmanager
    def launched():
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                yield chromium
            finally:
                chromium.close()

    return launched()


# Every request the tests' pages sent to a host other than the app's server (loopback): a room without internet must
# need none. tests/conftest.py fails a browser test that leaves one here, and lists the hosts of all of them.
ELSEWHERE: list[str] = []
LOCAL = ("127.0.0.1", "localhost", "::1")


def _note_elsewhere(request) -> None:
    if urlsplit(request.url).scheme in ("http", "https", "ws", "wss") and urlsplit(request.url).hostname not in LOCAL:
        ELSEWHERE.append(request.url)


# Every uncaught exception and every console error or warning of the tests' pages (a KaTeX warning on a character
# it does not know, a script's error): tests/conftest.py fails a browser test that leaves one here.
CONSOLE: list[str] = []


# Chromium's own notes about its software GL (headless, no GPU): the browser's, not the page's.
BROWSER_OWN = "GL Driver Message"


def _note_console(message) -> None:
    if message.type in ("error", "warning") and BROWSER_OWN not in message.text:
        CONSOLE.append(f"console.{message.type}: {message.text[:300]}")


def new_tab(browser, viewport: dict, scale: float = 1.0):
    """A page in a fresh context (a fresh session) that WATCH observes, its waits stretched (patience.limit), every
    request to another host noted in ``ELSEWHERE``, every console error, warning and uncaught exception in
    ``CONSOLE``."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=viewport, device_scale_factor=scale)
    context.on("request", _note_elsewhere)
    context.add_init_script(WATCH)
    context.set_default_timeout(ms(WAIT))
    expect.set_options(timeout=ms(WAIT))
    page = context.new_page()
    page.on("console", _note_console)
    page.on("pageerror", lambda error: CONSOLE.append(f"pageerror: {error}"))
    return page


# Every chart fits its box again after a resize: none is wider than the element that holds it.
CHARTS_FIT = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
  .every((chart) => (chart.querySelector(".main-svg")?.getBoundingClientRect().width ?? 0)
    <= chart.getBoundingClientRect().width + 1)"""


def emulate(tab, viewport: dict, scale: float = 1.0) -> None:
    """The tab's window set to ``viewport`` (CSS pixels) drawn at ``scale`` device pixels per CSS pixel."""
    tab.context.new_cdp_session(tab).send(
        "Emulation.setDeviceMetricsOverride",
        {"width": viewport["width"], "height": viewport["height"], "deviceScaleFactor": scale, "mobile": False},
    )
    tab.wait_for_function(
        "([w, h, s]) => innerWidth === w && innerHeight === h && devicePixelRatio === s",
        arg=[viewport["width"], viewport["height"], scale],
    )


def resize(tab, viewport: dict, scale: float = 1.0) -> None:
    """The tab's window resized to ``viewport`` drawn at ``scale`` (``emulate``), as when the window moves to another
    screen; then settled, every chart drawn again at its new width."""
    emulate(tab, viewport, scale)
    tab.wait_for_function(CHARTS_FIT, polling=POLL)
    settle(tab, quiet=300)


def as_new_browser(tab, viewport: dict, scale: float = 1.0) -> None:
    """``tab`` made to look to the app like a browser that has never visited it, at ``viewport`` drawn at ``scale``:
    its page left (the app's session ends), the page's storage and the context's cookies cleared (a new XSRF cookie:
    a new student). What it keeps is its context's cache, the app's scripts already compiled: a page load then costs
    the machine about 1.1-1.5 s of CPU, against 3.4-4.5 s in a new browser context (``new_tab``; measured on an idle
    2-core machine, Chromium, the app server and the test together)."""
    if tab.url.startswith("http"):
        tab.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
    tab.goto("about:blank")
    tab.context.clear_cookies()
    emulate(tab, viewport, scale)


def sent(tab) -> int:
    """How many messages the page has sent to the server so far."""
    return tab.evaluate("() => window.__st?.sent ?? 0")


def settle(tab, since: int | None = None, quiet: int = 100) -> None:
    """Wait until the page has settled (``SETTLED``); with ``since`` (``sent(tab)`` before an action), until it has
    also sent a message since then: the action's rerun was asked for, and answered."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        tab.wait_for_function(SETTLED, arg=[quiet, since], polling=POLL, timeout=ms(WAIT))
    except PlaywrightTimeout:
        raise AssertionError(f"the page did not settle in {limit(WAIT):.0f} s: {tab.evaluate(UNSETTLED)}") from None
    tab.evaluate("() => document.fonts.ready.then(() => true)")  # text laid out in its own font (KaTeX's)


def act(tab, action) -> None:
    """Do ``action`` (a click or key that reruns the page), then wait until its rerun has run and the page settled."""
    before = sent(tab)
    action()
    settle(tab, since=before)


def still(tab, selector: str, quiet: int = 400) -> None:
    """Wait until the element ``selector`` finds has kept its place for ``quiet`` ms (a scroll has settled)."""
    tab.wait_for_function(STILL, arg=[selector, selector, quiet], polling=POLL, timeout=ms(WAIT))


def read(what, tries: int = 3):
    """``what()``, read again if the element it reads was replaced by a rerun meanwhile (detached, or no longer
    unique for a moment)."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(tries):
        try:
            return what()
        except PlaywrightError:
            if attempt == tries - 1:
                raise


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(tmp: Path, app: str = "server.py", env: dict | None = None):
    """``app`` on a free port, its runs in ``tmp / "runs"``, its log in ``tmp / "server.log"``, no starter runs, ``env``
    added to its environment; yields (url, pid). The server is stopped (killed if need be) when the block ends,
    whatever happened."""
    port = free_port()
    env = {**os.environ, "FMLIB_RUNS": str(tmp / "runs"), "FMLIB_STARTER_RUNS": "0", **(env or {})}
    command = [sys.executable, "-m", "streamlit", "run", app, "--server.headless", "true"]
    command += ["--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    command += ["--server.fileWatcherType", "none"]  # as `make serve`: no reruns from files others write meanwhile
    with (tmp / "server.log").open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + limit(60)
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (tmp / "server.log").read_text()[-2000:]
                    raise AssertionError(
                        f"streamlit did not become healthy (exit code {proc.poll()}):\n{log}"
                    ) from None
                time.sleep(0.2)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=limit(20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def saved_runs(root: Path) -> tuple[list[str], bool]:
    """The runs the browser tests' server holds, as `python -m fmlib train --save` leaves them: a tiny shared run of
    each kind on the app's synthetic data (``tiny-fm`` …, ``tiny-fwfm`` the Field interactions page's default on
    it), and two short FM runs on MovieLens 100K (``fm-seed0``, ``fm-seed1``: same recipe, seeds 0 and 1) when the
    data is there, so that the Playground's movie map and its two-seed agreement are drawn. Returns the tiny runs'
    ids and whether the MovieLens runs are there."""
    from fmlib.data import load, split
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    store = RunStore(root)
    data = split(load("synthetic"), seed=0)  # the app's synthetic set
    tiny = [
        store.save(train_model(kind, data, TrainConfig(epochs=1), **hp), f"tiny-{kind}") for kind, hp in KINDS.items()
    ]
    try:
        from fmlib.data import movielens

        movies = split(movielens.load("ml-100k"), seed=0)
    except Exception:  # no MovieLens here: the tests that need it say so and skip
        return tiny, False
    for seed in (0, 1):
        run = train_model("fm", movies, TrainConfig(epochs=2, lr=1e-2, seed=seed), dim=8)
        store.save(run, f"fm-seed{seed}")
    return tiny, True


@dataclass(frozen=True)
class Server:
    url: str
    log: Path  # the server's output: the tests read it for warnings and tracebacks
    runs: list[str]  # the ids of the tiny runs, one of each kind
    pid: int
    movies: bool  # whether the MovieLens runs are in its store


@contextlib.contextmanager
def serve_app(tmp: Path):
    """The app with ``saved_runs`` in its store: one server for every browser test of a session."""
    runs, movies = saved_runs(tmp / "runs")
    with serve(tmp) as (url, pid):
        yield Server(url, tmp / "server.log", runs, pid, movies)
