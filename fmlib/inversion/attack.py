"""Attention inversion on one softmax-attention layer (paper: "Unmasking Transformers").

Notation ([AttnInv] Def. 3.1 and §3.2):
  X ∈ ℝ^{d×n}   the secret input: n tokens, each a column of length d
  W = KQᵀ ∈ ℝ^{d×d}  attention weights,  V ∈ ℝ^{d×d} value weights
  f(W; X) = D(X)⁻¹ exp(XᵀWX) XᵀV ∈ ℝ^{n×d},  D(X) = diag(exp(XᵀWX) 1_n)       (Def. 3.1)
  L(X) = ‖f(W; X) − B‖²_F + γ ‖vec X‖²₂                                        (eq. 1, Thm. I.2)
The attacker knows W, V and the output B and minimises L over X.

Theorem 4.2 / Lemma H.2 print ∇²L ⪰ −72ndR⁸·I under Assumption 4.1 (‖W‖, ‖V‖, ‖X‖ ≤ R,
b_ij ≤ R²). Their proof has two slips (``lemmas.SLIPS``, and the derivation "attention-hessian-
bound"): Lemma E.2's Hessian lacks the factor 2 of L = Σ c², and Lemma H.1 bounds a sum of n²
blocks by one block (Σ_{i,j} p_iᵀp_j ≤ pᵀp is false; (Σ‖p_i‖)² ≤ n‖p‖² holds), a factor n.
Corrected, the same proof gives ∇²L ⪰ −144n²dR⁸·I, and with the regulariser's curvature 2γ,
γ > ``gamma_bound(n, d, R)`` = 72n²dR⁸ makes the regularised loss strongly convex — as far as
the paper's block bounds (Lemmas F.2, F.5), which we take as printed, hold.
The minimiser X* of Thm. 4.3/4.4 is the minimiser of the *regularised* loss, which for large
γ is pulled towards 0 and away from the secret input.

All computations run in float64: recovery to 1e-4 and Hessian eigenvalues need it.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch.func import vmap

from ..optim import Adam

METHODS = ("gd", "adam", "newton")
DEFAULT_LR = {"gd": 0.05, "adam": 0.01, "newton": 1.0}  # Newton ignores lr: it takes damped full steps
HESSIAN_MAX_DIM = 300  # n·d above which the nd×nd Hessian is not formed
DTYPE = torch.float64


def _tensor(a, name: str) -> torch.Tensor:
    t = torch.as_tensor(a, dtype=DTYPE)
    if t.ndim != 2:
        raise ValueError(f"{name} must be a 2-d matrix, got shape {tuple(t.shape)}")
    return t


def check_problem(W, V, B) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate the attacker's knowledge (W, V, B) and return it as float64 tensors.

    Shapes (Def. 3.1): W, V ∈ ℝ^{d×d}, B ∈ ℝ^{n×d}. Raises ValueError naming the problem.
    """
    W, V, B = _tensor(W, "W"), _tensor(V, "V"), _tensor(B, "B")
    d = W.shape[0]
    if W.shape != (d, d):
        raise ValueError(f"W must be square d×d, got shape {tuple(W.shape)}")
    if V.shape != (d, d):
        raise ValueError(f"V must be d×d = {d}×{d} like W, got shape {tuple(V.shape)}")
    if B.shape[1] != d:
        raise ValueError(f"B must be n×d with d = {d} (from W), got shape {tuple(B.shape)}")
    for name, t in (("W", W), ("V", V), ("B", B)):
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or infinite entries; all entries must be finite")
    return W, V, B


def attention_output(X, W, V) -> torch.Tensor:
    """f(W; X) = D(X)⁻¹ exp(XᵀWX) XᵀV (Def. 3.1), X ∈ ℝ^{d×n} → ℝ^{n×d}.

    D(X)⁻¹ exp(·) normalises each row, i.e. a row-wise softmax (computed stably).
    """
    X = torch.as_tensor(X)
    if X.ndim != 2 or W.shape != (X.shape[0], X.shape[0]) or V.shape != W.shape:
        raise ValueError(f"X must be d×n with W, V d×d; got X {tuple(X.shape)}, W {tuple(W.shape)}, V {tuple(V.shape)}")
    return torch.softmax(X.T @ W @ X, dim=1) @ (X.T @ V)


