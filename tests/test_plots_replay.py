"""fmlib.plots.replay: one frame per kept epoch, whose step buttons point at its neighbours (the
client-side step), one colour scale for R over all epochs, and fixed axes for the curves."""

from __future__ import annotations

import numpy as np
import pytest

from fmlib.plots.replay import replay_figure
from fmlib.snapshots import Snapshots

HISTORY = [{"epoch": e, "train_loss": 1.0 / e, "valid_rmse": 1.0 + 0.1 / e, "best": True} for e in (1, 2, 3)]


def snapshots() -> Snapshots:
    snap = Snapshots(fields=["a", "b"], labels=["1", "2", "3"], titles=["A", "B", "C"], epochs=[0, 1, 2, 3])
    snap.R = [np.array([[0.0, r], [r, 0.0]]) for r in (1.0, 1.5, -2.0, 0.5)]
    gen = np.random.default_rng(0)
    snap.vectors = [gen.normal(size=(3, 2)) * (e + 1) for e in range(4)]
    return snap


def steps_of(frame) -> tuple[str, str]:
    buttons = {
        b.label: b.args[0][0]
        for b in frame.layout.updatemenus[0].buttons
        if b.label.endswith("Step") or "Step" in b.label
    }
    return buttons["◀ Step"], buttons["Step ▶"]


@pytest.mark.parametrize("what", ["R", "movies"])
def test_every_frames_step_buttons_point_at_the_epochs_before_and_after(what):
    fig = replay_figure(snapshots(), HISTORY, what)
    names = [f.name for f in fig.frames]
    assert names == ["0", "1", "2", "3"] and fig.layout.sliders[0].active == 0
    assert [steps_of(f) for f in fig.frames] == [("0", "1"), ("0", "2"), ("1", "3"), ("2", "3")]
    assert [s.args[0][0] for s in fig.layout.sliders[0].steps] == names
    assert "after epoch 2" in fig.frames[2].layout.title.text and "valid rmse 1.0500" in fig.frames[2].layout.title.text


def test_R_keeps_one_colour_scale_over_all_epochs_and_a_live_view_starts_at_its_last_epoch():
    fig = replay_figure(snapshots(), HISTORY, "R")
    assert {(f.data[0].zmin, f.data[0].zmax) for f in fig.frames} == {(-2.0, 2.0)}
    live = replay_figure(snapshots(), HISTORY[:1], "R", upto=2)
    assert [f.name for f in live.frames] == ["0", "1"] and live.layout.sliders[0].active == 1
    assert np.allclose(live.data[0].z, [[0.0, 1.5], [1.5, 0.0]]), "a live view shows its latest epoch first"


def test_the_curves_grow_on_axes_fixed_to_the_whole_run():
    fig = replay_figure(None, HISTORY, "curves")
    assert [len(f.data[0].x) for f in fig.frames] == [1, 2, 3]
    low, high = fig.layout.yaxis.range
    assert low < min(r["train_loss"] for r in HISTORY) and high > max(r["train_loss"] for r in HISTORY)
    with pytest.raises(ValueError, match="what must be one of"):
        replay_figure(None, HISTORY, "spectrum")


def meeting(boxes: list) -> list[tuple]:
    boxes = [b for b in boxes if b]
    return [
        (a, b)
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    ]


def test_the_movie_maps_labels_never_meet():
    """Twelve titles on points crowded together, where every label above its point would meet another: each label
    goes where it meets no other label (``placed_labels``), or is left out of that frame; the boxes are the labels'
    extents on the plot area as drawn (``label_boxes``)."""
    from fmlib.plots.replay import LABELLED, label_boxes, movie_replay

    snap = Snapshots(fields=["a"], labels=[str(i) for i in range(12)], titles=[f"Movie {i}" for i in range(12)])
    snap.epochs = [0, 1]
    base = np.random.default_rng(0).normal(size=(12, 3))
    snap.vectors = [0.5 * base, base]
    fig = movie_replay(snap, HISTORY[:1])
    span = fig.layout.xaxis.range[1]
    for frame in fig.frames:
        trace = frame.data[0]
        xy = np.column_stack([trace.x, trace.y])
        titles = [t if i < LABELLED else "" for i, t in enumerate(snap.titles)]
        assert meeting(label_boxes(xy, titles, ["top center"] * len(titles), span)), "not crowded: the test is moot"
        boxes = label_boxes(xy, list(trace.text), list(trace.textposition), span)
        assert sum(b is not None for b in boxes) >= LABELLED // 2 and not meeting(boxes), frame.name
