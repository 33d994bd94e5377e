"""RFM theory appendix — [RFM], §1.2 (gradient analysis).

One layer of self-attentive rotation: G = σ(Re[exp(iQ) diag(w) exp(−iK)ᵀ]) V with
Q = (B̃X)ᵀ, K = (C̃X)ᵀ, V = (D̃X)ᵀ, X ∈ R^{dm×m}, B̃, C̃, D̃ ∈ R^{d×dm}; the paper calls
the argument of σ "①". Checked here: the Euler expansion of ① into cos/sin form, and
the gradient part1 (the share of dy that flows through the cos Q factor), which gives
PART II = B̃ᵀF of ∂y/∂X, against sympy's own derivative.
Layout: ∂y/∂G has the shape of G and dy = tr((∂y/∂G)ᵀ dG), as the appendix writes;
Γ below stands for ∂y/∂G. X is treated as a full matrix.
Checks use m = n fields and d = n + 1 (n = 2: m = 2, d = 3), so that a transposed factor
cannot pass unnoticed; the appendix's printed (∂y/∂G)ᵀVᵀ is defined only when m = d, so the
printed lines are checked at m = d = n, where they fail by value.
"""

from __future__ import annotations

import sympy as sp

from .core import Check, Derivation, Printed, Step, WrongVariant, sym_matrix, sym_vector

SOURCE = "[RFM]"


def sigmoid(z):
    return 1 / (1 + sp.exp(-z))


def real_part(M):
    """Re M = (M + conj M)/2 for a matrix of expressions in real symbols."""
    return (M + M.applyfunc(sp.conjugate)) / 2


def _cos(M):
    return M.applyfunc(sp.cos)


def _sin(M):
    return M.applyfunc(sp.sin)


class _Layer:
    """Explicit symbols for one rotation layer with m = n fields and d = n + 1 (d = n if ``square``)."""

    def __init__(self, n: int, square: bool = False):
        m, d = n, n if square else n + 1
        real = dict(real=True)
        self.X = sym_matrix("X", d * m, m, **real)
        self.Xdot = sym_matrix(r"\dot X", d * m, m, **real)
        self.B, self.C, self.D = (sym_matrix(name, d, d * m, **real) for name in ("B", "C", "D"))
        self.w = sym_vector("w", d, **real)
        self.W = sp.diag(*self.w)
        self.Gamma = sym_matrix(r"\Gamma", m, d, **real)
        self.Q, self.K, self.V = (self.B * self.X).T, (self.C * self.X).T, (self.D * self.X).T

    def circled_one(self, Q=None):
        """① in cos/sin form; Q may be replaced to follow only the cos Q factor."""
        Q_cos = self.Q if Q is None else Q
        return _cos(Q_cos) * self.W * _cos(self.K.T) + _sin(self.Q) * self.W * _sin(self.K.T)

    def exp_form(self, i_in_q=True):
        unit = sp.I if i_in_q else 1
        return real_part(
            self.Q.applyfunc(lambda q: sp.exp(unit * q)) * self.W * self.K.applyfunc(lambda k: sp.exp(-sp.I * k)).T
        )

    def G(self, Q_cos=None):
        return self.circled_one(Q_cos).applyfunc(sigmoid) * self.V

    def sigma_prime(self):
        return self.circled_one().applyfunc(lambda z: sigmoid(z) * (1 - sigmoid(z)))

    def directional(self, M, X=None):
        """Σ_ab ∂M/∂X_ab · Ẋ_ab: the differential of M in the direction Ẋ."""
        X = self.X if X is None else X
        return M.applyfunc(
            lambda e: sum(sp.diff(e, X[a, b]) * self.Xdot[a, b] for a in range(X.rows) for b in range(X.cols))
        )

    def dQ(self):
        return self.Xdot.T * self.B.T

    def dKT(self):
        return self.C * self.Xdot

    def d_circled_one(self, dcos=-1):
        """The four terms of d① in the appendix; d cos x = dcos · sin x dx (dcos = −1; +1 is a sign slip)."""
        Q, KT, W = self.Q, self.K.T, self.W
        return (
            (dcos * _sin(Q)).multiply_elementwise(self.dQ()) * W * _cos(KT)
            + _cos(Q) * W * (dcos * _sin(KT)).multiply_elementwise(self.dKT())
            + _cos(Q).multiply_elementwise(self.dQ()) * W * _sin(KT)
            + _sin(Q) * W * _cos(KT).multiply_elementwise(self.dKT())
        )

    def part1(self):
        """tr(Γᵀ {σ'(①) ⊙ [−sin Q ⊙ dQ] diag(w) cos Kᵀ} V): the cos Q term of d① pushed to dy."""
        inner = (-_sin(self.Q)).multiply_elementwise(self.dQ()) * self.W * _cos(self.K.T)
        return (self.Gamma.T * self.sigma_prime().multiply_elementwise(inner) * self.V).trace()

    def upstream(self, printed):
        """(∂y/∂G)Vᵀ, m×m; the appendix prints (∂y/∂G)ᵀVᵀ."""
        return self.Gamma.T * self.V.T if printed else self.Gamma * self.V.T

    def F(self, printed, transposed_cos=True):
        """F of the appendix; ``transposed_cos=False`` leaves out the transpose of diag(w) cos(C̃X) (a slip
        defined only for m = d)."""
        S = self.upstream(printed).multiply_elementwise(self.sigma_prime())
        M = self.W * _cos(self.C * self.X)
        return ((S * (M.T if transposed_cos else M)).multiply_elementwise(_sin(self.X.T * self.B.T))).T


