"""DPLR-FwFM paper — [DPLR].

Rendle's identity ([Rendle2010] Lemma 3.1, printed as eq. 1) and its context/item split
(eq. 2c); Identity 1 (eq. 6, proof in App. A.1); R_FM = 11ᵀ − I (eq. 7) and its eigenvalues;
Proposition 1 (eqs. 8–9, proof in App. A.2), the zero-diagonal parametrisation (eq. 10) and
the cached-context split of P = UV used by Algorithm 1.
Names: v_i ∈ R^k field vectors (rows of V ∈ R^{m×k}, eq. 4), R ∈ R^{m×m} field
interaction matrix, U ∈ R^{ρ×m}, e ∈ R^ρ, d ∈ R^m, P = UV ∈ R^{ρ×k}.
"""

from __future__ import annotations

import sympy as sp

from .core import Check, Derivation, Printed, Step, WrongVariant, dot, sqnorm, sym_matrix, sym_vector

SOURCE = "[DPLR]"
HALF = sp.Rational(1, 2)


# ---- Rendle's identity (eq. 1) ------------------------------------------------------


def _features(n: int, k: int = 3):
    """a_i = x_i w_i for i = 1..n, w_i ∈ R^k."""
    x, w = sym_vector("x", n), sym_matrix("w", n, k)
    return [x[i] * w[i, :] for i in range(n)]


def _pairwise(a):
    return sum((dot(a[i], a[j]) for i in range(len(a)) for j in range(i + 1, len(a))), sp.Integer(0))


def _rendle_halves(diagonal=True):
    """Pairs as half the full double sum, minus its diagonal (or, wrongly, without removing it)."""

    def build(n):
        a = _features(n)
        full = sum(dot(ai, aj) for ai in a for aj in a)
        return _pairwise(a), HALF * (full - (sum(sqnorm(ai) for ai in a) if diagonal else 0))

    return build


def _rendle_bilinear(square_of_sum=True):
    """The full double sum against ‖Σ_i a_i‖² (or, wrongly, against Σ_i ‖a_i‖²)."""

    def build(n):
        a = _features(n)
        right = sqnorm(sum(a[1:], a[0])) if square_of_sum else sum(sqnorm(ai) for ai in a)
        return sum(dot(ai, aj) for ai in a for aj in a), right

    return build


def _rendle(factor):
    def build(n):
        a = _features(n)
        return _pairwise(a), factor * (sqnorm(sum(a[1:], a[0])) - sum(sqnorm(ai) for ai in a))

    return build


