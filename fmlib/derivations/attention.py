"""Attention inversion — [AttnInv], §3.1–3.2 and App. A.

Regression model (Def. 3.1, eq. 1): L(X) = ‖D(X)⁻¹ exp(XᵀWX) XᵀV − B‖²_F with
D(X) = diag(exp(XᵀWX) 1_n), X ∈ R^{d×n}, W, V ∈ R^{d×d}, B ∈ R^{n×d}.
Notation of §3.2 / Defs. A.4–A.9: u(X)_i = exp(XᵀW X_{*,i}), α(X)_i = ⟨u(X)_i, 1_n⟩,
f(X)_i = α(X)_i⁻¹ u(X)_i, h(X)_j = XᵀV_{*,j}, c(X)_{i,j} = ⟨f(X)_i, h(X)_j⟩ − b_{i,j},
L(X) = Σ_i Σ_j c(X)_{i,j}²; x_{i,j} is the entry in column i, row j of X.
The gradients of Lemmas A.10–A.17 are checked against sympy's derivatives of these
definitions with explicit symbols (n tokens, d = 2).

Finding: u(X)_i is column i of exp(XᵀWX), while D(X)⁻¹ normalises rows, so Σ c² equals
eq. (1) only with Wᵀ in place of W (or for a symmetric W); and Lemma A.17 drops the
factor 2 of d(c²) = 2c dc. Both are shown as slips next to the corrected lines.
"""

from __future__ import annotations

import sympy as sp

from .core import Check, Derivation, Printed, Step, WrongVariant, dot, sym_matrix

SOURCE = "[AttnInv]"
D = 2  # token length d in every check; n (the number of tokens) is the size


class _Model:
    """Explicit symbols for X (d×n), W, V (d×d), B (n×d) and the §3.2 functions."""

    def __init__(self, n: int, d: int = D):
        self.n, self.d = n, d
        self.X = sp.Matrix(d, n, lambda j, i: sp.Symbol(f"x_{{{i + 1},{j + 1}}}", real=True))
        self.W, self.V = sym_matrix("w", d, d, real=True), sym_matrix("v", d, d, real=True)
        self.B = sym_matrix("b", n, d, real=True)
        self._u = {}

    def x(self, i, j):
        """x_{i,j}: column i, row j of X."""
        return self.X[j, i]

    def e(self, i):
        return sp.Matrix([1 if l == i else 0 for l in range(self.n)])

    def inner(self, i0):
        """Xᵀ W X_{*,i0}."""
        return self.X.T * self.W * self.X[:, i0]

    def u(self, i0):
        if i0 not in self._u:
            self._u[i0] = self.inner(i0).applyfunc(sp.exp)
        return self._u[i0]

    def alpha(self, i0):
        return sum(self.u(i0))

    def f(self, i0):
        return self.u(i0) / self.alpha(i0)

    def h(self, j0):
        return self.X.T * self.V[:, j0]

    def s(self, i0, j0):
        return dot(self.f(i0), self.h(j0))

    def c(self, i0, j0):
        return self.s(i0, j0) - self.B[i0, j0]

    def L(self):
        return sum(self.c(i, j) ** 2 for i in range(self.n) for j in range(self.d))

    def wx(self, j1, i0):
        """⟨W_{j1,*}, X_{*,i0}⟩ (row j1 of W as a column vector)."""
        return dot(self.W[j1, :], self.X[:, i0])

    def xw(self, j1):
        """Xᵀ W_{*,j1}."""
        return self.X.T * self.W[:, j1]

    def cases(self, same):
        """(i0, i1, j1) with i0 = i1 (Part 1) or i0 ≠ i1 (Part 2)."""
        return [
            (i0, i1, j1) for i0 in range(self.n) for i1 in range(self.n) for j1 in range(self.d) if (i0 == i1) == same
        ]

    def softmax(self, A):
        """D⁻¹ exp(A) with D = diag(exp(A) 1_n): every row divided by its sum."""
        E = A.applyfunc(sp.exp)
        return sp.diag(*[1 / sum(E[i, :]) for i in range(E.rows)]) * E


