"""N and B on the keyboard step through a page's sequence, pressed as fast as a hand can.

A button's keyboard shortcut fires its callback once per rerun of the page: five presses
while the page reruns count as one. Here the presses are counted in the browser
(``st.components.v2``: a few lines of JavaScript, no iframe): each press moves a target step
there at once, and when the presses pause (120 ms) the step they reached is sent, once, as
the component's state. Presses while typing in a text box are left alone.
"""

from __future__ import annotations

import streamlit as st

JS = """
export default function ({ data, setStateValue }) {
  const all = (window.__fmlibStepKeys ??= {});
  const s = (all[data.name] ??= { timer: null, presses: 0 });
  Object.assign(s, { first: data.first, last: data.last, send: setStateValue });
  if (s.timer === null) s.target = data.value;  // no presses waiting: follow the page
  const typing = (t) => t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  if (!s.onKey) {  // this function runs again on every rerun of the page: one listener, kept in s
    s.onKey = (e) => {
      const move = { n: 1, N: 1, b: -1, B: -1 }[e.key];
      if (!move || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      s.target = Math.min(s.last, Math.max(s.first, s.target + move));
      clearTimeout(s.timer);
      s.timer = setTimeout(() => {
        s.timer = null;
        s.presses += 1;  // a new value each time, so that a repeated step still reaches the page
        s.send("reached", { step: s.target, presses: s.presses });
      }, 120);
    };
    document.addEventListener("keydown", s.onKey);
  }
  return () => {  // the page left
    document.removeEventListener("keydown", s.onKey);
    s.onKey = null;
  };
}
"""

_step_keys = st.components.v2.component("fmlib_step_keys", js=JS)


def step_keys(name: str, value: int, first: int, last: int, on_step) -> None:
    """Listen for N (next) and B (back) on this page: ``on_step(step)`` gets the step in
    [first, last] that the presses reached from ``value``."""

    def reached():
        sent = st.session_state[name]["reached"]
        if sent:
            on_step(int(sent["step"]))

    _step_keys(key=name, data={"name": name, "value": value, "first": first, "last": last}, on_reached_change=reached)