def _rendle_split(cross=True):
    """Eq. (2c) with the first ⌈n/2⌉ fields as context C, the rest as item fields I (without the
    context–item term if not ``cross``)."""

    def build(n):
        v = _features(n)
        c, i = v[: (n + 1) // 2], v[(n + 1) // 2 :]
        s_c, s_i = sum(c[1:], c[0]), sum(i[1:], i[0])
        return _pairwise(v), _pairwise(c) + (dot(s_c, s_i) if cross else 0) + _pairwise(i)

    return build


def rendle() -> Derivation:
    return Derivation(
        key="rendle",
        title="Rendle's identity: FM pairwise interactions in O(nk)",
        source=f"[Rendle2010], Lemma 3.1; {SOURCE}, eq. (1) and eq. (2c)",
        assumptions=(
            r"x_i \in \mathbb{R},\; \boldsymbol w_i \in \mathbb{R}^k,\; i = 1..n",
            "checks use explicit symbols with k = 3 and n = 6",
        ),
        steps=(
            Step(
                "pairs as half the full double sum",
                r"\sum_{i<j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \tfrac12\Big(\sum_{i}\sum_{j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle - \sum_i \|x_i\boldsymbol w_i\|^2\Big)",
                "symmetry of the inner product: the full double sum counts every pair i<j twice "
                "(once as (i, j), once as (j, i)) plus the n diagonal terms ⟨a_i, a_i⟩ = ‖a_i‖²",
                f"[Rendle2010], Lemma 3.1; {SOURCE}, eq. (1)",
                Check(_rendle_halves(), "exact", size=6, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "kept the diagonal",
                        r"\sum_{i<j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \tfrac12\sum_{i}\sum_{j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle",
                        Check(_rendle_halves(diagonal=False), "exact", size=6, exact_limit=12),
                        "the full double sum also holds the n terms i = j, which are no pairs: half of them, "
                        "½ Σ_i ‖x_i w_i‖², would be counted as interactions of a feature with itself",
                    ),
                ),
            ),
            Step(
                "bilinearity",
                r"\sum_{i}\sum_{j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \Big\|\sum_i x_i\boldsymbol w_i\Big\|^2",
                "the inner product is bilinear: ⟨Σ_i a_i, Σ_j a_j⟩ = Σ_i Σ_j ⟨a_i, a_j⟩",
                f"[Rendle2010], Lemma 3.1; {SOURCE}, eq. (1)",
                Check(_rendle_bilinear(), "exact", size=6, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "square of a sum as a sum of squares",
                        r"\sum_{i}\sum_{j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \sum_i\|x_i\boldsymbol w_i\|^2",
                        Check(_rendle_bilinear(square_of_sum=False), "exact", size=6, exact_limit=12),
                        "‖Σ_i a_i‖² ≠ Σ_i ‖a_i‖²: the cross terms ⟨a_i, a_j⟩ with i ≠ j, the interactions "
                        "themselves, are lost",
                    ),
                ),
            ),
            Step(
                "Rendle's identity",
                r"\sum_{i<j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \tfrac12\Big(\Big\|\sum_{i} x_i\boldsymbol w_i\Big\|^2 - \sum_{i}\|x_i\boldsymbol w_i\|^2\Big)",
                "the two previous lines; the right side costs O(nk) instead of O(n²k)",
                f"[Rendle2010], Lemma 3.1; {SOURCE}, eq. (1)",
                Check(_rendle(HALF), "exact", size=6, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "dropped the factor ½",
                        r"\sum_{i<j}\langle x_i\boldsymbol w_i, x_j\boldsymbol w_j\rangle = \Big\|\sum_{i} x_i\boldsymbol w_i\Big\|^2 - \sum_{i}\|x_i\boldsymbol w_i\|^2",
                        Check(_rendle(1), "exact", size=6, exact_limit=12),
                        "without ½ every pair is counted twice",
                    ),
                ),
            ),
            Step(
                "eq. (2c): context and item fields",
                r"\sum_{i<j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle = \sum_{i<j \in\mathcal C}\langle\boldsymbol v_i,\boldsymbol v_j\rangle + \Big\langle\sum_{i\in\mathcal C}\boldsymbol v_i, \sum_{j\in\mathcal I}\boldsymbol v_j\Big\rangle + \sum_{i<j\in\mathcal I}\langle\boldsymbol v_i,\boldsymbol v_j\rangle",
                "split the fields into context C and item I and expand ‖Σ_C v + Σ_I v‖²: the context terms "
                "(its pairs and its sum) are computed once per query, each item costs O(|I| k)",
                f"{SOURCE}, eq. (2c)",
                Check(_rendle_split(), "exact", size=6, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "forgot the context–item term",
                        r"\sum_{i<j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle = \sum_{i<j \in\mathcal C}\langle\boldsymbol v_i,\boldsymbol v_j\rangle + \sum_{i<j\in\mathcal I}\langle\boldsymbol v_i,\boldsymbol v_j\rangle",
                        Check(_rendle_split(cross=False), "exact", size=6, exact_limit=12),
                        "a pair with one field in C and one in I is in neither group: those pairs are "
                        "the term ⟨Σ_C v, Σ_I v⟩, the interactions between user and item",
                    ),
                ),
            ),
        ),
    )


# ---- Identity 1 (eq. 6, App. A.1) ----------------------------------------------------


def _identity_setup(n, square=False):
    """A ∈ R^{m×k}, Q ∈ R^{m×m} with m = n, k = n − 1 (k = n if ``square``: a wrong variant that is
    undefined for k ≠ m is checked where it is defined, so that it fails by value)."""
    return sym_matrix("A", n, n if square else max(1, n - 1)), sym_matrix("Q", n, n)


def _rows_gram(transpose_first):
    def build(n):
        A, _ = _identity_setup(n, square=transpose_first)
        gram = sp.Matrix(A.rows, A.rows, lambda i, j: dot(A[i, :], A[j, :]))
        return gram, (A.T * A if transpose_first else A * A.T)

    return build


