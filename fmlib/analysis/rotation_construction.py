"""Theorem 1.1 construction: a rotation layer whose attention scores reproduce any truth table.

RFM appendix §1.1. Fields j = 1..m have n_j features, N = Σ n_j in all, laid out along one axis
(global index s, field G(s)). A dependency function f is given as its truth table
T ∈ {0,1}^{N×N}, with T(s, t) = 0 when s and t are in the same field. For a sample with one
active feature ID(x_j) per field:

    r_j[k] = T(k, ID(x_j))            if G(k) ≠ j          (relation vector of field j)
           = ½ + ½·x_j[k − offset_j]  if G(k) = j          (½ on its own field, 1 at itself)
    θ̃_j = [θ_j, ε·r_j],   M = [O_{N×d} | (π/ε)·I_N],   M θ̃_j = π·r_j
    head j keeps field j's coordinates (H_j^Q = H_j^K), values are the θ_l (H_j^V), w = S·1:
    α_{j,l} = Sigmoid(wᵀ cos(π r_j^{(j)} − π r_l^{(j)})) = Sigmoid(S·cos(π − π·T(ID(x_j), ID(x_l))))

so α_{j,l} → T(ID(x_j), ID(x_l)) as S → ∞; the error is exactly Sigmoid(−S) for l ≠ j, and
θ̂_j = Σ_l α_{j,l} θ_l. The scores are computed by ``fmlib.models.rfm.rotation_scores``, the
model's own code (Σ_c w_c cos(q_c − k_c) is its Euler-expanded form).

Slip in the printed proof: the chain "α_{j,l} = … = T(ID(x_j), ID(x_l))" fails for l = j, where
all n_j coordinates agree, cos 0 = 1, and α_{j,j} = Sigmoid(S·n_j) → 1 although T(s, s) = 0.
Corrected: α_{j,l} → T(ID(x_j), ID(x_l)) for l ≠ j and α_{j,j} → 1, so
θ̂_j → θ_j + Σ_{l≠j} f(e_j, e_l) θ_l (each field keeps its own angle, exponent 1 on e_j).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import pandas as pd
import torch

from ..models.rfm import rotation_scores

MAX_FEATURES = 24  # N, so the truth table stays readable
MAX_SAMPLES = 4096  # Π n_j: every combination of one feature per field is evaluated


def check_layout(sizes) -> tuple[int, ...]:
    """Validate field sizes (n_1, …, n_m) and return them as a tuple."""
    sizes = tuple(sizes)
    if not sizes:
        raise ValueError("the field layout is empty: give the number of features of each field, e.g. 2, 3, 2")
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
        raise ValueError(f"every field needs an integer number of features >= 1, got {sizes}")
    if len(sizes) < 2:
        raise ValueError(f"a dependency between fields needs at least 2 fields, got {len(sizes)}")
    if sum(sizes) > MAX_FEATURES:
        raise ValueError(f"at most {MAX_FEATURES} features in all, got N = {sum(sizes)}")
    if math.prod(sizes) > MAX_SAMPLES:
        raise ValueError(f"at most {MAX_SAMPLES} feature combinations (Π n_j), got {math.prod(sizes)}")
    return sizes


def field_of(sizes) -> torch.Tensor:
    """G(s): the field of every global feature index s, shape (N,)."""
    return torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))


def feature_labels(sizes) -> list[str]:
    """ "f2.3" = third feature of the second field, for every global index s."""
    return [f"f{j + 1}.{i + 1}" for j, n in enumerate(sizes) for i in range(n)]


def relation_frame(sizes, T, ids) -> pd.DataFrame:
    """The relation vectors r_1 … r_m of one sample (ids: m global indices) as a table."""
    sizes = check_layout(sizes)
    T = check_truth_table(T, sizes)
    r = relation_vectors(sizes, T, torch.as_tensor(ids).reshape(1, -1))[0]
    labels = feature_labels(sizes)
    return pd.DataFrame(
        r.numpy(), columns=labels, index=[f"r{j + 1} (x{j + 1} = {labels[int(s)]})" for j, s in enumerate(ids)]
    )


def check_truth_table(T: torch.Tensor, sizes) -> torch.Tensor:
    """Validate T against the layout and return it as float64."""
    sizes = check_layout(sizes)
    T = torch.as_tensor(T, dtype=torch.float64)
    if T.numel() == 0:
        raise ValueError("the truth table T is empty: it needs one row and one column per feature")
    N = sum(sizes)
    if T.shape != (N, N):
        raise ValueError(f"truth table T must be N×N = {N}×{N} for the layout {sizes}, got {tuple(T.shape)}")
    if not torch.all((T == 0) | (T == 1)):
        raise ValueError("truth table T must contain only 0 and 1 (f maps to {0, 1})")
    G = field_of(sizes)
    if torch.any(T[G[:, None] == G[None, :]] != 0):
        raise ValueError("T(s, t) must be 0 when s and t are features of the same field (Theorem 1.1)")
    return T


def random_truth_table(sizes, density: float = 0.5, seed: int = 0) -> torch.Tensor:
    """A random dependency function: every cross-field T(s, t) is 1 with probability ``density``."""
    sizes = check_layout(sizes)
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must be in [0, 1], got {density}")
    N = sum(sizes)
    gen = torch.Generator().manual_seed(seed)
    T = (torch.rand(N, N, generator=gen, dtype=torch.float64) < density).double()
    G = field_of(sizes)
    return T * (G[:, None] != G[None, :])


def relation_vectors(sizes, T: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """r_j for every field j of every sample (§1.1): ids (B, m) global indices -> (B, m, N)."""
    G = field_of(sizes)
    N, m = len(G), len(sizes)
    r = T[:, ids].permute(1, 2, 0)  # r[b, j, k] = T(k, ID(x_j))
    own = G[None, None, :] == torch.arange(m)[None, :, None]  # G(k) = j
    active = torch.nn.functional.one_hot(ids, N).bool()  # k = ID(x_j)
    return torch.where(own, torch.where(active, 1.0, 0.5).double(), r)


@dataclass
class Construction:
    scores: torch.Tensor  # (B, m, m): α_{j,l} from head j, query j, key l
    ids: torch.Tensor  # (B, m) global feature index of each field
    theta: torch.Tensor  # (B, m, d) input angles, ‖θ_j‖₂ ≤ 1
    theta_hat: torch.Tensor  # (B, m, d) θ̂_j = Σ_l α_{j,l} θ_l
    T: torch.Tensor  # (N, N) the truth table
    T_hat: torch.Tensor  # (N, N) α read back at every cross-field pair (0 within a field)

    @property
    def error(self) -> float:
        """max |α_{j,l} − T(ID(x_j), ID(x_l))| over all samples and l ≠ j."""
        m = self.ids.shape[1]
        off = ~torch.eye(m, dtype=torch.bool)
        target = self.T[self.ids[:, :, None], self.ids[:, None, :]]
        return float((self.scores - target)[:, off].abs().max())

    @property
    def self_score_min(self) -> float:
        """min α_{j,j} (→ 1, not T = 0: see the slip in the module docstring)."""
        return float(self.scores.diagonal(dim1=1, dim2=2).min())

    @property
    def theta_hat_error(self) -> float:
        """max |θ̂_j − (θ_j + Σ_{l≠j} T(ID(x_j), ID(x_l)) θ_l)| (corrected §1.1 output)."""
        target = self.T[self.ids[:, :, None], self.ids[:, None, :]]
        target = target + torch.eye(self.ids.shape[1], dtype=target.dtype)
        return float((self.theta_hat - target @ self.theta).abs().max())


def construct(sizes, T, S: float = 20.0, eps: float = 1e-3, d: int = 4, seed: int = 0) -> Construction:
    """Run the §1.1 construction on every combination of one feature per field (float64)."""
    sizes = check_layout(sizes)
    T = check_truth_table(T, sizes)
    if not (math.isfinite(S) and S > 0):
        raise ValueError(f"S must be a positive number (the proof takes S large), got {S}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"ε must be a positive number (the proof takes ε small), got {eps}")
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"embedding size d must be an integer >= 1, got {d!r}")
    N, m = sum(sizes), len(sizes)
    offsets = [sum(sizes[:j]) for j in range(m)]
    ids = torch.tensor(list(itertools.product(*(range(o, o + n) for o, n in zip(offsets, sizes)))))
    gen = torch.Generator().manual_seed(seed)
    E = torch.randn(N, d, generator=gen, dtype=torch.float64)
    E = E / E.norm(dim=1, keepdim=True).clamp(min=1.0)  # ‖θ_j‖₂ ≤ 1 (Theorem 1.1)
    theta = E[ids]  # (B, m, d)
    theta_tilde = torch.cat([theta, eps * relation_vectors(sizes, T, ids)], dim=-1)  # [θ_j, ε r_j]
    M = torch.cat([torch.zeros(N, d, dtype=torch.float64), (math.pi / eps) * torch.eye(N, dtype=torch.float64)], 1)
    angles = theta_tilde @ M.T  # M θ̃_j = π r_j, (B, m, N)
    scores = torch.empty(len(ids), m, m, dtype=torch.float64)
    for j, (o, n) in enumerate(zip(offsets, sizes)):  # head j: field j's coordinates, w = S·1
        q = angles[:, :, o : o + n]
        scores[:, j] = rotation_scores(q, q, torch.full((n,), float(S), dtype=torch.float64))[:, j]
    theta_hat = scores @ theta  # values H_j^V θ̃_l = θ_l
    T_hat = torch.zeros(N, N, dtype=torch.float64)
    off = ~torch.eye(m, dtype=torch.bool)
    rows = ids[:, :, None].expand(-1, m, m)[:, off]
    cols = ids[:, None, :].expand(-1, m, m)[:, off]
    T_hat[rows, cols] = scores[:, off]
    return Construction(scores, ids, theta, theta_hat, T, T_hat)


def predicted_error(S: float) -> float:
    """|Sigmoid(S·cos(π − π·T)) − T| = Sigmoid(−S) for T ∈ {0, 1} (§1.1)."""
    return 1 / (1 + math.exp(S))


def construction_error(sizes, T, S_values, eps: float = 1e-3) -> pd.DataFrame:
    """Error of the construction for each S, with the exact prediction Sigmoid(−S)."""
    rows = []
    for S in S_values:
        c = construct(sizes, T, S=S, eps=eps)
        rows.append({"S": float(S), "error": c.error, "sigmoid(-S)": predicted_error(S)})
    return pd.DataFrame(rows)
