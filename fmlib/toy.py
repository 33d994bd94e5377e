"""A toy factorization machine small enough to hold in one hand: the Playground page's model.

Seven named features in three fields — users Ann and Bob, movies Alien, Titanic and Star Wars,
genres Sci-Fi and Romance — each with a bias w_i and a 2-D embedding v_i, so that a student can
see every vector as a point and move it. A sample is one (user, movie) pair: the user's feature,
the movie's feature and the movie's genres, whose field embedding is the average of its genres'
vectors, e_genre = Σ_{g ∈ G(movie)} v_g / |G(movie)| (multi-valued field, [DPLR] §3.2) — Star
Wars is both Sci-Fi and Romance, as in MovieLens.

With the three field embeddings e_user, e_movie, e_genre, a field-weighted FM predicts
([FwFM] eq. 3, as [DPLR] eq. 3 writes it)

    ŷ(u, m) = w0 + w_u + w_m + Σ_{g ∈ G(m)} w_g / |G(m)| + Σ_{f<g} R_fg ⟨e_f, e_g⟩,

three pairwise terms here: user·movie, user·genre and movie·genre. The plain FM
([Rendle2010] eq. 1) is the case R = 11ᵀ − I (every R_fg = 1, [DPLR] eq. 7), and the
diagonal-plus-low-rank FwFM takes R = Uᵀ diag(e) U + diag(d) with d = −diag_of(Uᵀ diag(e) U)
([DPLR] eq. 10): U (ρ×m) and e (ρ) are its only numbers, ρ(m+1) of them, and every pair keeps
a weight. ``dplr_pairwise`` computes that part by [DPLR] Proposition 1 (eq. 9) without visiting
a pair.

Everything here is plain numpy on a handful of numbers; the Playground's JavaScript computes the
same formulas in the browser while a point is dragged, and ``tests/test_toy.py`` checks both this
module and the page's defaults against ``fmlib.models``' FM, FwFM and DPLR on the same numbers.
A state is a dict of lists (JSON, as the browser sends it): ``V`` (7×2), ``R`` (3×3), ``U``
(ρ×3) and ``e`` (ρ); ``check_state`` refuses anything else with a message naming the entry.
``e`` is [DPLR]'s name for the vector that weighs U's rows, as in ``fmlib.models.dplr``; pages and
messages call it ω, as ``fmlib.glossary`` does (there e_f is a field's embedding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FIELDS = ("user", "movie", "genre")
PAIRS = ((0, 1), (0, 2), (1, 2))  # (f, g), f < g: user·movie, user·genre, movie·genre
USERS = ("Ann", "Bob")
MOVIES = ("Alien", "Titanic", "Star Wars")
GENRES = ("Sci-Fi", "Romance")
FEATURES = (*USERS, *MOVIES, *GENRES)
FIELD_OF = {name: FIELDS[0] for name in USERS} | {name: FIELDS[1] for name in MOVIES} | {g: FIELDS[2] for g in GENRES}
MOVIE_GENRES = {"Alien": ("Sci-Fi",), "Titanic": ("Romance",), "Star Wars": ("Sci-Fi", "Romance")}

W0 = 3.0  # global bias w0
BIAS = {"Ann": 0.1, "Bob": -0.1, "Alien": 0.2, "Titanic": 0.0, "Star Wars": 0.3, "Sci-Fi": -0.1, "Romance": 0.1}
# Ann's point lies beyond Alien's, in about the same direction: moving it toward Alien's shortens
# it along that direction, so ⟨v_Ann, v_Alien + v_Sci-Fi⟩ (and Ann's score for Alien) goes down.
EMBEDDING = {
    "Ann": (1.2, 0.4),
    "Bob": (-0.5, 0.9),
    "Alien": (0.6, 0.1),
    "Titanic": (-0.8, 0.3),
    "Star Wars": (0.2, 0.8),
    "Sci-Fi": (0.5, -0.3),
    "Romance": (-0.3, 0.6),
}

COORDINATE_RANGE = 1.5  # every coordinate of an embedding in [-1.5, 1.5] (the plane the page draws)
R_RANGE = 3.0  # every R_fg in [-3, 3]
U_RANGE = 2.0  # every U_rf in [-2, 2]
E_RANGE = 3.0  # every e_r in [-3, 3]
RANKS = (1, 2)  # ρ ≤ m − 1 = 2 ([DPLR] §4)


def fm_R() -> np.ndarray:
    """R = 11ᵀ − I: the FwFM that is a plain FM ([DPLR] eq. 7)."""
    m = len(FIELDS)
    return np.ones((m, m)) - np.eye(m)


def default_U(rank: int = 1) -> np.ndarray:
    """U (ρ×3) whose DPLR R is the FM's: a first row of ones and e = 1 give R = 11ᵀ − I ([DPLR] eq. 10);
    a second row starts at zero, so it changes nothing until the student moves it."""
    U = np.zeros((rank, len(FIELDS)))
    U[0] = 1.0
    return U


def default_e(rank: int = 1) -> np.ndarray:
    """e (ρ): 1 for the first row of U, 0 for a second."""
    e = np.zeros(rank)
    e[0] = 1.0
    return e


def default_state(rank: int = 1) -> dict:
    """The toy's starting state as the page sends it to the browser (lists, JSON)."""
    return {
        "V": [list(EMBEDDING[name]) for name in FEATURES],
        "R": fm_R().tolist(),
        "U": default_U(rank).tolist(),
        "e": default_e(rank).tolist(),
    }