def _frobenius(trace=True):
    """Σ_ij G_ij Q_ij against Tr(GᵀQ) (or, wrongly, against the sum of all entries of GᵀQ)."""

    def build(n):
        A, Q = _identity_setup(n)
        G = A * A.T
        right = (G.T * Q).trace() if trace else sum(G.T * Q)
        return sum(G[i, j] * Q[i, j] for i in range(n) for j in range(n)), right

    return build


def _symmetric(reversed_order=True):
    """(AAᵀ)ᵀ = AAᵀ; the wrong variant transposes without reversing the order, (AAᵀ)ᵀ = AᵀA, which is
    defined only for k = m, so it is checked with a square A."""

    def build(n):
        A, Q = _identity_setup(n, square=not reversed_order)
        transposed = A * A.T if reversed_order else A.T * A
        return ((A * A.T).T * Q).trace(), (transposed * Q).trace()

    return build


def _cyclic(kind):
    def build(n):
        A, Q = _identity_setup(n, square=kind == "wrong order")
        right = {
            "correct": lambda: (A.T * Q * A).trace(),
            "half": lambda: HALF * (A.T * Q * A).trace(),
            "wrong order": lambda: (A * Q * A.T).trace(),
        }[kind]()
        return (A * A.T * Q).trace(), right

    return build


def _identity1(all_pairs=True):
    """Σ over all (i, j) (or, wrongly, over the pairs i < j only) against Tr(AᵀQA)."""

    def build(n):
        A, Q = _identity_setup(n)
        pairs = [(i, j) for i in range(n) for j in range(n) if all_pairs or i < j]
        return sum(dot(A[i, :], A[j, :]) * Q[i, j] for i, j in pairs), (A.T * Q * A).trace()

    return build


def identity1() -> Derivation:
    return Derivation(
        key="identity-1",
        title="Identity 1: pairwise interactions as a trace",
        source=f"{SOURCE}, eq. (6), proof in App. A.1",
        assumptions=(
            r"A \in \mathbb{R}^{m\times k},\; Q \in \mathbb{R}^{m\times m}",
            "checks use explicit symbols with m = 4, k = 3 (Q not assumed symmetric)",
        ),
        steps=(
            Step(
                "inner products of rows are a Gram matrix",
                r"\langle A_{i,:}, A_{j,:}\rangle = (AA^\top)_{i,j}",
                "definition of the matrix product: (AAᵀ)_ij = Σ_l A_il A_jl",
                f"{SOURCE}, App. A.1",
                Check(_rows_gram(False), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "AᵀA instead of AAᵀ",
                        r"\langle A_{i,:}, A_{j,:}\rangle = (A^\top A)_{i,j}",
                        Check(_rows_gram(True), "exact", size=4),
                        "AᵀA is k×k and holds inner products of columns, not rows; even for a square A "
                        "(checked at k = m) the values differ",
                    ),
                ),
            ),
            Step(
                "Frobenius inner product",
                r"\sum_{i,j}(AA^\top)_{i,j}Q_{i,j} = \langle AA^\top, Q\rangle = \mathrm{Tr}\big((AA^\top)^\top Q\big)",
                "definition of the Frobenius inner product ⟨M, Q⟩ = Σ_ij M_ij Q_ij = Tr(MᵀQ)",
                f"{SOURCE}, App. A.1",
                Check(_frobenius(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "summed every entry of the product",
                        r"\sum_{i,j}(AA^\top)_{i,j}Q_{i,j} = \mathbf 1^\top (AA^\top)^\top Q\,\mathbf 1",
                        Check(_frobenius(trace=False), "exact", size=4),
                        "Σ_ij M_ij Q_ij pairs each entry of M with the same entry of Q: that is the "
                        "diagonal of MᵀQ (its trace), not all of its entries",
                    ),
                ),
            ),
            Step(
                "AAᵀ is symmetric",
                r"\mathrm{Tr}\big((AA^\top)^\top Q\big) = \mathrm{Tr}(AA^\top Q)",
                "(AAᵀ)ᵀ = (Aᵀ)ᵀAᵀ = AAᵀ",
                f"{SOURCE}, App. A.1",
                Check(_symmetric(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "transposed without reversing the order",
                        r"\mathrm{Tr}\big((AA^\top)^\top Q\big) = \mathrm{Tr}(A^\top A\,Q)",
                        Check(_symmetric(reversed_order=False), "exact", size=4),
                        "(BC)ᵀ = CᵀBᵀ reverses the order; AᵀA is k×k and holds inner products of columns. "
                        "Checked with a square A (k = m), where AᵀA Q is defined and the trace still differs",
                    ),
                ),
            ),
            Step(
                "cyclic property of the trace",
                r"\mathrm{Tr}(AA^\top Q) = \mathrm{Tr}(A^\top Q A)",
                "cyclic property of the trace: Tr(BC) = Tr(CB) with B = A, C = AᵀQ",
                f"{SOURCE}, App. A.1 (Petersen & Pedersen §1.1)",
                Check(_cyclic("correct"), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "not a cyclic shift",
                        r"\mathrm{Tr}(AA^\top Q) = \mathrm{Tr}(A Q A^\top)",
                        Check(_cyclic("wrong order"), "exact", size=4),
                        "only cyclic shifts keep the trace; A Q is not even defined when k ≠ m, and for a "
                        "square A (checked at k = m) the trace differs",
                    ),
                    WrongVariant(
                        "a stray factor ½",
                        r"\mathrm{Tr}(AA^\top Q) = \tfrac12\mathrm{Tr}(A^\top Q A)",
                        Check(_cyclic("half"), "exact", size=4),
                        "the ½ belongs to eq. (5) (pairs i<j), not to Identity 1 (all i, j)",
                    ),
                ),
            ),
            Step(
                "Identity 1",
                r"\sum_{i=1}^m\sum_{j=1}^m\langle A_{i,:}, A_{j,:}\rangle Q_{i,j} = \mathrm{Tr}(A^\top Q A)",
                "the previous four lines",
                f"{SOURCE}, eq. (6)",
                Check(_identity1(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "pairs i < j only",
                        r"\sum_{i<j}\langle A_{i,:}, A_{j,:}\rangle Q_{i,j} = \mathrm{Tr}(A^\top Q A)",
                        Check(_identity1(all_pairs=False), "exact", size=4),
                        "the trace counts every (i, j), the diagonal i = j and both orders i < j and i > j; "
                        "for the pairs of an FwFM (eq. 5) the diagonal must be removed and the rest halved",
                    ),
                ),
            ),
        ),
    )


