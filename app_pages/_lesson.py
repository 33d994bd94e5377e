"""What the Lesson page keeps between pages and sessions: a student's guesses, the class's answers, prepared links.

Not a page. A student's guesses live in the session (``lesson_guesses``) and in the URL
(``guesses``, ``revealed``), so they survive a visit to another page, the browser's Back and a
reload. The class's answers, reveals and pacing live in the class's database (``ClassAnswers``: a SQLite
file beside the run store, or the database FMLIB_CLASS_DB names, which several servers can share), counted per
browser (a hash of Streamlit's XSRF cookie, so a second tab does not vote twice), with no names.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets

import streamlit as st

from app_pages._ui import run_store
from app_pages._view import LESSON_VIEW, SIDEBAR_DEFAULTS, projector
from fmapp.lessons.classroom import ClassAnswers, open_class
from fmlib.derivations import catalog
from fmlib.runs import RunError

KEPT = ("dataset", "projector")  # the view a prepared link keeps unless the stop names its own value
RUN_KEYS = ("run_id", "fi_run")  # parameters that name a saved run
ARRIVE = """
<script>
{
  const sections = SECTIONS;  // keys of the sections the link opened (a toggle's "true" is no section: expanders only)
  const main = "[data-testid='stMain']";
  // where the stop looks: the page's main figure inside an opened section, else the first opened section drawn,
  // else the page's main figure (the box keyed LESSON_VIEW), else nothing (the top)
  const section = () => {
    const opened = sections.map((key) => document.querySelector(`${main} .st-key-${key}`))
      .filter((el) => el && el.querySelector(":scope > [data-testid='stExpander']"));
    const view = document.querySelector(`${main} .st-key-LESSON_VIEW`);
    return opened.find((el) => view && el.contains(view)) ? view : opened[0] ?? view;
  };
  const top = () => document.querySelectorAll("*").forEach((el) => { if (el.scrollTop) el.scrollTop = 0; });
  const follow = (el) => { el.style.scrollMarginTop = "4.5rem"; el.scrollIntoView({ block: "start" }); };  // below the header
  const drawn = () => document.querySelector("[data-testid='stApp']")?.getAttribute("data-test-script-state") === "notRunning"
    && !document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']")
    && [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")].every((c) => c.querySelector(".main-svg"));
  top();
  // follow the section (or keep the top: the page's drawing can restore the old offset) while the page is drawn, until
  // it has stood drawn for a second or the reader scrolls; however slow the machine, not for a fixed time
  const scrolls = ["wheel", "touchmove", "keydown"];
  let still = 0;
  const stop = () => { clearInterval(timer); scrolls.forEach((e) => removeEventListener(e, stop)); };
  const timer = setInterval(() => {
    const el = section();
    if (el) follow(el); else top();
    still = drawn() ? still + 1 : 0;
    if (still >= 4) stop();
  }, 250);
  scrolls.forEach((e) => addEventListener(e, stop));
}
</script>
"""


def class_url() -> str:
    """The class's database: FMLIB_CLASS_DB (a SQLAlchemy URL, e.g. postgresql://user:password@host/class), else
    a SQLite file beside the run store (``runs`` → ``runs-classroom.sqlite``), made on first use."""
    if url := os.environ.get("FMLIB_CLASS_DB"):
        return url
    root = run_store().root.resolve()
    root.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{root.parent / (root.name + '-classroom.sqlite')}"


@st.cache_resource(show_spinner=False)
def _open_class(url: str) -> tuple[ClassAnswers, str | None]:
    """One per server and database: the class, and a warning if it is kept in memory instead."""
    return open_class(url)


def class_answers() -> ClassAnswers:
    """Every session's answers to every lesson, the reveals, the pacing and the teacher's unlocks."""
    return _open_class(class_url())[0]


def class_warning() -> str | None:
    """One line when the class's database could not be reached (the class is then kept in memory)."""
    return _open_class(class_url())[1]


def voter() -> str:
    """An anonymous token for this browser: the XSRF cookie's token, unmasked and hashed (the cookie is
    re-masked on each page load, its token is not); without the cookie, a random token of the session."""
    cookie = st.context.cookies.get("_streamlit_xsrf", "")
    parts = cookie.strip("\"'").split("|")
    if len(parts) == 4 and parts[0] == "2":
        try:
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            token = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
            return hashlib.sha256(token).hexdigest()[:16]
        except ValueError:
            pass
    return st.session_state.setdefault("lesson_voter", secrets.token_hex(8))


# --- a student's own guesses -------------------------------------------------------------------


def guesses(lesson: str) -> dict:
    """This session's guesses for ``lesson``: {"choice": {stop: choice index}, "revealed": {stops}}.
    On a session's first look (a reload, a shared link) they are read back from the URL."""
    saved = st.session_state.setdefault("lesson_guesses", {})
    if lesson not in saved:
        saved[lesson] = {"choice": _choices_from_url(), "revealed": _stops_from_url()}
    return saved[lesson]


def _choices_from_url() -> dict[int, int]:
    """``guesses=2,,0`` → {1: 2, 3: 0}: the choice index per stop, empty where there is none."""
    text = st.query_params.get("guesses", "")
    return {i: int(c) for i, c in enumerate(text.split(","), 1) if c.isdigit()}


def _stops_from_url() -> set[int]:
    text = st.query_params.get("revealed", "")
    return {int(s) for s in text.split(",") if s.isdigit()}


def write_url(saved: dict) -> None:
    """The guesses into the URL, so that a reload or the browser's Back finds them."""
    choice, revealed = saved["choice"], saved["revealed"]
    if choice:
        st.query_params["guesses"] = ",".join(str(choice.get(i, "")) for i in range(1, max(choice) + 1))
    else:
        st.query_params.pop("guesses", None)
    if revealed:
        st.query_params["revealed"] = ",".join(map(str, sorted(revealed)))
    else:
        st.query_params.pop("revealed", None)


def measured_rows(stop, rows):
    """Of the scorecard's ``rows`` for the stop's page, the claims the stop's view tests: on a page of several
    papers' derivations, only those of the papers the linked derivation cites (Rendle's identity is not the FM
    gradient note)."""
    derivation = stop.params.get("deriv_derivation")
    if derivation is None or rows.empty:
        return rows
    source = next((d.source for d in catalog() if d.key == derivation), "")
    return rows[[f"[{paper}]" in source for paper in rows["paper"]]]


# --- prepared links --------------------------------------------------------------------------


def prepare(page: str, params: dict) -> None:
    """Button callback: remember to open ``page`` with exactly ``params`` (plus the dataset and
    projector mode, unless the stop names them), and set the sidebar's widgets to match before they
    are drawn. A run the stop names that this server lacks is left out: the page then picks its own."""
    ids = set(run_store().ids())
    params = {k: v for k, v in params.items() if k not in RUN_KEYS or v in ids}
    kept = {"dataset": st.session_state.get("dataset", SIDEBAR_DEFAULTS["dataset"])}
    if projector():
        kept["projector"] = "true"
    target = {**{k: v for k, v in kept.items() if k in KEPT}, **params}
    for key in SIDEBAR_DEFAULTS:  # drawn on every page: the session's value would win over the URL
        if key in target:
            st.session_state[key] = target[key] == "true" if key == "projector" else target[key]
    for key in target:  # the page's own widgets: not drawn now, so their URL value is read afresh
        if key not in SIDEBAR_DEFAULTS:
            st.session_state.pop(key, None)
    if "run_id" in target:
        try:
            st.session_state["run_owner"] = run_store().info(target["run_id"]).get("author") or ""
        except RunError:
            pass
    page_params = {k: v for k, v in target.items() if k not in SIDEBAR_DEFAULTS}  # bound: they write their own
    st.session_state["lesson_goto"] = (f"app_pages/{page}.py", page_params)


def follow_prepared_link() -> None:
    """Open the page a prepared link asked for (its callback ran before this script)."""
    if "lesson_goto" in st.session_state:
        path, params = st.session_state.pop("lesson_goto")
        st.session_state["lesson_arrived"] = [key for key, value in params.items() if value == "true"]
        st.switch_page(path, query_params=params)


def arrive() -> None:
    """On the page a prepared link opened: start at the section the link opened (a parameter ``key=true`` of a
    section drawn on demand, ``_view.on_demand``), else at the page's main figure (drawn in a container with the
    key ``LESSON_VIEW``), else at the page's top: the browser kept the Lesson's scroll position, where the link
    sits low. Drawn in the sidebar, whose empty box takes no room from the page."""
    sections = st.session_state.pop("lesson_arrived", None)
    if sections is not None:
        script = ARRIVE.replace("SECTIONS", json.dumps(sections)).replace("LESSON_VIEW", LESSON_VIEW)
        st.sidebar.html(script, unsafe_allow_javascript=True)
