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

import numpy as np
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


def _loss(transposed, sum_of_squares=True):
    """‖softmax(XᵀWᵀX or XᵀWX) XᵀV − B‖²_F against Σ c² (or, wrongly, against (Σ c)²)."""

    def build(n):
        M = _Model(n)
        A = M.X.T * (M.W.T if transposed else M.W) * M.X
        R = M.softmax(A) * M.X.T * M.V - M.B
        cs = [M.c(i, j) for i in range(n) for j in range(M.d)]
        return sum(r**2 for r in R), M.L() if sum_of_squares else sum(cs) ** 2

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
                wrong=(
                    WrongVariant(
                        "square of the sum",
                        r"\|D'(X)^{-1}\exp(X^\top W^\top X)X^\top V - B\|_F^2 = \Big(\sum_{i=1}^n\sum_{j=1}^d c(X)_{i,j}\Big)^2",
                        Check(_loss(True, sum_of_squares=False), "exact", size=2, exact_limit=3, build_limit=6),
                        "the squared Frobenius norm squares every entry and then sums; squaring the sum adds "
                        "cross terms c_{i,j} c_{i',j'} and lets errors of opposite sign cancel",
                    ),
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


def _lemma_a11(chain_rule=True):
    """Lemma A.11; without ``chain_rule`` the factor u(X)_{i0} ∘ of exp' = exp is forgotten."""

    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            lhs.append(_d(M, M.u(i0), i1, j1))
            inner = M.e(i0) * M.wx(j1, i0) + M.xw(j1) if i0 == i1 else M.e(i1) * M.wx(j1, i0)
            rhs.append(M.u(i0).multiply_elementwise(inner) if chain_rule else inner)
        return _columns(lhs), _columns(rhs)

    return build


def _lemma_a12(entry_i1=True):
    """Lemma A.12; the wrong variant takes u(X)_{i0,i0} instead of u(X)_{i0,i1} in Part 2 (i0 ≠ i1)."""

    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            lhs.append(_d(M, M.alpha(i0), i1, j1))
            u = M.u(i0)
            part2 = u[i1 if entry_i1 else i0] * M.wx(j1, i0)
            rhs.append(u[i0] * M.wx(j1, i0) + dot(u, M.xw(j1)) if i0 == i1 else part2)
        return sp.Matrix([lhs]), sp.Matrix([rhs])

    return build


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


def _lemma_a15(transposed=False):
    """Lemma A.15: e_{i1} v_{j1,j0} (or, wrongly, e_{i1} v_{j0,j1})."""

    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i1 in range(n):
            for j0 in range(M.d):
                for j1 in range(M.d):
                    lhs.append(_d(M, M.h(j0), i1, j1))
                    rhs.append(M.e(i1) * (M.V[j0, j1] if transposed else M.V[j1, j0]))
        return _columns(lhs), _columns(rhs)

    return build


def _dc(M, i0, j0, i1, j1, with_dh=True):
    """Lemma A.16: C1 + … + C5 (i0 = i1) or C6 + C7 + C8 (i0 ≠ i1); without ``with_dh`` the terms C5 and
    C8 that come from dh (Lemma A.15) are left out."""
    f, h, s, wx = M.f(i0), M.h(j0), M.s(i0, j0), M.wx(j1, i0)
    v = M.V[j1, j0] if with_dh else 0
    if i0 == i1:
        return (
            -s * f[i0] * wx
            - s * dot(f, M.xw(j1))
            + f[i0] * h[i0] * wx
            + dot(f.multiply_elementwise(M.xw(j1)), h)
            + f[i0] * v
        )
    return -s * f[i1] * wx + f[i1] * h[i1] * wx + f[i1] * v


def _lemma_a16(with_dh=True):
    def build(n):
        M = _Model(n)
        lhs, rhs = [], []
        for i0, i1, j1 in M.cases(True) + M.cases(False):
            for j0 in range(M.d):
                lhs.append(_d(M, M.c(i0, j0), i1, j1))
                rhs.append(_dc(M, i0, j0, i1, j1, with_dh))
        return sp.Matrix([lhs]), sp.Matrix([rhs])

    return build


def _lemma_a17(factor, every_token=True):
    """sympy's dL/dx_{i1,j1} against factor · Σ_{i0,j0} c dc/dx; without ``every_token`` the sum keeps only
    i0 = i1 (as if c of another token did not depend on x_{i1,j1})."""

    def build(n):
        M = _Model(n)
        L = M.L()
        lhs, rhs = [], []
        for i1 in range(n):
            for j1 in range(M.d):
                tokens = range(n) if every_token else [i1]
                lhs.append(_d(M, L, i1, j1))
                rhs.append(factor * sum(M.c(i0, j0) * _dc(M, i0, j0, i1, j1) for i0 in tokens for j0 in range(M.d)))
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
                _exact(_lemma_a11()),
                wrong=(
                    WrongVariant(
                        "forgot the chain rule",
                        r"\frac{du(X)_{i_0}}{dx_{i_1,j_1}} = \frac{dX^\top W X_{*,i_0}}{dx_{i_1,j_1}}",
                        _exact(_lemma_a11(chain_rule=False)),
                        "the derivative of exp(g) is exp(g)·g′: the factor u(X)_{i0} = exp(…) stays",
                    ),
                ),
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
                _exact(_lemma_a12()),
                wrong=(
                    WrongVariant(
                        "u(X)_{i0,i0} in Part 2",
                        r"\frac{d\alpha(X)_{i_0}}{dx_{i_1,j_1}} = u(X)_{i_0,i_0}\langle W_{j_1,*}, X_{*,i_0}\rangle \quad (i_0\ne i_1)",
                        _exact(_lemma_a12(entry_i1=False)),
                        "x_{i1,j1} sits in the i1-th entry of Xᵀ W X_{*,i0}, so it is u(X)_{i0,i1} that moves: "
                        "an index mixed up",
                    ),
                ),
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
                _exact(_lemma_a15()),
                wrong=(
                    WrongVariant(
                        "V's indices swapped",
                        r"\frac{dh(X)_{j_0}}{dx_{i_1,j_1}} = e_{i_1}\,v_{j_0,j_1}",
                        _exact(_lemma_a15(transposed=True)),
                        "h(X)_{j0} = XᵀV_{*,j0} holds column j0 of V; x_{i1,j1} multiplies its row j1: v_{j1,j0}",
                    ),
                ),
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
                _exact(_lemma_a16()),
                wrong=(
                    WrongVariant(
                        "forgot dh (no C5, C8)",
                        r"\frac{dc(X)_{i_0,j_0}}{dx_{i_1,j_1}} = \begin{cases} C_1+C_2+C_3+C_4 & i_0 = i_1\\ C_6+C_7 & i_0 \ne i_1\end{cases}",
                        _exact(_lemma_a16(with_dh=False)),
                        "h(X)_{j0} = XᵀV_{*,j0} depends on X too: the product rule on ⟨f, h⟩ gives ⟨f, dh⟩ = C5 or C8",
                    ),
                ),
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
                wrong=(
                    WrongVariant(
                        "own token only",
                        r"\frac{dL(X)}{dx_{i_1,j_1}} = 2\sum_{j_0=1}^d c(X)_{i_1,j_0}\,\frac{dc(X)_{i_1,j_0}}{dx_{i_1,j_1}}",
                        Check(_lemma_a17(2, every_token=False), "numeric", size=2, build_limit=5),
                        "through the softmax every c(X)_{i0,j0} depends on every token: Part 2 (i0 ≠ i1) of "
                        "Lemma A.16 is not zero",
                    ),
                ),
            ),
        ),
    )