def _columns(vectors):
    return sp.Matrix.hstack(*vectors)


# ---- definitions: §3.2 notation against eq. (1) -----------------------------------------


def _bilinear(M, l, i, A):
    """Σ_{a,b} x_{l,a} A_{a,b} x_{i,b} = X_{*,l}ᵀ A X_{*,i}, written as the double sum over entries."""
    return sum(M.x(l, a) * A[a, b] * M.x(i, b) for a in range(M.d) for b in range(M.d))


def _u_columns(row):
    """Left: u(X)_i entry by entry from Def. A.4 as double sums; right: column (or row) i of exp(XᵀWX)."""

    def build(n):
        M = _Model(n)
        u = sp.Matrix(n, n, lambda l, i: sp.exp(_bilinear(M, l, i, M.W)))  # column i is u(X)_i
        E = (M.X.T * M.W * M.X).applyfunc(sp.exp)
        return u, E.T if row else E

    return build


def _alpha_sums(rows):
    """Left: α(X)_i = Σ_l u(X)_{i,l} from entry-wise double sums; right: column (or row) sums of exp(XᵀWX)."""

    def build(n):
        M = _Model(n)
        E = (M.X.T * M.W * M.X).applyfunc(sp.exp)
        alpha = sp.Matrix([[sum(sp.exp(_bilinear(M, l, i, M.W)) for l in range(n)) for i in range(n)]])
        return alpha, (E * sp.ones(n, 1)).T if rows else sp.ones(1, n) * E

    return build


def _f_rows(transposed):
    def build(n):
        M = _Model(n)
        A = M.X.T * (M.W.T if transposed else M.W) * M.X
        return sp.Matrix.vstack(*[M.f(i).T for i in range(n)]), M.softmax(A)

    return build


def _h_columns(transposed):
    """Left: h(X)_j entry by entry, Σ_a x_{l,a} v_{a,j} (Def. A.7); right: column j of XᵀV (or XᵀVᵀ)."""

    def build(n):
        M = _Model(n)
        h = sp.Matrix(n, M.d, lambda l, j: sum(M.x(l, a) * M.V[a, j] for a in range(M.d)))  # column j is h(X)_j
        return h, M.X.T * (M.V.T if transposed else M.V)

    return build


def _loss(transposed):
    def build(n):
        M = _Model(n)
        A = M.X.T * (M.W.T if transposed else M.W) * M.X
        R = M.softmax(A) * M.X.T * M.V - M.B
        return sum(r**2 for r in R), M.L()

    return build


