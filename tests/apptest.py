"""AppTest helpers shared by the page tests: open an app file with session state, read a figure."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from patience import limit, wait_until
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
HOME = "app_pages/home.py"  # the frame's default page


def app_page(path: str, timeout: float = 120, open_sections: bool = True, **state) -> AppTest:
    """An AppTest of ``path`` (relative to the project root), ``state`` set before the first run; ``timeout``, the
    seconds a run may take on an idle machine, guards against a hang (stretched on a busy one: patience.limit).

    With ``open_sections``, every section the page draws on demand (``on_demand``) is open, as for a
    reader who opened them all; ``open_sections=False`` is the page as a visit shows it. Home runs in the
    frame, ``app.py``, whose default page it is: its page links need the frame's navigation."""
    at = AppTest.from_file(str(ROOT / ("app.py" if path == HOME else path)), default_timeout=limit(timeout))
    for key in on_demand_keys(HOME if path == "app.py" else path) if open_sections else ():
        at.session_state[key] = True
    for key, value in state.items():
        at.session_state[key] = value
    return at


def on_demand_keys(path: str) -> list[str]:
    """The keys of the sections that the page file ``path`` draws with ``on_demand(label, key, ...)``."""
    tree = ast.parse((ROOT / path).read_text())
    return [
        node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "on_demand"
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
    ]


def tiny_fwfm_run(author: str | None = None) -> str:
    """The id of a one-epoch FwFM on small synthetic data, saved in the test's run store: for the pages that
    read the sidebar's run (Field interactions, Ranking)."""
    from fmlib.data import split, synthetic
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, train_model

    data = split(synthetic.make(synthetic.demo_R(), n_samples=2000, cardinality=20, seed=0), seed=0)
    return RunStore().save(train_model("fwfm", data, TrainConfig(epochs=1), dim=4), author=author)


def figure(at: AppTest, k: int) -> dict:
    """The k-th plotly figure of the page as JSON (AppTest has no plotly accessor)."""
    return json.loads(at.get("plotly_chart")[k].proto.spec)


def wait_for_training(at: AppTest, timeout: float = 120, key: str = "train_job") -> AppTest:
    """Rerun the page until the job it queued (kept in the session under ``key``) has ended (the page
    polls its job every second); ``timeout`` guards against a hang (patience.limit stretches it on a busy machine)."""
    import time

    wait_until(
        lambda: key not in at.session_state, timeout, "the training's end", between=lambda: (time.sleep(0.2), at.run())
    )
    return at


def unlabelled(fig: dict) -> list[str]:
    """What a reader of this plotly figure (as JSON) would miss: a title, or an axis without a title (an axis that
    shares another's scale, ``matches``, is titled by that one)."""
    layout = fig["layout"]
    missing = [] if (layout.get("title") or {}).get("text") else ["the figure's title"]
    for name, axis in layout.items():
        if (
            name.startswith(("xaxis", "yaxis"))
            and axis.get("visible", True)
            and not axis.get("matches")
            and not (axis.get("title") or {}).get("text")
        ):
            missing.append(f"{name}'s title")
    return missing


def assert_figures_labelled(at: AppTest) -> int:
    """Every plotly chart on the page has a title and titled axes; returns how many were checked."""
    charts = at.get("plotly_chart")
    for k in range(len(charts)):
        fig = figure(at, k)
        missing = unlabelled(fig)
        assert not missing, f"chart {k} ({(fig['layout'].get('title') or {}).get('text')!r}) lacks {missing}"
    return len(charts)


def button(at: AppTest, label: str):
    """The page's button with this label (positions shift as pages gain controls)."""
    return next(b for b in at.button if b.label == label)