# ---- the Hessian's lower bound: Lemmas H.1–H.2 -------------------------------------------

H1_TOKENS = 3  # n in the Lemma H.1 check: p = (p_1, …, p_n), each p_i ∈ ℝ^D
H1_VALUES = (-1.0, -0.25, 0.5, 1.0)  # grid values of every entry of p


def _h1_blocks(form):
    """ "corrected": n·pᵀp ≥ (Σ_i ‖p_i‖)²; "printed": pᵀp ≥ Σ_{i,j} p_iᵀp_j = ‖Σ_i p_i‖²; "without n":
    pᵀp ≥ (Σ_i ‖p_i‖)²."""

    def build(_):
        p = sym_matrix("p", H1_TOKENS, D, real=True)  # row i is p_i
        rows = [p[i, :] for i in range(H1_TOKENS)]
        pp = sum(dot(r, r) for r in rows)
        if form == "printed":
            total = sum(rows, sp.zeros(1, D))
            return pp, dot(total, total)
        return (H1_TOKENS if form == "corrected" else 1) * pp, sum(sp.sqrt(dot(r, r)) for r in rows) ** 2

    return build


def _h1_check(form):
    names = [f"p_{{{i + 1},{j + 1}}}" for i in range(H1_TOKENS) for j in range(D)]
    return Check(_h1_blocks(form), "numeric", size=1, relation=">=", grid={k: H1_VALUES for k in names})