def definitions() -> Derivation:
    return Derivation(
        key="attention-definitions",
        title="Attention inversion: the loss L(X) in the notation u, α, f, h, c",
        source=f"{SOURCE}, Def. 3.1 (eq. 1), §3.2, Defs. A.4–A.9",
        assumptions=(
            r"X\in\mathbb{R}^{d\times n},\; W, V\in\mathbb{R}^{d\times d},\; B\in\mathbb{R}^{n\times d}",
            r"D(X) = \mathrm{diag}(\exp(X^\top W X)\mathbf 1_n)\text{; exp entrywise}",
            "W is a general (not symmetric) matrix; checks with n = 2 tokens, d = 2",
        ),
        steps=(
            Step(
                "u(X)_i is a column of exp(XᵀWX)",
                r"u(X)_i := \exp(X^\top W X_{*,i}) = \big(\exp(X^\top W X)\big)_{*,i}",
                "(XᵀWX)_{l,i} = X_{*,l}ᵀ W X_{*,i}: the vector XᵀW X_{*,i} is column i of XᵀWX. "
                "Checked entry by entry: u(X)_i written as double sums over the entries of X and W",
                f"{SOURCE}, §3.2, Def. A.4",
                Check(_u_columns(row=False), "exact", size=2, exact_limit=3, build_limit=6),
                wrong=(
                    WrongVariant(
                        "a row of exp(XᵀWX)",
                        r"u(X)_i = \big(\exp(X^\top W X)\big)_{i,*}^\top",
                        Check(_u_columns(row=True), "exact", size=2, exact_limit=3, build_limit=6),
                        "row i of XᵀWX is X_{*,i}ᵀWX, which holds W the other way round: rows and "
                        "columns agree only for a symmetric W",
                    ),
                ),
            ),
            Step(
                "α(X)_i is a column sum",
                r"\alpha(X)_i := \langle u(X)_i, \mathbf 1_n\rangle = \big(\mathbf 1_n^\top\exp(X^\top W X)\big)_i",
                "⟨u, 1_n⟩ = Σ_l u_l, applied to column i",
                f"{SOURCE}, §3.2, Def. A.5",
                Check(_alpha_sums(rows=False), "exact", size=2, exact_limit=3, build_limit=6),
                wrong=(
                    WrongVariant(
                        "a row sum",
                        r"\alpha(X)_i = \big(\exp(X^\top W X)\mathbf 1_n\big)_i",
                        Check(_alpha_sums(rows=True), "exact", size=2, exact_limit=3, build_limit=6),
                        "u(X)_i is column i, so α(X)_i sums a column; D(X) of Def. 3.1 sums rows, which "
                        "is the same only for a symmetric W",
                    ),
                ),
            ),
            Step(
                "f(X)_i is a row of the softmax with Wᵀ",
                r"f(X)_i^\top := \alpha(X)_i^{-1}u(X)_i^\top = \Big(D'(X)^{-1}\exp(X^\top W^\top X)\Big)_{i,*},\quad D'(X) = \mathrm{diag}(\exp(X^\top W^\top X)\mathbf 1_n)",
                "column i of exp(XᵀWX) is row i of its transpose exp(XᵀWᵀX); dividing by α(X)_i normalises that row",
                f"{SOURCE}, §3.2, Def. A.6",
                Check(_f_rows(True), "exact", size=2, exact_limit=3, build_limit=6),
                wrong=(
                    WrongVariant(
                        "a row of the softmax with W",
                        r"f(X)_i^\top = \Big(D(X)^{-1}\exp(X^\top W X)\Big)_{i,*}",
                        Check(_f_rows(False), "exact", size=2, exact_limit=3, build_limit=6),
                        "u(X)_i is a column of exp(XᵀWX), so f(X)_i is a normalised column, not row "
                        "(they agree only for a symmetric W)",
                    ),
                ),
            ),
            Step(
                "h(X)_j is a column of XᵀV",
                r"h(X)_j := X^\top V_{*,j} = (X^\top V)_{*,j}",
                "definition of the matrix product, column by column; checked entry by entry: "
                "h(X)_j written as sums over the entries of X and V",
                f"{SOURCE}, §3.2, Def. A.7",
                Check(_h_columns(transposed=False), "exact", size=2, exact_limit=3, build_limit=6),
                wrong=(
                    WrongVariant(
                        "a column of XᵀVᵀ",
                        r"h(X)_j = (X^\top V^\top)_{*,j}",
                        Check(_h_columns(transposed=True), "exact", size=2, exact_limit=3, build_limit=6),
                        "h(X)_j uses column j of V, V_{*,j}; (XᵀVᵀ)_{*,j} uses row j of V",
                    ),
                ),
            ),
            Step(
                "L(X) as a sum of c²",
                r"\|D'(X)^{-1}\exp(X^\top W^\top X)X^\top V - B\|_F^2 = \sum_{i=1}^n\sum_{j=1}^d c(X)_{i,j}^2,\quad c(X)_{i,j} = \langle f(X)_i, h(X)_j\rangle - b_{i,j}",
                "entry (i, j) of the softmax times XᵀV is ⟨row i, column j⟩ = ⟨f(X)_i, h(X)_j⟩ (previous lines); "
                "the squared Frobenius norm sums the squared entries",
                f"{SOURCE}, §3.2, Defs. A.8–A.9",
                Check(_loss(True), "exact", size=2, exact_limit=3, build_limit=6),
                printed=Printed(
                    r"L(X) = \|D(X)^{-1}\exp(X^\top W X)X^\top V - B\|_F^2 = \sum_{i=1}^n\sum_{j=1}^d c(X)_{i,j}^2",
                    Check(_loss(False), "exact", size=2, exact_limit=3, build_limit=6),
                    "§3.2 says Σ c² is L(X) of eq. (1), but with u(X)_i = exp(XᵀW X_{*,i}) that holds "
                    "only for symmetric W; for a general W, eq. (1) needs Wᵀ (or u needs Wᵀ)",
                ),
            ),
        ),
    )