# ---- Proposition 1 (eqs. 8–10, App. A.2) and Algorithm 1's split ------------------------


def _prop_setup(n, rho=2, k=3):
    """m = n fields, V ∈ R^{m×k}, U ∈ R^{ρ×m}, e ∈ R^ρ, d ∈ R^m, R = Uᵀ diag(e) U + diag(d) (eq. 8)."""
    V, U = sym_matrix("v", n, k), sym_matrix("U", rho, n)
    e, d = sym_vector("e", rho), sym_vector("d", n)
    R = U.T * sp.diag(*e) * U + sp.diag(*d)
    return V, U, e, d, R


def _double_sum(V, R):
    m = V.rows
    return sum(dot(V[i, :], V[j, :]) * R[i, j] for i in range(m) for j in range(m))


def _prop_trace(factor=1):
    def build(n):
        V, U, e, d, R = _prop_setup(n)
        return _double_sum(V, R), factor * (V.T * R * V).trace()

    return build


def _prop_linearity(with_diagonal=True):
    def build(n):
        V, U, e, d, R = _prop_setup(n)
        P = U * V
        diagonal = (V.T * sp.diag(*d) * V).trace() if with_diagonal else 0
        return (V.T * R * V).trace(), diagonal + (P.T * sp.diag(*e) * P).trace()

    return build


def _prop_diag(diagonal_only=True):
    """Tr(Vᵀ diag(d) V) against Σ_i d_i ‖v_i‖² (or, wrongly, Σ_i d_i ⟨v_i, Σ_j v_j⟩: Q_ij = d_i for every j)."""

    def build(n):
        V, U, e, d, R = _prop_setup(n)
        total = sum((V[j, :] for j in range(1, V.rows)), V[0, :])
        right = sum(d[i] * (sqnorm(V[i, :]) if diagonal_only else dot(V[i, :], total)) for i in range(V.rows))
        return (V.T * sp.diag(*d) * V).trace(), right

    return build


def _prop_low_rank(weighted=True):
    """Tr(Pᵀ diag(e) P) against Σ_r e_r ‖P_r‖² (or, wrongly, the product of traces Tr(diag(e)) Tr(PᵀP))."""

    def build(n):
        V, U, e, d, R = _prop_setup(n)
        P = U * V
        rows = [sqnorm(P[r, :]) for r in range(P.rows)]
        right = sum(e[r] * rows[r] for r in range(P.rows)) if weighted else sum(e) * sum(rows)
        return (P.T * sp.diag(*e) * P).trace(), right

    return build


