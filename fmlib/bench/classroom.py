"""``python -m fmlib bench classroom``: a class of browser sessions against one app server.

Starts the app (``streamlit run app.py``) on a free loopback port with a fresh run store (and no
starter runs: a class meets a server whose starter runs are done), then
drives real sessions, one per student, with ``--client``:

* ``protocol`` (default): Streamlit's own websocket protocol, spoken as the browser speaks it
  (a rerun request per page view or click, the fragment's timed reruns while a training is
  queued). The server does all its work; no page is drawn, so 30 students fit on a small machine
  beside the server, and the times are the server's.
* ``browser``: Debian's Chromium, one Playwright browser context per student; the times include
  drawing the pages, on the same cores as the server.

Both run two phases:

* **baseline**: one session alone opens the browsing pages in turn, twice: the first pass
  warms the server's caches (as a teacher's dry run before class does), the second is timed;
* **class**: ``--sessions`` sessions start within ``--ramp`` seconds. ``--training`` of them open
  the Train page prepared by URL (``--dataset``, FM, ``--epochs``) and press *Train*; the others
  open pages and move through the sidebar, ``--pages`` page views each.

A page view is *usable* when its title is there and its script has finished. Reported:
p50/p95 of the seconds to a usable page (baseline and class, with their ratio), each training's
queue wait (as the Train page reports it) and its time from *Train* to *Done*, and errors:
exceptions shown by the app, JavaScript errors, and waits that ran past their time. Everything
is bounded: each wait by ``--wait``, the whole class by ``--deadline``; then the server stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..arguments import positive_int

CLIENTS = ("protocol", "browser")
CHROMIUM = "/usr/bin/chromium"
BROWSE = ["lesson", "derivations", "gradient_growth", "rank_aware_fm", "train"]
ROOT = Path(__file__).resolve().parents[2]
PAGE_SLUGS = sorted(path.stem for path in (ROOT / "app_pages").glob("[!_]*.py"))  # the app's URL paths
USABLE = """([before]) => {
    const app = document.querySelector("[data-testid='stApp']");
    const h1 = document.querySelector("h1");
    return app && app.dataset.testConnectionState === "CONNECTED"
        && app.dataset.testScriptState === "notRunning" && h1 && h1.innerText !== before;
}"""


def add_arguments(p):
    p.add_argument("--client", choices=CLIENTS, default="protocol", help="how sessions talk to the server")
    p.add_argument("--sessions", type=positive_int, default=30, help="browser sessions at once (1..60)")
    p.add_argument("--training", type=int, default=5, help="of them, sessions that train (0..sessions)")
    p.add_argument("--pages", type=positive_int, default=4, help="page views per browsing session")
    p.add_argument(
        "--browse",
        type=lambda text: [page.strip() for page in text.split(",")],
        default=BROWSE,
        help=f"the pages browsing sessions visit in turn, comma-separated (default: {','.join(BROWSE)}); "
        "--browse playground: a class on the Playground, each view a rerun of its page as a drag's release sends",
    )
    p.add_argument("--dataset", default="ml-100k", help="data set of the trainings")
    p.add_argument("--epochs", type=positive_int, default=3, help="max epochs of each training")
    p.add_argument("--ramp", type=float, default=5.0, help="sessions start within this many seconds")
    p.add_argument("--wait", type=positive_int, default=120, help="longest wait for one page or step, seconds")
    p.add_argument("--deadline", type=positive_int, default=900, help="the whole class stops after this, seconds")
    p.add_argument(
        "--answers",
        type=int,
        default=0,
        help="protocol client: every browsing student first answers this lesson stop (0: none); the server then "
        "has a teacher passcode, so the answers are counted",
    )
    p.add_argument(
        "--hold",
        type=int,
        default=0,
        help="keep the server up this many seconds after the class (its URL and passcode are printed): "
        "time to look at the teacher's view of the answers",
    )


@dataclass
class Tally:
    views: list = field(default_factory=list)  # seconds to a usable page
    waits: list = field(default_factory=list)  # queue wait of each training, as the page reports it
    trainings: list = field(default_factory=list)  # seconds from Train to Done
    answers: list = field(default_factory=list)  # the choice (index) each answering student sent
    errors: list = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, runs: str, log, passcode: str | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "streamlit", "run", "server.py", "--server.headless", "true"]
    command += ["--server.address", "127.0.0.1", "--server.port", str(port), "--server.fileWatcherType", "none"]
    command += ["--browser.gatherUsageStats", "false"]
    env = {**os.environ, "FMLIB_RUNS": runs, "FMLIB_STARTER_RUNS": "0"}
    if passcode is not None:
        env["FMLIB_TEACHER_PASSCODE"] = passcode
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the app server did not become healthy within 60 s")


async def usable(page, before: str, wait: int) -> None:
    """Wait until the page shows a new title and its script has finished; fail on an app exception."""
    await page.wait_for_function(USABLE, arg=[before], timeout=wait * 1000, polling=50)
    shown = page.locator("[data-testid='stException']")
    if await shown.count():
        raise RuntimeError("the app shows an exception: " + (await shown.first.inner_text())[:200])


async def title(page) -> str:
    h1 = page.locator("h1")
    return await h1.first.inner_text() if await h1.count() else ""


async def browse(browser, url: str, pages: list, first: int, views: int, wait: int, tally: Tally) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    page.on("pageerror", lambda err: tally.errors.append(f"javascript: {err}"))
    try:
        start = time.monotonic()
        await page.goto(f"{url}/{pages[first % len(pages)]}", timeout=wait * 1000)
        await usable(page, "", wait)
        tally.views.append(time.monotonic() - start)
        for k in range(1, views):
            slug = pages[(first + k) % len(pages)]
            before = await title(page)
            start = time.monotonic()
            await page.locator(f"[data-testid='stSidebarNav'] a[href$='/{slug}']").click(timeout=wait * 1000)
            await usable(page, before, wait)
            tally.views.append(time.monotonic() - start)
    except Exception as err:  # a timeout or an app exception: counted, the class goes on
        tally.errors.append(f"browse: {str(err).splitlines()[0][:200]}")
    finally:
        await context.close()


async def train(browser, url: str, dataset: str, epochs: int, wait: int, deadline: float, tally: Tally) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    page.on("pageerror", lambda err: tally.errors.append(f"javascript: {err}"))
    try:
        start = time.monotonic()
        await page.goto(f"{url}/train?dataset={dataset}&model=fm&epochs={epochs}", timeout=wait * 1000)
        await usable(page, "", wait)
        tally.views.append(time.monotonic() - start)
        await page.get_by_role("button", name="Train", exact=True).click(timeout=wait * 1000)
        start = time.monotonic()
        done = page.get_by_text(re.compile(r"^Done: .* after [0-9.]+ s in line"))
        failed = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
        remaining = max(1.0, deadline - time.monotonic())
        await done.or_(failed).first.wait_for(timeout=remaining * 1000)
        if await failed.count():
            raise RuntimeError("training failed: " + (await failed.first.inner_text())[:200])
        tally.trainings.append(time.monotonic() - start)
        text = await done.inner_text()
        tally.waits.append(float(re.search(r"after ([0-9.]+) s in line", text).group(1)))
    except Exception as err:
        tally.errors.append(f"train: {str(err).splitlines()[0][:200]}")
    finally:
        await context.close()


class ProtocolSession:
    """One session over Streamlit's websocket (``/_stcore/stream``): a rerun request, then the
    server's messages up to the end of the script run."""

    def __init__(self, ws):
        self.ws = ws
        self.pages: dict[str, str] = {}  # url path -> page script hash, from the navigation message

    async def run(
        self,
        page: str,
        query: str = "",
        trigger: str | None = None,
        fragment: str | None = None,
        choice: tuple[str, str] | None = None,
    ):
        """One script run; ``trigger``: a button's id to click, ``choice``: (a radio's id, the option picked as
        the radio shows it)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        if page in self.pages:
            msg.rerun_script.page_script_hash = self.pages[page]
        if trigger is not None:
            widget = msg.rerun_script.widget_states.widgets.add()
            widget.id, widget.trigger_value = trigger, True
        if choice is not None:
            widget = msg.rerun_script.widget_states.widgets.add()
            widget.id, widget.string_value = choice
        if fragment is not None:
            msg.rerun_script.fragment_id, msg.rerun_script.is_auto_rerun = fragment, True
        await self.ws.send(msg.SerializeToString())
        shown = {"headings": [], "alerts": [], "buttons": {}, "radios": {}, "exceptions": [], "auto_rerun": None}
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(await self.ws.recv())
            kind = reply.WhichOneof("type")
            if kind == "navigation":
                self.pages.update({p.url_pathname: p.page_script_hash for p in reply.navigation.app_pages})
            elif kind == "auto_rerun":
                shown["auto_rerun"] = (reply.auto_rerun.interval, reply.auto_rerun.fragment_id)
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                what = element.WhichOneof("type")
                if what == "heading":
                    shown["headings"].append(element.heading.body)
                elif what == "alert":
                    shown["alerts"].append((element.alert.format, element.alert.body))
                elif what == "button":
                    shown["buttons"][element.button.label] = element.button.id
                elif what == "radio":
                    shown["radios"][element.radio.label] = (element.radio.id, list(element.radio.options))
                elif what == "exception":
                    shown["exceptions"].append(element.exception.message)
            elif kind == "script_finished" and reply.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return shown


async def protocol_view(session: ProtocolSession, page: str, query: str, wait: int, tally: Tally) -> dict:
    start = time.monotonic()
    shown = await asyncio.wait_for(session.run(page, query), wait)
    if shown["exceptions"]:
        raise RuntimeError("the app shows an exception: " + shown["exceptions"][0][:200])
    if not shown["headings"]:
        raise RuntimeError(f"page {page!r} shows no title")
    tally.views.append(time.monotonic() - start)
    return shown


async def protocol_browse(
    url: str, pages: list, first: int, views: int, wait: int, tally: Tally, answer_stop: int = 0
) -> None:
    """``views`` page views from pages[first]; with ``answer_stop``, first an answer to that lesson stop (a
    choice drawn with the seed ``first``)."""
    import websockets

    try:
        async with websockets.connect(f"{url.replace('http', 'ws')}/_stcore/stream", subprotocols=["streamlit"]) as ws:
            session = ProtocolSession(ws)
            if answer_stop:
                query = f"stop={answer_stop}"
                shown = await protocol_view(session, "lesson", query, wait, tally)
                radio, options = shown["radios"]["Your guess"]
                choice = random.Random(first).randrange(len(options))
                shown = await asyncio.wait_for(session.run("lesson", query, choice=(radio, options[choice])), wait)
                if shown["exceptions"]:
                    raise RuntimeError("the lesson shows an exception: " + shown["exceptions"][0][:200])
                tally.answers.append(choice)
            for k in range(views):
                await protocol_view(session, pages[(first + k) % len(pages)], "", wait, tally)
    except Exception as err:  # a timeout, a dropped connection or an app exception: counted, the class goes on
        tally.errors.append(f"browse: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")


async def protocol_train(url, dataset: str, epochs: int, wait: int, deadline: float, tally: Tally) -> None:
    import websockets
    from streamlit.proto.Alert_pb2 import Alert

    query = f"dataset={dataset}&model=fm&epochs={epochs}"
    try:
        async with websockets.connect(f"{url.replace('http', 'ws')}/_stcore/stream", subprotocols=["streamlit"]) as ws:
            session = ProtocolSession(ws)
            shown = await protocol_view(session, "train", query, wait, tally)
            start = time.monotonic()
            shown = await asyncio.wait_for(session.run("train", query, trigger=shown["buttons"]["Train"]), wait)
            while True:
                errors = [body for kind, body in shown["alerts"] if kind == Alert.ERROR] + shown["exceptions"]
                if errors:
                    raise RuntimeError("training failed: " + errors[0][:200])
                done = [body for kind, body in shown["alerts"] if body.startswith("Done: ")]
                if done:
                    break
                if shown["auto_rerun"] is None or time.monotonic() > deadline:
                    raise RuntimeError("the Train page stopped polling before the training ended")
                interval, fragment = shown["auto_rerun"]
                await asyncio.sleep(interval)  # the browser's timer for the fragment's run_every
                rerun = await asyncio.wait_for(session.run("train", query, fragment=fragment), wait)
                shown = {**rerun, "auto_rerun": rerun["auto_rerun"] or shown["auto_rerun"]}
            tally.trainings.append(time.monotonic() - start)
            tally.waits.append(float(re.search(r"after ([0-9.]+) s in line", done[0]).group(1)))
    except Exception as err:
        tally.errors.append(f"train: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")


async def drive(url: str, args) -> tuple[Tally, Tally]:
    """The baseline session, then the class; with the client ``args.client`` speaks."""
    if args.client == "protocol":
        return await lesson(
            lambda tally, first, views, answer=0: protocol_browse(
                url, args.browse, first, views, args.wait, tally, answer
            ),
            lambda tally, deadline: protocol_train(url, args.dataset, args.epochs, args.wait, deadline, tally),
            args,
        )
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic"],
        )
        try:
            return await lesson(
                lambda tally, first, views, answer=0: browse(
                    browser, url, args.browse, first, views, args.wait, tally
                ),  # no answers
                lambda tally, deadline: train(browser, url, args.dataset, args.epochs, args.wait, deadline, tally),
                args,
            )
        finally:
            await browser.close()


async def lesson(browse_session, train_session, args) -> tuple[Tally, Tally]:
    await browse_session(Tally(), 0, len(args.browse))  # warms the server's caches, as a teacher's dry run does
    baseline = Tally()
    await browse_session(baseline, 0, len(args.browse))
    tally = Tally()
    deadline = time.monotonic() + args.ramp + args.deadline
    rng = random.Random(0)

    async def later(delay, session):
        await asyncio.sleep(delay)
        await session

    sessions = [
        train_session(tally, deadline) if i < args.training else browse_session(tally, i, args.pages, args.answers)
        for i in range(args.sessions)
    ]
    tasks = [asyncio.ensure_future(later(rng.uniform(0, args.ramp), s)) for s in sessions]
    _, unfinished = await asyncio.wait(tasks, timeout=args.ramp + args.deadline)
    for task in unfinished:
        task.cancel()
    tally.errors += [f"session still running at the {args.deadline} s deadline"] * len(unfinished)
    return baseline, tally


def quantiles(values) -> dict:
    if not values:
        return {"n": 0}
    values = sorted(values)
    q = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else [values[0]] * 19
    return {"n": len(values), "p50": statistics.median(values), "p95": q[18], "max": values[-1]}


def run(args) -> int:
    if not 1 <= args.sessions <= 60:
        raise ValueError(f"--sessions must be in 1..60, got {args.sessions}")
    if not 0 <= args.training <= args.sessions:
        raise ValueError(f"--training must be in 0..--sessions = 0..{args.sessions}, got {args.training}")
    if not 0 <= args.ramp <= 60:
        raise ValueError(f"--ramp must be in 0..60 seconds, got {args.ramp}")
    unknown = sorted(set(args.browse) - set(PAGE_SLUGS))
    if unknown:
        raise ValueError(f"--browse: no page {', '.join(unknown)}; the pages are {', '.join(PAGE_SLUGS)}")
    if args.answers and args.client != "protocol":
        raise ValueError("--answers needs --client protocol")
    if args.client == "browser" and not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `make browser-deps` installs Debian's chromium")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="fmlib-classroom-") as tmp, open(Path(tmp) / "server.log", "w") as log:
        port = free_port()
        passcode = secrets.token_hex(4) if args.answers else None
        server = start_server(port, str(Path(tmp) / "runs"), log, passcode)
        try:
            baseline, tally = asyncio.run(drive(f"http://127.0.0.1:{port}", args))
            if args.hold:
                print(f"serving http://127.0.0.1:{port} for {args.hold} s (teacher passcode {passcode})", flush=True)
                time.sleep(args.hold)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        server_log = (Path(tmp) / "server.log").read_text()[-2000:]
    report = {
        "client": args.client,
        "sessions": args.sessions,
        "training": args.training,
        "browse": args.browse,
        "cores": os.cpu_count(),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "baseline_views": quantiles(baseline.views),
        "class_views": quantiles(tally.views),
        "queue_wait": quantiles(tally.waits),
        "queue_waits": sorted(round(w, 1) for w in tally.waits),
        "train_to_done": quantiles(tally.trainings),
        "answers_sent": {str(c): tally.answers.count(c) for c in sorted(set(tally.answers))},
        "errors": baseline.errors + tally.errors,
    }
    print_report(report, args)
    print(json.dumps(report))
    if report["errors"]:
        print("server log (end):\n" + server_log, file=sys.stderr)
    return 0


def print_report(r: dict, args) -> None:
    def line(name, q):
        if not q["n"]:
            return f"{name:<34} none"
        return f"{name:<34} n={q['n']:<4} p50 {q['p50']:6.2f} s   p95 {q['p95']:6.2f} s   max {q['max']:6.2f} s"

    print(
        f"classroom ({args.client} clients): {r['sessions']} sessions, {r['training']} training ({args.dataset}, FM, {args.epochs} epochs), "
        f"{r['cores']} cores, load {r['load_before']} -> {r['load_after']}"
    )
    print(line("baseline: 1 session, page views", r["baseline_views"]))
    print(line("class: page views", r["class_views"]))
    base, cls = r["baseline_views"], r["class_views"]
    if base["n"] and cls["n"]:
        print(f"{'class / baseline':<34} p50 x{cls['p50'] / base['p50']:.1f}   p95 x{cls['p95'] / base['p95']:.1f}")
    print(line("training: queue wait", r["queue_wait"]))
    print(line("training: Train to Done", r["train_to_done"]))
    if r["answers_sent"]:
        sent = ", ".join(f"choice {c}: {n}" for c, n in r["answers_sent"].items())
        print(f"{'answers sent (the teacher sees)':<34} {sent}")
    print(f"errors: {len(r['errors'])}")
    for error in r["errors"][:20]:
        print(f"  {error}")