# ---- gradients: Lemmas A.10–A.17 -----------------------------------------------------


def _d(M, expr, i1, j1):
    return sp.diff(expr, M.x(i1, j1))


def _lemma_a10(missing_diagonal=False):
    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            lhs.append(_d(M, M.inner(i0), i1, j1))
            if i0 == i1:
                rhs.append(M.xw(j1) if missing_diagonal else M.e(i0) * M.wx(j1, i0) + M.xw(j1))
            else:
                rhs.append(M.e(i1) * M.wx(j1, i0))
        return _columns(lhs), _columns(rhs)

    return build


def _lemma_a11(n):
    M = _Model(n)
    lhs, rhs = [], []
    for i0, i1, j1 in M.cases(True) + M.cases(False):
        lhs.append(_d(M, M.u(i0), i1, j1))
        inner = M.e(i0) * M.wx(j1, i0) + M.xw(j1) if i0 == i1 else M.e(i1) * M.wx(j1, i0)
        rhs.append(M.u(i0).multiply_elementwise(inner))
    return _columns(lhs), _columns(rhs)


def _lemma_a12(n):
    M = _Model(n)
    lhs, rhs = [], []
    for i0, i1, j1 in M.cases(True) + M.cases(False):
        lhs.append(_d(M, M.alpha(i0), i1, j1))
        u = M.u(i0)
        rhs.append(u[i0] * M.wx(j1, i0) + dot(u, M.xw(j1)) if i0 == i1 else u[i1] * M.wx(j1, i0))
    return sp.Matrix([lhs]), sp.Matrix([rhs])


def _lemma_a13(sign):
    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            lhs.append(_d(M, 1 / M.alpha(i0), i1, j1))
            f = M.f(i0)
            inner = f[i0] * M.wx(j1, i0) + dot(f, M.xw(j1)) if i0 == i1 else f[i1] * M.wx(j1, i0)
            rhs.append(sign / M.alpha(i0) * inner)
        return sp.Matrix([lhs]), sp.Matrix([rhs])

    return build


def _lemma_a14(drop_normalisation=False):
    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            lhs.append(_d(M, M.f(i0), i1, j1))
            f = M.f(i0)
            if i0 == i1:
                scalar = f[i0] * M.wx(j1, i0) + dot(f, M.xw(j1))
                direct = f.multiply_elementwise(M.e(i0) * M.wx(j1, i0) + M.xw(j1))
            else:
                scalar = f[i1] * M.wx(j1, i0)
                direct = f.multiply_elementwise(M.e(i1) * M.wx(j1, i0))
            rhs.append(direct if drop_normalisation else -f * scalar + direct)
        return _columns(lhs), _columns(rhs)

    return build


def _lemma_a15(n):
    M = _Model(n)
    lhs, rhs = [], []
    for i1 in range(n):
        for j0 in range(M.d):
            for j1 in range(M.d):
                lhs.append(_d(M, M.h(j0), i1, j1))
                rhs.append(M.e(i1) * M.V[j1, j0])
    return _columns(lhs), _columns(rhs)