# ---- ① in cos/sin form ---------------------------------------------------------------


def _euler(i_in_q=True, real_parts_first=False):
    """① against Euler's form; ``real_parts_first`` is the slip Re[a b] = Re a · Re b, factor by factor."""

    def build(n):
        L = _Layer(n)
        Q, KT = L.Q, L.K.T
        if real_parts_first:
            euler = _cos(Q) * L.W * _cos(-KT)
        else:
            euler = real_part((_cos(Q) + sp.I * _sin(Q)) * L.W * (_cos(-KT) + sp.I * _sin(-KT)))
        return L.exp_form(i_in_q), euler

    return build


def _parity(sin_sign=-1):
    """sin(−x) = sin_sign · sin x: −1 (sin is odd); +1 is the slip of treating sin as even."""

    def build(n):
        L = _Layer(n)
        Q, KT = L.Q, L.K.T
        return (
            real_part((_cos(Q) + sp.I * _sin(Q)) * L.W * (_cos(-KT) + sp.I * _sin(-KT))),
            real_part((_cos(Q) + sp.I * _sin(Q)) * L.W * (_cos(KT) + sin_sign * sp.I * _sin(KT))),
        )

    return build


def _real_part(sign):
    def build(n):
        L = _Layer(n)
        Q, KT = L.Q, L.K.T
        return (
            real_part((_cos(Q) + sp.I * _sin(Q)) * L.W * (_cos(KT) - sp.I * _sin(KT))),
            _cos(Q) * L.W * _cos(KT) + sign * _sin(Q) * L.W * _sin(KT),
        )

    return build


def _in_x(k_transposed=True):
    """① against its form in X; the wrong variant writes Kᵀ as XᵀC̃ᵀ (that is K), defined only for m = d."""

    def build(n):
        L = _Layer(n, square=not k_transposed)
        XB, KT = L.X.T * L.B.T, L.C * L.X if k_transposed else L.X.T * L.C.T
        return L.exp_form(), _cos(XB) * L.W * _cos(KT) + _sin(XB) * L.W * _sin(KT)

    return build