# n, d, R of the constant K in ∇²L ⪰ −K·I, and their sampling ranges (counts ≥ 1, R > 1 by Assumption 4.1)
H2_N, H2_D, H2_R = sp.symbols("n d R", positive=True)
H2_RANGES = {"n": (1.0, 8.0), "d": (1.0, 8.0), "R": (1.0, 3.0)}
E2_BLOCK = ((0, 0), (1, 0))  # x_{1,1}, x_{2,1}: one entry of each of two tokens
E2_SEED = 0


def _e2_factor(n):
    """Lemma E.2's factor, measured: sympy's Hessian of L = Σ c² divided by Σ_{i0,j0}(∇c ∇cᵀ + c ∇²c), entry by
    entry, on the 2×2 block of E2_BLOCK's variables (3 distinct entries), at a seeded random X, W, V, B."""
    M = _Model(n)
    xs = [M.x(i, j) for i, j in E2_BLOCK]
    cs = [M.c(i0, j0) for i0 in range(n) for j0 in range(M.d)]
    hessian = sp.hessian(sum(c**2 for c in cs), xs)
    parts = sp.zeros(len(xs), len(xs))
    for c in cs:
        gradient = sp.Matrix([sp.diff(c, x) for x in xs])
        parts += gradient * gradient.T + c * sp.hessian(c, xs)
    rng = np.random.default_rng(E2_SEED)
    symbols = sorted(hessian.free_symbols | parts.free_symbols, key=lambda s: s.name)
    point = {s: sp.Rational(int(rng.integers(-1536, 1537)), 1024) for s in symbols}
    return [sp.N(hessian[a, b].xreplace(point) / parts[a, b].xreplace(point), 30) for a, b in ((0, 0), (0, 1), (1, 1))]


def _h2_constant(e2, terms, c_bound, hessian_c_bound, total):
    """The constant K of ∇²L ⪰ −K·I, K = e2 · terms · c_bound · hessian_c_bound, as a line states it (right)
    against its sources (left), factor by factor and as a product: e2 measured on sympy's Hessian of L
    (`_e2_factor`, n = 2 tokens), the number of terms c∇²c counted from L = Σ_{i0≤n} Σ_{j0≤d} c², |c| ≤ 2R²
    (Lemma F.2) and ‖∇²c‖ ≤ 36R⁶ (Lemma F.5) times Lemma H.1's n (the previous line). A wrong chain with
    the right product fails at the factor it got wrong."""

    def build(n):
        i0, j0 = sp.symbols("i_0 j_0", integer=True)
        measured = _e2_factor(n)
        count = sp.summation(1, (i0, 1, H2_N), (j0, 1, H2_D))
        sources = measured + [count, 2 * H2_R**2, 36 * H2_R**6 * H2_N]
        line = [e2] * len(measured) + [terms, c_bound, hessian_c_bound]
        product = measured[0] * count * sources[-2] * sources[-1]
        return sp.Matrix(sources + [product]), sp.Matrix(line + [total])

    return build


