"""RaFM paper — [RaFM].

Efficient evaluation: A_{l,k} (eq. 7), B_{l,k} (eq. 8), Proposition 2, the proof of
Theorem 3 (eqs. 9–10) and the recursion B_{l,k+1} = B_{l,k} − A_{k,k+1} + A_{k+1,k+1}.
Names: m FMs with ranks D_1 ≤ … ≤ D_m; feature i has rank index k_i and embeddings
v_i^{(p)} ∈ R^{D_p}; k_ij = min(k_i, k_j) (eq. 5); F_k = {i : k_i ≥ k} (eq. 6).

Supplementary §3: Lemma S4, Lemma S5 and Proposition S3, the quasi-triangle
inequality for log loss L(ŷ2, y) ≤ L(ŷ1, y) + C_{θ,δ} D_KL(ŷ1‖ŷ2) + log δ (eq. S6),
C_{θ,δ} from eq. (S7).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .core import Check, Derivation, Printed, Step, WrongVariant, dot, sqnorm, sym_vector

SOURCE = "[RaFM]"
RANKS = (1, 2, 3)  # D_1 ≤ D_2 ≤ D_3, m = 3 FMs
RANK_INDEX = (1, 3, 2, 3, 2, 1)  # k_i, repeated over the features


class _Model:
    """n features with rank indices k_i and embeddings v_i^{(p)} for every p (explicit symbols)."""

    def __init__(self, n: int):
        self.n, self.m = n, len(RANKS)
        self.k = [RANK_INDEX[i % len(RANK_INDEX)] for i in range(n)]
        self.x = sym_vector("x", n)
        self.v = {
            (i, p): sym_vector(f"v^{{({p})}}_{{{i + 1}}}", RANKS[p - 1]) for i in range(n) for p in range(1, self.m + 1)
        }

    def F(self, k):
        """Eq. (6): F_k = {i : k_i ≥ k}."""
        return [i for i in range(self.n) if self.k[i] >= k]

    def k_ij(self, i, j):
        return min(self.k[i], self.k[j])

    def term(self, i, j, p):
        return dot(self.v[i, p], self.v[j, p]) * self.x[i] * self.x[j]

    def pairs(self):
        return [(i, j) for i in range(self.n) for j in range(i + 1, self.n)]

    def A(self, l, k):
        """Eq. (7), first line: Σ_{i<j ∈ F_k} v_i^{(l)}·v_j^{(l)} x_i x_j."""
        F = self.F(k)
        return sum((self.term(i, j, l) for i, j in self.pairs() if i in F and j in F), sp.Integer(0))

    def A_fast(self, l, k):
        """Eq. (7), second line: ½(‖Σ_{F_k} v_i^{(l)} x_i‖² − Σ_{F_k} ‖v_i^{(l)} x_i‖²)."""
        F = self.F(k)
        if not F:
            return sp.Integer(0)
        total = sum((self.v[i, l] * self.x[i] for i in F[1:]), self.v[F[0], l] * self.x[F[0]])
        return sp.Rational(1, 2) * (sqnorm(total) - sum(sqnorm(self.v[i, l] * self.x[i]) for i in F))

    def B(self, l, k):
        """Eq. (8): Σ_{i<j} v_i^{(c)}·v_j^{(c)} x_i x_j with c = k_ij|[l,k] = max(l, min(k, k_ij))."""
        return sum((self.term(i, j, max(l, min(k, self.k_ij(i, j)))) for i, j in self.pairs()), sp.Integer(0))

    def rafm(self):
        """Eqs. (1), (4): Σ_{i<j} v_i^{(k_ij)}·v_j^{(k_ij)} x_i x_j."""
        return sum((self.term(i, j, self.k_ij(i, j)) for i, j in self.pairs()), sp.Integer(0))

    def recursions(self):
        """All (l, k) with 1 ≤ l ≤ k < m."""
        return [(l, k) for k in range(1, self.m) for l in range(1, k + 1)]


def _eq7(on_F_k=True):
    """A_{l,k} against its fast form over F_k (or, wrongly, over all features: F_1 = F)."""

    def build(n):
        M = _Model(n)
        lk = [(l, k) for l in range(1, M.m + 1) for k in range(1, M.m + 1)]
        return sp.Matrix([M.A(l, k) for l, k in lk]), sp.Matrix([M.A_fast(l, k if on_F_k else 1) for l, k in lk])

    return build


def _prop2_rafm(l, k):
    """Left: the RaFM summed level by level — pair (i, j) at level p when both are in F_p but not both
    in F_{p+1} (eqs. 4–6, no clamp); right: B_{l,k} (eq. 8). Equal for (l, k) = (1, m) only, because
    the features' k_ij cover 1 and m (a pair below l or above k would be clamped)."""

    def build(n):
        M = _Model(n)
        assert {M.k_ij(i, j) for i, j in M.pairs()} >= {1, M.m}, "the check needs pairs at k_ij = 1 and k_ij = m"
        level = {
            p: [(i, j) for i, j in M.pairs() if {i, j} <= set(M.F(p)) and not {i, j} <= set(M.F(p + 1))]
            for p in range(1, M.m + 1)
        }
        rafm = sum((M.term(i, j, p) for p in level for i, j in level[p]), sp.Integer(0))
        return rafm, M.B(l, M.m if k == "m" else k)

    return build


