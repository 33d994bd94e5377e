"""Gradient growth with the number of fields m: rotations vs products vs the FM (RFM appendix §1.2).

(b) One self-attentive rotation layer, in the appendix's matrix notation:

    X = blockdiag(X_1, …, X_m) ∈ ℝ^{dm×m}      (column j holds field j's embedding X_j ∈ ℝ^d)
    B̃ = [W_1^Q … W_m^Q], C̃ = [W_1^K … W_m^K], D̃ = [W_1^V … W_m^V] ∈ ℝ^{d×dm}
    Q = (B̃X)ᵀ, K = (C̃X)ᵀ, V = (D̃X)ᵀ ∈ ℝ^{m×d},  G = σ(①)·V,  y = f(cos G) + f(sin G)

with ① = cos Q diag(w) cos Kᵀ + sin Q diag(w) sin Kᵀ (``fmlib.models.rfm.rotation_logits``, the
same code the model runs). Here f(Z) = ⟨U, Z⟩ is linear, so ∂y/∂G = U ⊙ (cos G − sin G).
‖A‖∞ = max_i Σ_j |a_ij| (max row sum). The appendix assumes, strictly,

    |X| < η,  ‖B̃ᵀ‖∞ < α,  ‖C̃ᵀ‖∞ < β,  ‖diag(w)‖∞ < ζ,  ‖D̃ᵀ‖∞, ‖D̃‖∞ < γ,  ‖∂y/∂G‖∞, ‖(∂y/∂G)ᵀ‖∞ < θ

and proves ‖∂y/∂X‖∞ ≤ C_1·m with C_1 = γθ + αζηγθd/2 + βζγηθ/2 (§1.2, "Remark … = C_1").
∂y/∂X = PART I − PART II − PART III + PART IV + PART V, bounded part by part:
PART I ≤ γθm, PART II, IV ≤ αζηγθdm/4, PART III, V ≤ βζγηθm/4.

(a) A product interaction g = X_1^{α_1} ⊙ … ⊙ X_m^{α_m}, y = Σ_j g_j (so ∂y/∂g = 1): one single
m-way product term, all m fields multiplied together — not an FM. If |X_ij| ≥ M − ε for every
field i, then |∂y/∂X_ij| ≥ α_i (M − ε)^{Σα−1} (§1.2, last part) — exponential in m when
M − ε > 1. Here every field has the same exponent a (α_i = a).

(c) For comparison, the FM ([Rendle2010] eq. 1) on m one-hot fields, field i's embedding X_i ∈ ℝ^d
(x_i = 1): a sum of m(m−1)/2 second-order terms, y = Σ_{i<j} ⟨X_i, X_j⟩. Its gradient is
∂y/∂X_i = Σ_{j≠i} X_j = Z − X_i with Z = Σ_j X_j ([FMGrad] eq. 8 with coefficient 1 and x = 1):
a sum of m − 1 embeddings, never a product of them. With |X_ij| ≤ M + ε,
‖∂y/∂X‖∞ ≤ d(m − 1)(M + ε) whatever the signs; with every entry of one sign (the other fields'
embeddings add up without cancelling) and |X_ij| ≥ M − ε also ‖∂y/∂X‖∞ ≥ d(m − 1)(M − ε). So the
FM's gradient grows linearly in m, like the rotation layer's bound and unlike the product's.

Slips in the printed appendix (the code uses the corrected lines; tests check them):
* "Remark Re[exp(Q) diag(w) exp(−iK)ᵀ] as ①" — reads exp(iQ).
* The bracket "(∂y/∂G)ᵀVᵀ" in parts 1–4 and the final ∂y/∂X multiplies d×m by d×m; the
  correct factor is P = ((∂y/∂G)Vᵀ) ⊙ σ'(①) (m×m) in PARTs III, V and its transpose in II, IV.
* "‖B̃‖∞ < γ₂" should read ‖D̃‖∞ < γ₂ (it bounds ‖Vᵀ‖∞ = ‖D̃X‖∞ ≤ γη); "‖Xᵀ‖∞ < η" should read
  ‖Xᵀ‖∞ ≤ dη (a column of X holds d entries) — which is where PART II's d comes from.
* "PART III ≤ βζγηθdm/4" has a spurious d: PART III uses ‖P‖∞ ≤ ¼θ‖Vᵀ‖∞ < ¼θγη, so
  PART III ≤ βζγηθm/4, like PART V. Only then does the printed sum "= γθm + αζηγθdm/2 +
  βζγηθm/2" hold; the printed C_1 is right.
* The last two product inequalities: |∂y/∂X_ij| ≥ α_i (M−ε)^{Σα−1} |∂y/∂g_j| (not ‖∂y/∂g‖∞,
  which is the largest entry, the wrong direction for a lower bound), the line after "let
  t = min α_i" bounds ∂y/∂X_ij (printed ∂g/∂X_ij), and replacing Σα by mt needs M − ε ≥ 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from ..models.rfm import rotation_logits

M_RANGE = (2, 64)  # number of fields m: an interaction needs two fields; the page slider stops at 64
D_RANGE = (1, 64)  # embedding size d
FILL = 0.99  # sampled quantities reach 99% of their bound: the assumptions are strict inequalities


def inf_norm(A: torch.Tensor) -> float:
    """‖A‖∞ = max_i Σ_j |a_ij| (RFM appendix §1.2)."""
    return float(A.abs().sum(-1).max())


def check_fields(m: int, d: int) -> None:
    """Raise ValueError unless m and d are integers in range."""
    if isinstance(m, bool) or not isinstance(m, int) or not M_RANGE[0] <= m <= M_RANGE[1]:
        raise ValueError(f"number of fields m must be an integer in {M_RANGE[0]}..{M_RANGE[1]}, got {m!r}")
    if isinstance(d, bool) or not isinstance(d, int) or not D_RANGE[0] <= d <= D_RANGE[1]:
        raise ValueError(f"embedding size d must be an integer in {D_RANGE[0]}..{D_RANGE[1]}, got {d!r}")


@dataclass(frozen=True)
class RotationBounds:
    """The appendix's bounds for one rotation layer; each must be a positive finite number."""

    eta: float = 1.0  # |X| < η
    alpha: float = 1.0  # ‖B̃ᵀ‖∞ < α   (queries)
    beta: float = 1.0  # ‖C̃ᵀ‖∞ < β    (keys)
    gamma: float = 1.0  # ‖D̃ᵀ‖∞, ‖D̃‖∞ < γ  (values)
    zeta: float = 1.0  # ‖diag(w)‖∞ < ζ
    theta: float = 1.0  # ‖∂y/∂G‖∞, ‖(∂y/∂G)ᵀ‖∞ < θ

    ASSUMPTIONS = {
        "eta": "|X| < η",
        "alpha": "‖B̃ᵀ‖∞ < α",
        "beta": "‖C̃ᵀ‖∞ < β",
        "gamma": "‖D̃ᵀ‖∞, ‖D̃‖∞ < γ",
        "zeta": "‖diag(w)‖∞ < ζ",
        "theta": "‖∂y/∂G‖∞, ‖(∂y/∂G)ᵀ‖∞ < θ",
    }

    def __post_init__(self):
        for name, text in self.ASSUMPTIONS.items():
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(
                    f"bound {name} = {value!r} violates the assumption {text}: {name} must be a positive finite number"
                )

    def C1(self, d: int) -> float:
        """C_1 = γθ + αζηγθd/2 + βζγηθ/2, so that ‖∂y/∂X‖∞ ≤ C_1·m (§1.2)."""
        a, b, g, z, t, e = self.alpha, self.beta, self.gamma, self.zeta, self.theta, self.eta
        return g * t + a * z * e * g * t * d / 2 + b * z * g * e * t / 2

    def part_bounds(self, m: int, d: int) -> dict[str, float]:
        """Bounds on ‖PART I‖∞ … ‖PART V‖∞ (§1.2; PART III without the printed d, see slips)."""
        a, b, g, z, t, e = self.alpha, self.beta, self.gamma, self.zeta, self.theta, self.eta
        q, k = a * z * e * g * t * d * m / 4, b * z * g * e * t * m / 4
        return {"I": g * t * m, "II": q, "III": k, "IV": q, "V": k}