def loss(X, W, V, B, gamma: float = 0.0) -> torch.Tensor:
    """L(X) = ‖f(W; X) − B‖²_F + γ‖vec X‖²₂ (eq. 1 with L_reg of Thm. I.2)."""
    return ((attention_output(X, W, V) - B) ** 2).sum() + gamma * (X**2).sum()


def gradient(X, W, V, B, gamma: float = 0.0) -> torch.Tensor:
    """∇_X L by autograd, shape d×n (the reference the paper's Lemmas A.16–A.17 are tested against)."""
    X = X.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(X, W, V, B, gamma), X)
    return g


def hessian(X, W, V, B, gamma: float = 0.0) -> torch.Tensor:
    """∇²L with respect to vec X (row-major order), an nd×nd matrix, by exact autograd
    (the reference for Lemma E.2's Hessian and Thm. 4.2's bound)."""
    with one_thread():
        return batch_hessian(X.detach().reshape(1, -1), W[None], V[None], B[None], gamma)[0]


def gamma_bound(n: int, d: int, R: float) -> float:
    """72·n²·d·R⁸: the γ that the proof of Thm. 4.2 gives once its slips are corrected.

    [AttnInv] Lemma H.2 with Lemma H.1 corrected by a factor n and Lemma E.2 by a factor 2:
    ∇²L ⪰ −2 · nd · max|c| · max‖∇²c‖ I = −2 · nd · 2R² · 36nR⁶ I = −144n²dR⁸ I, and the
    regulariser adds 2γ I. So γ > 72n²dR⁸ makes L + γ‖X‖² strongly convex if the paper's block
    bounds |c| ≤ 2R² (Lemma F.2) and ‖H_i‖ ≤ 36R⁶ (Lemma F.5) hold; those we have not re-derived,
    so this is the corrected proof's bound, not a verified guarantee. R ≥ 1 (Assumption 4.1 asks R > 1).
    The printed 72ndR⁸ is smaller by the factor n.
    """
    R = max(float(R), 1.0)
    return 72.0 * n**2 * d * R**8


def assumption_R(W, V, X, B) -> float:
    """Smallest R ≥ 1 with ‖W‖, ‖V‖, ‖X‖ ≤ R and b_ij ≤ R² (Assumption 4.1, spectral norms)."""
    norms = [torch.linalg.matrix_norm(M, ord=2).item() for M in (W, V, X)]
    return max(1.0, *norms, math.sqrt(max(B.abs().max().item(), 0.0)))


@dataclass
class Instance:
    """A planted problem: secret X_true and the output B = f(W; X_true) the attacker sees."""

    W: torch.Tensor
    V: torch.Tensor
    X_true: torch.Tensor
    B: torch.Tensor


def planted_instance(n: int, d: int, R: float = 1.0, seed: int = 0) -> Instance:
    """Random W, V with spectral norm R (Assumption 4.1), X_true ~ N(0, 1)^{d×n}, B = f(W; X_true)."""
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, got n={n}, d={d}")
    if not R > 0:
        raise ValueError(f"weight scale R must be > 0, got {R}")
    gen = torch.Generator().manual_seed(seed)

    def scaled(G):
        return R * G / torch.linalg.matrix_norm(G, ord=2)

    W = scaled(torch.randn(d, d, generator=gen, dtype=DTYPE))
    V = scaled(torch.randn(d, d, generator=gen, dtype=DTYPE))
    X_true = torch.randn(d, n, generator=gen, dtype=DTYPE)
    return Instance(W, V, X_true, attention_output(X_true, W, V))


@dataclass
class Inversion:
    """Result of ``invert``: recovered X, one trajectory row per iterate, and plain-language notes."""

    X: torch.Tensor
    trajectory: pd.DataFrame  # step, loss, grad_norm, dist (‖X_t − X_true‖_F or NaN), min_eig (or NaN)
    method: str
    notes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return int(self.trajectory["step"].iloc[-1])