def _dc(M, i0, j0, i1, j1):
    """Lemma A.16: C1 + … + C5 (i0 = i1) or C6 + C7 + C8 (i0 ≠ i1)."""
    f, h, s, wx, v = M.f(i0), M.h(j0), M.s(i0, j0), M.wx(j1, i0), M.V[j1, j0]
    if i0 == i1:
        return (
            -s * f[i0] * wx
            - s * dot(f, M.xw(j1))
            + f[i0] * h[i0] * wx
            + dot(f.multiply_elementwise(M.xw(j1)), h)
            + f[i0] * v
        )
    return -s * f[i1] * wx + f[i1] * h[i1] * wx + f[i1] * v


def _lemma_a16(n):
    M = _Model(n)
    lhs, rhs = [], []
    for i0, i1, j1 in M.cases(True) + M.cases(False):
        for j0 in range(M.d):
            lhs.append(_d(M, M.c(i0, j0), i1, j1))
            rhs.append(_dc(M, i0, j0, i1, j1))
    return sp.Matrix([lhs]), sp.Matrix([rhs])


def _lemma_a17(factor):
    def build(n):
        M = _Model(n)
        L = M.L()
        lhs, rhs = [], []
        for i1 in range(n):
            for j1 in range(M.d):
                lhs.append(_d(M, L, i1, j1))
                rhs.append(factor * sum(M.c(i0, j0) * _dc(M, i0, j0, i1, j1) for i0 in range(n) for j0 in range(M.d)))
        return sp.Matrix([lhs]), sp.Matrix([rhs])

    return build


def _exact(build, size=2):
    return Check(build, "exact", size=size, exact_limit=3, build_limit=5)