def euler() -> Derivation:
    return Derivation(
        key="rfm-euler",
        title="RFM: the rotation score ① in cos/sin form (Euler's formula)",
        source=f"{SOURCE}, §1.2",
        assumptions=(
            r"Q = (\tilde B X)^\top,\; K = (\tilde C X)^\top \in \mathbb{R}^{m\times d},\; \boldsymbol w\in\mathbb{R}^d,\; \exp,\cos,\sin \text{ entrywise}",
            "all symbols real; checks at m = 2 fields, d = 3",
        ),
        steps=(
            Step(
                "Euler's formula",
                r"\text{\textcircled{1}} = \mathrm{Re}[\exp(i\mathbf Q)\,\mathrm{diag}(\mathbf w)\exp(-i\mathbf K)^\top] = \mathrm{Re}\{(\cos\mathbf Q + i\sin\mathbf Q)\,\mathrm{diag}(\mathbf w)[\cos(-\mathbf K^\top) + i\sin(-\mathbf K^\top)]\}",
                "Euler's formula e^{iφ} = cos φ + i sin φ, entry by entry",
                f"{SOURCE}, §1.2 (definition of G and the remark defining ①)",
                Check(_euler(), "exact", size=2, exact_limit=3, build_limit=4),
                printed=Printed(
                    r"\text{\textcircled{1}} = \mathrm{Re}[\exp(\mathbf Q)\,\mathrm{diag}(\mathbf w)\exp(-i\mathbf K)^\top]",
                    Check(_euler(i_in_q=False), "exact", size=2, exact_limit=3, build_limit=4),
                    "the remark that names ① drops the i in exp(iQ) (the definition of G just above it has exp(iQ))",
                ),
                wrong=(
                    WrongVariant(
                        "real part factor by factor",
                        r"\text{\textcircled{1}} = \mathrm{Re}[\exp(i\mathbf Q)]\,\mathrm{diag}(\mathbf w)\,\mathrm{Re}[\exp(-i\mathbf K)]^\top = \cos\mathbf Q\,\mathrm{diag}(\mathbf w)\cos(-\mathbf K^\top)",
                        Check(_euler(real_parts_first=True), "exact", size=2, exact_limit=3, build_limit=4),
                        "Re[ab] = Re a Re b − Im a Im b: the imaginary parts multiply to a real term (the sin·sin "
                        "term of the next lines)",
                    ),
                ),
            ),
            Step(
                "cos is even, sin is odd",
                r"\text{\textcircled{1}} = \mathrm{Re}\{(\cos\mathbf Q + i\sin\mathbf Q)\,\mathrm{diag}(\mathbf w)[\cos\mathbf K^\top - i\sin\mathbf K^\top]\}",
                "cos(−x) = cos x and sin(−x) = −sin x",
                f"{SOURCE}, §1.2",
                Check(_parity(), "exact", size=2, exact_limit=3, build_limit=4),
                wrong=(
                    WrongVariant(
                        "sin treated as even",
                        r"\text{\textcircled{1}} = \mathrm{Re}\{(\cos\mathbf Q + i\sin\mathbf Q)\,\mathrm{diag}(\mathbf w)[\cos\mathbf K^\top + i\sin\mathbf K^\top]\}",
                        Check(_parity(sin_sign=+1), "exact", size=2, exact_limit=3, build_limit=4),
                        "sin(−x) = −sin x: only cos keeps its sign",
                    ),
                ),
            ),
            Step(
                "take the real part",
                r"\text{\textcircled{1}} = \cos\mathbf Q\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top + \sin\mathbf Q\,\mathrm{diag}(\mathbf w)\sin\mathbf K^\top",
                "expand the product; with real Q, K, w the real part keeps cos·cos and i·(−i) sin·sin = +sin·sin",
                f"{SOURCE}, §1.2",
                Check(_real_part(+1), "exact", size=2, exact_limit=3, build_limit=4),
                wrong=(
                    WrongVariant(
                        "sign error",
                        r"\text{\textcircled{1}} = \cos\mathbf Q\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top - \sin\mathbf Q\,\mathrm{diag}(\mathbf w)\sin\mathbf K^\top",
                        Check(_real_part(-1), "exact", size=2, exact_limit=3, build_limit=4),
                        "i · (−i) = +1: the conjugate in exp(−iK) turns the sign; the minus belongs "
                        "to Re[exp(iQ) diag(w) exp(+iK)ᵀ]",
                    ),
                ),
            ),
            Step(
                "in terms of X",
                r"\text{\textcircled{1}} = \cos(\mathbf X^\top\tilde{\mathbf B}^\top)\,\mathrm{diag}(\mathbf w)\cos(\tilde{\mathbf C}\mathbf X) + \sin(\mathbf X^\top\tilde{\mathbf B}^\top)\,\mathrm{diag}(\mathbf w)\sin(\tilde{\mathbf C}\mathbf X)",
                "substitute Q = (B̃X)ᵀ = XᵀB̃ᵀ and Kᵀ = C̃X",
                f"{SOURCE}, §1.2",
                Check(_in_x(), "exact", size=2, exact_limit=3, build_limit=4),
                wrong=(
                    WrongVariant(
                        "K instead of Kᵀ",
                        r"\text{\textcircled{1}} = \cos(\mathbf X^\top\tilde{\mathbf B}^\top)\,\mathrm{diag}(\mathbf w)\cos(\mathbf X^\top\tilde{\mathbf C}^\top) + \sin(\mathbf X^\top\tilde{\mathbf B}^\top)\,\mathrm{diag}(\mathbf w)\sin(\mathbf X^\top\tilde{\mathbf C}^\top)",
                        Check(_in_x(k_transposed=False), "exact", size=2, exact_limit=3, build_limit=4),
                        "K = (C̃X)ᵀ = XᵀC̃ᵀ, so Kᵀ = C̃X; XᵀC̃ᵀ is m×d and fits diag(w) only when m = d "
                        "(checked there, where the values differ)",
                    ),
                ),
            ),
        ),
    )