def _prop1(rows=True):
    def build(n):
        V, U, e, d, R = _prop_setup(n)
        P = U * V
        low_rank = (
            sum(e[r] * sqnorm(P[r, :]) for r in range(P.rows))
            if rows
            else sum(e[r] * sqnorm(P[:, r]) for r in range(P.rows))
        )
        return _double_sum(V, R), sum(d[i] * sqnorm(V[i, :]) for i in range(V.rows)) + low_rank

    return build


def _eq10(sign=-1):
    """d = −diag_of(Uᵀ diag(e) U) gives diag(R) = 0 and Σ_{i<j} ⟨v_i, v_j⟩ R_ij = ½(...); sign = +1 is the
    wrong variant d = +diag_of(…)."""

    def build(n):
        V, U, e, _, _ = _prop_setup(n)
        low = U.T * sp.diag(*e) * U
        d = [sign * low[i, i] for i in range(n)]
        R = low + sp.diag(*d)
        P = U * V
        pairs = sum(dot(V[i, :], V[j, :]) * R[i, j] for i in range(n) for j in range(i + 1, n))
        fast = HALF * (
            sum(d[i] * sqnorm(V[i, :]) for i in range(n)) + sum(e[r] * sqnorm(P[r, :]) for r in range(P.rows))
        )
        return sp.Matrix([pairs] + [R[i, i] for i in range(n)]), sp.Matrix([fast] + [0] * n)

    return build


def _context_split(form):
    """P = UV against its split into context C and item I: "corrected" U_C V_C + U_I V_I, "printed"
    V_C U_C + V_I U_I (Algorithm 1), "context only" U_C V_C."""

    def build(n):
        V, U, _, _, _ = _prop_setup(n)
        c = (n + 1) // 2
        V_C, V_I, U_C, U_I = V[:c, :], V[c:, :], U[:, :c], U[:, c:]
        split = {
            "corrected": lambda: U_C * V_C + U_I * V_I,
            "printed": lambda: V_C * U_C + V_I * U_I,
            "context only": lambda: U_C * V_C,
        }[form]()
        return U * V, split

    return build