@dataclass(frozen=True)
class ProductBounds:
    """Product interaction inputs: |X_ij| in [M − ε, M + ε], exponent a = α_i for every field."""

    M: float = 1.5
    eps: float = 0.25
    exponent: int = 1

    def __post_init__(self):
        if not (math.isfinite(self.M) and self.M > 0):
            raise ValueError(f"M = {self.M!r} violates the assumption M > 0 (M is strictly bigger than zero)")
        if not (math.isfinite(self.eps) and 0 <= self.eps < self.M):
            raise ValueError(
                f"ε = {self.eps!r} violates the assumption |X_ij| ≥ M − ε > 0: ε must be in [0, M) = [0, {self.M})"
            )
        if isinstance(self.exponent, bool) or not isinstance(self.exponent, int) or not 1 <= self.exponent <= 3:
            raise ValueError(
                f"exponent α_i = {self.exponent!r} must be an integer in 1..3 (α_i ≥ 1 keeps X_i^(α_i−1) bounded below)"
            )

    @property
    def grows(self) -> bool:
        """Whether the lower bound grows with m at all: it needs M − ε > 1."""
        return self.M - self.eps > 1

    def lower_bound(self, m: int) -> float:
        """α_i (M − ε)^{Σα − 1} with Σα = a·m (§1.2, last part)."""
        return self.exponent * (self.M - self.eps) ** (self.exponent * m - 1)

    def check_float_range(self, m: int) -> None:
        """Raise ValueError if (M + ε)^{a·m} would overflow float64."""
        if self.exponent * m * math.log10(self.M + self.eps) > 300:
            raise ValueError(
                f"(M + ε)^(a·m) = {self.M + self.eps}^{self.exponent * m} overflows float64: "
                "lower M, ε, the exponent or m"
            )