# ---- the gradient part1 ---------------------------------------------------------------


def _d_circled_one(dcos=-1):
    def build(n):
        L = _Layer(n)
        return L.directional(L.circled_one()), L.d_circled_one(dcos)

    return build


def _dG(with_dV=True):
    """sympy's directional derivative of G against the product and chain rule (without dV if not ``with_dV``)."""

    def build(n):
        L = _Layer(n)
        sig = L.circled_one().applyfunc(sigmoid)
        dV = L.Xdot.T * L.D.T if with_dV else sp.zeros(*L.V.shape)
        return L.directional(L.G()), L.sigma_prime().multiply_elementwise(L.d_circled_one()) * L.V + sig * dV

    return build


def _dy(transposed=True):
    """A concrete y(G) = Σ_ab a_ab G_ab², so Γ = ∂y/∂G = 2 a ⊙ G: sympy's dy along Ẋ against tr(Γᵀ dG)
    (or, wrongly, tr(Γ dG), defined only for m = d)."""

    def build(n):
        L = _Layer(n, square=not transposed)
        a = sym_matrix("a", *L.Gamma.shape, real=True)
        t = sp.Symbol("t", real=True)
        along = dict(zip(L.X, L.X + t * L.Xdot))  # d/dt at t = 0 of X + tẊ: the derivative along Ẋ
        G = L.G()
        y = sum(a.multiply_elementwise(G.applyfunc(lambda g: g**2)))
        dy = sp.diff(y.xreplace(along), t).subs(t, 0)
        dG = G.applyfunc(lambda g: sp.diff(g.xreplace(along), t).subs(t, 0))
        Gamma = 2 * a.multiply_elementwise(G)
        return dy, ((Gamma.T if transposed else Gamma) * dG).trace()

    return build