def proposition1() -> Derivation:
    return Derivation(
        key="dplr-proposition-1",
        title="Proposition 1: diagonal-plus-low-rank FwFM in O(ρmk)",
        source=f"{SOURCE}, eqs. (8)–(10), proof in App. A.2, Algorithm 1",
        assumptions=(
            r"V \in \mathbb{R}^{m\times k}\text{ (rows } \boldsymbol v_i),\; U \in \mathbb{R}^{\rho\times m},\; \boldsymbol e\in\mathbb{R}^\rho,\; \boldsymbol d\in\mathbb{R}^m",
            r"\boldsymbol R = U^\top\mathrm{diag}(\boldsymbol e)U + \mathrm{diag}(\boldsymbol d)\;\text{(eq. 8)},\; P = UV",
            "checks use explicit symbols with m = 4, k = 3, ρ = 2; context C = first ⌈m/2⌉ fields",
        ),
        steps=(
            Step(
                "Identity 1 with A = V, Q = R",
                r"\sum_{i,j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle R_{i,j} = \mathrm{Tr}(V^\top\boldsymbol R V)",
                "Identity 1 (eq. 6) with A = V and Q = R",
                f"{SOURCE}, App. A.2",
                Check(_prop_trace(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "kept the ½ of eq. (5)",
                        r"\sum_{i,j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle R_{i,j} = \tfrac12\mathrm{Tr}(V^\top\boldsymbol R V)",
                        Check(_prop_trace(HALF), "exact", size=4),
                        "the ½ halves the double sum down to the pairs i < j (eq. 5); here both sides run "
                        "over all (i, j)",
                    ),
                ),
            ),
            Step(
                "substitute eq. (8), linearity of the trace",
                r"\mathrm{Tr}(V^\top\boldsymbol R V) = \mathrm{Tr}(V^\top\mathrm{diag}(\boldsymbol d)V) + \mathrm{Tr}\big(\underbrace{(UV)^\top}_{P^\top}\mathrm{diag}(\boldsymbol e)\underbrace{(UV)}_{P}\big)",
                "insert R = diag(d) + Uᵀ diag(e) U; the trace is linear; Vᵀ Uᵀ = (UV)ᵀ",
                f"{SOURCE}, App. A.2",
                Check(_prop_linearity(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "dropped the diagonal part",
                        r"\mathrm{Tr}(V^\top\boldsymbol R V) = \mathrm{Tr}(P^\top\mathrm{diag}(\boldsymbol e)P)",
                        Check(_prop_linearity(with_diagonal=False), "exact", size=4),
                        "R = Uᵀ diag(e) U + diag(d) has two parts, and the trace of a sum is the sum of both traces",
                    ),
                ),
            ),
            Step(
                "Identity 1 with Q = diag(d)",
                r"\mathrm{Tr}(V^\top\mathrm{diag}(\boldsymbol d)V) = \sum_{i=1}^m d_i\|\boldsymbol v_i\|^2",
                "Identity 1 with A = V, Q = diag(d): only the diagonal terms i = j survive",
                f"{SOURCE}, App. A.2",
                Check(_prop_diag(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "d spread over whole rows",
                        r"\mathrm{Tr}(V^\top\mathrm{diag}(\boldsymbol d)V) = \sum_{i=1}^m d_i\Big\langle\boldsymbol v_i, \sum_{j=1}^m\boldsymbol v_j\Big\rangle",
                        Check(_prop_diag(diagonal_only=False), "exact", size=4),
                        "in Identity 1, Q = diag(d) has Q_ij = 0 for i ≠ j; taking Q_ij = d_i for every j "
                        "keeps cross terms that are not there",
                    ),
                ),
            ),
            Step(
                "Identity 1 with A = P, Q = diag(e)",
                r"\mathrm{Tr}(P^\top\mathrm{diag}(\boldsymbol e)P) = \sum_{i=1}^\rho e_i\|P_{i,:}\|^2",
                "Identity 1 with A = P (ρ×k) and Q = diag(e)",
                f"{SOURCE}, App. A.2",
                Check(_prop_low_rank(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "trace of a product as a product of traces",
                        r"\mathrm{Tr}(P^\top\mathrm{diag}(\boldsymbol e)P) = \mathrm{Tr}(\mathrm{diag}(\boldsymbol e))\,\mathrm{Tr}(P^\top P) = \Big(\sum_r e_r\Big)\sum_{r}\|P_{r,:}\|^2",
                        Check(_prop_low_rank(weighted=False), "exact", size=4),
                        "Tr(AB) ≠ Tr(A) Tr(B): each row of P is weighted by its own e_r, not by the sum of all of them",
                    ),
                ),
            ),
            Step(
                "Proposition 1",
                r"\sum_{i,j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle R_{i,j} = \sum_{i=1}^m d_i\|\boldsymbol v_i\|^2 + \sum_{i=1}^\rho e_i\|P_{i,:}\|^2",
                "the previous four lines; P = UV costs O(ρmk), the rest O(ρk + mk)",
                f"{SOURCE}, eq. (9)",
                Check(_prop1(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "columns of P instead of rows",
                        r"\sum_{i,j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle R_{i,j} = \sum_i d_i\|\boldsymbol v_i\|^2 + \sum_{i=1}^\rho e_i\|P_{:,i}\|^2",
                        Check(_prop1(rows=False), "exact", size=4),
                        "e_i weighs the i-th row of P = UV (the i-th low-rank direction)",
                    ),
                ),
            ),
            Step(
                "eq. (10): zero diagonal, pairs i<j",
                r"\boldsymbol d = -\mathrm{diag\_of}(U^\top\mathrm{diag}(\boldsymbol e)U) \;\Rightarrow\; R_{i,i}=0,\quad \sum_{i<j}\langle\boldsymbol v_i,\boldsymbol v_j\rangle R_{i,j} = \tfrac12\Big(\sum_i d_i\|\boldsymbol v_i\|^2 + \sum_{r} e_r\|P_{r,:}\|^2\Big)",
                "with this d the diagonal of R cancels; for a symmetric R with zero diagonal the pairs i<j "
                "are half of the full double sum (eq. 5), then Proposition 1",
                f"{SOURCE}, eqs. (5), (10)",
                Check(_eq10(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "sign of d",
                        r"\boldsymbol d = +\mathrm{diag\_of}(U^\top\mathrm{diag}(\boldsymbol e)U)",
                        Check(_eq10(sign=+1), "exact", size=4),
                        "d must cancel the diagonal of the low-rank part; with + it doubles it, so R_ii ≠ 0 "
                        "and the half of the double sum is no longer the sum over pairs",
                    ),
                ),
            ),
            Step(
                "Algorithm 1: cache the context part of P",
                r"P = UV = U_{\mathcal C}V_{\mathcal C} + U_{\mathcal I}V_{\mathcal I}",
                "block matrix product: split the columns of U and the rows of V into context C and item I; "
                "P_C = U_C V_C is computed once per query, each item adds U_I V_I in O(ρ|I|k)",
                f"{SOURCE}, §4.2.2 and Algorithm 1 step 1(a)",
                Check(_context_split("corrected"), "exact", size=4),
                printed=Printed(
                    r"P_{\mathcal C} = V_{\mathcal C}U_{\mathcal C}",
                    Check(_context_split("printed"), "exact", size=4),
                    "Algorithm 1 step 1(a) prints the factors in the wrong order: V_C U_C is "
                    "|C|×k times ρ×|C|, undefined unless k = ρ (the text above it has U_C V_C)",
                ),
                wrong=(
                    WrongVariant(
                        "cached the context part only",
                        r"P = UV = U_{\mathcal C}V_{\mathcal C}",
                        Check(_context_split("context only"), "exact", size=4),
                        "the cache holds P_C = U_C V_C, but every item must still add its own U_I V_I",
                    ),
                ),
            ),
        ),
    )


