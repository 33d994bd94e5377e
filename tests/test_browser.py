"""One real browser against a running app: every page, with a saved run of each kind, and the
interactions a class performs (train, save, switch the model, step, toggle, press the buttons).

Fails on an exception shown on a page, on a stale message it can detect, and on any warning or
traceback in the server's log. Screenshots go to tests/screenshots/ (ignored by git). The app server and Chromium
are the session's (browser_app.py); a wait is for a state of the page (``settle``), never for a fixed time.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest
from browser_app import CHROMIUM, KINDS, ROOT, act, new_tab, read, resize, sent, settle
from patience import ms
from test_browser_projector import CUT_TEXTS, SCREENS, cut_buttons

SHOTS = ROOT / "tests" / "screenshots"
WINDOW = {"width": 1400, "height": 2400}  # the module's tab: every page's content in one screenshot
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
    tab = new_tab(browser, WINDOW)
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


def choose(page, label: str, option: str, tries: int = 6) -> None:
    """Pick ``option`` in the select box labelled ``label``. The open list closes when the page moves under it
    (a scroll, a rerun redrawing the box), and a click now and then only focuses the box (after Save run on the
    Train page: the box focused, its list not open, in 3 of 5 runs of that test alone), so a list that has not
    shown the option is opened again, as a reader would click again: after 1 s, then 2, 4, 8, 16 and 32 s (each
    stretched on a busy machine), so that a lost click costs a second and a slow machine still gets a minute."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).first
    for attempt in range(tries):
        settle(page)
        picked = option in read(box.inner_text).splitlines()  # picked already: the click asks for no rerun
        box.scroll_into_view_if_needed()  # a long scroll first, as a reader's; the click waits until the box is still
        box.click()
        try:
            pick = partial(page.get_by_role("option", name=option, exact=True).first.click, timeout=ms(2**attempt))
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
    # a second visit of each page, with the session's state of the first, on a laptop's screen at 150 % with the
    # sidebar open: no button or text of the page cut by an ellipsis ("Link to this…", a metric's label)
    resize(page, *SCREENS["1280x720 at 150%"])
    cut = {}
    try:
        for title in titles:
            visit(page, title)
            cut[title] = cut_buttons(page) + page.evaluate(CUT_TEXTS)
    finally:
        resize(page, WINDOW)
    assert not any(cut.values()), f"cut at 150 % with the sidebar open: { {t: c for t, c in cut.items() if c} }"


def test_a_students_older_run_stays_picked_through_a_link_and_a_reload(server, browser):
    """The sidebar's run picker writes what it shows into the URL and reads it back: an author's run is shown by its
    id, so a link to an older run of the author opens it, and a reload after picking one keeps it."""
    from fmlib.data import split, synthetic
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    store = RunStore(Path(server[1]).parent / "runs")  # the session server's store (browser_app.serve_app)
    data = split(synthetic.make(synthetic.demo_R(), n_samples=2000, cardinality=10, seed=0), seed=0)
    older, newer = (
        store.save(train_model("fm", data, TrainConfig(epochs=1), dim=2), f"cleo-run{i}", author="Cleo") for i in (1, 2)
    )
    tab = new_tab(browser, {"width": 1400, "height": 1000})
    picked = tab.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").filter(has_text="Saved run")
    tab.goto(f"{server[0]}/train?dataset=synthetic&run_id={older}")
    settle(tab)
    assert picked.locator("input").input_value() == older, "the link's run, not the author's newest"
    tab.goto(f"{server[0]}/train?dataset=synthetic&run_id={newer}")
    settle(tab)
    choose(tab, "Saved run", older)
    tab.reload()
    settle(tab)
    assert picked.locator("input").input_value() == older and f"run_id={older}" in tab.url
    tab.context.close()


def train_briefly(page) -> None:
    """On the Train page: train the chosen model for 3 epochs and wait until its results are drawn."""
    field = page.get_by_label("Max epochs")
    field.fill("3")
    act(page, partial(field.press, "Enter"))
    button(page, "Train").click()
    page.get_by_text("Save run").first.wait_for()  # the page polls its queued job
    settle(page)


def test_train_refuses_a_bad_number_trains_saves_and_switching_the_model_hides_the_old_results(page):
    visit(page, "Train")
    epochs = page.get_by_label("Max epochs")
    epochs.fill("0")  # typed, no Enter: the click elsewhere commits it
    act(page, page.get_by_text("Train a model").first.click)
    refused = page.get_by_text("Max epochs: 0 is out of range; use 1 to 200.")
    assert refused.count() > 0, "an out-of-range number is refused visibly"
    assert button(page, "Train").count() == 0
    train_briefly(page)
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


def test_switching_the_replay_view_while_one_plays_draws_the_other(page):
    """A trained FwFM replays its learning curves and its R: each view in turn is played, and the other picked while
    it plays (once that left ``pageerror: undefined`` in the console, which conftest fails a browser test on)."""
    from app_pages._replay import LABELS, WHAT_IT_SHOWS

    visit(page, "Train")
    choose(page, "Model", "fwfm")
    train_briefly(page)
    views = page.locator("[data-testid='stMain'] [data-testid='stRadio']").filter(has_text="Watch").first
    labels = read(views.locator("[data-testid='stRadioOption']").all_inner_texts)
    kind = {label: kind for kind, label in LABELS.items()}
    assert len(labels) >= 2, f"a trained FwFM replays its curves and its R: {labels}"
    replay = page.locator("[data-testid='stMain'] .st-key-replay_what_figure .js-plotly-plot")
    for label in [*labels, *labels]:  # each view picked while the other plays, twice round
        replay.locator(".updatemenu-button").filter(has_text="Play").click()  # in the browser: no rerun
        act(page, views.get_by_text(label, exact=True).click)
        assert shows(page, WHAT_IT_SHOWS[kind[label]]), f"the replay of {label} is not drawn"
        replay.locator(".main-svg").first.wait_for()
    no_exception(page, "Train after switching the replay views")


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
