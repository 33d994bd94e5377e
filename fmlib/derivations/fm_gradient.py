"""FM weight gradient in O(dk) — [FMGrad], eqs. (1)–(8).

Notation of the note: X ∈ R^d (features), P ∈ R^{k×d} (embeddings as columns),
Z = PX (memoised), φ(X) = ½(‖PX‖² − Σ_i ‖P_{i,:} ∘ X‖²)       (eq. 1),
logistic loss l(X, y) = log(1 + exp(−y φ(X))), y ∈ {+1, −1}.
Ground truth: sympy differentiates eq. (1) written out with an explicit k×d matrix of
symbols. The note's eqs. (7)–(8) print dφ/dP_ij = X_j Z_i − 2 P_ij X_j²; sympy gives
X_j Z_i − P_ij X_j² (the sum Σ_j' P_ij' X_j' contains P_ij itself), so those lines are
shown as a slip next to the corrected ones.
"""

from __future__ import annotations

import sympy as sp

from .core import Check, Derivation, Printed, Step, WrongVariant, sym_matrix, sym_vector

SOURCE = "[FMGrad]"


def _setup(n: int):
    """d = n features, k = n − 1 ≥ 2 factors."""
    d, k = n, max(2, n - 1)
    P, X = sym_matrix("P", k, d), sym_vector("X", d)
    return P, X, P * X


def phi(P: sp.Matrix, X: sp.Matrix) -> sp.Expr:
    """Eq. (1): ½(‖PX‖² − Σ_i ‖P_{i,:} ∘ X‖²)."""
    Z = P * X
    return sp.Rational(1, 2) * ((Z.T * Z)[0] - sum((P[i, j] * X[j]) ** 2 for i in range(P.rows) for j in range(P.cols)))


def sympy_gradient(P: sp.Matrix, X: sp.Matrix) -> sp.Matrix:
    """The ground truth: ∂φ/∂P_ij for every (i, j), by sympy from eq. (1)."""
    f = phi(P, X)
    return P.applyfunc(lambda p: sp.diff(f, p))


def _gradient(coefficient):
    """X_j Z_i − c·P_ij X_j² as a k×d matrix (c = 1 corrected, c = 2 as printed)."""

    def build(n):
        P, X, Z = _setup(n)
        rhs = sp.Matrix(P.rows, P.cols, lambda i, j: X[j] * Z[i] - coefficient * P[i, j] * X[j] ** 2)
        return sympy_gradient(P, X), rhs

    return build


def _sum_form(n, i, j, coefficient):
    """Eq. (7) with the sum written out: X_j Σ_j' P_ij' X_j' − c·P_ij X_j²."""
    P, X, _ = _setup(n)
    return X[j] * sum(P[i, jj] * X[jj] for jj in range(P.cols)) - coefficient * P[i, j] * X[j] ** 2


def _eq7(coefficient):
    def build(n):
        P, X, _ = _setup(n)
        rhs = sp.Matrix(P.rows, P.cols, lambda i, j: _sum_form(n, i, j, coefficient))
        return sympy_gradient(P, X), rhs

    return build


def _eq1_to_2(square_x=True):
    def build(n):
        P, X, _ = _setup(n)
        k, d = P.shape
        power = 2 if square_x else 1
        rhs = sp.Rational(1, 2) * (
            sum(sum(P[i, j] * X[j] for j in range(d)) ** 2 for i in range(k))
            - sum(X[j] ** power * sum(P[i, j] ** 2 for i in range(k)) for j in range(d))
        )
        return phi(P, X), rhs

    return build


def _eq2_to_3(cross_terms=True):
    """Eq. (2) against eq. (3); without ``cross_terms`` the square of the sum keeps only j' = j."""

    def build(n):
        P, X, _ = _setup(n)
        k, d = P.shape
        diagonal = sum(X[j] ** 2 * sum(P[i, j] ** 2 for i in range(k)) for j in range(d))
        eq2 = sp.Rational(1, 2) * (sum(sum(P[i, j] * X[j] for j in range(d)) ** 2 for i in range(k)) - diagonal)
        pairs = [(j, jj) for j in range(d) for jj in range(d) if cross_terms or j == jj]
        eq3 = sp.Rational(1, 2) * (
            sum(P[i, j] * X[j] * P[i, jj] * X[jj] for i in range(k) for j, jj in pairs) - diagonal
        )
        return eq2, eq3

    return build


def _fm_pairwise(factor=1):
    def build(n):
        P, X, _ = _setup(n)
        d = P.cols
        pairs = sum((P[:, j].T * P[:, jj])[0] * X[j] * X[jj] for j in range(d) for jj in range(j + 1, d))
        return phi(P, X), factor * pairs

    return build


