"""AppTest of the Home page's worked example: one score of the Playground's toy FM, term by term, before the scorecard."""

from apptest import app_page
from page_order import position, starts

from fmlib import toy


def test_home_traces_one_prediction_of_the_toy_fm_before_the_scorecard():
    at = app_page("app.py", dataset="synthetic")  # home is the frame's default page
    at.run()
    assert not at.exception
    V = toy.default_state()["V"]
    line = next(m.value for m in at.markdown if m.value.startswith("The Playground's toy FM"))
    terms = toy.pair_terms(V, "Ann", "Alien")
    assert f"= {toy.score(V, 'Ann', 'Alien'):.2f}$" in line
    assert " + ".join(f"{t:.2f}" for t in terms).replace("+ -", "- ") in line
    assert f"{toy.W0:g} + {toy.BIAS['Ann']:g}" in line and "[Playground](playground)" in line
    opens = position(at, starts("**One prediction, traced: Ann rates Alien"))
    assert opens < position(at, starts("Scorecard: the papers' claims"))


def test_in_projector_mode_the_example_is_folded_so_the_view_below_stays_above_the_fold():
    at = app_page("app.py", dataset="synthetic", projector=True)
    at.run()
    assert not at.exception
    folded = [e for e in at.expander if e.label.startswith("One prediction, traced: Ann rates Alien")]
    assert len(folded) == 1 and not folded[0].proto.expanded