def _scaled(A: torch.Tensor, norm: float, bound: float) -> torch.Tensor:
    """A rescaled so that the given norm of A becomes FILL·bound."""
    return A * (FILL * bound / norm)


def block_diagonal(fields: torch.Tensor) -> torch.Tensor:
    """(m, d) field embeddings -> X ∈ ℝ^{dm×m}, X_j in rows (j−1)d..jd of column j (§1.2)."""
    return torch.block_diag(*fields.unsqueeze(-1))


def sample_rotation_layer(m: int, d: int, bounds: RotationBounds, seed: int = 0) -> dict:
    """Random X (block diagonal), B̃, C̃, D̃, w and U meeting ``bounds`` at 99%, float64."""
    check_fields(m, d)
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    fields = (2 * torch.rand(m, d, generator=gen, dtype=torch.float64) - 1) * FILL * bounds.eta
    B, C, D = randn(d, d * m), randn(d, d * m), randn(d, d * m)
    w = 2 * torch.rand(d, generator=gen, dtype=torch.float64) - 1
    U = randn(m, d)
    # |cos − sin| ≤ √2, so ‖U‖∞, ‖Uᵀ‖∞ < θ/√2 keeps both norms of ∂y/∂G = U ⊙ (cos G − sin G) below θ
    return {
        "X": block_diagonal(fields),
        "B": _scaled(B, inf_norm(B.T), bounds.alpha),
        "C": _scaled(C, inf_norm(C.T), bounds.beta),
        "D": _scaled(D, max(inf_norm(D.T), inf_norm(D)), bounds.gamma),
        "w": _scaled(w, float(w.abs().max()), bounds.zeta),
        "U": _scaled(U, math.sqrt(2) * max(inf_norm(U), inf_norm(U.T)), bounds.theta),
    }


def rotation_layer_output(X, B, C, D, w, U) -> tuple[torch.Tensor, torch.Tensor]:
    """G = σ(①)·V and y = f(cos G) + f(sin G) with f(Z) = ⟨U, Z⟩ (§1.2, first display)."""
    Q, K, V = (B @ X).T, (C @ X).T, (D @ X).T
    G = torch.sigmoid(rotation_logits(Q, K, w)) @ V
    y = (U * torch.cos(G)).sum() + (U * torch.sin(G)).sum()
    return G, y