def _prop2_single_fm(on_F_1=True):
    """A_{k,1} and B_{k,k} against the k-th FM; the wrong variant takes A_{k,k} (pairs in F_k only)."""

    def build(n):
        M = _Model(n)
        single = [sum(M.term(i, j, k) for i, j in M.pairs()) for k in range(1, M.m + 1)]
        left = [[M.A(k, 1 if on_F_1 else k), M.B(k, k)] for k in range(1, M.m + 1)]
        return sp.Matrix(left), sp.Matrix([[s, s] for s in single])

    return build


def _eq9(strict=True):
    """Eq. (9) for every 1 ≤ l ≤ k < m; without ``strict`` the moved pairs are those with k_ij ≥ k."""

    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for l, k in M.recursions():
            high = [(i, j) for i, j in M.pairs() if M.k_ij(i, j) > k or (not strict and M.k_ij(i, j) == k)]
            lhs.append(M.B(l, k + 1))
            rhs.append(M.B(l, k) - sum(M.term(i, j, k) for i, j in high) + sum(M.term(i, j, k + 1) for i, j in high))
        return sp.Matrix(lhs), sp.Matrix(rhs)

    return build


def _eq10(shift=1):
    """Both pair sets, as sums of one marker symbol t_{i,j} per pair: equal sums ⇔ equal sets. The right
    side takes the pairs inside F_{k+shift} (shift = 1 in eq. 10)."""

    def build(n):
        M = _Model(n)
        t = {(i, j): sp.Symbol(f"t_{{{i + 1},{j + 1}}}") for i, j in M.pairs()}
        left = [sum((t[p] for p in M.pairs() if M.k_ij(*p) > k), sp.Integer(0)) for k in range(1, M.m)]
        right = [
            sum((t[i, j] for i, j in M.pairs() if i in M.F(k + shift) and j in M.F(k + shift)), sp.Integer(0))
            for k in range(1, M.m)
        ]
        return sp.Matrix(left), sp.Matrix(right)

    return build


def _theorem3(variant):
    def build(n):
        M = _Model(n)
        subtract = {"correct": lambda k: M.A(k, k + 1), "all of F_k": lambda k: M.A(k, k)}
        lhs, rhs = [], []
        for l, k in M.recursions():
            lhs.append(M.B(l, k + 1))
            if variant == "swapped signs":
                rhs.append(M.B(l, k) + M.A(k, k + 1) - M.A(k + 1, k + 1))
            else:
                rhs.append(M.B(l, k) - subtract[variant](k) + M.A(k + 1, k + 1))
        return sp.Matrix(lhs), sp.Matrix(rhs)

    return build


def _telescoped(remove_old=True):
    """The RaFM against A_{1,1} + Σ_k (A_{k+1,k+1} − A_{k,k+1}) (without the − A_{k,k+1} if not ``remove_old``)."""

    def build(n):
        M = _Model(n)
        old = (lambda k: M.A_fast(k, k + 1)) if remove_old else (lambda k: 0)
        fast = M.A_fast(1, 1) + sum(M.A_fast(k + 1, k + 1) - old(k) for k in range(1, M.m))
        return M.rafm(), fast

    return build