@contextmanager
def one_thread():
    """Run tiny tensor work on one intra-op thread (on a shared 2-core box extra threads only add overhead)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _flat_loss(x, W, V, B, gamma):
    """L at vec X (row-major), for torch.func transforms over a batch of problems."""
    return loss(x.reshape(W.shape[0], B.shape[0]), W, V, B, gamma)


batch_loss = vmap(_flat_loss, in_dims=(0, 0, 0, 0, None))
batch_grad = vmap(torch.func.grad(_flat_loss), in_dims=(0, 0, 0, 0, None))
# reverse-over-reverse: 1.5–2.5× faster than torch.func.hessian (forward-over-reverse) at these sizes
batch_hessian = vmap(torch.func.jacrev(torch.func.grad(_flat_loss)), in_dims=(0, 0, 0, 0, None))


def warm_up() -> None:
    """Run the batched gradient and Hessian once on a 1×2 problem.

    torch.func pays a one-time cost on the first call of each transform, whatever the problem size
    (2.8 s for the gradient, 1.3 s for the Hessian on a shared 2-core machine); a server runs this
    once in the background so that a reader's first attack does not wait for it.
    """
    x, W, B = torch.zeros(1, 2, dtype=DTYPE), torch.ones(1, 1, 1, dtype=DTYPE), torch.zeros(1, 2, 1, dtype=DTYPE)
    batch_grad(x, W, W, B, 0.0)
    batch_hessian(x, W, W, B, 0.0)


def descend(
    X,
    W,
    V,
    B,
    gamma: float,
    method: str,
    steps: int,
    lr: float,
    X_true=None,
    tol: float = 1e-12,
    track_hessian: bool = True,
) -> tuple[torch.Tensor, dict]:
    """Minimise L for a batch of T independent problems at once (all tensors have a leading T axis).

    One update per step for every problem: "gd" X ← X − lr∇L (Thm. I.1); "adam" (§5.1, App. J
    defaults); "newton" X ← X + p with p = −(H + μI)⁻¹∇L (Thm. 4.4), the exact Hessian H damped
    Levenberg–Marquardt style: H + μ'I with λ_min = μ > 0 keeps the step a descent step, a step that fails
    to deliver the decrease its quadratic model promised is refused and μ grows (shorter,
    more gradient-like steps); good steps shrink μ, so near a minimum it is plain Newton.
    Returns the final X (T, d, n) and a history of (steps_run + 1, T) tensors: loss, grad_norm,
    dist (‖X_t − X_true‖_F, NaN without X_true) and min_eig (λ_min of ∇²L where computed, else NaN).
    """
    T, d, n = X.shape
    x = X.reshape(T, d * n).clone()
    x_true = None if X_true is None else X_true.reshape(T, d * n)
    record_at = set((np.unique(np.geomspace(1, steps + 1, 40).astype(int)) - 1).tolist()) | {steps}
    keys = ("loss", "grad_norm", "dist", "min_eig")
    history = {k: [] for k in keys}
    opt = None
    if method == "adam":
        x.requires_grad_(True)
        opt = Adam([{"params": [x]}], lr=lr)
    nan = torch.full((T,), math.nan, dtype=DTYPE)
    mu = torch.full((T,), 1e-3, dtype=DTYPE)  # Newton damping, per problem
    eye = torch.eye(d * n, dtype=DTYPE)
    for t in range(steps + 1):
        xd = x.detach()
        value = batch_loss(xd, W, V, B, gamma)
        g = batch_grad(xd, W, V, B, gamma)
        gnorm = g.norm(dim=1)
        H = batch_hessian(xd, W, V, B, gamma) if (method == "newton" or (track_hessian and t in record_at)) else None
        lam = torch.linalg.eigvalsh(H)[:, 0] if H is not None else nan
        history["loss"].append(value)
        history["grad_norm"].append(gnorm)
        history["dist"].append(nan if x_true is None else (xd - x_true).norm(dim=1))
        history["min_eig"].append(lam)
        if t == steps or not torch.isfinite(value).all() or bool((gnorm < tol).all()):
            break
        if method == "gd":
            x = xd - lr * g  # lr: a number, or a (T, 1) tensor of per-problem step sizes
        elif method == "adam":
            x.grad = g
            opt.step()
        else:
            # damped Newton (Levenberg–Marquardt): shift H so its smallest eigenvalue is μ > 0;
            # accept the step where the loss falls by ≥ 10% of the quadratic model's promise,
            # then relax μ (good model) or stiffen it (poor model).
            shift = mu + (-lam).clamp(min=0.0)
            p = torch.linalg.solve(H + shift[:, None, None] * eye, -g)
            promised = -((g * p).sum(dim=1) + 0.5 * torch.einsum("ti,tij,tj->t", p, H, p))
            rho = (value - batch_loss(xd + p, W, V, B, gamma)) / promised
            rho = torch.nan_to_num(rho, nan=-1.0)
            x = torch.where((rho > 0.1)[:, None], xd + p, xd)
            mu = torch.where(rho > 0.75, mu / 3, torch.where(rho < 0.25, mu * 4, mu)).clamp(min=1e-12)
    history = {k: torch.stack(v) for k, v in history.items()}
    return x.detach().reshape(T, d, n), history


def _start(d, n, seed, init_scale, X0):
    if X0 is None:
        gen = torch.Generator().manual_seed(seed)
        return init_scale * torch.randn(d, n, generator=gen, dtype=DTYPE)
    X0 = torch.as_tensor(X0, dtype=DTYPE)
    if X0.shape != (d, n):
        raise ValueError(f"X0 must be d×n = {d}×{n}, got shape {tuple(X0.shape)}")
    return X0


def _check_options(method, gamma, steps):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma}")
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")


def invert(
    W,
    V,
    B,
    method: str = "newton",
    gamma: float = 0.0,
    steps: int = 200,
    seed: int = 0,
    lr: float | None = None,
    X_true=None,
    X0=None,
    init_scale: float = 1.0,
    tol: float = 1e-12,
    track_hessian: bool = True,
) -> Inversion:
    """Recover X ∈ ℝ^{d×n} from W, V and B = f(W; X) by minimising L(X) (Def. 3.1, Alg. of Thm. 4.3/4.4).

    method "gd" (fixed step lr, default 0.05), "adam" (lr default 0.01) or "newton" (exact
    Hessian by autograd, Levenberg–Marquardt damping; lr is not used). X0 defaults to N(0, init_scale²) entries drawn
    with ``seed``. Stops after ``steps`` updates or when ‖∇L‖ < tol. With X_true the trajectory
    records ‖X_t − X_true‖_F. The smallest Hessian eigenvalue is recorded at every Newton step and
    at ~40 log-spaced gd/adam steps, when n·d ≤ HESSIAN_MAX_DIM; above that the Hessian is not
    formed, Newton falls back to gd, and ``notes`` says so.
    """
    W, V, B = check_problem(W, V, B)
    _check_options(method, gamma, steps)
    n, d = B.shape
    notes = []
    small = n * d <= HESSIAN_MAX_DIM
    if not small:
        fallback = "; Newton fell back to gradient descent" if method == "newton" else ""
        notes.append(
            f"n·d = {n * d} > {HESSIAN_MAX_DIM}: the {n * d}×{n * d} Hessian is not formed"
            f"{fallback}; its smallest eigenvalue is not tracked"
        )
        method = "gd" if method == "newton" else method
    if lr is None:
        lr = DEFAULT_LR[method]
    if not lr > 0:
        raise ValueError(f"step size lr must be > 0, got {lr}")
    if X_true is not None:
        X_true = torch.as_tensor(X_true, dtype=DTYPE)
        if X_true.shape != (d, n):
            raise ValueError(f"X_true must be d×n = {d}×{n}, got shape {tuple(X_true.shape)}")
        X_true = X_true[None]
    X = _start(d, n, seed, init_scale, X0)
    with one_thread():
        X, hist = descend(
            X[None], W[None], V[None], B[None], float(gamma), method, steps, lr, X_true, tol, track_hessian and small
        )
    frame = pd.DataFrame({k: v[:, 0].numpy() for k, v in hist.items()})
    frame.insert(0, "step", np.arange(len(frame)))
    if not np.isfinite(frame["loss"].iloc[-1]):
        notes.append(f"the loss became non-finite at step {len(frame) - 1}: lower the step size lr (now {lr})")
    return Inversion(X[0], frame, method, notes)


def near_start(X_true: torch.Tensor, noise: float, seed: int = 0) -> torch.Tensor:
    """A rough guess of the secret, X_true + noise·N(0, 1) (Thm. 4.4's "good initial point");
    the draw is seeded by 1000 + seed, apart from the instance's own seed."""
    gen = torch.Generator().manual_seed(1000 + seed)
    return X_true + noise * torch.randn(X_true.shape, generator=gen, dtype=DTYPE)


def trial_noise(n: int, d: int, count: int, seed: int = 0) -> torch.Tensor:
    """The N(0, 1) draws behind the starts of ``trials``: row start·count + trial, shape (2·count, d, n)."""
    gen = torch.Generator().manual_seed(10_000 + seed)
    return torch.randn(2 * count, d, n, generator=gen, dtype=DTYPE)


def trials(
    n: int,
    d: int,
    R: float,
    gammas,
    count: int = 100,
    method: str = "newton",
    steps: int = 60,
    seed: int = 0,
    lr: float | None = None,
    start_noise: float | None = None,
    success_tol: float = 1e-2,
    agree_tol: float = 1e-6,
) -> pd.DataFrame:
    """Repeated random attacks: ``count`` planted instances (seeds seed … seed+count−1), each
    attacked from two starts, for every γ (same instances and starts for all γ; one batch per γ).

    start_noise None: X0 ~ N(0, 1) independent of the secret (the attacker knows nothing);
    a number σ: X0 = X_true + σ·N(0, 1) (a rough guess: Thm. 4.4's "good initial point").
    A run succeeds when ‖X_T − X_true‖_F / ‖X_true‖_F < success_tol. The two runs of an instance
    agree when they end within agree_tol·‖X_true‖_F of each other — what convexity guarantees.
    One row per (γ, trial, start): rel_error, loss, grad_norm, success, agree.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    for g in gammas:
        _check_options(method, g, steps)
    if method == "newton" and n * d > HESSIAN_MAX_DIM:
        raise ValueError(
            f"n·d = {n * d} > {HESSIAN_MAX_DIM}: too large to form the Hessian for Newton; use method 'gd' or 'adam'"
        )
    lr = DEFAULT_LR[method] if lr is None else lr
    if not lr > 0:
        raise ValueError(f"step size lr must be > 0, got {lr}")
    insts = [planted_instance(n, d, R, seed + t) for t in range(count)]
    W, V, B, X_true = (torch.stack([getattr(i, k) for i in insts]).repeat(2, 1, 1) for k in ("W", "V", "B", "X_true"))
    noise = trial_noise(n, d, count, seed)
    X0 = noise if start_noise is None else X_true + start_noise * noise
    rows = []
    with one_thread():
        for g in gammas:
            X, hist = descend(X0, W, V, B, float(g), method, steps, lr, X_true, track_hessian=False)
            rel = (X - X_true).flatten(1).norm(dim=1) / X_true.flatten(1).norm(dim=1)
            Xa, Xb = X[:count].flatten(1), X[count:].flatten(1)
            scale = X_true[:count].flatten(1).norm(dim=1)
            agree = ((Xa - Xb).norm(dim=1) <= agree_tol * scale).repeat(2)
            rows.append(
                pd.DataFrame(
                    {
                        "gamma": float(g),
                        "trial": np.tile(np.arange(count), 2),
                        "start": np.repeat([0, 1], count),
                        "rel_error": rel.numpy(),
                        "loss": hist["loss"][-1].numpy(),
                        "grad_norm": hist["grad_norm"][-1].numpy(),
                        "success": (rel < success_tol).numpy(),
                        "agree": agree.numpy(),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def replay_trial(
    n: int,
    d: int,
    R: float,
    trial: int,
    start: int,
    count: int,
    gamma: float = 0.0,
    method: str = "newton",
    steps: int = 60,
    seed: int = 0,
    start_noise: float | None = None,
) -> Inversion:
    """One run of ``trials`` (its ``trial`` and ``start`` row, same count, seed and start_noise)
    attacked again on its own, with the trajectory that ``trials`` does not keep."""
    inst = planted_instance(n, d, R, seed + trial)
    draw = trial_noise(n, d, count, seed)[start * count + trial]
    X0 = draw if start_noise is None else inst.X_true + start_noise * draw
    return invert(inst.W, inst.V, inst.B, method, gamma, steps=steps, X0=X0, X_true=inst.X_true)


def success_rates(table: pd.DataFrame) -> pd.DataFrame:
    """Per γ from a ``trials`` table: success_rate (over runs), agree_rate (over instances),
    the median relative error, and the counts behind them."""
    out = table.groupby("gamma", sort=True).agg(
        success_rate=("success", "mean"),
        agree_rate=("agree", "mean"),
        median_rel_error=("rel_error", "median"),
        runs=("success", "size"),
    )
    return out.reset_index()


def first_hit(dist: torch.Tensor, eps: float) -> torch.Tensor:
    """Per problem, the first step at which ‖X_t − X*‖_F ≤ eps (a (steps+1, T) history), −1 if never."""
    hit = dist <= eps
    steps = torch.arange(dist.shape[0])[:, None].expand_as(dist)
    return torch.where(hit.any(dim=0), torch.where(hit, steps, dist.shape[0]).amin(dim=0), -1)
