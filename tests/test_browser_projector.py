"""A real browser at a projector's size: 1280×720, and the same screen at 150 % zoom (853×480 CSS
pixels drawn at device scale 1.5), with and without projector mode.

Checked on element boxes: the formula of every derivation step a lesson stop links to lies above the fold in
projector mode, and the slip step's without it too; no button's label is cut (scrollWidth ≤ clientWidth), no two
chart titles overlap, every heatmap axis keeps a label per field; the projector toggle collapses the sidebar in the
same session, every time it is turned on.
Screenshots of each view go to the test's temporary folder. The app server and Chromium are the session's
(browser_app.py); a wait is for a state of the page (``settle``), never for a fixed time.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from browser_app import CHROMIUM, CONSOLE, act, as_new_browser, read, resize, settle

from fmapp.lessons import lesson_files, load_lesson

SCREENS = {"1280x720": ({"width": 1280, "height": 720}, 1.0), "1280x720 at 150%": ({"width": 853, "height": 480}, 1.5)}
FIELDS = 8  # the synthetic data's m
STEP = "derivations?deriv_derivation=fm-gradient&deriv_step=7"  # the FM note's slip: two formulas
# every derivation step a lesson stop links to: a class arrives there from the lesson, in projector mode (with the
# sidebar open at 150 %, Rendle's long title takes a line of its own and step 1's formula ends 30 px lower)
LESSON_STEPS = [
    f"derivations?{urlencode(stop.params)}"
    for path in lesson_files()
    for stop in load_lesson(path).stops
    if stop.page == "derivations"
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is missing: `make browser-deps` installs it"
    ),
]


@pytest.fixture(scope="module")
def server(app_server):
    """The session's app server: a tiny shared FwFM run in its store (``tiny-fwfm``, the Field interactions page's
    default on the synthetic data), beside the other browser tests' runs (browser_app.saved_runs)."""
    return app_server.url


def opened(window, url: str, screen: str):
    """The module's tab (conftest ``window``) as a browser new to the app (a new session, no cookie, no storage), at
    ``screen``, on ``url``, settled: the script idle, its charts drawn, its fonts loaded (browser_app.settle)."""
    viewport, scale = SCREENS[screen]
    as_new_browser(window, viewport, scale)
    window.goto(url)
    settle(window)
    return window


def cut_buttons(tab) -> list[str]:
    """Labels of visible buttons in the page whose text does not fit."""
    return tab.eval_on_selector_all(
        "[data-testid='stMain'] button",
        "bs => bs.filter(b => b.offsetParent && b.scrollWidth > b.clientWidth + 1).map(b => b.innerText)",
    )


def overlaps(boxes: list[dict]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, a in enumerate(boxes)
        for j, b in enumerate(boxes[i + 1 :], i + 1)
        if a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    ]


@pytest.mark.parametrize(
    ("step", "projector"),
    [*((step, True) for step in sorted({STEP, *LESSON_STEPS})), (STEP, False)],  # a class's view, then a reader's
    ids=lambda value: {True: "projector", False: "plain"}.get(value, value),
)
def test_the_derivation_step_formula_is_above_the_fold_and_no_button_is_cut(server, window, projector, step, tmp_path):
    """At each screen: opened at the first, then the window resized to the next (browser_app.resize)."""
    from playwright.sync_api import expect

    for i, (screen, (viewport, scale)) in enumerate(SCREENS.items()):
        if i == 0:
            tab = opened(window, f"{server}/{step}" + ("&projector=true" if projector else ""), screen)
            # waits: on a busy machine a rerun (the step bound to the URL) can redraw the page after the first idle
            # look, so the layout is measured once the step's buttons are back and the page has settled again
            expect(tab.get_by_role("button", name="◀ Back")).to_be_visible()
            settle(tab)
        else:
            resize(tab, viewport, scale)
        tab.screenshot(path=str(tmp_path / f"derivation {screen} {'projector' if projector else 'plain'}.png"))
        formula = tab.locator("[data-testid='stMain'] .katex-display").first.bounding_box()
        assert formula is not None, f"{screen}: no formula on the page"
        bottom = formula["y"] + formula["height"]
        assert bottom < viewport["height"], f"{screen}: the step's formula ends at {bottom:.0f} px, below the fold"
        assert not cut_buttons(tab), f"{screen}: buttons whose label is cut: {cut_buttons(tab)}"