def efficient_evaluation() -> Derivation:
    return Derivation(
        key="rafm-theorem-3",
        title="RaFM: evaluating B_{1,m} by the A/B recursion (Theorem 3)",
        source=f"{SOURCE}, §3.2, eqs. (4)–(10), Proposition 2, Theorem 3",
        assumptions=(
            r"m = 3 \text{ FMs with ranks } D = (1, 2, 3);\; k_i \in \{1,2,3\}",
            r"k_{ij} = \min(k_i, k_j)\;\text{(eq. 5)},\quad \mathcal F_k = \{i : k_i \ge k\}\;\text{(eq. 6)}",
            "checks use n = 5 features with k = (1, 3, 2, 3, 2) and explicit symbols for every embedding vector",
        ),
        steps=(
            Step(
                "eq. (7): A_{l,k} in O(D_l |F_k|)",
                r"\mathcal A_{l,k} = \sum_{i,j\in\mathcal F_k,\, i<j}\boldsymbol v_i^{(l)}\cdot\boldsymbol v_j^{(l)}x_ix_j = \tfrac12\Big(\Big\|\sum_{i\in\mathcal F_k}\boldsymbol v_i^{(l)}x_i\Big\|_2^2 - \sum_{i\in\mathcal F_k}\big\|\boldsymbol v_i^{(l)}x_i\big\|_2^2\Big)",
                "Rendle's identity ([Rendle2010] Lemma 3.1) on the feature subset F_k; checked for every l, k ∈ {1, 2, 3}",
                f"{SOURCE}, eq. (7)",
                Check(_eq7(), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "summed over all features",
                        r"\mathcal A_{l,k} = \tfrac12\Big(\Big\|\sum_{i}\boldsymbol v_i^{(l)}x_i\Big\|_2^2 - \sum_{i}\big\|\boldsymbol v_i^{(l)}x_i\big\|_2^2\Big)",
                        Check(_eq7(on_F_k=False), "exact", size=5, exact_limit=8),
                        "A_{l,k} holds only the pairs inside F_k = {i : k_i ≥ k}; summing over every feature "
                        "gives A_{l,1}, which differs once k > 1",
                    ),
                ),
            ),
            Step(
                "Proposition 2.2: the RaFM is B_{1,m}",
                r"\sum_{i<j}\boldsymbol v_i^{(k_{ij})}\cdot\boldsymbol v_j^{(k_{ij})}x_ix_j = \mathcal B_{1,m},\qquad k_{ij}|_{[l,k]} = \max[l, \min(k, k_{ij})]",
                "with l = 1, k = m the clamp max[1, min(m, k_ij)] = k_ij because 1 ≤ k_ij ≤ m. Checked "
                "against the RaFM summed level by level from F_p (eq. 6), with features at k_ij = 1 and "
                "k_ij = m, where a narrower clamp would change the sum",
                f"{SOURCE}, eqs. (1), (4), (8), Proposition 2",
                Check(_prop2_rafm(1, "m"), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "clamped at m − 1",
                        r"\sum_{i<j}\boldsymbol v_i^{(k_{ij})}\cdot\boldsymbol v_j^{(k_{ij})}x_ix_j = \mathcal B_{1,m-1}",
                        Check(_prop2_rafm(1, len(RANKS) - 1), "exact", size=5, exact_limit=8),
                        "pairs with k_ij = m would use the embeddings of FM m − 1",
                    ),
                    WrongVariant(
                        "clamped from 2",
                        r"\sum_{i<j}\boldsymbol v_i^{(k_{ij})}\cdot\boldsymbol v_j^{(k_{ij})}x_ix_j = \mathcal B_{2,m}",
                        Check(_prop2_rafm(2, "m"), "exact", size=5, exact_limit=8),
                        "pairs with k_ij = 1 would use the embeddings of FM 2",
                    ),
                ),
            ),
            Step(
                "Proposition 2.1: A_{k,1} and B_{k,k} are the k-th FM",
                r"\mathcal A_{k,1} = \mathcal B_{k,k} = \sum_{i<j}\boldsymbol v_i^{(k)}\cdot\boldsymbol v_j^{(k)}x_ix_j",
                "F_1 = F (every k_i ≥ 1), and max[k, min(k, k_ij)] = k",
                f"{SOURCE}, Proposition 2",
                Check(_prop2_single_fm(), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "A_{k,k} for the k-th FM",
                        r"\mathcal A_{k,k} = \mathcal B_{k,k} = \sum_{i<j}\boldsymbol v_i^{(k)}\cdot\boldsymbol v_j^{(k)}x_ix_j",
                        Check(_prop2_single_fm(on_F_1=False), "exact", size=5, exact_limit=8),
                        "A_{k,k} sums the pairs inside F_k only; the k-th FM has all pairs, which is F_1",
                    ),
                ),
            ),
            Step(
                "eq. (9): only pairs with k_ij > k change",
                r"\mathcal B_{l,k+1} = \mathcal B_{l,k} - \sum_{i<j,\,k_{ij}>k}\boldsymbol v_i^{(k)}\cdot\boldsymbol v_j^{(k)}x_ix_j + \sum_{i<j,\,k_{ij}>k}\boldsymbol v_i^{(k+1)}\cdot\boldsymbol v_j^{(k+1)}x_ix_j",
                "for l ≤ k: a pair with k_ij ≤ k has the same clamp in B_{l,k} and B_{l,k+1}; a pair with "
                "k_ij > k moves from rank index k to k + 1. Checked for every 1 ≤ l ≤ k < m",
                f"{SOURCE}, eq. (9)",
                Check(_eq9(), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "pairs with k_ij ≥ k",
                        r"\mathcal B_{l,k+1} = \mathcal B_{l,k} - \sum_{i<j,\,k_{ij}\ge k}\boldsymbol v_i^{(k)}\cdot\boldsymbol v_j^{(k)}x_ix_j + \sum_{i<j,\,k_{ij}\ge k}\boldsymbol v_i^{(k+1)}\cdot\boldsymbol v_j^{(k+1)}x_ix_j",
                        Check(_eq9(strict=False), "exact", size=5, exact_limit=8),
                        "a pair with k_ij = k is clamped to k in both B_{l,k} and B_{l,k+1}: it does not move",
                    ),
                ),
            ),
            Step(
                "eq. (10): those pairs live in F_{k+1}",
                r"\{i<j : k_{ij} > k\} = \{i<j : i, j\in\mathcal F_{k+1}\}",
                "min(k_i, k_j) > k ⇔ k_i ≥ k+1 and k_j ≥ k+1 ⇔ i, j ∈ F_{k+1} (eq. 6); checked by summing one "
                "marker symbol per pair over each set",
                f"{SOURCE}, eq. (10)",
                Check(_eq10(), "exact", size=5, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "F_k instead of F_{k+1}",
                        r"\{i<j : k_{ij} > k\} = \{i<j : i, j\in\mathcal F_{k}\}",
                        Check(_eq10(shift=0), "exact", size=5, exact_limit=12),
                        "F_k = {i : k_i ≥ k} also holds the features with k_i = k, whose pairs have k_ij = k, "
                        "not > k: an index off by one",
                    ),
                ),
            ),
            Step(
                "Theorem 3",
                r"\mathcal B_{l,k+1} = \mathcal B_{l,k} - \mathcal A_{k,k+1} + \mathcal A_{k+1,k+1}",
                "eq. (9) with the pair set of eq. (10): the two sums are A_{k,k+1} and A_{k+1,k+1} by definition (eq. 7)",
                f"{SOURCE}, Theorem 3",
                Check(_theorem3("correct"), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "subtracts all pairs of F_k",
                        r"\mathcal B_{l,k+1} = \mathcal B_{l,k} - \mathcal A_{k,k} + \mathcal A_{k+1,k+1}",
                        Check(_theorem3("all of F_k"), "exact", size=5, exact_limit=8),
                        "only the pairs inside F_{k+1} move to rank k+1; pairs with k_ij = k keep v^{(k)}",
                    ),
                    WrongVariant(
                        "signs swapped",
                        r"\mathcal B_{l,k+1} = \mathcal B_{l,k} + \mathcal A_{k,k+1} - \mathcal A_{k+1,k+1}",
                        Check(_theorem3("swapped signs"), "exact", size=5, exact_limit=8),
                        "the old rank-k terms are removed and the new rank-(k+1) terms added",
                    ),
                ),
            ),
            Step(
                "telescoped: RaFM in O(Σ_k D_k |F_k|)",
                r"\mathcal B_{1,m} = \mathcal A_{1,1} + \sum_{k=1}^{m-1}\big(\mathcal A_{k+1,k+1} - \mathcal A_{k,k+1}\big)",
                "start from B_{1,1} = A_{1,1} (Proposition 2.1) and apply Theorem 3 for k = 1..m−1; each A uses "
                "the fast form of eq. (7) (Corollary 4)",
                f"{SOURCE}, Theorem 3, Corollary 4",
                Check(_telescoped(), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "only adds the new terms",
                        r"\mathcal B_{1,m} = \mathcal A_{1,1} + \sum_{k=1}^{m-1}\mathcal A_{k+1,k+1}",
                        Check(_telescoped(remove_old=False), "exact", size=5, exact_limit=8),
                        "each step of Theorem 3 moves the pairs of F_{k+1} from rank k to k + 1: their old "
                        "rank-k terms A_{k,k+1} must go, or those pairs are counted twice",
                    ),
                ),
            ),
        ),
    )