def _logistic(sign):
    def build(_):
        y, f = sp.symbols("y phi", real=True)
        loss = sp.log(1 + sp.exp(-y * f))
        return sp.diff(loss, f), sign * y / (1 + sp.exp(y * f))

    return build


def _phi_ij(cross_correction=True):
    """Eq. (5): ∂φ/∂P_ij = ∂φ_ij/∂P_ij for every (i, j), φ_ij as printed; the wrong variant leaves out the
    −P_ij²X_j² that corrects for the j' = j term of the sum."""

    def build(n):
        P, X, _ = _setup(n)
        k, d = P.shape

        def phi_ij(i, j):
            correction = P[i, j] ** 2 * X[j] ** 2 if cross_correction else 0
            return sp.Rational(1, 2) * (
                2 * P[i, j] * X[j] * sum(P[i, jj] * X[jj] for jj in range(d)) - correction - X[j] ** 2 * P[i, j] ** 2
            )

        rhs = sp.Matrix(k, d, lambda i, j: sp.diff(phi_ij(i, j), P[i, j]))
        return sympy_gradient(P, X), rhs

    return build


def _phi_ij_linear(skip_j=True):
    """Eq. (5) simplified: φ_ij = P_ij X_j Σ_{j'≠j} P_ij' X_j' (the P_ij² terms cancel); without ``skip_j``
    the sum keeps j' = j."""

    def build(n):
        P, X, _ = _setup(n)
        k, d = P.shape
        printed = sp.Matrix(
            k,
            d,
            lambda i, j: (
                sp.Rational(1, 2)
                * (2 * P[i, j] * X[j] * sum(P[i, jj] * X[jj] for jj in range(d)) - 2 * P[i, j] ** 2 * X[j] ** 2)
            ),
        )
        linear = sp.Matrix(
            k, d, lambda i, j: P[i, j] * X[j] * sum(P[i, jj] * X[jj] for jj in range(d) if jj != j or not skip_j)
        )
        return printed, linear

    return build


def _matrix_form(diagonal_coefficient, with_diagonal=True):
    def build(n):
        P, X, Z = _setup(n)
        rhs = Z * X.T
        if with_diagonal:
            rhs = rhs - diagonal_coefficient * P * sp.diag(*[x**2 for x in X])
        return sympy_gradient(P, X), rhs

    return build


def _loss_gradient(coefficient, exponent_sign=1):
    """sympy's dl/dP against −y/(1 + exp(±yφ)) (X_j Z_i − c·P_ij X_j²)."""

    def build(n):
        P, X, Z = _setup(n)
        y = sp.Symbol("y", real=True)
        f = phi(P, X)
        loss = sp.log(1 + sp.exp(-y * f))
        lhs = P.applyfunc(lambda p: sp.diff(loss, p))
        outer = -y / (1 + sp.exp(exponent_sign * y * f))
        rhs = sp.Matrix(P.rows, P.cols, lambda i, j: outer * (X[j] * Z[i] - coefficient * P[i, j] * X[j] ** 2))
        return lhs, rhs

    return build