def _part1_trace(form):
    """part1 against tr(Sᵀ[−sin Q ⊙ dQ] diag(w) cos Kᵀ): "corrected" S = (ΓVᵀ) ⊙ σ'(①), "printed"
    S = (ΓᵀVᵀ) ⊙ σ'(①) (defined only for m = d), "without σ'" S = ΓVᵀ."""

    def build(n):
        printed = form == "printed"
        L = _Layer(n, square=printed)
        S = L.upstream(printed)
        if form != "without σ'":
            S = S.multiply_elementwise(L.sigma_prime())
        inner = (-_sin(L.Q)).multiply_elementwise(L.dQ()) * L.W * _cos(L.K.T)
        return L.part1(), (S.T * inner).trace()

    return build


def _part1_dx(form):
    """part1 against tr(−(B̃ᵀF)ᵀ dX): "corrected", "printed" (ΓᵀVᵀ inside F) or "cos not transposed";
    the last two are defined only for m = d."""

    def build(n):
        L = _Layer(n, square=form != "corrected")
        F = L.F(form == "printed", transposed_cos=form != "cos not transposed")
        return L.part1(), (-(L.B.T * F).T * L.Xdot).trace()

    return build


def _part_ii(sign):
    def build(n):
        L = _Layer(n)
        Xa = sym_matrix("X^a", L.X.rows, L.X.cols, real=True)
        y_cos = sum(L.Gamma.multiply_elementwise(L.G(Q_cos=(L.B * Xa).T)))
        back = dict(zip(Xa, L.X))
        gradient = Xa.applyfunc(lambda x: sp.diff(y_cos, x).xreplace(back))
        return gradient, sign * L.B.T * L.F(False)

    return build