# ---- Supplementary §3: quasi-triangle inequality for log loss ---------------------------

Y1, Y2 = sp.symbols("yhat_1 yhat_2", positive=True)
THETA, DELTA = sp.symbols("theta delta", positive=True)
Y = sp.Symbol("y")
PROBABILITY = (0.03, 0.97)
RANGES = {"yhat": PROBABILITY, "theta": PROBABILITY, "delta": (1.1, 5.0)}


def log_loss(p, y):
    """L(ŷ, y) = −y log ŷ − (1 − y) log(1 − ŷ)."""
    return -y * sp.log(p) - (1 - y) * sp.log(1 - p)


def kl(p, q):
    """D_KL(p‖q) of two Bernoulli variables."""
    return p * sp.log(p / q) + (1 - p) * sp.log((1 - p) / (1 - q))


def c_theta_delta(theta, delta, printed_s4=False):
    """Eq. (S7): C_{θ,δ} = log δ / (θ log δ + (1−θ) log((1−θ)/(1−θ/δ))); (S4) prints 1 − θδ."""
    inner = 1 - theta * delta if printed_s4 else 1 - theta / delta
    return sp.log(delta) / (theta * sp.log(delta) + (1 - theta) * sp.log((1 - theta) / inner))


def slack(y1, y2, y, delta, theta, with_log_delta=True, printed_s4=False):
    """Right side minus left side of (S6)."""
    return (
        log_loss(y1, y)
        + c_theta_delta(theta, delta, printed_s4) * kl(y1, y2)
        + (sp.log(delta) if with_log_delta else 0)
        - log_loss(y2, y)
    )


