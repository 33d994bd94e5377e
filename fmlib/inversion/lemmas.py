"""The gradient of L(X) assembled by hand from the paper's Lemmas A.10–A.17 (App. A).

Notation of [AttnInv] App. A, for i₀ ∈ [n], j₀ ∈ [d]:
  u(X)_{i₀} = exp(XᵀW X_{*,i₀}) ∈ ℝⁿ,  α(X)_{i₀} = ⟨u(X)_{i₀}, 1ₙ⟩,  f(X)_{i₀} = α⁻¹ u   (Defs. A.4–A.6)
  h(X)_{j₀} = XᵀV_{*,j₀},  c(X)_{i₀,j₀} = ⟨f(X)_{i₀}, h(X)_{j₀}⟩ − b_{i₀,j₀},  L = Σ c²    (Defs. A.7–A.9)
  w(X)_{i₀,j₁} = ⟨W_{j₁,*}, X_{*,i₀}⟩,  s(X)_{i₀,j₀} = ⟨f(X)_{i₀}, h(X)_{j₀}⟩
  x_{i₁,j₁} is the entry of X in row j₁, column i₁.
Lemma A.16 gives dc_{i₀,j₀}/dx_{i₁,j₁} = C₁+…+C₅ (i₀ = i₁) or C₆+C₇+C₈ (i₀ ≠ i₁);
Lemma A.17 sums them into dL/dx_{i₁,j₁}.

Checked against autograd (tests/test_inversion.py) the printed lemmas carry two slips, listed
in ``SLIPS``; ``lemma_gradient(..., printed=True)`` reproduces the printed version,
``printed=False`` the corrected one, which equals autograd.
"""

from __future__ import annotations

import torch

SLIPS = [
    {
        "where": "Def. A.4 (and §3.2)",
        "printed": "u(X)_{i₀} = exp(XᵀW X_{*,i₀})  — column i₀ of exp(XᵀWX)",
        "corrected": "u(X)_{i₀} = exp(XᵀWᵀ X_{*,i₀})  — row i₀ of exp(XᵀWX), the row that "
        "D(X)⁻¹ normalises in Def. 3.1",
        "effect": "the printed lemmas differentiate the layer with Wᵀ in place of W; they agree "
        "with Def. 3.1 only when W is symmetric",
    },
    {
        "where": "Lemma A.17 (and Lemma E.1 for the Hessian)",
        "printed": "dL/dx_{i₁,j₁} = Σ_{i₀,j₀} c(X)_{i₀,j₀} · dc(X)_{i₀,j₀}/dx_{i₁,j₁}",
        "corrected": "dL/dx_{i₁,j₁} = 2 Σ_{i₀,j₀} c(X)_{i₀,j₀} · dc(X)_{i₀,j₀}/dx_{i₁,j₁}",
        "effect": "L = Σ c² so the chain rule brings a factor 2; the Hessian of Lemma E.2 lacks it "
        "too (∇²L = 2Σ ∇c∇cᵀ + c∇²c), which doubles Lemma H.2's bound; the regulariser's "
        "curvature is 2γ, so the threshold on γ is unchanged by this slip. With Lemma H.1's own "
        "slip (a factor n, see the derivation 'attention-hessian-bound') the corrected bound is "
        "∇²L ⪰ −144n²dR⁸ I and γ > 72n²dR⁸ (``attack.gamma_bound``)",
    },
]


def lemma_gradient(X, W, V, B, gamma: float = 0.0, printed: bool = False) -> torch.Tensor:
    """dL/dX (d×n) assembled term by term from Lemma A.16 (C₁…C₈) and Lemma A.17.

    printed=True follows the paper literally (both slips in ``SLIPS``); printed=False uses the
    corrected Def. A.4 (W → Wᵀ inside the lemmas) and the factor 2 of Lemma A.17. The
    regulariser γ‖vec X‖² (Thm. I.2; not part of Def. A.9) adds 2γX in both cases.
    """
    d, n = X.shape
    Wl = W if printed else W.T  # the W the lemmas' u(X) is built from (Def. A.4)
    factor = 1.0 if printed else 2.0
    U = torch.exp(X.T @ Wl @ X)  # column i₀ is u(X)_{i₀}
    F = U / U.sum(dim=0, keepdim=True)  # column i₀ is f(X)_{i₀}
    Hv = X.T @ V  # column j₀ is h(X)_{j₀}
    S = F.T @ Hv  # s(X)_{i₀,j₀}
    C = S - B  # c(X)_{i₀,j₀}
    XW = X.T @ Wl  # column j₁ is XᵀW_{*,j₁}
    w = X.T @ Wl.T  # w(X)_{i₀,j₁} = ⟨W_{j₁,*}, X_{*,i₀}⟩
    grad = torch.zeros_like(X)
    for i1 in range(n):
        for j1 in range(d):
            total = 0.0
            for i0 in range(n):
                f = F[:, i0]
                if i0 == i1:  # Lemma A.16 Part 1
                    dc = (
                        -S[i0] * f[i0] * w[i0, j1]  # C₁
                        - S[i0] * (f @ XW[:, j1])  # C₂
                        + f[i0] * Hv[i0] * w[i0, j1]  # C₃
                        + (f * XW[:, j1]) @ Hv  # C₄
                        + f[i0] * V[j1]
                    )  # C₅
                else:  # Lemma A.16 Part 2
                    dc = (
                        -S[i0] * f[i1] * w[i0, j1]  # C₆
                        + f[i1] * Hv[i1] * w[i0, j1]  # C₇
                        + f[i1] * V[j1]
                    )  # C₈
                total = total + C[i0] @ dc  # Σ_{j₀} c_{i₀,j₀} dc_{i₀,j₀}/dx_{i₁,j₁}
            grad[j1, i1] = factor * total
    return grad + 2.0 * gamma * X
