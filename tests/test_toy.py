"""The Playground's toy FM (fmlib.toy) against fmlib.models' FM, FwFM and DPLR on the same numbers,
its refusals of bad input, and the lesson's first stop checked against it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from fmapp.lessons import lesson_files, load_lesson
from fmlib import toy
from fmlib.data.schema import Schema
from fmlib.models import build_model

SCHEMA = Schema.build(
    [("user", "context", "single", 2, 1), ("movie", "item", "single", 3, 1), ("genre", "item", "multi", 2, 2)]
)


def toy_batch():
    """(index, weight) of the six (user, movie) samples, in the order of ``toy.scores``' entries:
    rows follow ``toy.FEATURES``, the genres' slots weigh 1/|G(movie)| (padding: 0)."""
    row = {name: i for i, name in enumerate(toy.FEATURES)}
    index, weight = [], []
    for user in toy.USERS:
        for movie in toy.MOVIES:
            genres = toy.MOVIE_GENRES[movie]
            slots = [row[g] for g in genres] + [row[genres[0]]] * (2 - len(genres))
            index.append([row[user], row[movie], *slots])
            weight.append([1.0, 1.0] + [1 / len(genres)] * len(genres) + [0.0] * (2 - len(genres)))
    return torch.tensor(index), torch.tensor(weight, dtype=torch.float64)


def loaded(name: str, V, **hp):
    """fmlib's model ``name`` on the toy's schema holding the toy's w0, w and V (float64)."""
    model = build_model(name, SCHEMA, dim=2, **hp).double().eval()
    with torch.no_grad():
        model.bias.fill_(toy.W0)
        model.linear.weight.copy_(torch.tensor([[toy.BIAS[n]] for n in toy.FEATURES]))
        model.embedding.weight.copy_(torch.as_tensor(np.asarray(V, float)))
    return model


def predict(model) -> np.ndarray:
    with torch.no_grad():
        return model(*toy_batch()).numpy().reshape(len(toy.USERS), len(toy.MOVIES))


def random_V(gen):
    return gen.uniform(-1.5, 1.5, size=(len(toy.FEATURES), 2))