def _g(theta, delta):
    """Lemma S4: g(θ) = 1/C_{θ,δ}."""
    return theta + (1 - theta) * sp.log((1 - theta) / (1 - theta / delta)) / sp.log(delta)


def _gprime_first(inner=1 / DELTA):
    """sympy's g'(θ) log δ against the line; ``inner`` is the inner derivative of 1 − θ/δ (up to sign),
    1/δ, which the wrong variant forgets (inner = 1)."""

    def build(_):
        first = (
            sp.log(DELTA) - sp.log((1 - THETA) / (1 - THETA / DELTA)) - 1 + inner * (1 - THETA) / (1 - THETA / DELTA)
        )
        return sp.diff(_g(THETA, DELTA), THETA) * sp.log(DELTA), first

    return build


def _gprime_second(form):
    """The first form of g'(θ) log δ against −log x + (x − 1), x = (1/δ)(1−θ)/(1−θ/δ); "printed" puts a
    stray (1 − θ) into the log's x, "times δ" writes log δ − log a as −log(δ a)."""

    def build(_):
        a = (1 - THETA) / (1 - THETA / DELTA)
        ratio = a / DELTA
        first = sp.log(DELTA) - sp.log(a) - 1 + ratio
        inside = {"corrected": ratio, "printed": (1 - THETA) * ratio, "times δ": DELTA * a}[form]
        return first, -sp.log(inside) + (ratio - 1)

    return build


GRID_THETA = [float(v) for v in np.linspace(0.01, 0.99, 50)]
GRID_DELTA = [1.05, 1.5, 2.0, 4.0, 10.0]


def _increasing(f):
    """dF/dθ ≥ 0 for F = f(θ, δ): g increases (the line); the wrong variant claims C = 1/g increases too."""

    def build(_):
        return sp.diff(f(THETA, DELTA), THETA), sp.Integer(0)

    return build


def _ratio(form):
    """D_KL(ŷ1‖ŷ2)/log(ŷ1/ŷ2) against ŷ1 + (1 − ŷ1) h; "printed" weighs h by (1 − ŷ2), "upside down"
    divides the logs the other way round."""

    def build(_):
        h = sp.log((1 - Y1) / (1 - Y2)) / sp.log(Y1 / Y2)
        right = {
            "corrected": lambda: Y1 + (1 - Y1) * h,
            "printed": lambda: Y1 + (1 - Y2) * h,
            "upside down": lambda: Y1 + (1 - Y1) / h,
        }[form]()
        return kl(Y1, Y2) / sp.log(Y1 / Y2), right

    return build