@pytest.mark.parametrize("projector", [True, False], ids=["projector", "plain"])
@pytest.mark.parametrize("screen", list(SCREENS))
def test_heatmap_titles_do_not_overlap_and_every_field_keeps_its_label(server, window, screen, projector, tmp_path):
    tab = opened(
        window, f"{server}/field_interactions?dataset=synthetic" + ("&projector=true" if projector else ""), screen
    )
    # the learned R's heatmaps, named as the lesson test finds them: the page opens with a toy R's (plain mode)
    heatmaps = tab.locator("[data-testid='stMain'] .st-key-heatmaps .js-plotly-plot")
    if projector:  # a class with a saved run to pick: the run picker shares the ρ slider's row, the heatmaps show
        heatmaps.wait_for()
        settle(tab)
        top, height = heatmaps.bounding_box()["y"], SCREENS[screen][0]["height"]
        assert top < height - 100, f"the heatmaps start at {top:.0f} px, below a {height} px screen"
    heatmaps.scroll_into_view_if_needed()
    settle(tab)
    heatmaps.screenshot(path=str(tmp_path / f"heatmaps {screen} {'projector' if projector else 'plain'}.png"))
    titles = [t.bounding_box() for t in heatmaps.locator(".infolayer .annotation, .infolayer .gtitle").all()]
    assert len(titles) >= 3 and not overlaps(titles), f"overlapping chart titles: {overlaps(titles)}"
    x_labels = heatmaps.locator(".xaxislayer-above text").all_text_contents()
    y_labels = heatmaps.locator(".yaxislayer-above text").all_text_contents()
    assert len(x_labels) == 3 * FIELDS, f"field labels dropped: {len(x_labels)} of 3 heatmaps × {FIELDS} shown"
    assert len(y_labels) == FIELDS, f"field labels dropped: {len(y_labels)} of {FIELDS} shown on the shared y axis"
    titled = heatmaps.locator("[class^='g-x'] text, [class^='g-y'] text").all()
    axis_titles = [t.bounding_box() for t in titled if t.text_content()]
    plots = [p.bounding_box() for p in heatmaps.locator(".nsewdrag").all()]  # each heatmap's drawing area
    # in projector mode the figure's title names rows f and columns g: the short figure keeps its height for the rows
    assert len(axis_titles) == (0 if projector else 6) and len(plots) == 3
    assert not overlaps(titles + axis_titles), "a chart or axis title runs into another"
    assert not [(a, p) for a in axis_titles for p in plots if overlaps([a, p])], "an axis title lies on a heatmap"
    assert not cut_buttons(tab)


