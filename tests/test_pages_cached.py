"""``_view.cached``: a figure is built once per server for equal arguments and shared; a function is known by name."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app_pages._view import cached

BUILT = []


def bars(values, title: str) -> go.Figure:
    BUILT.append(title)
    return go.Figure(go.Bar(y=values), layout_title_text=title)


def heatmap(matrices: dict, title: str) -> go.Figure:
    BUILT.append(title)
    return go.Figure(go.Heatmap(z=matrices["R"].numpy()), layout_title_text=title)


def twice(draw, values):
    return draw(values, "twice")


def test_equal_arguments_share_one_figure_and_other_arguments_build_anew():
    BUILT.clear()
    first = cached(bars, np.arange(3.0), title="a")
    assert cached(bars, np.arange(3.0), title="a") is first  # an equal array, not the same object
    assert BUILT == ["a"]
    other = cached(bars, np.arange(3.0) + 1, title="a")
    assert other is not first and list(other.data[0].y) == [1.0, 2.0, 3.0]
    assert cached(bars, np.arange(3.0), title="b").layout.title.text == "b"
    assert BUILT == ["a", "a", "b"]


def test_a_function_argument_is_known_by_its_name_so_a_redefined_one_is_found_again():
    """A page script defines its functions anew on every rerun: the same name finds the same figure."""
    BUILT.clear()
    first = cached(twice, bars, (1.0, 2.0))
    namespace: dict = {}
    exec("def bars(values, title):\n    raise AssertionError('not rebuilt')", namespace)  # noqa: S102
    namespace["bars"].__qualname__ = bars.__qualname__
    namespace["bars"].__code__ = namespace["bars"].__code__.replace(co_filename=bars.__code__.co_filename)
    assert cached(twice, namespace["bars"], (1.0, 2.0)) is first
    assert BUILT == ["twice"]


def test_tensors_and_objects_holding_them_are_hashed_by_value():
    """A run's snapshots hold tensors (Streamlit cannot hash them itself): equal values, one figure."""
    import torch

    BUILT.clear()
    first = cached(heatmap, {"R": torch.ones(2, 2)}, title="t")
    assert cached(heatmap, {"R": torch.ones(2, 2)}, title="t") is first
    assert cached(heatmap, {"R": torch.zeros(2, 2)}, title="t") is not first
    assert BUILT == ["t", "t"]