def _dh(swapped=False):
    """sympy's ∂h/∂ŷ2 against −D_KL(ŷ2‖ŷ1)/(…) (or, wrongly, with D_KL(ŷ1‖ŷ2))."""

    def build(_):
        h = sp.log((1 - Y1) / (1 - Y2)) / sp.log(Y1 / Y2)
        divergence = kl(Y1, Y2) if swapped else kl(Y2, Y1)
        return sp.diff(h, Y2), -divergence / ((sp.log(Y1) - sp.log(Y2)) ** 2 * Y2 * (1 - Y2))

    return build


def _limit(power=-1):
    """The bound at ŷ2 = ŷ1/δ against C_{ŷ1,δ}^power: 1/C (power −1), or, wrongly, C itself."""

    def build(_):
        y2 = Y1 / DELTA
        h = sp.log((1 - Y1) / (1 - y2)) / sp.log(Y1 / y2)
        return Y1 + (1 - Y1) * h, c_theta_delta(Y1, DELTA) ** power

    return build


GRID_P = [float(v) for v in np.linspace(0.01, 0.99, 40)]
GRID_S3 = {"yhat_1": GRID_P, "yhat_2": GRID_P, "y": [0.0, 1.0], "delta": [1.2, 2.0, 5.0], "fraction": [0.25, 0.5, 1.0]}


def _s3(with_log_delta=True, printed_s4=False):
    def build(_):
        fraction = sp.Symbol("fraction", positive=True)
        theta = fraction * (Y * Y1 + (1 - Y) * (1 - Y1))  # any 0 < θ ≤ yŷ1 + (1−y)(1−ŷ1)
        right = (
            log_loss(Y1, Y)
            + c_theta_delta(theta, DELTA, printed_s4) * kl(Y1, Y2)
            + (sp.log(DELTA) if with_log_delta else 0)
        )
        return right, log_loss(Y2, Y)

    return build


def slack_grid(delta: float = 2.0, y: int = 1, points: int = 99):
    """(ŷ1 values, ŷ2 values, slack[ŷ2, ŷ1]) of (S6) at θ = yŷ1 + (1−y)(1−ŷ1), the tightest allowed θ."""
    theta = Y * Y1 + (1 - Y) * (1 - Y1)
    f = sp.lambdify((Y1, Y2, Y, DELTA), slack(Y1, Y2, Y, DELTA, theta), modules="numpy")
    p = np.linspace(0.005, 0.995, points)
    y1, y2 = np.meshgrid(p, p)
    return p, p, np.asarray(f(y1, y2, float(y), float(delta)), dtype=float)