def rotation_gradient_parts(X, B, C, D, w, dydG) -> dict[str, torch.Tensor]:
    """PART I … PART V of ∂y/∂X (§1.2, final display, with the corrected factor P).

    ∂y/∂X = PART I − PART II − PART III + PART IV + PART V, each dm×m:
      PART I   = D̃ᵀ (∂y/∂G)ᵀ σ(①)
      PART II  = B̃ᵀ [(diag(w) cos Kᵀ Pᵀ) ⊙ sin Qᵀ],   PART IV = B̃ᵀ [(diag(w) sin Kᵀ Pᵀ) ⊙ cos Qᵀ]
      PART III = C̃ᵀ [(diag(w) cos Qᵀ P) ⊙ sin Kᵀ],    PART V  = C̃ᵀ [(diag(w) sin Qᵀ P) ⊙ cos Kᵀ]
    with P = ((∂y/∂G) Vᵀ) ⊙ σ'(①), σ' = σ(1 − σ).
    """
    Q, K, V = (B @ X).T, (C @ X).T, (D @ X).T
    S = torch.sigmoid(rotation_logits(Q, K, w))
    P = (dydG @ V.T) * S * (1 - S)
    W = w[:, None]  # diag(w) applied from the left
    return {
        "I": D.T @ dydG.T @ S,
        "II": B.T @ ((W * torch.cos(K).T @ P.T) * torch.sin(Q).T),
        "III": C.T @ ((W * torch.cos(Q).T @ P) * torch.sin(K).T),
        "IV": B.T @ ((W * torch.sin(K).T @ P.T) * torch.cos(Q).T),
        "V": C.T @ ((W * torch.sin(Q).T @ P) * torch.cos(K).T),
    }


def rotation_gradient_closed_form(X, B, C, D, w, dydG) -> torch.Tensor:
    """∂y/∂X = PART I − PART II − PART III + PART IV + PART V (§1.2)."""
    p = rotation_gradient_parts(X, B, C, D, w, dydG)
    return p["I"] - p["II"] - p["III"] + p["IV"] + p["V"]


def rotation_layer_gradient(m: int, d: int, bounds: RotationBounds = RotationBounds(), seed: int = 0) -> dict:
    """‖∂y/∂X‖∞ of one rotation layer by autograd, with the realised value of every bounded norm.

    X is differentiated as the full dm×m matrix, as in the appendix's matrix calculus.
    """
    s = sample_rotation_layer(m, d, bounds, seed)
    X = s["X"].clone().requires_grad_(True)
    G, y = rotation_layer_output(X, s["B"], s["C"], s["D"], s["w"], s["U"])
    dydX, dydG = torch.autograd.grad(y, (X, G))
    return {
        "grad": inf_norm(dydX),
        "eta": float(s["X"].abs().max()),
        "alpha": inf_norm(s["B"].T),
        "beta": inf_norm(s["C"].T),
        "gamma": max(inf_norm(s["D"].T), inf_norm(s["D"])),
        "zeta": float(s["w"].abs().max()),
        "theta": max(inf_norm(dydG), inf_norm(dydG.T)),
    }