def dplr_diagonal(U: np.ndarray, e: np.ndarray) -> np.ndarray:
    """d_i = −Σ_r e_r U_ri² ([DPLR] eq. 10): the diagonal that makes R's diagonal zero."""
    return -(e[:, None] * U**2).sum(0)


def dplr_R(U, e) -> np.ndarray:
    """R = Uᵀ diag(e) U + diag(d) ([DPLR] eq. 10): symmetric, zero diagonal, from ρ(m+1) numbers."""
    U, e = np.asarray(U, float), np.asarray(e, float)
    return U.T @ np.diag(e) @ U + np.diag(dplr_diagonal(U, e))


def field_embeddings(V, user: str, movie: str) -> np.ndarray:
    """(3, 2): e_user = v_user, e_movie = v_movie, e_genre = the mean of the movie's genres' vectors ([DPLR] §3.2)."""
    V = np.asarray(V, float)
    row = {name: i for i, name in enumerate(FEATURES)}
    genres = [V[row[g]] for g in MOVIE_GENRES[movie]]
    return np.stack([V[row[user]], V[row[movie]], np.mean(genres, axis=0)])


def first_order(user: str, movie: str) -> float:
    """w0 + w_u + w_m + Σ_{g ∈ G(m)} w_g / |G(m)| ([Rendle2010] eq. 1's first two terms, genres averaged)."""
    genres = MOVIE_GENRES[movie]
    return W0 + BIAS[user] + BIAS[movie] + sum(BIAS[g] for g in genres) / len(genres)


def pair_terms(V, user: str, movie: str, R=None) -> np.ndarray:
    """The three pairwise terms R_fg ⟨e_f, e_g⟩ of (user, movie), in the order of ``PAIRS``
    ([FwFM] eq. 3; R = 11ᵀ − I, the FM of [Rendle2010] eq. 1, when ``R`` is None)."""
    e = field_embeddings(V, user, movie)
    R = fm_R() if R is None else np.asarray(R, float)
    return np.array([R[f, g] * float(e[f] @ e[g]) for f, g in PAIRS])


def score(V, user: str, movie: str, R=None) -> float:
    """ŷ(user, movie) = first order + Σ_{f<g} R_fg ⟨e_f, e_g⟩ ([FwFM] eq. 3; an FM when ``R`` is None)."""
    return first_order(user, movie) + float(pair_terms(V, user, movie, R).sum())


def scores(V, R=None) -> np.ndarray:
    """(2, 3): ŷ of every (user, movie) pair, users as rows, movies as columns."""
    return np.array([[score(V, u, m, R) for m in MOVIES] for u in USERS])


def dplr_pairwise(V, user: str, movie: str, U, e) -> float:
    """Σ_{f<g} R_fg ⟨e_f, e_g⟩ for the DPLR R of (U, e) without forming R or visiting a pair:
    ½ (Σ_i d_i ‖e_i‖² + Σ_r e_r ‖P_r‖²), P = U E ([DPLR] Proposition 1, eq. 9)."""
    E = field_embeddings(V, user, movie)
    U, e = np.asarray(U, float), np.asarray(e, float)
    P = U @ E  # (ρ, 2)
    return 0.5 * float((dplr_diagonal(U, e) * (E**2).sum(1)).sum() + (e * (P**2).sum(1)).sum())


def dplr_scores(V, U, e) -> np.ndarray:
    """(2, 3): ŷ of every pair under DPLR, by Proposition 1 ([DPLR] eq. 9)."""
    return np.array([[first_order(u, m) + dplr_pairwise(V, u, m, U, e) for m in MOVIES] for u in USERS])


