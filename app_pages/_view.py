"""A page's view lives in its URL: link checks, "link to this view", "reset", and projector mode.

Widgets that change what a page shows are bound to the URL (``bind="query-params"``, the key is
the parameter's name), so a link opened in a fresh browser shows the same view. Streamlit drops a
URL value its widget cannot take without a word; ``link_check`` says so on the page instead.

A page declares its URL state once, as a ``UrlState`` table of ``Bound`` entries (key, default, check)::

    VIEW = UrlState(
        m_max=Bound(32, in_range(2, 64, integer=True), "2 to 64"),
        layout=Bound("2, 3, 2", valid_layout, "positive integers, comma-separated", fallback=True),
        theorem_section=ON_DEMAND,  # a section drawn on demand
    )
    m_max = VIEW.widget("m_max", st.slider, "number of fields m (up to)", 2, 64)  # value=32
    layout_text = VIEW.widget("layout", st.text_input, "features per field")  # a text box takes any text

``VIEW.widget`` checks the link's value, then draws the widget bound to the URL with the table's
default; ``copy_link_and_reset(VIEW)`` takes the same table's defaults. A default or a check that depends on
the data the page loads is given where the widget is drawn, e.g.
``VIEW.widget("user", st.selectbox, "user", users, default=users[0], check=(one_of(users), "a user"))``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlencode

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import torch
from streamlit.errors import StreamlitAPIException

from fmlib.plots.layout import lines, wrapped

T = TypeVar("T")
# What ``chart`` keeps of Streamlit's chart theme, which it does not apply in the browser: every axis makes room
# for its tick labels and title (plotly's own default lets a long field name run under the axis title).
pio.templates["fmlib"] = go.layout.Template(layout=dict(xaxis=dict(automargin=True), yaxis=dict(automargin=True)))
pio.templates.default = "streamlit+fmlib"  # Streamlit's colours (its default), then the margins above
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.])(/[^\s'\"():,;]+)")  # not a URL's //host/path
_UNSEEN = object()  # a widget value not read yet
_TABLE = object()  # UrlState.widget's default: the one its table declares
PROJECTOR_FONT = 20  # px, plotly text in projector mode (the page's text is scaled by CSS)
TITLE_WIDTH = 50  # characters a line of a chart's title holds: at 150 % zoom a chart is about 520 px wide
TITLE_LINE = 24  # px of top margin (and height) each further line of a wrapped title takes
# px, a page's main figure in projector mode: under the header's 4.5 rem (81 px) it ends above the fold of a
# 1280×720 screen at 150 % (480 CSS pixels)
MAIN_FIGURE_HEIGHT = 390
PROJECTOR_CSS = """
<style>
html { font-size: 18px; }
h1 { font-size: 2.25rem !important; }
.stMainBlockContainer { max-width: 100%; padding-top: 3.75rem; }  /* the header (3.75rem) overlays the page: the title shows whole */
.stButton button p, .stButton button div { white-space: nowrap; }
</style>
"""
SIDEBAR_SCRIPT = """
<script>
{
  const arrow = COLLAPSE ? "[data-testid='stSidebarCollapseButton'] button" : "[data-testid='stExpandSidebarButton']";
  document.querySelector(arrow)?.click();
  Object.keys(localStorage).filter((key) => key.startsWith("stSidebarCollapsed-")).forEach((key) => localStorage.removeItem(key));
}
</script>
"""


def link_check(key: str, ok: Callable[[str], bool], allowed: str, sidebar: bool = False, **fallback) -> bool:
    """Before the bound widget ``key``: a URL value that ``ok`` rejects falls back with a visible note.

    Only a widget's first appearance in a session reads the URL, so only then is it checked.
    ``allowed`` says what the link may hold, e.g. "1 to 10". Streamlit itself drops a value a
    select or slider does not offer; a value the widget would take (a number out of the page's
    range, unparsable text) needs ``fallback=default``: then this returns True and the caller
    reruns right after drawing the widget, whose value this sets to the default on that rerun (on
    the link's first load the URL wins over any value set before the widget). The note stays
    until the widget is changed; a sidebar widget's note is shown by ``link_notes()`` on the page.
    """
    notes = st.session_state.setdefault("link_notes", {})
    if key in notes:
        note, where, fallen_back_to = notes[key]
        if key in (fallbacks := st.session_state.setdefault("link_fallbacks", {})):
            st.session_state[key] = fallbacks.pop(key)
        elif fallen_back_to is _UNSEEN:
            notes[key] = (note, where, st.session_state.get(key, _UNSEEN))
        elif st.session_state.get(key, _UNSEEN) != fallen_back_to:
            del notes[key]  # changed since: the note has done its job
            return False
        if where == "page":
            st.warning(note)
        return False
    if key in st.session_state or key not in st.query_params:
        return False
    value = st.query_params[key]
    if ok(value):
        return False
    note = f"The link's {key} = {value!r} is not valid ({allowed}); showing the default instead."
    notes[key] = (note, "sidebar" if sidebar else "page", fallback.get("fallback", _UNSEEN))
    try:  # out of the address bar: a reload or a copied link does not bring it back
        del st.query_params[key]
    except StreamlitAPIException:  # bound already in this session: the widget rewrites the URL itself
        pass
    if "fallback" in fallback:
        st.session_state.setdefault("link_fallbacks", {})[key] = fallback["fallback"]
        return True
    if not sidebar:
        st.warning(note)
    return False


def checked_link(draw: Callable[[], T], key: str, ok: Callable[[str], bool], allowed: str, default) -> T:
    """``draw()`` the bound widget ``key``, its linked value checked by ``ok`` (else ``default``, with a note)."""
    if link_check(key, ok, allowed, fallback=default):
        draw()  # registered once with the link's value, so that the rerun's default wins over the URL
        st.rerun()
    return draw()


def unless_set(key: str | None, **default) -> dict:
    """The widget ``key``'s default (``value=...`` or ``index=...``) as keyword arguments, or none when the session
    already holds its value (Reset to defaults or a link's fallback set it). Given both, the widget shows the
    session's value anyway, and Streamlit logs that it "was created with a default value but also had its value set
    via the Session State API". Read it where the widget is drawn: a ``link_check`` before may have set the value."""
    return {} if key is not None and set_this_run(key) else default


def set_this_run(key: str) -> bool:
    """Whether the session's value of ``key`` was written by the page's code in this run (a reset, a link's
    fallback), not by its widget: the case in which Streamlit refuses a default beside it."""
    from streamlit.elements.lib.policies import get_session_state

    return get_session_state().is_new_state_value(key)


def note_dropped(key: str, why: str) -> None:
    """A link value that no widget holds (``?training=...``) is dropped from the URL; ``link_notes`` says so above
    the page, once."""
    value = st.query_params.get(key)
    st.query_params.pop(key, None)
    st.session_state.setdefault("dropped_notes", []).append(f"The link's {key} = {value!r} was dropped: {why}.")


def link_notes() -> None:
    """The notes on the sidebar's invalid link values, shown above the page until the widget changes; and, once,
    the notes on dropped link values (``note_dropped``)."""
    for note in st.session_state.pop("dropped_notes", []):
        st.info(note)
    for key, (note, where, fallen_back_to) in list(st.session_state.get("link_notes", {}).items()):
        if where != "sidebar":
            continue
        if fallen_back_to is _UNSEEN:
            st.session_state["link_notes"][key] = (note, where, st.session_state.get(key, _UNSEEN))
        elif st.session_state.get(key, _UNSEEN) != fallen_back_to:
            del st.session_state["link_notes"][key]
            continue
        st.warning(note)


def in_range(low: float, high: float, integer: bool = False) -> Callable[[str], bool]:
    """A check for ``link_check``: the text is a number in [low, high] (an integer if ``integer``)."""

    def ok(text: str) -> bool:
        try:
            number = int(text) if integer else float(text)
        except ValueError:
            return False
        return low <= number <= high

    return ok


def one_of(options: Iterable) -> Callable[[str], bool]:
    """A check for ``link_check``: the text names one of ``options`` (as the widget writes them)."""
    names = {str(option) for option in options}
    return names.__contains__


@dataclass(frozen=True)
class Bound:
    """One URL-bound widget of a page: its ``default``, and the link values it accepts.

    ``ok(text)`` checks a link's value, ``allowed`` says in words what it may be (for the note);
    without ``ok`` the widget checks its value itself (``bounded_number``) or takes any value.
    ``fallback``: the widget would take a value that ``ok`` rejects (a number field, a text box), so
    the default replaces it (``checked_link``); a select box or a slider drops such a value itself,
    and only the note is added. ``sidebar``: the widget is drawn in the sidebar, so its note is said above the
    page (``link_notes``). A default or a check known only while the page runs (a run's fields, the rows of
    its data) is given to ``UrlState.widget`` where the widget is drawn.
    """

    default: object
    ok: Callable[[str], bool] | None = None
    allowed: str = ""
    fallback: bool = False
    sidebar: bool = False


# A section drawn on demand (``on_demand``): closed on a visit.
ON_DEMAND = Bound(False, one_of(("true", "false")), "true or false")


class UrlState:
    """A page's URL state, declared once: each bound widget's key with its ``Bound`` (default and check)."""

    def __init__(self, **bounds: Bound):
        self.bounds = bounds

    def __getitem__(self, key: str) -> Bound:
        return self.bounds[key]

    def defaults(self) -> dict:
        """Every key with its default: what "Reset to defaults" sets back, and what the link to this view leaves out."""
        return {key: bound.default for key, bound in self.bounds.items()}

    def check(self, key: str, check: tuple[Callable[[str], bool], str] | None = None) -> None:
        """``link_check`` with the table's check (or ``check=(ok, allowed)``, known only while the page runs), for a
        widget kept in the URL by hand or a key the page does not bind: a rejected link value gets its note and
        leaves the URL."""
        bound = self.bounds[key]
        ok, allowed = check or (bound.ok, bound.allowed)
        if ok is not None:
            link_check(key, ok, allowed, sidebar=bound.sidebar)

    def widget(
        self,
        key: str,
        widget: Callable[..., T],
        *args,
        check: tuple[Callable[[str], bool], str] | None = None,
        default=_TABLE,
        **kwargs,
    ) -> T:
        """``widget(*args, **kwargs)`` bound to the URL under ``key``, with the table's default and check.

        The default goes where the widget takes it: ``value`` (slider, number field, toggle, text box),
        else ``index`` into its ``options`` (select box, radio). ``check=(ok, allowed)`` and ``default``: a check
        and a default known only while the page runs (a row of the data loaded, a field of the run), in place of
        the table's."""
        bound = self.bounds[key]
        ok, allowed = check or (bound.ok, bound.allowed)
        default = bound.default if default is _TABLE else default
        kwargs |= {"key": key, "bind": "query-params"}
        given = _default_argument(widget, default, args, kwargs)

        def draw():  # the default only when the session holds no value (``unless_set``), read as it is drawn;
            # a widget of ours that requires its value (``bounded_number``) is given it and applies the rule itself
            return widget(*args, **kwargs, **(given if _requires(widget, given) else unless_set(key, **given)))

        if ok is None:
            return draw()
        if bound.fallback:
            return checked_link(draw, key, ok, allowed, default)
        link_check(key, ok, allowed, sidebar=bound.sidebar)
        return draw()


# The sidebar's bound widgets (app.py): part of every page's view. The datasets and the saved runs are known
# only while the frame runs (the run picker: _classroom.run_picker).
SIDEBAR = UrlState(
    dataset=Bound("ml-100k", sidebar=True),
    run_id=Bound(None, sidebar=True),
    projector=Bound(False, lambda text: text.lower() in ("true", "false"), "true or false", sidebar=True),
)
SIDEBAR_DEFAULTS = SIDEBAR.defaults()


def _default_argument(widget: Callable, default, args: tuple, kwargs: dict) -> dict:
    """``default`` as the keyword argument ``widget`` takes it: ``value=``, or ``index=`` of it in the options."""
    parameters = inspect.signature(widget).parameters
    if "value" in parameters:
        return {"value": default}
    options = kwargs["options"] if "options" in kwargs else args[list(parameters).index("options")]
    return {"index": [str(option) for option in options].index(str(default))}


def _requires(widget: Callable, argument: dict) -> bool:
    """Whether ``widget`` has no default for the keyword ``argument`` names."""
    (name,) = argument
    return inspect.signature(widget).parameters[name].default is inspect.Parameter.empty


def _url_text(value) -> str:
    """A value as a bound widget writes it into the URL."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def view_url(defaults: Mapping) -> str:
    """This page's URL with every bound value (the sidebar's and ``defaults``' keys) that is not its default.

    A widget not drawn yet in this session (further down the page, or behind a button) keeps the
    value its link gave."""
    params = {}
    for key, default in {**SIDEBAR_DEFAULTS, **defaults}.items():
        if key in st.session_state:  # drawn already (or earlier in the session)
            if st.session_state[key] is not None and st.session_state[key] != default:
                params[key] = _url_text(st.session_state[key])
        elif key in st.query_params:  # not drawn yet in this session: the link's value stands
            params[key] = st.query_params[key]
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{urlencode(params)}" if params else base


def title_bar(title: str):
    """The page's title, and at its right the room where ``copy_link_and_reset(..., container=...)``
    puts its buttons: a class finds "Link to this view" at the top of every page. On a narrow
    screen the buttons wrap under the title instead of being cut."""
    row = st.container(horizontal=True, horizontal_alignment="distribute", vertical_alignment="center")
    row.title(title, width="content")
    return row.container(horizontal=True, vertical_alignment="center", width="content")


def copy_link_and_reset(defaults: Mapping | UrlState, clear: Iterable[str] = (), container=st) -> None:
    """A "link to this view" popover and a "Reset to defaults" button, side by side, in ``container``
    (the page's ``title_bar``). Called after the page's widgets, so that the link holds their values.

    ``defaults``: the page's ``UrlState`` (or every bound widget key with its default value); the reset sets each
    back (which also removes it from the URL) and deletes the session keys in ``clear`` (bound
    widgets whose default depends on the data, results computed on the page).
    """

    clear = list(clear)
    if isinstance(defaults, UrlState):
        defaults = defaults.defaults()

    def reset() -> None:
        st.session_state.update(defaults)
        for key in clear:
            st.session_state.pop(key, None)

    row = container.container(horizontal=True, vertical_alignment="center", width="content")
    with row.popover("Link to this view", icon=":material/link:"):
        st.code(view_url({**dict.fromkeys(clear), **defaults}), language=None, wrap_lines=True)
        secondary("Copy it (the icon at the right): opened anywhere, it shows this page as it is now.")
    row.button(
        "Reset to defaults",
        icon=":material/restart_alt:",
        key="reset_view",
        on_click=reset,
        help="Every setting on this page back to its default; the URL keeps only the sidebar's.",
    )


def projector() -> bool:
    """Projector mode: the sidebar toggle, or ``?projector=true`` before the toggle is drawn."""
    if "projector" in st.session_state:
        return bool(st.session_state["projector"])
    return st.query_params.get("projector", "").lower() == "true"


def projector_style() -> None:
    """In projector mode: larger text, buttons and a full-width page (CSS)."""
    if projector():
        st.html(PROJECTOR_CSS)


def sidebar_follows_projector() -> None:
    """Collapse the sidebar when projector mode turns on (a link or the toggle), expand it when it turns off.

    ``st.set_page_config(initial_sidebar_state=...)`` is re-read on every run, but the browser keeps
    a reader's own click on the sidebar's arrow and prefers it: after the sidebar was opened once
    to reach the toggle, turning projector mode on again would leave it open. So on each change
    (and on a session's first run in projector mode) a script clicks the arrow that gives the
    wanted state and forgets the stored click, letting the page's setting rule again. The script
    sits at the sidebar's end, where its empty box takes no room from the page.
    """
    on = projector()
    if st.session_state.get("sidebar_for_projector", False) != on:
        st.sidebar.html(SIDEBAR_SCRIPT.replace("COLLAPSE", str(on).lower()), unsafe_allow_javascript=True)
    st.session_state["sidebar_for_projector"] = on


def secondary(text: str, show=st.caption) -> None:
    """A caption (or ``show``, e.g. ``st.write``) that projector mode leaves out: prose for reading, not for the room."""
    if not projector():
        show(text)


def on_demand(label: str, key: str, draw: Callable[[], None]) -> None:
    """A section of the page drawn only while a reader has it open: an expander, closed on a visit,
    whose opening reruns the page (``on_change="rerun"``) and only then runs ``draw`` inside it.

    A collapsed ``st.expander`` still holds its content, and the browser draws every chart and table
    in it on each visit: most of a visit's time on a long page (README, "How fast pages draw"). This
    one holds nothing until opened. Its state is bound to the URL (``?key=true``), so "link to this
    view" and a lesson's link can open it; declare it as ``key=ON_DEMAND`` in the page's ``UrlState``."""
    link_check(key, ON_DEMAND.ok, ON_DEMAND.allowed)  # Streamlit would drop another value silently
    box = st.expander(label, key=key, on_change="rerun", bind="query-params")
    if box.open:
        with box:
            draw()


def cached(build: Callable[..., T], *args, **kwargs) -> T:
    """``build(*args, **kwargs)``, built once per server for equal arguments and shared by every session
    (``st.cache_resource``): a plotly figure takes longer to build (plotly validates every property) than
    the rest of a page's lines together. A function, ``build`` or an argument, is known by its file and
    name, so one defined in a page script (new on every rerun) is found again; ``build`` must depend on
    its arguments only, and what it returns is never modified (``chart`` copies a figure before
    enlarging its text)."""
    key = [_named(a) for a in (build, *args)], {k: _named(v) for k, v in kwargs.items()}
    return _built(key, build, args, kwargs)


def _named(value):
    """A function as its file and name (what ``cached`` hashes); anything else as it is."""
    if not callable(value):
        return value
    return f"{getattr(getattr(value, '__code__', None), 'co_filename', value.__module__)}:{value.__qualname__}"


@st.cache_resource(show_spinner=False, max_entries=256, hash_funcs={torch.Tensor: lambda t: t.detach().cpu().numpy()})
def _built(key: tuple, _build: Callable, _args: tuple, _kwargs: dict):
    return _build(*_args, **_kwargs)


LESSON_VIEW = "lesson_view"  # the key of the box that holds a page's main figure: where a lesson's link arrives


def chart(fig: go.Figure, container=st, projector_height: int | None = None, **kwargs) -> None:
    """``st.plotly_chart`` without Streamlit's browser-side theme (``theme=None``; its colours and the margins
    it gave come from the ``streamlit+fmlib`` template) and with larger text in projector mode. The theme is
    merged into each figure in Chromium, 70–200 ms per chart of a visit here (README, "How fast pages
    draw"): on a page of four charts, more than the server's whole rerun. A plain title longer than
    ``TITLE_WIDTH`` is wrapped over lines, the top margin and the height grown a ``TITLE_LINE`` for each further one.
    ``projector_height``: the most pixels the figure may take in projector mode, its larger text included."""
    title = fig.layout.title.text or ""
    # a title with markup (<br>, <sub>) is laid out by its figure: wrapping would count its tags as letters
    shown = title if "<" in title else wrapped(title, TITLE_WIDTH)
    extra = TITLE_LINE * (lines(shown) - lines(title))
    if projector() or extra:
        fig = go.Figure(fig)
    if extra:
        top = fig.layout.margin.t if fig.layout.margin.t is not None else 100
        fig.update_layout(title_text=shown, margin_t=top + extra)
        if fig.layout.height is not None:
            fig.update_layout(height=fig.layout.height + extra)
    if projector():  # larger text, and a top margin grown with it, so titles keep clear of each other
        grow = PROJECTOR_FONT / 12  # plotly's default font size
        top = fig.layout.margin.t if fig.layout.margin.t is not None else 100
        fig.update_layout(font_size=PROJECTOR_FONT, title_font_size=PROJECTOR_FONT + 4, margin_t=round(top * grow))
        if fig.layout.height is not None:
            fig.update_layout(height=fig.layout.height + round(top * (grow - 1)))
        fig.update_annotations(font_size=PROJECTOR_FONT)
        if projector_height is not None:  # its legend in rows (entries side by side, not a column per group), smaller
            height = min(fig.layout.height or 450, projector_height)  # 450: plotly's own height
            fig.update_layout(height=height, legend_traceorder="normal", legend_font_size=PROJECTOR_FONT - 4)
    container.plotly_chart(fig, theme=None, **kwargs)


def main_figure(fig: go.Figure, **kwargs) -> None:
    """The page's main figure (``chart``), in the box keyed LESSON_VIEW where a lesson's link arrives. In projector
    mode it is at most MAIN_FIGURE_HEIGHT tall, so that the whole figure is in view once a link has scrolled it under
    the header, at 1280×720 as at 150 % (480 CSS pixels)."""
    chart(fig, container=st.container(key=LESSON_VIEW), projector_height=MAIN_FIGURE_HEIGHT, **kwargs)


def shown_path(path: str | Path) -> str:
    """A server path as a reader may see it: relative to the app's folder, else only its last name."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return Path(path).name


def without_paths(text: str) -> str:
    """``text`` (an error message) with each absolute server path shortened by ``shown_path``."""
    return ABSOLUTE_PATH.sub(lambda match: shown_path(match.group(1)), text)


def error(err, container=st) -> None:
    """An error for the reader: its message (no traceback) without server paths."""
    container.error(without_paths(str(err) or type(err).__name__))


def training_line(config: dict) -> str:
    """A run's config (``run.config``) as one short line a student reads: where the data came from (no server
    path), the split, the training settings that differ between runs, the model's hyperparameters."""
    train, hp = config["train"], config["hp"]
    parts = [
        f"data: {without_paths(config['data_source'])}",
        f"split seed {config['split']['seed']}",
        f"{train['task']}, up to {train['epochs']} epoch{'s' * (train['epochs'] != 1)} (patience {train['patience']}), batch {train['batch_size']}",
        f"lr {train['lr']:g}, weight decay {train['weight_decay']:g}, seed {train['seed']}",
    ]
    if train.get("average_from"):
        parts.append(f"weights averaged from epoch {train['average_from']}")
    if train.get("field_decay"):
        parts.append("field decay " + ", ".join(f"{f} ×{v:g}" for f, v in train["field_decay"].items()))
    if train.get("linear_decay", 1.0) != 1.0:
        parts.append(f"linear decay ×{train['linear_decay']:g}")
    shown = [f"{k} {_short(v)}" for k, v in hp.items() if v is not None]
    return " · ".join(parts + ([", ".join(shown)] if shown else []))


def _short(value) -> str:
    """A hyperparameter's value: a number as written, a long list as its length."""
    if isinstance(value, list | tuple):
        return f"[{len(value)} numbers]" if len(value) > 8 else "(" + ", ".join(_short(v) for v in value) + ")"
    return f"{value:g}" if isinstance(value, float) else str(value)