def quasi_triangle() -> Derivation:
    return Derivation(
        key="rafm-proposition-s3",
        title="RaFM Proposition S3: a quasi-triangle inequality for log loss",
        source=f"{SOURCE}, Supplementary §3 (Lemmas S4, S5, Proposition S3) and §2 (eq. S4)",
        assumptions=(
            r"y\in\{0,1\},\; 0<\hat y_1,\hat y_2<1,\; \delta>1,\; 0<\theta\le y\hat y_1+(1-y)(1-\hat y_1)",
            r"L(\hat y, y) = -y\log\hat y-(1-y)\log(1-\hat y),\quad C_{\theta,\delta} = \frac{\log\delta}{\theta\log\delta+(1-\theta)\log\frac{1-\theta}{1-\theta/\delta}}\;\text{(S7)}",
        ),
        steps=(
            Step(
                "Lemma S4: derivative of g = 1/C",
                r"g'(\theta)\log\delta = \log\delta - \log\frac{1-\theta}{1-\theta/\delta} - 1 + \frac1\delta\,\frac{1-\theta}{1-\theta/\delta}",
                "g(θ) = θ + (1−θ) log((1−θ)/(1−θ/δ)) / log δ; product rule and d/dθ log((1−θ)/(1−θ/δ)) = "
                "−1/(1−θ) + (1/δ)/(1−θ/δ)",
                f"{SOURCE}, Lemma S4",
                Check(_gprime_first(), "symbolic", size=None, ranges=RANGES),
                wrong=(
                    WrongVariant(
                        "forgot the inner derivative 1/δ",
                        r"g'(\theta)\log\delta = \log\delta - \log\frac{1-\theta}{1-\theta/\delta} - 1 + \frac{1-\theta}{1-\theta/\delta}",
                        Check(_gprime_first(inner=1), "symbolic", size=None, ranges=RANGES),
                        "d/dθ log(1 − θ/δ) = −(1/δ)/(1 − θ/δ): the chain rule brings the 1/δ of θ/δ",
                    ),
                ),
            ),
            Step(
                "Lemma S4: as −log x + (x − 1)",
                r"g'(\theta)\log\delta = -\log\Big(\frac1\delta\,\frac{1-\theta}{1-\theta/\delta}\Big) + \Big(\frac1\delta\,\frac{1-\theta}{1-\theta/\delta} - 1\Big)",
                "log δ − log a = −log(a/δ); with x = (1/δ)(1−θ)/(1−θ/δ) the line is −log x + x − 1, which is "
                "> 0 for x ≠ 1 because log x < x − 1",
                f"{SOURCE}, Lemma S4",
                Check(_gprime_second("corrected"), "symbolic", size=None, ranges=RANGES),
                printed=Printed(
                    r"g'(\theta)\log\delta = -\log\Big(\frac{1-\theta}\delta\,\frac{1-\theta}{1-\theta/\delta}\Big) + \Big(\frac1\delta\,\frac{1-\theta}{1-\theta/\delta} - 1\Big)",
                    Check(_gprime_second("printed"), "symbolic", size=None, ranges=RANGES),
                    "a stray factor (1 − θ) inside the logarithm; the conclusion g' > 0 needs the same x in both terms",
                ),
                wrong=(
                    WrongVariant(
                        "log δ − log a as −log(δa)",
                        r"g'(\theta)\log\delta = -\log\Big(\delta\,\frac{1-\theta}{1-\theta/\delta}\Big) + \Big(\frac1\delta\,\frac{1-\theta}{1-\theta/\delta} - 1\Big)",
                        Check(_gprime_second("times δ"), "symbolic", size=None, ranges=RANGES),
                        "log δ − log a = −(log a − log δ) = −log(a/δ): the δ divides",
                    ),
                ),
            ),
            Step(
                "Lemma S4: g increases, so C decreases",
                r"g'(\theta) \ge 0 \;\Rightarrow\; C_{\theta,\delta} = 1/g(\theta) \text{ decreases in } \theta",
                "−log x + x − 1 ≥ 0 (previous line) and log δ > 0; checked on a grid of θ ∈ (0, 1), δ > 1",
                f"{SOURCE}, Lemma S4",
                Check(
                    _increasing(_g), "numeric", size=1, relation=">=", grid={"theta": GRID_THETA, "delta": GRID_DELTA}
                ),
                wrong=(
                    WrongVariant(
                        "C increases too",
                        r"g'(\theta) \ge 0 \;\Rightarrow\; \frac{\partial C_{\theta,\delta}}{\partial\theta} \ge 0",
                        Check(
                            _increasing(lambda theta, delta: 1 / _g(theta, delta)),
                            "numeric",
                            size=1,
                            relation=">=",
                            grid={"theta": GRID_THETA, "delta": GRID_DELTA},
                        ),
                        "C = 1/g and (1/g)' = −g'/g²: where g increases, C decreases",
                    ),
                ),
            ),
            Step(
                "Lemma S5: the ratio D_KL / log(ŷ1/ŷ2)",
                r"\frac{\mathcal D_{KL}(\hat y_1\|\hat y_2)}{\log(\hat y_1/\hat y_2)} = \hat y_1 + (1-\hat y_1)\,h(\hat y_1,\hat y_2),\quad h = \log\frac{1-\hat y_1}{1-\hat y_2}\Big/\log\frac{\hat y_1}{\hat y_2}",
                "divide both terms of D_KL by log(ŷ1/ŷ2); the second term keeps its weight (1 − ŷ1)",
                f"{SOURCE}, Lemma S5",
                Check(_ratio("corrected"), "symbolic", size=None, ranges=RANGES),
                printed=Printed(
                    r"\frac{\mathcal D_{KL}(\hat y_1\|\hat y_2)}{\log(\hat y_1/\hat y_2)} = \hat y_1 + (1-\hat y_2)\,h(\hat y_1,\hat y_2)",
                    Check(_ratio("printed"), "symbolic", size=None, ranges=RANGES),
                    "the weight (1 − ŷ1) of D_KL is printed as (1 − ŷ2); the next line of the "
                    "proof uses (1 − ŷ1) again",
                ),
                wrong=(
                    WrongVariant(
                        "h upside down",
                        r"\frac{\mathcal D_{KL}(\hat y_1\|\hat y_2)}{\log(\hat y_1/\hat y_2)} = \hat y_1 + (1-\hat y_1)\,\log\frac{\hat y_1}{\hat y_2}\Big/\log\frac{1-\hat y_1}{1-\hat y_2}",
                        Check(_ratio("upside down"), "symbolic", size=None, ranges=RANGES),
                        "dividing (1 − ŷ1) log((1−ŷ1)/(1−ŷ2)) by log(ŷ1/ŷ2) puts log(ŷ1/ŷ2) in the denominator",
                    ),
                ),
            ),
            Step(
                "Lemma S5: h decreases in ŷ2",
                r"\frac{\partial h}{\partial\hat y_2} = -\frac{\mathcal D_{KL}(\hat y_2\|\hat y_1)}{(\log\hat y_1-\log\hat y_2)^2\,\hat y_2(1-\hat y_2)} \le 0",
                "quotient rule; the numerator collects into −D_KL(ŷ2‖ŷ1) ≤ 0",
                f"{SOURCE}, Lemma S5",
                Check(_dh(), "symbolic", size=None, ranges=RANGES),
                wrong=(
                    WrongVariant(
                        "D_KL's arguments swapped",
                        r"\frac{\partial h}{\partial\hat y_2} = -\frac{\mathcal D_{KL}(\hat y_1\|\hat y_2)}{(\log\hat y_1-\log\hat y_2)^2\,\hat y_2(1-\hat y_2)}",
                        Check(_dh(swapped=True), "symbolic", size=None, ranges=RANGES),
                        "D_KL is not symmetric: the numerator collects into ŷ2 log(ŷ2/ŷ1) + (1 − ŷ2) log((1−ŷ2)/(1−ŷ1)) "
                        "= D_KL(ŷ2‖ŷ1)",
                    ),
                ),
            ),
            Step(
                "Lemma S5: the bound at ŷ2 = ŷ1/δ is 1/C",
                r"\hat y_1 + (1-\hat y_1)\,\frac{\log(1-\hat y_1)-\log(1-\hat y_1/\delta)}{\log\hat y_1 - \log(\hat y_1/\delta)} = \frac{1}{C_{\hat y_1,\delta}}",
                "log ŷ1 − log(ŷ1/δ) = log δ; compare with the definition (S7) at θ = ŷ1",
                f"{SOURCE}, Lemma S5, eq. (S7)",
                Check(_limit(), "symbolic", size=None, ranges=RANGES),
                wrong=(
                    WrongVariant(
                        "C instead of 1/C",
                        r"\hat y_1 + (1-\hat y_1)\,\frac{\log(1-\hat y_1)-\log(1-\hat y_1/\delta)}{\log\hat y_1 - \log(\hat y_1/\delta)} = C_{\hat y_1,\delta}",
                        Check(_limit(power=1), "symbolic", size=None, ranges=RANGES),
                        "the left side is g(ŷ1) of Lemma S4, the denominator of C divided by log δ: it is 1/C",
                    ),
                ),
            ),
            Step(
                "Proposition S3 (checked on a grid)",
                r"L(\hat y_2,y) \le L(\hat y_1,y) + C_{\theta,\delta}\,\mathcal D_{KL}(\hat y_1\|\hat y_2) + \log\delta",
                "Lemma S5 bounds log(ŷ1/ŷ2) = L(ŷ2,1) − L(ŷ1,1) and Lemma S4 lets θ ≤ ŷ1 replace ŷ1 in C; "
                "y = 0 by symmetry. Numeric check of the slack on a grid of ŷ1, ŷ2, y, δ and θ = t·θ_max, "
                "t ∈ {¼, ½, 1}",
                f"{SOURCE}, Proposition S3, eqs. (S6)–(S7)",
                Check(_s3(), "numeric", size=1, relation=">=", grid=GRID_S3),
                printed=Printed(
                    r"C_{\theta,\delta} = \frac{\log\delta}{\theta\log\delta+(1-\theta)\log\frac{1-\theta}{1-\theta\delta}}\quad\text{(as printed in eq. S4)}",
                    Check(_s3(printed_s4=True), "numeric", size=1, relation=">=", grid=GRID_S3),
                    "the remark after Theorem S1 (eq. S4) prints 1 − θδ where (S7) has 1 − θ/δ; "
                    "with θδ ≥ 1 that logarithm is not even defined",
                ),
                wrong=(
                    WrongVariant(
                        "without the + log δ",
                        r"L(\hat y_2,y) \le L(\hat y_1,y) + C_{\theta,\delta}\,\mathcal D_{KL}(\hat y_1\|\hat y_2)",
                        Check(_s3(with_log_delta=False), "numeric", size=1, relation=">=", grid=GRID_S3),
                        "near ŷ2 = ŷ1 the KL term is quadratic while the loss difference is linear: "
                        "the log δ margin is needed",
                    ),
                ),
            ),
        ),
    )