@pytest.mark.parametrize("seed", range(5))
def test_fm_scores_equal_fmlib_fm_forward(seed):
    gen = np.random.default_rng(seed)
    V = random_V(gen) if seed else toy.default_state()["V"]
    assert np.allclose(toy.scores(V), predict(loaded("fm", V)), atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_fwfm_scores_equal_fmlib_fwfm_forward(seed):
    gen = np.random.default_rng(seed)
    V, upper = random_V(gen), gen.uniform(-3, 3, size=3)
    R = np.zeros((3, 3))
    R[np.triu_indices(3, 1)] = upper
    R = R + R.T
    model = loaded("fwfm", V)
    with torch.no_grad():
        model.r_upper.copy_(torch.as_tensor(upper))  # FwFM keeps R's strict upper triangle in row order
    assert np.allclose(model.R.detach().numpy(), R)
    assert np.allclose(toy.scores(V, R), predict(model), atol=1e-12)


@pytest.mark.parametrize(("seed", "rank"), [(0, 1), (1, 1), (2, 2), (3, 2)])
def test_dplr_scores_by_proposition_1_equal_the_pair_sum_and_fmlib_dplr_forward(seed, rank):
    gen = np.random.default_rng(seed)
    V, U, e = random_V(gen), gen.uniform(-2, 2, size=(rank, 3)), gen.uniform(-3, 3, size=rank)
    R = toy.dplr_R(U, e)
    assert np.allclose(np.diag(R), 0) and np.allclose(R, R.T)
    model = loaded("dplr", V, rank=rank)
    with torch.no_grad():
        model.U.copy_(torch.as_tensor(U))
        model.e.copy_(torch.as_tensor(e))
    assert np.allclose(toy.dplr_scores(V, U, e), toy.scores(V, R), atol=1e-12), "Proposition 1 = the pair sum"
    assert np.allclose(toy.dplr_scores(V, U, e), predict(model), atol=1e-12)


def test_the_default_dplr_and_fwfm_start_at_the_fm():
    state = toy.check_state(toy.default_state())
    for rank in toy.RANKS:
        assert np.allclose(toy.dplr_R(toy.default_U(rank), toy.default_e(rank)), toy.fm_R())
    assert np.allclose(state.scores("fwfm"), state.scores("fm")) and np.allclose(
        state.scores("dplr"), state.scores("fm")
    )


def test_pair_terms_add_up_to_the_score_and_the_genre_of_star_wars_is_the_mean_of_two():
    V = np.array(toy.default_state()["V"])
    terms = toy.pair_terms(V, "Bob", "Star Wars")
    assert np.isclose(toy.first_order("Bob", "Star Wars") + terms.sum(), toy.score(V, "Bob", "Star Wars"))
    e = toy.field_embeddings(V, "Bob", "Star Wars")
    assert np.allclose(e[2], (V[toy.FEATURES.index("Sci-Fi")] + V[toy.FEATURES.index("Romance")]) / 2)
    assert np.isclose(terms[0], V[1] @ V[toy.FEATURES.index("Star Wars")])  # ⟨v_Bob, v_Star Wars⟩


def test_moving_a_user_changes_only_that_users_scores():
    V = np.array(toy.default_state()["V"])
    moved = toy.move_toward(V, "Bob", "Titanic", 0.5)
    before, after = toy.scores(V), toy.scores(moved)
    assert np.allclose(before[0], after[0]) and not np.allclose(before[1], after[1])


def test_the_lessons_first_stop_asks_about_the_playground_and_its_answer_is_what_the_toy_does():
    stop = load_lesson(lesson_files()[0]).stops[0]
    assert stop.page == "playground" and "Ann" in stop.question and "Alien" in stop.question
    V = np.array(toy.default_state()["V"])
    for fraction in (0.1, 0.5, 0.9):  # any step toward Alien's point, short or long
        change = toy.score(toy.move_toward(V, "Ann", "Alien", fraction), "Ann", "Alien") - toy.score(V, "Ann", "Alien")
        assert change < -0.05
    assert stop.answer.startswith("down")
    halfway = toy.score(toy.move_toward(V, "Ann", "Alien", 0.5), "Ann", "Alien") - toy.score(V, "Ann", "Alien")
    assert f"by {-halfway:.2f} together for a move halfway" in stop.reveal, "the reveal's number is the toy's"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["V"][0].__setitem__(0, float("nan")), "Ann x: nan is not a finite number"),
        (lambda s: s["V"][2].__setitem__(1, 2.5), "Alien y: 2.5 is out of range; use a number in [-1.5, 1.5]"),
        (lambda s: s["V"][3].__setitem__(1, "1"), "Titanic y: '1' is not a finite number"),
        (lambda s: s["R"][0].__setitem__(1, 7.0), "R[user, movie]: 7 is out of range"),
        (lambda s: s["R"][0].__setitem__(1, 2.0), "R: must be symmetric"),
        (lambda s: s["R"][2].__setitem__(2, 1.0), "zero diagonal"),
        (lambda s: s["e"].__setitem__(0, float("inf")), "ω[1]: inf is not a finite number"),
        (lambda s: s["U"][0].__setitem__(2, -9.0), "U[1, genre]: -9 is out of range"),
        (lambda s: s.__setitem__("U", [[1, 1, 1]] * 3), "ρ = 3 rows"),
        (lambda s: s.__setitem__("e", [1, 0]), "ω: expected 1×1 numbers"),
        (lambda s: s.__setitem__("V", s["V"][:3]), "V: expected 7×2 numbers"),
        (lambda s: s.pop("R"), "needs V, R, U and e"),
    ],
)
def test_a_bad_state_is_refused_naming_the_entry_and_the_range(edit, message):
    state = toy.default_state()
    edit(state)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        toy.check_state(state)


