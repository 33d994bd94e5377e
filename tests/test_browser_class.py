"""One class on two app servers and one PostgreSQL: a student answers on one server, the teacher counts and reveals on
the other, the student sees the reveal; the teacher's unlock survives a reload, Lock ends it, an altered token is
refused with a note.

Debian's PostgreSQL (`make system-deps`) runs in a temporary folder, reached through its Unix socket only (no TCP
port); the two servers share it (FMLIB_CLASS_DB) and one run-store folder, as a class on two machines would behind
a proxy. Every wait is for a state of the page (``settle``, an element shown), never for a fixed time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from browser_app import CHROMIUM, act, free_port, new_tab, serve, settle
from patience import limit

from fmapp.lessons import lesson_files, load_lesson
from fmapp.lessons.classroom import ClassAnswers

POSTGRES = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
PASSCODE = "two-servers"
STOPS = load_lesson(lesson_files()[0]).stops
STOP = next(i for i, s in enumerate(STOPS, 1) if s.answer is not None)  # answered in the file: nothing to compute
VIEW = {"width": 1280, "height": 800}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is missing: `make system-deps`"),
    pytest.mark.skipif(not POSTGRES, reason="Debian's PostgreSQL is missing: `make system-deps`"),
]


@contextlib.contextmanager
def postgres():
    """A fresh PostgreSQL cluster in a temporary folder, listening on a Unix socket in it (no TCP); yields its
    SQLAlchemy URL. As root (a container, CI), the server runs as Debian's ``postgres`` user: it refuses root."""
    bindir = POSTGRES[-1].parent
    folder = Path(tempfile.mkdtemp(prefix="fmlib-pg-"))
    as_user = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def run(*command):
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=limit(120))

    run(bindir / "initdb", "-D", data, "-U", "fmlib", "-A", "trust", "--no-sync")
    options = f"-k {folder} -p {port} -c listen_addresses='' -c fsync=off"
    run(bindir / "pg_ctl", "-D", data, "-l", folder / "log", "-o", options, "-w", "start")
    try:
        run(bindir / "createdb", "-h", folder, "-p", str(port), "-U", "fmlib", "class")
        yield f"postgresql+psycopg://fmlib@/class?host={folder}&port={port}"
    finally:
        run(bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def database():
    with postgres() as url:
        yield url


@pytest.fixture(scope="module")
def servers(database, tmp_path_factory):
    """Two app servers on the one database and one run-store folder: (student's url, teacher's url)."""
    runs = tmp_path_factory.mktemp("shared") / "runs"
    env = {"FMLIB_CLASS_DB": database, "FMLIB_TEACHER_PASSCODE": PASSCODE, "FMLIB_RUNS": str(runs)}
    with (
        serve(tmp_path_factory.mktemp("one"), env=env) as (one, _),
        serve(tmp_path_factory.mktemp("two"), env=env) as (two, _),
    ):
        yield one, two


def test_the_same_answer_written_through_two_servers_at_once_is_counted_once(database):
    first, second = ClassAnswers(database), ClassAnswers(database)  # the two servers' connections
    start = threading.Barrier(8)
    outcomes = []

    def answer(store, choice):
        start.wait()
        outcomes.append(store.answer("race", 1, "one-browser", choice))

    threads = [threading.Thread(target=answer, args=(s, i % 2)) for i, s in enumerate([first, second] * 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(first.counts("race", 1, 2)) == 1 and sum(second.counts("race", 1, 2)) == 1
    assert sorted(outcomes) == ["changed"] * 7 + ["counted"]


def lesson_url(server: str) -> str:
    return f"{server}/lesson?lesson=intro&stop={STOP}"


HAS_TOKEN = "() => /(^|; )fmlib_teacher=[^;]/.test(document.cookie)"


def unlocked_teacher(browser, server: str):
    """A new tab on ``server``'s Teacher page, the passcode typed and Unlock pressed."""
    tab = new_tab(browser, VIEW)
    tab.goto(f"{server}/teacher")
    settle(tab)
    tab.get_by_label("Passcode").fill(PASSCODE)
    act(tab, tab.get_by_role("button", name="Unlock").click)
    tab.wait_for_function(HAS_TOKEN)  # the page writes the cookie by script, after the run
    return tab


def test_a_student_on_one_server_sees_the_reveal_of_the_teacher_on_the_other(servers, browser):
    from playwright.sync_api import expect

    student_server, teacher_server = servers
    teacher = unlocked_teacher(browser, teacher_server)
    expect(teacher.get_by_role("button", name="Lock")).to_be_visible()

    teacher.goto(lesson_url(teacher_server))  # a new session of the same browser: still the teacher
    settle(teacher)
    paced = teacher.get_by_text("Students wait for my reveal", exact=True)
    expect(paced).to_be_visible()
    act(teacher, paced.click)
    expect(teacher.get_by_text("0 answers so far")).to_be_visible()

    student = new_tab(browser, VIEW)
    student.goto(lesson_url(student_server))
    settle(student)
    choice = STOPS[STOP - 1].choices.index(STOPS[STOP - 1].answer)
    act(student, student.locator("[data-testid='stMain'] [data-testid='stRadioOption']").nth(choice).click)
    expect(student.get_by_text("Waiting for the teacher to reveal the answer.")).to_be_visible()

    expect(teacher.get_by_text("1 answer so far")).to_be_visible()  # the teacher's chart polls the database
    settle(teacher)
    act(teacher, teacher.get_by_role("button", name="Reveal to the class").click)
    expect(student.get_by_text(f"Your guess, {STOPS[STOP - 1].answer}, is right.")).to_be_visible()

    teacher.reload()  # a reload keeps the teacher's view
    settle(teacher)
    expect(teacher.get_by_role("button", name="Hide the answer again")).to_be_visible()


def test_lock_ends_the_unlock_and_an_altered_token_is_refused_with_a_note(servers, browser):
    from playwright.sync_api import expect

    _, server = servers
    tab = unlocked_teacher(browser, server)
    cookie = next(c for c in tab.context.cookies() if c["name"] == "fmlib_teacher")
    unlock, expires, signature = cookie["value"].split(".")

    altered = new_tab(browser, VIEW)  # a student who copied the cookie and pushed its expiry a day on
    altered.context.add_cookies([{**cookie, "value": f"{unlock}.{int(expires) + 86400}.{signature}"}])
    altered.goto(lesson_url(server))
    settle(altered)
    expect(altered.get_by_text("The teacher's unlock in this browser was not accepted")).to_be_visible()
    assert altered.get_by_text("Students wait for my reveal", exact=True).count() == 0

    act(tab, tab.get_by_role("button", name="Lock").click)
    tab.wait_for_function(f"() => !({HAS_TOKEN})()")  # the script that forgets the cookie has run
    assert not [c for c in tab.context.cookies() if c["name"] == "fmlib_teacher" and c["value"]]
    tab.goto(lesson_url(server))
    settle(tab)
    assert tab.get_by_text("Students wait for my reveal", exact=True).count() == 0

    stolen = new_tab(browser, VIEW)  # the token from before Lock, kept elsewhere: Lock ended it on every server
    stolen.context.add_cookies([cookie])
    stolen.goto(lesson_url(servers[0]))
    settle(stolen)
    expect(stolen.get_by_text("The teacher's unlock in this browser was ended")).to_be_visible()


def test_deep_links_ask_the_server_nothing_it_does_not_have(servers, browser):
    """A deep link's first load finds the server at once: no 404 for /<page>/_stcore/health or host-config (and, as
    in every browser test, no request to another host)."""
    tab = new_tab(browser, VIEW)
    failed = []
    tab.on("response", lambda response: response.status >= 400 and failed.append((response.status, response.url)))
    for path in ("lesson?stop=2", "train", "playground", "derivations"):
        tab.goto(f"{servers[0]}/{path}")
        settle(tab)
    assert not failed