# Every chart on the page has drawn its SVG: before, its texts have no boxes to check.
CHARTS_DRAWN = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")]
  .every((chart) => chart.querySelector(".main-svg"))"""

# Every chart's texts, by their boxes on the page: a title, axis title, subplot title, legend entry or tick label that
# lies outside its chart (cut by the chart's edge), and a title that runs into another text of its chart.
CHART_TEXT_PROBLEMS = """() => {
  const problems = [];
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  for (const chart of document.querySelectorAll("[data-testid='stMain'] .js-plotly-plot")) {
    const box = chart.getBoundingClientRect();
    const name = (chart.querySelector(".gtitle") ?? chart.querySelector(".annotation-text"))?.textContent ?? "a chart";
    const boxes = (selector) => [...chart.querySelectorAll(selector)]
      .map((text) => [text.textContent, text.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
    const titles = boxes("text.gtitle, text[class$='title'], .annotation-text");
    const others = boxes(".legendtext, [class*='tick'] text");
    for (const [text, b] of [...titles, ...others])
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)
        problems.push(`${name}: '${text}' is cut by the chart's edge`);
    titles.forEach(([text, b], i) => {
      for (const [other, c] of [...titles.slice(i + 1), ...others])
        if (meet(b, c)) problems.push(`${name}: '${text}' runs into '${other}'`);
    });
  }
  return problems;
}"""


# Texts the page draws cut with an ellipsis (a metric's label or value, an expander's title): what a class reads as
# "89,139 parame…".
CUT_TEXTS = """() => [...document.querySelectorAll("[data-testid='stMain'] *")]
  .filter((e) => e.offsetParent && getComputedStyle(e).textOverflow === "ellipsis" && e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.innerText)"""


def test_in_projector_mode_no_chart_text_is_cut_or_runs_into_another_on_any_page(server, window):
    """Every page as it opens, in projector mode (larger chart text), at each screen (opened at the first, then the
    window resized to the next: browser_app.resize): each chart's titles, legend and tick labels lie inside the
    chart, no title runs into another of its texts (``CHART_TEXT_PROBLEMS``), and no text is cut (``CUT_TEXTS``)."""
    from app_pages._ui import PAGES

    problems = {}
    for path, title, _, _ in PAGES:
        page = "" if path.endswith("home.py") else Path(path).stem
        for i, (screen, (viewport, scale)) in enumerate(SCREENS.items()):
            if i == 0:
                tab = opened(window, f"{server}/{page}?dataset=synthetic&projector=true", screen)
            else:
                resize(tab, viewport, scale)
            tab.wait_for_function(CHARTS_DRAWN)
            found = tab.evaluate(CHART_TEXT_PROBLEMS) + [f"'{text}' is cut" for text in tab.evaluate(CUT_TEXTS)]
            if found:
                problems[f"{title} at {screen}"] = found
    assert not problems, f"chart texts cut or run together: {problems}"


def test_in_a_browser_the_step_survives_leaving_the_page_and_reset_clears_the_url(server, window):
    from playwright.sync_api import expect  # waits as long as browser_app.WAIT: a shared machine may be slow

    tab = opened(window, f"{server}/{STEP}", "1280x720")
    act(tab, tab.get_by_role("button", name="Next ▶").click)
    expect(tab.get_by_text("Step 8 of 9")).to_be_visible()
    assert "deriv_step=8" in tab.url
    act(tab, tab.get_by_role("link", name="Train").click)
    expect(tab.get_by_text("Step 8 of 9")).to_be_hidden()
    act(tab, tab.get_by_role("link", name="Derivations").click)
    expect(tab.get_by_text("Step 8 of 9")).to_be_visible()
    tab.get_by_role("button", name="Link to this view").click()
    code = tab.locator("[data-testid='stPopoverBody'] code").first
    assert "deriv_step=8" in read(code.inner_text)
    tab.keyboard.press("Escape")
    act(tab, tab.get_by_role("button", name="Reset to defaults").click)
    expect(tab.get_by_text("Step 1 of 4")).to_be_visible()  # Rendle's identity, the first derivation
    assert "deriv_step" not in tab.url and "deriv_derivation" not in tab.url


OFF_SCREEN = "() => document.querySelector(\"[data-testid='stSidebar']\").getBoundingClientRect().right <= 0"


def test_the_projector_toggle_collapses_the_sidebar_each_time_and_turning_it_off_keeps_it_open(server, window):
    from playwright.sync_api import expect

    tab = opened(window, f"{server}/derivations", "1280x720")
    toggle = tab.locator("[data-testid='stSidebar']").get_by_text("Projector mode")
    expand = tab.get_by_role("button", name="Expand sidebar")  # shown only while the sidebar is collapsed
    expect(expand).to_be_hidden()
    for turn in range(2):  # the second time after the sidebar was opened by hand (which the browser remembers)
        act(tab, toggle.click)
        expect(expand).to_be_visible()
        tab.wait_for_function(OFF_SCREEN)  # the sidebar slides out, then stays out: once the page has settled
        settle(tab, quiet=1000)
        assert tab.evaluate(OFF_SCREEN), f"turn {turn + 1}: the sidebar came back"
        assert "projector=true" in tab.url
        expand.click()
        act(tab, toggle.click)
        expect(tab.locator("html")).not_to_have_css("font-size", "18px")  # projector mode is off
        settle(tab, quiet=1000)
        expect(expand).to_be_hidden()
        assert "projector" not in tab.url


def test_an_unknown_page_in_a_link_says_so_and_opens_the_home_page(server, window):
    tab = opened(window, f"{server}/no_such_page?model=fm", "1280x720")
    assert tab.get_by_text("Page not found").first.is_visible()
    assert tab.get_by_role("heading", name="fmlib explainer").is_visible()
    # Streamlit's client logs the fallback as an error; the test expects it, once, and nothing else
    expected = "console.error: The page that you have requested does not seem to exist. Running the app's main page."
    assert CONSOLE.count(expected) == 1, CONSOLE
    CONSOLE.remove(expected)