def gradients() -> Derivation:
    wx = r"\langle W_{j_1,*}, X_{*,i_0}\rangle"
    return Derivation(
        key="attention-gradients",
        title="Attention inversion: gradients of u, α, f, h, c and L (Lemmas A.10–A.17)",
        source=f"{SOURCE}, App. A (Facts A.1–A.2, Lemmas A.10–A.17)",
        assumptions=(
            r"u, \alpha, f, h, c, L \text{ as in Defs. A.4–A.9};\; x_{i_1,j_1} = X_{j_1,i_1}",
            r"\text{Part 1: } i_0 = i_1,\quad \text{Part 2: } i_0 \ne i_1",
            "every (i0, i1, j0, j1) is checked; n = 2 tokens, d = 2 (both parts occur)",
        ),
        steps=(
            Step(
                "Lemma A.10: derivative of XᵀWX_{*,i0}",
                r"\frac{dX^\top W X_{*,i_0}}{dx_{i_1,j_1}} = \begin{cases} e_{i_0}"
                + wx
                + r" + X^\top W_{*,j_1} & i_0 = i_1\\ e_{i_1}"
                + wx
                + r" & i_0\ne i_1\end{cases}",
                "product rule (Fact A.2): dXᵀ/dx_{i1,j1} = e_{i1}e_{j1}ᵀ, and dX_{*,i0}/dx_{i1,j1} = e_{j1} only when i0 = i1",
                f"{SOURCE}, Lemma A.10",
                _exact(_lemma_a10()),
                wrong=(
                    WrongVariant(
                        "missing diagonal term",
                        r"\frac{dX^\top W X_{*,i_0}}{dx_{i_0,j_1}} = X^\top W_{*,j_1}",
                        _exact(_lemma_a10(missing_diagonal=True)),
                        "x_{i0,j1} sits in both Xᵀ and X_{*,i0}: the product rule gives two terms",
                    ),
                ),
            ),
            Step(
                "Lemma A.11: derivative of u(X)_{i0}",
                r"\frac{du(X)_{i_0}}{dx_{i_1,j_1}} = u(X)_{i_0}\circ\frac{dX^\top W X_{*,i_0}}{dx_{i_1,j_1}}",
                "chain rule for the entrywise exponential (Fact A.2), then Lemma A.10",
                f"{SOURCE}, Lemma A.11",
                _exact(_lemma_a11),
            ),
            Step(
                "Lemma A.12: derivative of α(X)_{i0}",
                r"\frac{d\alpha(X)_{i_0}}{dx_{i_1,j_1}} = \begin{cases} u(X)_{i_0,i_0}"
                + wx
                + r" + \langle u(X)_{i_0}, X^\top W_{*,j_1}\rangle & i_0 = i_1\\ u(X)_{i_0,i_1}"
                + wx
                + r" & i_0\ne i_1\end{cases}",
                "α = ⟨u, 1_n⟩ is linear in u (Fact A.2), Lemma A.11, and ⟨u ∘ v, 1_n⟩ = ⟨u, v⟩ (Fact A.1)",
                f"{SOURCE}, Lemma A.12",
                _exact(_lemma_a12),
            ),
            Step(
                "Lemma A.13: derivative of α(X)_{i0}⁻¹",
                r"\frac{d\alpha(X)_{i_0}^{-1}}{dx_{i_1,j_1}} = \begin{cases} -\alpha(X)_{i_0}^{-1}\big(f(X)_{i_0,i_0}"
                + wx
                + r" + \langle f(X)_{i_0}, X^\top W_{*,j_1}\rangle\big) & i_0 = i_1\\ -\alpha(X)_{i_0}^{-1}f(X)_{i_0,i_1}"
                + wx
                + r" & i_0\ne i_1\end{cases}",
                "power rule dy^{−1} = −y^{−2} dy (Fact A.2), Lemma A.12, and u/α = f",
                f"{SOURCE}, Lemma A.13",
                _exact(_lemma_a13(-1)),
                wrong=(
                    WrongVariant(
                        "sign error",
                        r"\frac{d\alpha(X)_{i_0}^{-1}}{dx_{i_1,j_1}} = +\alpha(X)_{i_0}^{-1}\big(\dots\big)",
                        _exact(_lemma_a13(+1)),
                        "d(1/α) = −dα/α²: the inverse falls when α grows",
                    ),
                ),
            ),
            Step(
                "Lemma A.14: derivative of f(X)_{i0}",
                r"\frac{df(X)_{i_0}}{dx_{i_1,j_1}} = \begin{cases} -f(X)_{i_0}\big(f(X)_{i_0,i_0}"
                + wx
                + r" + \langle f(X)_{i_0}, X^\top W_{*,j_1}\rangle\big) + f(X)_{i_0}\circ\big(e_{i_0}"
                + wx
                + r" + X^\top W_{*,j_1}\big) & i_0 = i_1\\ -f(X)_{i_0}f(X)_{i_0,i_1}"
                + wx
                + r" + f(X)_{i_0}\circ\big(e_{i_1}"
                + wx
                + r"\big) & i_0\ne i_1\end{cases}",
                "product rule on f = α⁻¹u (Fact A.2), Lemmas A.13 and A.11, and α⁻¹u = f",
                f"{SOURCE}, Lemma A.14",
                _exact(_lemma_a14()),
                wrong=(
                    WrongVariant(
                        "forgot the normalisation",
                        r"\frac{df(X)_{i_0}}{dx_{i_1,j_1}} = f(X)_{i_0}\circ\frac{dX^\top W X_{*,i_0}}{dx_{i_1,j_1}}",
                        _exact(_lemma_a14(drop_normalisation=True)),
                        "α depends on X too: without the −f·(…) term the entries of f would not keep summing to 1",
                    ),
                ),
            ),
            Step(
                "Lemma A.15: derivative of h(X)_{j0}",
                r"\frac{dh(X)_{j_0}}{dx_{i_1,j_1}} = e_{i_1}\,v_{j_1,j_0}",
                "h = XᵀV_{*,j0} is linear in X; dXᵀ/dx_{i1,j1} = e_{i1}e_{j1}ᵀ",
                f"{SOURCE}, Lemma A.15",
                _exact(_lemma_a15),
            ),
            Step(
                "Lemma A.16: derivative of c(X)_{i0,j0}",
                r"\frac{dc(X)_{i_0,j_0}}{dx_{i_1,j_1}} = \begin{cases} C_1+C_2+C_3+C_4+C_5 & i_0 = i_1\\ C_6+C_7+C_8 & i_0 \ne i_1\end{cases},\quad \begin{aligned}C_1 &= -s\,f_{i_0,i_0}"
                + wx
                + r",\; C_2 = -s\langle f_{i_0}, X^\top W_{*,j_1}\rangle,\; C_3 = f_{i_0,i_0}h_{j_0,i_0}"
                + wx
                + r",\\ C_4 &= \langle f_{i_0}\circ X^\top W_{*,j_1}, h_{j_0}\rangle,\; C_5 = f_{i_0,i_0}v_{j_1,j_0},\; C_6 = -s\,f_{i_0,i_1}"
                + wx
                + r",\\ C_7 &= f_{i_0,i_1}h_{j_0,i_1}"
                + wx
                + r",\; C_8 = f_{i_0,i_1}v_{j_1,j_0},\quad s = \langle f(X)_{i_0}, h(X)_{j_0}\rangle\end{aligned}",
                "b is constant; product rule for ⟨f, h⟩ (Fact A.2) with Lemmas A.14 and A.15, then collect terms",
                f"{SOURCE}, Lemma A.16",
                _exact(_lemma_a16),
            ),
            Step(
                "Lemma A.17: gradient of L(X)",
                r"\frac{dL(X)}{dx_{i_1,j_1}} = 2\sum_{i_0=1}^n\sum_{j_0=1}^d c(X)_{i_0,j_0}\,\frac{dc(X)_{i_0,j_0}}{dx_{i_1,j_1}}",
                "chain rule: d(c²) = 2c dc; dc from Lemma A.16; checked against sympy's derivative of L = Σ c²",
                f"{SOURCE}, Lemma A.17",
                Check(_lemma_a17(2), "numeric", size=2, build_limit=5),
                printed=Printed(
                    r"\frac{dL(X)}{dx_{i_1,j_1}} = \sum_{i_0=1}^n\sum_{j_0=1}^d c(X)_{i_0,j_0}\,\frac{dc(X)_{i_0,j_0}}{dx_{i_1,j_1}}",
                    Check(_lemma_a17(1), "numeric", size=2, build_limit=5),
                    "the factor 2 of d(c²)/dx = 2c dc/dx is missing (the gradient is off by a "
                    "factor 2, its direction is right)",
                ),
            ),
        ),
    )