def move_toward(V, name: str, target: str, fraction: float) -> np.ndarray:
    """V with feature ``name``'s point moved ``fraction`` of the way toward ``target``'s point."""
    V = np.array(V, float)
    i, j = FEATURES.index(name), FEATURES.index(target)
    V[i] += fraction * (V[j] - V[i])
    return V


@dataclass(frozen=True)
class State:
    """A checked toy state: V (7×2), R (3×3, symmetric, zero diagonal), U (ρ×3), e (ρ)."""

    V: np.ndarray
    R: np.ndarray
    U: np.ndarray
    e: np.ndarray

    def scores(self, model: str) -> np.ndarray:
        """(2, 3) scores under ``model``: "fm" (R = 11ᵀ − I), "fwfm" (R) or "dplr" (U, e)."""
        if model == "fm":
            return scores(self.V)
        if model == "fwfm":
            return scores(self.V, self.R)
        if model == "dplr":
            return dplr_scores(self.V, self.U, self.e)
        raise ValueError(f"model must be fm, fwfm or dplr, got {model!r}")


def _number(value, where: str, bound: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not a finite number; use a number in [{-bound:g}, {bound:g}]")
    if not -bound <= value <= bound:
        raise ValueError(f"{where}: {value:g} is out of range; use a number in [{-bound:g}, {bound:g}]")
    return float(value)


def _matrix(value, name: str, shape: tuple[int, int], bound: float, labels) -> np.ndarray:
    rows, cols = shape
    if (
        not isinstance(value, (list, tuple))
        or len(value) != rows
        or any(not isinstance(r, (list, tuple)) or len(r) != cols for r in value)
    ):
        raise ValueError(f"{name}: expected {rows}×{cols} numbers")
    return np.array(
        [[_number(value[i][j], labels(i, j), bound) for j in range(cols)] for i in range(rows)], dtype=float
    )


def check_state(raw) -> State:
    """The state the browser sent, checked: every entry a finite number in its range, R symmetric
    with a zero diagonal, U and e of the same rank ρ ∈ {1, 2}. A ValueError names the entry."""
    if not isinstance(raw, dict) or not {"V", "R", "U", "e"} <= set(raw):
        raise ValueError("the toy's state needs V, R, U and e")
    axes = ("x", "y")
    V = _matrix(raw["V"], "V", (len(FEATURES), 2), COORDINATE_RANGE, lambda i, j: f"{FEATURES[i]} {axes[j]}")
    R = _matrix(raw["R"], "R", (3, 3), R_RANGE, lambda i, j: f"R[{FIELDS[i]}, {FIELDS[j]}]")
    if np.any(np.diag(R) != 0) or np.any(R != R.T):
        raise ValueError("R: must be symmetric with a zero diagonal (only R_fg for f ≠ g is a weight)")
    rank = len(raw["U"]) if isinstance(raw["U"], (list, tuple)) else 0
    if rank not in RANKS:
        raise ValueError(f"U: ρ = {rank} rows; use ρ = 1 or 2 (ρ ≤ m − 1)")
    U = _matrix(raw["U"], "U", (rank, 3), U_RANGE, lambda i, j: f"U[{i + 1}, {FIELDS[j]}]")
    e = _matrix([raw["e"]], "ω", (1, rank), E_RANGE, lambda i, j: f"ω[{j + 1}]")[0]
    return State(V, R, U, e)


def moved(before: State, after: State) -> list[str]:
    """The entries a move changed, by name: a feature (its point), R[f, g], ρ, U[r, f] or ω[r] (``e``'s entries)."""
    names = [name for i, name in enumerate(FEATURES) if not np.array_equal(before.V[i], after.V[i])]
    names += [f"R[{FIELDS[f]}, {FIELDS[g]}]" for f, g in PAIRS if before.R[f, g] != after.R[f, g]]
    if before.U.shape != after.U.shape:
        return [*names, "ρ"]
    names += [f"U[{r + 1}, {FIELDS[f]}]" for r, f in zip(*np.nonzero(before.U != after.U))]
    return names + [f"ω[{r + 1}]" for r in np.flatnonzero(before.e != after.e)]


def changes(before: State, after: State, model: str) -> list[tuple[str, str, float, float]]:
    """(user, movie, score before, score after) of every pair, largest change first."""
    a, b = before.scores(model), after.scores(model)
    rows = [(u, m, float(a[i, j]), float(b[i, j])) for i, u in enumerate(USERS) for j, m in enumerate(MOVIES)]
    return sorted(rows, key=lambda r: -abs(r[3] - r[2]))