# ---- R_FM = 11ᵀ − I (eq. 7) ----------------------------------------------------------

LAMBDA = sp.Symbol("lambda")


def _r_fm(n):
    return sp.Matrix(n, n, lambda i, j: 0 if i == j else 1)


def _r_fm_form(shift=True):
    def build(n):
        ones = sp.ones(n, 1) * sp.ones(1, n)
        return _r_fm(n), ones - sp.eye(n) if shift else ones

    return build


def _charpoly(top):
    def build(n):
        return _r_fm(n).charpoly(LAMBDA).as_expr(), (LAMBDA - top(n)) * (LAMBDA + 1) ** (n - 1)

    return build


def _eigenvector_general(eigenvalue):
    """(11ᵀ − I)1 against eigenvalue(m)·1 at general m (MatrixSymbol algebra; a difference that does not
    simplify is written out at small m by the checker, so a wrong eigenvalue fails by value)."""

    def build(_):
        m = sp.Symbol("m", integer=True, positive=True)
        one = sp.OneMatrix(m, 1)
        return (sp.OneMatrix(m, m) - sp.Identity(m)) * one, eigenvalue(m) * one

    return build


def _determinant(power):
    def build(n):
        return _r_fm(n).det(), (-1) ** power(n) * (n - 1)

    return build


def _rank_one_dplr(d_value):
    def build(n):
        U, e, d = sp.ones(1, n), [1], [d_value] * n
        low = U.T * sp.diag(*e) * U
        return sp.Matrix.vstack(_r_fm(n), sp.Matrix([[-low[i, i] for i in range(n)]])), sp.Matrix.vstack(
            low + sp.diag(*d), sp.Matrix([d])
        )

    return build