# ---- the Hessian's lower bound: Lemmas H.1–H.2 -------------------------------------------

H1_TOKENS = 3  # n in the Lemma H.1 check: p = (p_1, …, p_n), each p_i ∈ ℝ^D
H1_VALUES = (-1.0, -0.25, 0.5, 1.0)  # grid values of every entry of p


def _h1_blocks(printed):
    """Corrected: n·pᵀp ≥ (Σ_i ‖p_i‖)². Printed: pᵀp ≥ Σ_{i,j} p_iᵀp_j = ‖Σ_i p_i‖²."""

    def build(_):
        p = sym_matrix("p", H1_TOKENS, D, real=True)  # row i is p_i
        rows = [p[i, :] for i in range(H1_TOKENS)]
        pp = sum(dot(r, r) for r in rows)
        if printed:
            total = sum(rows, sp.zeros(1, D))
            return pp, dot(total, total)
        return H1_TOKENS * pp, sum(sp.sqrt(dot(r, r)) for r in rows) ** 2

    return build


def _h1_check(printed):
    names = [f"p_{{{i + 1},{j + 1}}}" for i in range(H1_TOKENS) for j in range(D)]
    return Check(_h1_blocks(printed), "numeric", size=1, relation=">=", grid={k: H1_VALUES for k in names})


def _h2_constant(factor_e2, factor_h1):
    """The constant of ∇²L ⪰ −K·I assembled from the lemmas against the stated K."""

    def build(_):
        n, d, R = sp.symbols("n d R", positive=True)
        chain = factor_e2 * (n * d) * (2 * R**2) * (36 * factor_h1(n) * R**6)
        return chain, 144 * n**2 * d * R**8

    return build