def _draw(m: int, d: int, bounds: ProductBounds, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(m, d) sizes |X_ij| uniform in [M − ε, M + ε] and random signs ±1, float64."""
    check_fields(m, d)
    gen = torch.Generator().manual_seed(seed)
    size = bounds.M - bounds.eps + 2 * bounds.eps * torch.rand(m, d, generator=gen, dtype=torch.float64)
    sign = torch.where(torch.rand(m, d, generator=gen) < 0.5, -1.0, 1.0).double()
    return size, sign


def product_gradient(m: int, d: int, bounds: ProductBounds = ProductBounds(), seed: int = 0) -> dict:
    """‖∂y/∂X‖∞ and min |∂y/∂X_ij| by autograd for the single m-way product g = Π_i X_i^a, y = Σ_j g_j;
    X is (m, d). Its gradient's size does not depend on the signs of X."""
    bounds.check_float_range(m)
    size, sign = _draw(m, d, bounds, seed)
    X = (sign * size).requires_grad_(True)
    y = X.pow(bounds.exponent).prod(0).sum()
    (dydX,) = torch.autograd.grad(y, X)
    return {"grad": inf_norm(dydX), "min_entry": float(dydX.abs().min())}


def fm_gradient(m: int, d: int, bounds: ProductBounds = ProductBounds(), seed: int = 0, signs: str = "same") -> dict:
    """‖∂y/∂X‖∞ and min |∂y/∂X_ij| by autograd for the FM y = Σ_{i<j} ⟨X_i, X_j⟩ ((c) above); X is (m, d).

    The draw of ``product_gradient`` with the same seed: |X_ij| ∈ [M − ε, M + ε]; ``signs`` "same"
    keeps every entry positive (the FM's worst case), "mixed" keeps the product's random signs.
    y is the naive sum over all pairs (the upper triangle of X Xᵀ), so autograd checks Z − X_i independently.
    """
    if signs not in ("same", "mixed"):
        raise ValueError(f"signs must be 'same' or 'mixed', got {signs!r}")
    size, sign = _draw(m, d, bounds, seed)
    X = (size if signs == "same" else sign * size).requires_grad_(True)
    y = torch.triu(X @ X.T, diagonal=1).sum()  # Σ_{i<j} ⟨X_i, X_j⟩, every pair
    (dydX,) = torch.autograd.grad(y, X)
    return {"grad": inf_norm(dydX), "min_entry": float(dydX.abs().min())}


def fm_gradient_closed_form(X: torch.Tensor) -> torch.Tensor:
    """∂y/∂X_i = Z − X_i, Z = Σ_j X_j, for y = Σ_{i<j} ⟨X_i, X_j⟩ ([FMGrad] eq. 8, coefficient 1, x = 1): O(md)."""
    return X.sum(0, keepdim=True) - X


def fm_bounds(m: int, d: int, bounds: ProductBounds = ProductBounds()) -> tuple[float, float]:
    """(d(m−1)(M−ε), d(m−1)(M+ε)): the FM's ‖∂y/∂X‖∞ with entries of one sign lies between them;
    the upper one bounds every draw, whatever its signs. Both are linear in m ((c) above)."""
    return d * (m - 1) * (bounds.M - bounds.eps), d * (m - 1) * (bounds.M + bounds.eps)


def gradient_growth(
    m_max: int = 64,
    d: int = 8,
    rotation: RotationBounds = RotationBounds(),
    product: ProductBounds = ProductBounds(),
    trials: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """‖∂y/∂X‖∞ for m = 2..m_max: measured by autograd and the appendix's lines (§1.2).

    Columns: m, product (smallest of ``trials`` draws), product_lower_bound = a(M−ε)^{am−1},
    rotation (largest of ``trials`` draws), rotation_upper_bound = C_1·m, and the FM of (c) on the
    product's draws with one sign: fm (smallest of the draws), fm_lower_bound = d(m−1)(M−ε),
    fm_upper_bound = d(m−1)(M+ε). Draw t at m uses seed ``seed·1000 + 100·t + m``.
    """
    check_fields(m_max, d)
    product.check_float_range(m_max)
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 20:
        raise ValueError(f"trials must be an integer in 1..20, got {trials!r}")
    C1 = rotation.C1(d)
    rows = []
    for m in range(M_RANGE[0], m_max + 1):
        seeds = [seed * 1000 + 100 * t + m for t in range(trials)]
        rows.append(
            {
                "m": m,
                "product": min(product_gradient(m, d, product, s)["grad"] for s in seeds),
                "product_lower_bound": product.lower_bound(m),
                "rotation": max(rotation_layer_gradient(m, d, rotation, s)["grad"] for s in seeds),
                "rotation_upper_bound": C1 * m,
                "fm": min(fm_gradient(m, d, product, s)["grad"] for s in seeds),
                **dict(zip(("fm_lower_bound", "fm_upper_bound"), fm_bounds(m, d, product))),
            }
        )
    return pd.DataFrame(rows)


def growth_notice(df: pd.DataFrame) -> str:
    """What a ``gradient_growth`` table shows, in one sentence made from its numbers: the growth from the
    smallest to the largest m of the product term, the FM (per added field) and the rotation layer."""
    first, last = df.iloc[0], df.iloc[-1]
    m0, m1 = int(first.m), int(last.m)

    def change(column: str) -> str:
        ratio = last[column] / first[column]
        if math.isclose(ratio, 1.0, rel_tol=1e-9):
            return f"stays at {last[column]:.3g}"
        return f"grows ×{ratio:.3g}" if ratio > 1 else f"shrinks to {ratio:.3g} of its value at m = {m0}"

    low, high = (df["fm"] / (df["m"] - 1)).agg(["min", "max"])
    per_field = f"{low:.3g}" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g} to {high:.3g}"
    product = change("product")
    straight = " — exponential, a straight line on the log scale" if last["product"] > 10 * first["product"] else ""
    return (
        f"From m = {m0} to m = {m1} the single m-way product term's gradient {product}{straight}. "
        f"The FM's {change('fm')}: its gradient Z − Xᵢ is a sum of the other m − 1 embeddings, "
        f"here {per_field} per added field, so it grows linearly in m. "
        f"The rotation layer's stays below C₁·m: at most {df['rotation'].max():.3g}, "
        f"against C₁·{m1} = {last['rotation_upper_bound']:.3g}."
    )