def derivation() -> Derivation:
    return Derivation(
        key="fm-gradient",
        title="FM weight gradient in O(dk)",
        source=f"{SOURCE}, eqs. (1)–(8)",
        assumptions=(
            r"X \in \mathbb{R}^d,\; P \in \mathbb{R}^{k\times d},\; Z = PX",
            r"y \in \{+1,-1\},\; l(X,y) = \log(1+\exp(-y\,\phi(X)))",
            "linear terms ignored; checks use explicit P, X with k = n − 1, d = n",
        ),
        steps=(
            Step(
                "eq. (1) → (2): write the norms as sums",
                r"\phi(X) = \tfrac12\Big(\sum_{i=1}^k\big(\sum_{j=1}^d P_{i,j}X_j\big)^2 - \sum_{j=1}^d X_j^2 \sum_{i=1}^k P_{i,j}^2\Big)",
                "definition of the Euclidean norm: ‖PX‖² = Σ_i (PX)_i²; ‖P_{i,:}∘X‖² = Σ_j P_ij² X_j², "
                "and the two finite sums over i and j may be swapped",
                f"{SOURCE}, eq. (1) → (2)",
                Check(_eq1_to_2(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "missing square on X_j",
                        r"\phi(X) = \tfrac12\Big(\sum_i\big(\sum_j P_{i,j}X_j\big)^2 - \sum_j X_j \sum_i P_{i,j}^2\Big)",
                        Check(_eq1_to_2(square_x=False), "exact", size=4),
                        "the diagonal term needs X_j², the square of the feature value",
                    ),
                ),
            ),
            Step(
                "eq. (2) → (3): square of a sum as a double sum",
                r"\phi(X) = \tfrac12\Big(\sum_{i}\sum_{j}P_{i,j}X_j\sum_{j'}P_{i,j'}X_{j'} - \sum_j X_j^2 \sum_i P_{i,j}^2\Big)",
                "(Σ_j a_j)² = Σ_j a_j Σ_j' a_j' (distributivity)",
                f"{SOURCE}, eq. (2) → (3)",
                Check(_eq2_to_3(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "square of a sum as a sum of squares",
                        r"\phi(X) = \tfrac12\Big(\sum_{i}\sum_{j}P_{i,j}^2X_j^2 - \sum_j X_j^2 \sum_i P_{i,j}^2\Big)",
                        Check(_eq2_to_3(cross_terms=False), "exact", size=4),
                        "(Σ_j a_j)² also holds the cross terms a_j a_j' with j' ≠ j; without them φ = 0 "
                        "and no interaction is left",
                    ),
                ),
            ),
            Step(
                "eq. (3) is the FM pairwise term",
                r"\phi(X) = \sum_{j<j'} \langle P_{:,j}, P_{:,j'}\rangle X_j X_{j'}",
                "Rendle's identity ([Rendle2010] Lemma 3.1, [DPLR] eq. 1) with embedding vectors v_j = P_{:,j}: the double sum "
                "counts each pair j ≠ j' twice and the diagonal once; eq. (1) removes the diagonal and halves",
                f"{SOURCE}, eq. (1); [Rendle2010] Lemma 3.1",
                Check(_fm_pairwise(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "kept the ½",
                        r"\phi(X) = \tfrac12\sum_{j<j'} \langle P_{:,j}, P_{:,j'}\rangle X_j X_{j'}",
                        Check(_fm_pairwise(sp.Rational(1, 2)), "exact", size=4),
                        "the ½ of eq. (1) turns the sum over all j ≠ j' into the sum over pairs j < j'; "
                        "keeping it as well halves every interaction",
                    ),
                ),
            ),
            Step(
                "eq. (4): logistic loss, chain rule",
                r"\frac{dl}{dP_{i,j}} = \frac{dl}{d\phi}\frac{d\phi}{dP_{i,j}}, \qquad \frac{dl}{d\phi} = \frac{-y}{1+\exp(y\,\phi)}",
                "chain rule; d/dφ log(1+e^{−yφ}) = −y e^{−yφ}/(1+e^{−yφ}) = −y/(e^{yφ}+1) (multiply by e^{yφ})",
                f"{SOURCE}, eq. (4)",
                Check(_logistic(-1), "symbolic", size=None),
                wrong=(
                    WrongVariant(
                        "sign error",
                        r"\frac{dl}{d\phi} = \frac{+y}{1+\exp(y\,\phi)}",
                        Check(_logistic(+1), "symbolic", size=None),
                        "the loss decreases when yφ grows, so the derivative has the sign of −y",
                    ),
                ),
            ),
            Step(
                "eq. (5): only φ_ij involves P_ij",
                r"\phi_{i,j}(X) = \tfrac12\Big(2P_{i,j}X_j\sum_{j'}P_{i,j'}X_{j'} - P_{i,j}^2X_j^2 - X_j^2P_{i,j}^2\Big),\quad \frac{\partial\phi}{\partial P_{i,j}} = \frac{\partial\phi_{i,j}}{\partial P_{i,j}}",
                "in eq. (3) collect the terms containing P_ij: the cross terms of row i (the sum over j' "
                "includes j'=j, hence the −P_ij²X_j² correction) and the j-th diagonal term",
                f"{SOURCE}, eq. (5)",
                Check(_phi_ij(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "forgot the j' = j term of the sum",
                        r"\phi_{i,j}(X) = \tfrac12\Big(2P_{i,j}X_j\sum_{j'}P_{i,j'}X_{j'} - X_j^2P_{i,j}^2\Big)",
                        Check(_phi_ij(cross_correction=False), "exact", size=4),
                        "the cross terms of row i with P_ij are 2 P_ij X_j Σ_{j'≠j} P_ij' X_j'; written with the "
                        "full sum over j' they need the correction −P_ij² X_j²",
                    ),
                ),
            ),
            Step(
                "eq. (5) simplified: φ_ij is linear in P_ij",
                r"\phi_{i,j}(X) = P_{i,j}X_j\sum_{j'\neq j}P_{i,j'}X_{j'}",
                "split the j'=j term off the sum: P_ij X_j · P_ij X_j = P_ij² X_j² cancels both squared terms; "
                "what is left contains P_ij exactly once",
                f"{SOURCE}, eq. (5)",
                Check(_phi_ij_linear(), "exact", size=4),
                wrong=(
                    WrongVariant(
                        "kept j' = j in the sum",
                        r"\phi_{i,j}(X) = P_{i,j}X_j\sum_{j'}P_{i,j'}X_{j'}",
                        Check(_phi_ij_linear(skip_j=False), "exact", size=4),
                        "the two squared terms cancel exactly the j' = j term P_ij² X_j² of the sum; "
                        "keeping it counts a self-interaction",
                    ),
                ),
            ),
            Step(
                "eq. (7): differentiate φ_ij",
                r"\frac{d\phi(X)}{dP_{i,j}} = X_j\sum_{j'}P_{i,j'}X_{j'} - P_{i,j}X_j^2",
                "product rule: Σ_j' P_ij' X_j' contains P_ij (the j'=j term), so "
                "d/dP_ij [P_ij X_j Σ_j' P_ij' X_j'] = X_j Σ_j' P_ij' X_j' + P_ij X_j²; the two squared terms give "
                "−2 P_ij X_j²; together −P_ij X_j². Checked against sympy's derivative of eq. (1)",
                f"{SOURCE}, eq. (7)",
                Check(_eq7(1), "exact", size=4),
                printed=Printed(
                    r"\frac{d\phi(X)}{dP_{i,j}} = X_j\sum_{j'}P_{i,j'}X_{j'} - 2P_{i,j}X_j^2",
                    Check(_eq7(2), "exact", size=4),
                    "the note differentiates P_ij X_j Σ_j' P_ij' X_j' as if the sum did not contain P_ij",
                ),
                wrong=(
                    WrongVariant(
                        "forgot the squared terms",
                        r"\frac{d\phi(X)}{dP_{i,j}} = X_j\sum_{j'}P_{i,j'}X_{j'} + P_{i,j}X_j^2",
                        Check(_eq7(-1), "exact", size=4),
                        "the product rule's + P_ij X_j² is right, but φ_ij also holds the squared terms "
                        "½(−P_ij²X_j² − X_j²P_ij²) = −P_ij²X_j², whose derivative −2 P_ij X_j² is missing",
                    ),
                ),
            ),
            Step(
                "eq. (8): memoise Z = PX",
                r"\frac{d\phi(X)}{dP_{i,j}} = X_j Z_i - P_{i,j}X_j^2, \qquad \nabla_P\,\phi = Z X^\top - P\,\mathrm{diag}(X\circ X)",
                "Σ_j' P_ij' X_j' = (PX)_i = Z_i; Z costs O(dk) once, then each entry costs O(1): O(dk) in total",
                f"{SOURCE}, eq. (8)",
                Check(_matrix_form(1), "exact", size=4),
                printed=Printed(
                    r"\frac{d\phi(X)}{dP_{i,j}} = X_j Z_i - 2P_{i,j}X_j^2",
                    Check(_gradient(2), "exact", size=4),
                    "inherits the factor 2 of eq. (7)",
                ),
                wrong=(
                    WrongVariant(
                        "missing diagonal term",
                        r"\nabla_P\,\phi = Z X^\top",
                        Check(_matrix_form(1, with_diagonal=False), "exact", size=4),
                        "Z Xᵀ is the gradient of ½‖PX‖² alone; eq. (1) also subtracts the diagonal "
                        "terms Σ_i ‖P_{i,:}∘X‖²",
                    ),
                ),
            ),
            Step(
                "eqs. (4) + (8): gradient of the loss",
                r"\frac{dl(X,y)}{dP_{i,j}} = \frac{-y}{1+\exp(y\,\phi(X))}\,\big(X_j Z_i - P_{i,j}X_j^2\big)",
                "chain rule (eq. 4) with the corrected eq. (8); checked against sympy's derivative of "
                "log(1 + exp(−y φ(X))) with φ from eq. (1)",
                f"{SOURCE}, eqs. (4), (8)",
                Check(_loss_gradient(1), "numeric", size=3),
                printed=Printed(
                    r"\frac{dl(X,y)}{dP_{i,j}} = \frac{-y}{1+\exp(y\,\phi(X))}\,\big(X_j Z_i - 2P_{i,j}X_j^2\big)",
                    Check(_loss_gradient(2), "numeric", size=3),
                    "the printed eq. (8) inside the chain rule",
                ),
                wrong=(
                    WrongVariant(
                        "sign in the exponential",
                        r"\frac{dl(X,y)}{dP_{i,j}} = \frac{-y}{1+\exp(-y\,\phi(X))}\,\big(X_j Z_i - P_{i,j}X_j^2\big)",
                        Check(_loss_gradient(1, exponent_sign=-1), "numeric", size=3),
                        "dl/dφ = −y e^{−yφ}/(1 + e^{−yφ}); multiplying by e^{yφ} above and below gives "
                        "−y/(e^{yφ} + 1): the sign in the exponent turns",
                    ),
                ),
            ),
        ),
    )