def gradient_part1() -> Derivation:
    return Derivation(
        key="rfm-gradient-part1",
        title="RFM: gradient part1 through cos Q, against sympy's derivative",
        source=f"{SOURCE}, §1.2 (dG, dy, part1, F, PART II)",
        assumptions=(
            r"G = \sigma(\text{\textcircled{1}})\,\mathbf V,\; \mathbf V = (\tilde{\mathbf D}\mathbf X)^\top,\; \sigma(z) = 1/(1+e^{-z}) \text{ entrywise},\; \sigma' = \sigma(1-\sigma)",
            r"\Gamma = \partial y/\partial G \text{ (shape of } G),\; dy = \mathrm{tr}(\Gamma^\top dG);\; d\mathbf X = \dot{\mathbf X} \text{ a direction}",
            "all symbols real; X a full dm×m matrix; checks at m = 2, d = 3 (printed lines at m = d = 2)",
        ),
        steps=(
            Step(
                "d① in four terms",
                r"d\text{\textcircled{1}} = [-\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top + \cos\mathbf Q\,\mathrm{diag}(\mathbf w)[-\sin\mathbf K^\top\odot d\mathbf K^\top] + [\cos\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\sin\mathbf K^\top + \sin\mathbf Q\,\mathrm{diag}(\mathbf w)[\cos\mathbf K^\top\odot d\mathbf K^\top]",
                "product rule on both products, d cos x = −sin x dx and d sin x = cos x dx entrywise; "
                "dQ = (dX)ᵀB̃ᵀ, dKᵀ = C̃ dX. Checked against sympy's directional derivative of ①",
                f"{SOURCE}, §1.2 (d①)",
                Check(_d_circled_one(), "exact", size=2, exact_limit=2, build_limit=3),
                wrong=(
                    WrongVariant(
                        "d cos x = + sin x dx",
                        r"d\text{\textcircled{1}} = [\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top + \cos\mathbf Q\,\mathrm{diag}(\mathbf w)[\sin\mathbf K^\top\odot d\mathbf K^\top] + [\cos\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\sin\mathbf K^\top + \sin\mathbf Q\,\mathrm{diag}(\mathbf w)[\cos\mathbf K^\top\odot d\mathbf K^\top]",
                        Check(_d_circled_one(dcos=+1), "exact", size=2, exact_limit=2, build_limit=3),
                        "cos decreases where sin is positive: d cos x = −sin x dx",
                    ),
                ),
            ),
            Step(
                "dG: product and chain rule",
                r"dG = [\sigma'(\text{\textcircled{1}})\odot d\text{\textcircled{1}}]\,\mathbf V + \sigma(\text{\textcircled{1}})\,(d\mathbf X)^\top\tilde{\mathbf D}^\top",
                "product rule on σ(①)V, chain rule entrywise for σ, dV = (dX)ᵀD̃ᵀ; checked against sympy's "
                "directional derivative of G",
                f"{SOURCE}, §1.2 (dG, dV, dσ)",
                Check(_dG(), "numeric", size=2, build_limit=3),
                wrong=(
                    WrongVariant(
                        "forgot dV",
                        r"dG = [\sigma'(\text{\textcircled{1}})\odot d\text{\textcircled{1}}]\,\mathbf V",
                        Check(_dG(with_dV=False), "numeric", size=2, build_limit=3),
                        "V = (D̃X)ᵀ depends on X too: the product rule gives a second term σ(①) dV",
                    ),
                ),
            ),
            Step(
                "dy as a trace",
                r"dy = \mathrm{tr}\big(\Gamma^\top dG\big)",
                "chain rule with Γ = ∂y/∂G (same shape as G): dy = Σ_ab Γ_ab dG_ab, and Σ_ab Γ_ab M_ab = "
                "tr(ΓᵀM) (Frobenius inner product). Checked for y = Σ_ab a_ab G_ab² (Γ = 2a ⊙ G) against "
                "sympy's derivative of y(G(X)) along Ẋ",
                f"{SOURCE}, §1.2 (dy)",
                Check(_dy(), "numeric", size=2, build_limit=3),
                wrong=(
                    WrongVariant(
                        "missing transpose",
                        r"dy = \mathrm{tr}\big(\Gamma\,dG\big)",
                        Check(_dy(transposed=False), "numeric", size=2, build_limit=3),
                        "tr(Γ dG) = Σ_ab Γ_ab dG_ba pairs each entry with its mirror; it is defined only for "
                        "m = d (checked there, where the values differ)",
                    ),
                ),
            ),
            Step(
                "part1: move V and σ' out of the way",
                r"\text{part1} = \mathrm{tr}\Big(\Gamma^\top\{\sigma'(\text{\textcircled{1}})\odot[-\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top\}\mathbf V\Big) = \mathrm{tr}\Big(\big([\Gamma\,\mathbf V^\top]\odot\sigma'(\text{\textcircled{1}})\big)^\top[-\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top\Big)",
                "cyclic property of the trace, tr(Γᵀ M V) = tr(VΓᵀM) = ⟨ΓVᵀ, M⟩, and "
                "⟨A, S ⊙ B⟩ = ⟨A ⊙ S, B⟩ = tr((A ⊙ S)ᵀB)",
                f"{SOURCE}, §1.2 (part1)",
                Check(_part1_trace("corrected"), "numeric", size=2, build_limit=3),
                printed=Printed(
                    r"\text{part1} = \mathrm{tr}\Big(\big([(\partial y/\partial G)^\top\mathbf V^\top]\odot\sigma'(\text{\textcircled{1}})\big)^\top[-\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top\Big)",
                    Check(_part1_trace("printed"), "numeric", size=2, build_limit=3),
                    "with dy = tr((∂y/∂G)ᵀdG) the cyclic shift gives (∂y/∂G)Vᵀ (m×m); the printed "
                    "(∂y/∂G)ᵀVᵀ multiplies d×m by d×m, defined only when m = d, and wrong even then",
                ),
                wrong=(
                    WrongVariant(
                        "dropped σ'(①)",
                        r"\text{part1} = \mathrm{tr}\Big([\Gamma\,\mathbf V^\top]^\top[-\sin\mathbf Q\odot d\mathbf Q]\,\mathrm{diag}(\mathbf w)\cos\mathbf K^\top\Big)",
                        Check(_part1_trace("without σ'"), "numeric", size=2, build_limit=3),
                        "σ'(①) ⊙ multiplies entry by entry; moving it to the other side of the inner "
                        "product keeps it, it cannot vanish",
                    ),
                ),
            ),
            Step(
                "part1 = tr(−(B̃ᵀF)ᵀ dX)",
                r"\text{part1} = \mathrm{tr}\big(-(\tilde{\mathbf B}^\top F)^\top d\mathbf X\big),\quad F = \Big\{\big[(\Gamma\mathbf V^\top)\odot\sigma'(\text{\textcircled{1}})\big]\,[\mathrm{diag}(\mathbf w)\cos(\tilde{\mathbf C}\mathbf X)]^\top\odot\sin(\mathbf X^\top\tilde{\mathbf B}^\top)\Big\}^\top",
                "tr(Sᵀ(A ⊙ dQ)M) = ⟨(S Mᵀ) ⊙ A, dQ⟩ with dQ = (dX)ᵀB̃ᵀ, then the cyclic property of the trace",
                f"{SOURCE}, §1.2 (F, part1)",
                Check(_part1_dx("corrected"), "numeric", size=2, build_limit=3),
                printed=Printed(
                    r"F = \Big\{\big[(\partial y/\partial G)^\top\mathbf V^\top\big]\odot\sigma'(\text{\textcircled{1}})\cdot[\mathrm{diag}(\mathbf w)\cos(\tilde{\mathbf C}\mathbf X)]^\top\odot\sin(\mathbf X^\top\tilde{\mathbf B}^\top)\Big\}^\top",
                    Check(_part1_dx("printed"), "numeric", size=2, build_limit=3),
                    "the same transposed (∂y/∂G)ᵀ as in the previous line",
                ),
                wrong=(
                    WrongVariant(
                        "diag(w) cos(C̃X) not transposed",
                        r"F = \Big\{\big[(\Gamma\mathbf V^\top)\odot\sigma'(\text{\textcircled{1}})\big]\,\mathrm{diag}(\mathbf w)\cos(\tilde{\mathbf C}\mathbf X)\odot\sin(\mathbf X^\top\tilde{\mathbf B}^\top)\Big\}^\top",
                        Check(_part1_dx("cos not transposed"), "numeric", size=2, build_limit=3),
                        "tr(Sᵀ(A ⊙ dQ)M) = ⟨(S Mᵀ) ⊙ A, dQ⟩ moves M to the other side transposed; without the "
                        "transpose the product is defined only for m = d (checked there, where the values differ)",
                    ),
                ),
            ),
            Step(
                "PART II against sympy's derivative",
                r"\frac{\partial y}{\partial\mathbf X}\Big|_{\text{through }\cos\mathbf Q} = -\tilde{\mathbf B}^\top F\quad(\text{“− PART II”})",
                "part1 = ⟨−B̃ᵀF, dX⟩ for every direction dX, so −B̃ᵀF is the gradient of y through the cos Q "
                "factor; sympy differentiates y with only that factor's X set free",
                f"{SOURCE}, §1.2 (∂y/∂X = PART I − PART II − …)",
                Check(_part_ii(-1), "numeric", size=2, build_limit=3),
                wrong=(
                    WrongVariant(
                        "sign error",
                        r"\frac{\partial y}{\partial\mathbf X}\Big|_{\text{through }\cos\mathbf Q} = +\tilde{\mathbf B}^\top F",
                        Check(_part_ii(+1), "numeric", size=2, build_limit=3),
                        "d cos x = −sin x dx: the minus sign of part1 stays",
                    ),
                ),
            ),
        ),
    )