def r_fm() -> Derivation:
    return Derivation(
        key="r-fm",
        title="The FM field-interaction matrix R_FM = 11ᵀ − I",
        source=f"{SOURCE}, §4.1, eq. (7)",
        assumptions=(
            "a plain FM is an FwFM whose field interactions are all 1 (and 0 on the diagonal)",
            "checks at m = 5 fields; one line at general m",
        ),
        steps=(
            Step(
                "eq. (7): all-ones minus identity",
                r"\boldsymbol R_{\mathrm{FM}} = \begin{pmatrix}0&1&\cdots&1\\1&0&\cdots&1\\\vdots&&\ddots&\vdots\\1&1&\cdots&0\end{pmatrix} = \boldsymbol 1\boldsymbol 1^\top - I",
                "(11ᵀ)_ij = 1 for every i, j; subtracting I zeroes the diagonal",
                f"{SOURCE}, eq. (7)",
                Check(_r_fm_form(), "exact", size=5, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "forgot the −I",
                        r"\boldsymbol R_{\mathrm{FM}} = \boldsymbol 1\boldsymbol 1^\top",
                        Check(_r_fm_form(shift=False), "exact", size=5, exact_limit=12),
                        "11ᵀ has ones on the diagonal too: every field would interact with itself, "
                        "which an FM never does",
                    ),
                ),
            ),
            Step(
                "the all-ones vector is an eigenvector (general m)",
                r"(\boldsymbol 1\boldsymbol 1^\top - I)\,\boldsymbol 1 = \boldsymbol 1(\boldsymbol 1^\top\boldsymbol 1) - \boldsymbol 1 = (m-1)\,\boldsymbol 1",
                "associativity and 1ᵀ1 = m",
                f"{SOURCE}, §4.1",
                Check(_eigenvector_general(lambda m: m - 1), "symbolic", size=None),
                wrong=(
                    WrongVariant(
                        "eigenvalue m",
                        r"(\boldsymbol 1\boldsymbol 1^\top - I)\,\boldsymbol 1 = m\,\boldsymbol 1",
                        Check(_eigenvector_general(lambda m: m), "symbolic", size=None),
                        "1(1ᵀ1) = m 1 is only the 11ᵀ part; the −I takes one 1 away",
                    ),
                ),
            ),
            Step(
                "eigenvalues {m − 1, −1, …, −1}",
                r"\det(\lambda I - \boldsymbol R_{\mathrm{FM}}) = (\lambda - (m-1))\,(\lambda+1)^{m-1}",
                "any x ⟂ 1 has (11ᵀ − I)x = 1(1ᵀx) − x = −x: eigenvalue −1 on the (m−1)-dimensional "
                "complement of 1; the characteristic polynomial is checked at size m",
                f"{SOURCE}, §4.1",
                Check(_charpoly(lambda n: n - 1), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "forgot the −I shift",
                        r"\det(\lambda I - \boldsymbol R_{\mathrm{FM}}) = (\lambda - m)\,(\lambda+1)^{m-1}",
                        Check(_charpoly(lambda n: n), "exact", size=5, exact_limit=8),
                        "m is the eigenvalue of 11ᵀ; subtracting I shifts every eigenvalue by −1",
                    ),
                ),
            ),
            Step(
                "full rank: no low-rank approximation",
                r"\det\boldsymbol R_{\mathrm{FM}} = (-1)^{m-1}(m-1) \neq 0 \;\Rightarrow\; \mathrm{rank}(\boldsymbol R_{\mathrm{FM}}) = m",
                "the determinant is the product of the eigenvalues",
                f"{SOURCE}, §4.1",
                Check(_determinant(lambda m: m - 1), "exact", size=5, exact_limit=8),
                wrong=(
                    WrongVariant(
                        "sign off by one",
                        r"\det\boldsymbol R_{\mathrm{FM}} = (-1)^{m}(m-1)",
                        Check(_determinant(lambda m: m), "exact", size=5, exact_limit=8),
                        "the eigenvalue −1 occurs m − 1 times, not m times: (m − 1)·(−1)^{m−1}",
                    ),
                ),
            ),
            Step(
                "but DPLR with ρ = 1 is exact",
                r"\boldsymbol R_{\mathrm{FM}} = U^\top\mathrm{diag}(\boldsymbol e)U + \mathrm{diag}(\boldsymbol d),\quad U = \boldsymbol 1^\top,\; \boldsymbol e = (1),\; \boldsymbol d = -\boldsymbol 1 = -\mathrm{diag\_of}(U^\top\mathrm{diag}(\boldsymbol e)U)",
                "eq. (7) is eq. (8) with rank ρ = 1, and d is the one eq. (10) prescribes",
                f"{SOURCE}, eqs. (7), (8), (10)",
                Check(_rank_one_dplr(-1), "exact", size=5, exact_limit=12),
                wrong=(
                    WrongVariant(
                        "sign of d",
                        r"\boldsymbol R_{\mathrm{FM}} = U^\top\mathrm{diag}(\boldsymbol e)U + \mathrm{diag}(\boldsymbol d),\quad U = \boldsymbol 1^\top,\; \boldsymbol e = (1),\; \boldsymbol d = +\boldsymbol 1",
                        Check(_rank_one_dplr(+1), "exact", size=5, exact_limit=12),
                        "eq. (8) adds diag(d), so d must be −1 to remove the ones that 11ᵀ puts on the "
                        "diagonal; +1 gives 11ᵀ + I",
                    ),
                ),
            ),
        ),
    )