def test_changes_lists_every_pair_largest_first():
    before = toy.check_state(toy.default_state())
    raw = toy.default_state()
    raw["V"] = toy.move_toward(raw["V"], "Ann", "Alien", 0.5).tolist()
    rows = toy.changes(before, toy.check_state(raw), "fm")
    assert len(rows) == 6 and rows[0][:2] == ("Ann", "Alien")
    assert np.isclose(rows[0][3] - rows[0][2], -0.30)
    assert all(after == b for u, _, b, after in rows if u == "Bob")


def test_moved_names_what_a_move_changed():
    before = toy.check_state(toy.default_state())
    raw = toy.default_state()
    raw["V"][0][1] = 0.5
    raw["R"][1][2] = raw["R"][2][1] = 0.0
    raw["e"][0] = 2.0
    assert toy.moved(before, toy.check_state(raw)) == ["Ann", "R[movie, genre]", "ω[1]"]
    two = toy.default_state(rank=2)
    two["U"][1][2] = 0.5
    assert toy.moved(before, toy.check_state(toy.default_state(rank=2))) == ["ρ"]
    assert toy.moved(toy.check_state(toy.default_state(rank=2)), toy.check_state(two)) == ["U[2, genre]"]
    assert toy.moved(before, before) == []


JS = Path(__file__).resolve().parent.parent / "app_pages" / "_playground_toy.js"
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed: the browser test checks the JavaScript instead")
def test_the_pages_javascript_computes_what_fmlib_toy_computes(tmp_path):
    """The Playground's browser code (``math``, exported beside the component) on random states,
    run in Node, against fmlib.toy: FM, FwFM and DPLR scores and Proposition 1."""
    gen = np.random.default_rng(7)
    cases = []
    for model in ("fm", "fwfm", "dplr"):
        for rank in (1, 2):
            state = toy.default_state(rank)
            state["V"] = random_V(gen).tolist()
            upper = gen.uniform(-3, 3, size=3)
            R = np.zeros((3, 3))
            R[np.triu_indices(3, 1)] = upper
            state["R"] = (R + R.T).tolist()
            state["U"] = gen.uniform(-2, 2, size=(rank, 3)).tolist()
            state["e"] = gen.uniform(-3, 3, size=rank).tolist()
            cases.append({"model": model, "state": state})
    data = {
        "features": list(toy.FEATURES),
        "users": list(toy.USERS),
        "movies": list(toy.MOVIES),
        "movie_genres": {m: list(g) for m, g in toy.MOVIE_GENRES.items()},
        "bias": toy.BIAS,
        "w0": toy.W0,
    }
    script = tmp_path / "check.mjs"
    script.write_text(
        f"import {{ math }} from {json.dumps(JS.as_uri())};\n"
        f"const D = {json.dumps(data)};\n"
        f"const cases = {json.dumps(cases)};\n"
        "const row = Object.fromEntries(D.features.map((n, i) => [n, i]));\n"
        "const out = cases.map(({ model, state }) => {\n"
        "  const t = { D, model, state, row };\n"
        "  const scores = math.allScores(t, state, math.fieldR(t));\n"
        "  return { scores, prop1: math.proposition1(t, 'Bob', 'Star Wars') };\n"
        "});\n"
        "console.log(JSON.stringify(out));\n"
    )
    result = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for case, got in zip(cases, json.loads(result.stdout)):
        checked = toy.check_state(case["state"])
        expected = checked.scores(case["model"])
        shown = np.array([[got["scores"][f"{u}|{m}"] for m in toy.MOVIES] for u in toy.USERS])
        assert np.allclose(shown, expected, atol=1e-12), case["model"]
        assert np.isclose(got["prop1"], toy.dplr_pairwise(checked.V, "Bob", "Star Wars", checked.U, checked.e))