def hessian_bound() -> Derivation:
    return Derivation(
        key="attention-hessian-bound",
        title="Attention inversion: the Hessian's lower bound (Lemmas H.1–H.2, Thm. 4.2)",
        source=f"{SOURCE}, App. H (Lemmas H.1–H.2), Lemma E.2, Lemmas F.2 and F.5",
        assumptions=(
            r"\text{Assumption 4.1: } \|W\|, \|V\|, \|X\| \le R,\; |b_{i,j}| \le R^2,\; R > 1",
            r"p \in \mathbb{R}^{nd} \text{ split into } p_1, \dots, p_n \in \mathbb{R}^d\text{; } "
            r"\nabla^2 c(X)_{i_0,j_0} \text{ has } d\times d \text{ blocks } H^{(i_1,i_2)}",
            r"\|H^{(i_1,i_2)}\| \le 36R^6 \text{ (Lemma F.5) and } |c(X)_{i_0,j_0}| \le 2R^2 "
            r"\text{ (Lemma F.2) are taken as printed}",
        ),
        steps=(
            Step(
                "Lemma H.1: n² blocks are bounded by n times one block",
                r"|p^\top\nabla^2 c(X)_{i_0,j_0}\,p| \le \max\|H\|\Big(\sum_{i=1}^n\|p_i\|\Big)^2 \le n\,\max\|H\|\;p^\top p,"
                r"\quad\text{so}\quad \|\nabla^2 c(X)_{i_0,j_0}\| \le 36\,n\,R^6",
                "|p_{i1}ᵀ H p_{i2}| ≤ ‖H‖‖p_{i1}‖‖p_{i2}‖ summed over all n² pairs, then Cauchy–Schwarz "
                "(Σ_i ‖p_i‖)² ≤ n Σ_i ‖p_i‖²; the check is this last inequality, on a grid of "
                f"{len(H1_VALUES)}^{H1_TOKENS * D} points p ∈ ℝ^{{{H1_TOKENS}×{D}}}",
                f"{SOURCE}, Lemma H.1",
                _h1_check(printed=False),
                printed=Printed(
                    r"\max\|H\|\sum_{i_1=1}^n\sum_{i_2=1}^n p_{i_1}^\top p_{i_2} \le \max\|H\|\;p^\top p,"
                    r"\quad\text{so}\quad \|\nabla^2 c(X)_{i_0,j_0}\| \le 36R^6",
                    _h1_check(printed=True),
                    "Σ_{i,j} p_iᵀp_j = ‖Σ_i p_i‖² reaches n·pᵀp when all p_i are equal: the printed "
                    "bound on ∇²c misses a factor up to n",
                ),
            ),
            Step(
                "Lemma H.2: the lower bound on ∇²L",
                r"\nabla^2 L(X) \succeq -2\cdot nd\cdot 2R^2\cdot 36nR^6\,\mathbf I_{nd} = -144\,n^2 d R^8\,\mathbf I_{nd},"
                r"\quad\text{so } \gamma > 72\,n^2 d R^8 \text{ makes } L + \gamma\|X\|^2 \text{ strongly convex}",
                "Lemma E.2 corrected: ∇²L = 2Σ_{i0,j0}(∇c∇cᵀ + c∇²c); drop the PSD part; each of the nd "
                "terms c∇²c ⪰ −|c|‖∇²c‖ I with |c| ≤ 2R² and ‖∇²c‖ ≤ 36nR⁶ (previous line); the "
                "regulariser adds 2γ I. The check multiplies the factors out",
                f"{SOURCE}, Lemma H.2, Thm. 4.2",
                Check(_h2_constant(2, lambda n: n), "symbolic", size=None),
                printed=Printed(
                    r"\nabla^2 L(X) \succeq -72\,ndR^8\,\mathbf I_{nd}",
                    Check(_h2_constant(1, lambda n: 1), "symbolic", size=None),
                    "the printed proof uses Lemma E.2 without the factor 2 of L = Σc² and Lemma H.1's "
                    "bound without the factor n: 72ndR⁸ = 1·nd·2R²·36R⁶ is smaller by the factor 2n",
                ),
            ),
        ),
    )