def _h2_check(e2, terms, c_bound, hessian_c_bound, total):
    return Check(
        _h2_constant(e2, terms, c_bound, hessian_c_bound, total), "numeric", size=2, build_limit=3, ranges=H2_RANGES
    )


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
                _h1_check("corrected"),
                printed=Printed(
                    r"\max\|H\|\sum_{i_1=1}^n\sum_{i_2=1}^n p_{i_1}^\top p_{i_2} \le \max\|H\|\;p^\top p,"
                    r"\quad\text{so}\quad \|\nabla^2 c(X)_{i_0,j_0}\| \le 36R^6",
                    _h1_check("printed"),
                    "Σ_{i,j} p_iᵀp_j = ‖Σ_i p_i‖² reaches n·pᵀp when all p_i are equal: the printed "
                    "bound on ∇²c misses a factor up to n",
                ),
                wrong=(
                    WrongVariant(
                        "Cauchy–Schwarz without the n",
                        r"\Big(\sum_{i=1}^n\|p_i\|\Big)^2 \le p^\top p",
                        _h1_check("without n"),
                        "the square of a sum of n norms exceeds the sum of their squares: for n equal blocks "
                        "it is n times as large",
                    ),
                ),
            ),
            Step(
                "Lemma H.2: the lower bound on ∇²L",
                r"\nabla^2 L(X) \succeq -2\cdot nd\cdot 2R^2\cdot 36nR^6\,\mathbf I_{nd} = -144\,n^2 d R^8\,\mathbf I_{nd},"
                r"\quad\text{so } \gamma > 72\,n^2 d R^8 \text{ makes } L + \gamma\|X\|^2 \text{ strongly convex}",
                "Lemma E.2 corrected: ∇²L = 2Σ_{i0,j0}(∇c∇cᵀ + c∇²c); drop the PSD part; each of the nd "
                "terms c∇²c ⪰ −|c|‖∇²c‖ I with |c| ≤ 2R² and ‖∇²c‖ ≤ 36nR⁶ (previous line); the "
                "regulariser adds 2γ I. The check takes every factor from its source and compares it with the "
                "line: the 2 measured as sympy's Hessian of L over Σ(∇c∇cᵀ + c∇²c) (n = 2 tokens, d = 2), the nd "
                "terms counted in L = Σc², |c| ≤ 2R² (Lemma F.2) and ‖∇²c‖ ≤ 36R⁶ (Lemma F.5) times the n "
                "of the previous line; then their product",
                f"{SOURCE}, Lemma H.2, Lemma E.2, Thm. 4.2",
                _h2_check(2, H2_N * H2_D, 2 * H2_R**2, 36 * H2_N * H2_R**6, 144 * H2_N**2 * H2_D * H2_R**8),
                printed=Printed(
                    r"\nabla^2 L(X) \succeq -72\,ndR^8\,\mathbf I_{nd}",
                    _h2_check(1, H2_N * H2_D, 2 * H2_R**2, 36 * H2_R**6, 72 * H2_N * H2_D * H2_R**8),
                    "the printed proof uses Lemma E.2 without the factor 2 of L = Σc² and Lemma H.1's "
                    "bound without the factor n: 72ndR⁸ = 1·nd·2R²·36R⁶ is smaller by the factor 2n",
                ),
                wrong=(
                    WrongVariant(
                        "n counted with the terms",
                        r"\nabla^2 L(X) \succeq -2\cdot n^2d\cdot 2R^2\cdot 36R^6\,\mathbf I_{nd} = -144\,n^2 d R^8\,\mathbf I_{nd}",
                        _h2_check(2, H2_N**2 * H2_D, 2 * H2_R**2, 36 * H2_R**6, 144 * H2_N**2 * H2_D * H2_R**8),
                        "the same product, but L has nd terms c², not n²d: the n belongs to the bound on "
                        "‖∇²c‖ (the n² blocks of Lemma H.1)",
                    ),
                    WrongVariant(
                        "the 2 of Lemma E.2 moved into |c|",
                        r"\nabla^2 L(X) \succeq -1\cdot nd\cdot 4R^2\cdot 36nR^6\,\mathbf I_{nd} = -144\,n^2 d R^8\,\mathbf I_{nd}",
                        _h2_check(1, H2_N * H2_D, 4 * H2_R**2, 36 * H2_N * H2_R**6, 144 * H2_N**2 * H2_D * H2_R**8),
                        "the same product, but the Hessian of L = Σc² is 2Σ(∇c∇cᵀ + c∇²c) (sympy's Hessian says "
                        "so), and Lemma F.2 bounds |c| by 2R², not 4R²",
                    ),
                ),
            ),
        ),
    )
