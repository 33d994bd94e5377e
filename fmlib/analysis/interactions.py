"""Field interaction matrices: read R, prune it, approximate it post hoc by DPLR, look at spectra.

DPLR paper [DPLR]:
* R (m×m, symmetric, zero diagonal) weighs the interaction of fields i and j (eq. 3).
* Equal parameter budget (§5.1): a rank-ρ DPLR has ρ(m+1) parameters (U: ρ×m, e: ρ), so the
  pruned R keeps the ρ(m+1) largest-magnitude interactions R_ij, i < j — that is
  100 · 2ρ(m+1) / (m(m−1)) percent of them ("% left").
* R_FM = 11ᵀ − I (eq. 7) is the FM as an FwFM; its eigenvalues are {m−1, −1, …, −1} (§4.1).
* Post-hoc DPLR (App. C): approximate a trained FwFM's R by Uᵀdiag(e)U + diag(d) after the
  fact, by a truncated eigendecomposition or by minimising the nuclear norm of the error
  E = R̃ − R. By the von Neumann trace inequality the change of the pairwise term is at most
  Σ_i λ_i(VVᵀ) σ_i(E), so the singular values of E are what to look at (Fig. 2).
All functions take and return numpy arrays (float64).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import least_squares

from ..models.dplr import dplr_matrix

SPECTRA = ("eigen", "singular")
POSTHOC_METHODS = ("eig", "nuclear")


def interaction_matrix(model) -> np.ndarray:
    """The m×m field interaction matrix R of an FwFM (learned) or a DPLR (implied by eq. 10): the
    model's ``interaction_matrix()``."""
    R = model.interaction_matrix()
    if R is None:
        name = type(model).__name__
        raise ValueError(
            f"a {name} model has no field interaction matrix R: open a field-weighted "
            "run (fwfm or dplr) — an FM is the FwFM with R = 11ᵀ − I fixed"
        )
    return R.detach().double().cpu().numpy()


def r_fm(m: int) -> np.ndarray:
    """R_FM = 11ᵀ − I (DPLR eq. 7): the FM written as an FwFM."""
    return np.ones((m, m)) - np.eye(m)


NEAR_FM = 0.05  # an R whose every pair is within this of R_FM's 1 is called close to an FM (``r_summary``)


def fm_distance(R) -> float:
    """max_{f<g} |R_fg − 1|: how far R is from R_FM = 11ᵀ − I (DPLR eq. 7) on its worst pair."""
    R = _square_symmetric(R)
    return float(np.abs(R[np.triu_indices(len(R), 1)] - 1).max())


def r_summary(R, names, model: str = "the FwFM", tolerance: float = NEAR_FM) -> str:
    """One sentence on how far R is from the FM's R_FM = 11ᵀ − I (DPLR eq. 7: 1 on every pair f < g), and where:
    R's range and spread over the m(m−1)/2 pairs with its largest and smallest pair; or, when every
    |R_fg − 1| is below ``tolerance``, that R stays that close to the FM's 1 (``model`` names whose R it is)."""
    R = _square_symmetric(R)
    rows, cols = np.triu_indices(len(R), 1)
    upper = R[rows, cols]
    spread = f"std {upper.std():.2g} over the {len(upper)} pairs"
    distance = fm_distance(R)
    if distance < tolerance:
        return (
            f"R stays within {distance:.2g} of the FM's 1 on every pair ({spread}): "
            f"{model} is close to an FM on this data."
        )

    def pair(i: int) -> str:
        return f"{names[rows[i]]} × {names[cols[i]]} ({upper[i]:.2f})"

    return (
        f"R runs from {upper.min():.2f} to {upper.max():.2f} where an FM has 1 on every pair ({spread}); "
        f"the strongest pair: {pair(int(np.argmax(upper)))}, the weakest: {pair(int(np.argmin(upper)))}."
    )


def _square_symmetric(R) -> np.ndarray:
    R = np.asarray(R, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] < 2:
        raise ValueError(f"R must be a square m×m matrix with m ≥ 2, got shape {R.shape}")
    if not np.allclose(R, R.T, atol=1e-8):
        raise ValueError("R must be symmetric")
    return R


def check_rank(rank, m: int) -> int:
    """ρ must be an integer in 1..m−1 (DPLR §3.3: 0 < ρ ≪ m)."""
    if isinstance(rank, bool) or not float(rank).is_integer() or not 1 <= rank <= m - 1:
        raise ValueError(f"rank ρ must be an integer in 1..m−1 = 1..{m - 1} for {m} fields, got {rank!r}")
    return int(rank)


def budget(m: int, rank: int) -> int:
    """Parameters of a rank-ρ DPLR, ρ(m+1) — the number of interactions a pruned R keeps (§5.1)."""
    return check_rank(rank, m) * (m + 1)


def percent_left(m: int, kept: int) -> float:
    """100 · kept / (m(m−1)/2): share of the interactions R_ij, i < j, that are kept (§5.1)."""
    return 100.0 * kept / (m * (m - 1) / 2)


def _kept_pairs(R: np.ndarray, keep) -> tuple[np.ndarray, np.ndarray]:
    """Positions (rows, cols), i < j, of the ``keep`` largest |R_ij|; ties broken row-major."""
    m = R.shape[0]
    pairs = m * (m - 1) // 2
    if isinstance(keep, bool) or not float(keep).is_integer() or not 1 <= keep <= pairs:
        raise ValueError(
            f"the pruning budget must be an integer in 1..m(m−1)/2 = 1..{pairs} "
            f"interactions for {m} fields, got {keep!r}"
        )
    rows, cols = np.triu_indices(m, 1)
    order = np.argsort(-np.abs(R[rows, cols]), kind="stable")[: int(keep)]
    return rows[order], cols[order]


def prune(R, keep: int) -> np.ndarray:
    """Keep the ``keep`` largest-magnitude interactions R_ij (i < j), zero the rest; symmetric result."""
    R = _square_symmetric(R)
    rows, cols = _kept_pairs(R, keep)
    out = np.zeros_like(R)
    out[rows, cols] = R[rows, cols]
    return out + out.T


def prune_mask(R, keep: int) -> np.ndarray:
    """Boolean symmetric m×m mask of the interactions ``prune`` keeps."""
    R = _square_symmetric(R)
    rows, cols = _kept_pairs(R, keep)
    mask = np.zeros(R.shape, dtype=bool)
    mask[rows, cols] = True
    return mask | mask.T


@dataclass
class PosthocDPLR:
    """R̃ = Uᵀ diag(e) U + diag(d) with d = −diag_of(Uᵀ diag(e) U) (eq. 10): zero diagonal."""

    U: np.ndarray  # (ρ, m)
    e: np.ndarray  # (ρ,)
    method: str

    @property
    def R(self) -> np.ndarray:
        """R̃ = Uᵀ diag(e) U + diag(d) (eq. 10)."""
        return dplr_matrix(torch.from_numpy(self.U), torch.from_numpy(self.e)).numpy()


def _truncate(S: np.ndarray, positive: int, negative: int):
    """Best approximation of a symmetric S by Qᵀdiag(λ)Q with ``positive`` λ > 0 and ``negative``
    λ < 0 (Frobenius norm): its largest and its most negative eigenpairs."""
    lam, Q = np.linalg.eigh(S)  # ascending
    keep = [*range(len(lam) - positive, len(lam)), *range(negative)]
    return lam[keep], Q[:, keep].T  # e, U (rows are eigenvectors)


def _fill_diagonal(R: np.ndarray, rank: int, positive: int, iterations: int):
    """Alternate (a) truncate R + diag(g), (b) g ← diagonal of the truncation, from g = 0.

    One iteration is the plain truncated eigendecomposition of R (§4.1). The iteration can stop
    at a wrong fixed point, so its answer only starts ``_offdiag_fit``.
    """
    g = np.zeros(R.shape[0])
    for _ in range(iterations):
        e, U = _truncate(R + np.diag(g), positive, rank - positive)
        g_new = np.einsum("r,ri,ri->i", e, U, U)
        if np.max(np.abs(g_new - g)) < 1e-13:
            break
        g = g_new
    return e, U


def _minor_diagonal(R: np.ndarray, rank: int) -> np.ndarray:
    """The diagonal g that makes R + diag(g) of rank ρ, read off (ρ+1)×(ρ+1) minors; needs m ≥ 2ρ+1.

    If R + diag(g) = Wᵀ diag(s) W has rank ρ, every (ρ+1)-minor vanishes. Take rows {i} ∪ A and
    columns {i} ∪ B with A, B disjoint sets of ρ fields other than i: the only diagonal entry in
    that minor is g_i, and the Schur complement gives g_i = R_{i,B} R_{A,B}⁻¹ R_{A,i} whenever
    R_{A,B} is invertible (true for generic W). Of the m − 1 cyclic choices of (A, B) the best
    conditioned R_{A,B} is used.
    """
    m = R.shape[0]
    g = np.zeros(m)
    for i in range(m):
        others = np.delete(np.arange(m), i)
        choices = [np.roll(others, shift) for shift in range(m - 1)]
        order = max(choices, key=lambda o: np.linalg.svd(R[np.ix_(o[:rank], o[rank : 2 * rank])], compute_uv=False)[-1])
        A, B = order[:rank], order[rank : 2 * rank]
        g[i] = R[i, B] @ np.linalg.lstsq(R[np.ix_(A, B)], R[A, i], rcond=None)[0]
    return g


def _offdiag_fit(R: np.ndarray, W: np.ndarray, signs: np.ndarray) -> PosthocDPLR:
    """Least squares on the off-diagonal: min over W of Σ_{i<j} ((Wᵀ diag(s) W)_ij − R_ij)², from W.

    R̃ = Wᵀ diag(s) W + diag(d) is eq. 10 with U_r = W_r / ‖W_r‖ and e_r = s_r ‖W_r‖²; the
    diagonal is free, so only i < j is fitted. Solved by Levenberg–Marquardt (MINPACK) with the
    exact Jacobian ∂r_ij/∂W_rk = s_r (δ_ki W_rj + δ_kj W_ri); when there are fewer pairs than
    unknowns (m ≤ 2ρ) the residual is padded with zeros, which MINPACK needs.
    """
    m, rank = R.shape[0], len(signs)
    rows, cols = np.triu_indices(m, 1)
    pair = np.arange(len(rows))
    length = max(len(rows), rank * m)

    def residual(x):
        W = x.reshape(rank, m)
        r = np.zeros(length)
        r[: len(rows)] = np.einsum("r,ri,ri->i", signs, W[:, rows], W[:, cols]) - R[rows, cols]
        return r

    def jacobian(x):
        W = x.reshape(rank, m)
        J = np.zeros((length, rank, m))
        J[pair, :, rows] = (signs[:, None] * W[:, cols]).T
        J[pair, :, cols] = (signs[:, None] * W[:, rows]).T
        return J.reshape(length, rank * m)

    tol = 1e-12
    fit = least_squares(residual, W.ravel(), jac=jacobian, method="lm", xtol=tol, ftol=tol, gtol=tol, max_nfev=200)
    W = fit.x
    W = W.reshape(rank, m)
    norms = np.linalg.norm(W, axis=1)
    norms[norms == 0] = 1.0
    return PosthocDPLR(W / norms[:, None], signs * norms**2, "eig")


def _starts(R: np.ndarray, rank: int, random_starts: int):
    """Starting (signs s, W) for ``_offdiag_fit``; see ``_eig``."""
    m = R.shape[0]
    if m >= 2 * rank + 1:
        lam, Q = np.linalg.eigh(R + np.diag(_minor_diagonal(R, rank)))
        keep = np.argsort(-np.abs(lam))[:rank]  # sign-aware: the ρ largest |λ|
        yield np.sign(lam[keep]), np.sqrt(np.abs(lam[keep]))[:, None] * Q[:, keep].T
    splits = [np.array([1.0] * positive + [-1.0] * (rank - positive)) for positive in range(rank + 1)]
    for signs in splits:
        e, U = _fill_diagonal(R, rank, int((signs > 0).sum()), iterations=100)
        yield signs, np.sqrt(np.abs(e))[:, None] * U
    rng = np.random.default_rng(0)
    scale = np.sqrt(np.abs(R).max())
    for _ in range(random_starts):
        for signs in splits:
            yield signs, scale * rng.normal(size=(rank, m))


def _eig(R: np.ndarray, rank: int) -> PosthocDPLR:
    """Truncated eigendecomposition (§4.1) with the free diagonal filled in, refined off the diagonal.

    R's diagonal is not used by the model (eq. 5), so it is free: the answer is the R̃ of eq. 10
    closest to R off the diagonal (Frobenius norm) among local least-squares fits
    (``_offdiag_fit``) started from (a) for m ≥ 2ρ+1, the diagonal that makes R exactly rank ρ
    (``_minor_diagonal``), truncated to its ρ largest |λ| whatever their signs; (b) for every split
    of ρ into positive and negative e, the alternating diagonal fill (``_fill_diagonal``);
    (c) for m ≤ 2ρ, where (a) does not exist and the fit has spurious local minima, random
    starts for every split. It stops at the first start that fits R to 1e-12 relative error.

    An R that is exactly diagonal-plus-rank-ρ comes back exactly: for m ≥ 2ρ+1 start (a) is
    already exact for a generic R (a proof); for ρ+2 ≤ m ≤ 2ρ this is a measurement — every one
    of the random cases in tests/test_posthoc_dplr.py, mixed signs included, comes back.
    R_FM = 11ᵀ − I needs the diagonal 1, which plain truncation misses (it returns (m−1)/m · 11ᵀ).
    """
    random_starts = 10 if R.shape[0] <= 2 * rank else 0
    norm = np.linalg.norm(R)
    best = None
    for signs, W in _starts(R, rank, random_starts):
        fit = _offdiag_fit(R, W, signs)
        error = np.linalg.norm(fit.R - R)
        if best is None or error < best[0]:
            best = (error, fit)
        if error <= 1e-12 * norm:
            break
    return best[1]


def _nuclear(R: np.ndarray, start: PosthocDPLR, steps: int) -> PosthocDPLR:
    """Minimise ‖E‖_* = Σ σ_i(R̃ − R) over U, e (App. C), from the eigendecomposition's answer.

    Adam on a smoothed nuclear norm Σ √(σ_i² + δ²) (δ shrinks as it goes); the iterate with the
    smallest true nuclear norm is returned, so the answer is never worse than ``start``.
    """
    R_t = torch.tensor(R)
    U = torch.tensor(start.U, requires_grad=True)
    e = torch.tensor(start.e, requires_grad=True)
    optimizer = torch.optim.Adam([U, e], lr=1e-2)

    def error(U, e):  # E = R̃ − R (App. C), R̃ as in eq. 10
        return dplr_matrix(U, e) - R_t

    with torch.no_grad():
        best = (float(torch.linalg.svdvals(error(U, e)).sum()), start.U, start.e)
    for step in range(steps):
        delta = 1e-2 * (1 - step / steps) + 1e-6
        optimizer.zero_grad()
        sigma = torch.linalg.svdvals(error(U, e))
        torch.sqrt(sigma.pow(2) + delta**2).sum().backward()
        optimizer.step()
        with torch.no_grad():
            nuclear = float(torch.linalg.svdvals(error(U, e)).sum())
        if nuclear < best[0]:
            best = (nuclear, U.detach().numpy().copy(), e.detach().numpy().copy())
    return PosthocDPLR(best[1], best[2], "nuclear")


def dplr_posthoc(R, rank: int, method: str = "eig", steps: int = 300) -> PosthocDPLR:
    """Post-hoc DPLR approximation of a trained R (DPLR App. C) with ρ = ``rank``.

    method "eig": least-squares fit off the diagonal, started from truncated eigendecompositions
    (§4.1) with the free diagonal filled in (``_eig``);
    method "nuclear": minimise the nuclear norm of the error, starting from "eig".
    """
    R = _square_symmetric(R)
    rank = check_rank(rank, R.shape[0])
    if method not in POSTHOC_METHODS:
        raise ValueError(f"method must be one of {POSTHOC_METHODS}, got {method!r}")
    R = R - np.diag(np.diag(R))
    start = _eig(R, rank)
    return start if method == "eig" else _nuclear(R, start, steps)


def spectrum(M, kind: str = "eigen") -> np.ndarray:
    """Eigenvalues of a symmetric M (kind "eigen"), or its singular values ("singular"); descending."""
    M = _square_symmetric(M) if kind == "eigen" else np.asarray(M, dtype=float)
    if kind == "eigen":
        return np.sort(np.linalg.eigvalsh(M))[::-1]
    if kind == "singular":
        return np.linalg.svd(M, compute_uv=False)
    raise ValueError(f"kind must be one of {SPECTRA}, got {kind!r}")


def offdiag_error(R_hat, R) -> float:
    """Relative Frobenius error off the diagonal, ‖offdiag(R̂ − R)‖_F / ‖offdiag(R)‖_F."""
    R_hat, R = np.asarray(R_hat, dtype=float), np.asarray(R, dtype=float)
    off = ~np.eye(R.shape[0], dtype=bool)
    return float(np.linalg.norm((R_hat - R)[off]) / np.linalg.norm(R[off]))


def align_field_scales(R_hat, R) -> np.ndarray:
    """D R̂ D with the diagonal D that best matches R off the diagonal (least squares).

    A learned R is identifiable only up to this: scaling field f's embeddings by c_f and R_fg by
    1/(c_f c_g) leaves every prediction of eq. 3 unchanged. Compare learned and planted R after it.
    The start is exact for R = D R̂ D: log|c_f| + log|c_g| = log|R_fg / R̂_fg| solved by linear
    least squares, the signs s_f s_g = sign(R_fg / R̂_fg) read off the leading eigenvector.
    """
    R_hat, R = np.asarray(R_hat, dtype=float), np.asarray(R, dtype=float)
    m = R.shape[0]
    rows, cols = np.triu_indices(m, 1)
    a, b = R_hat[rows, cols], R[rows, cols]
    both = (np.abs(a) > 1e-12) & (np.abs(b) > 1e-12)
    design = np.zeros((both.sum(), m))
    design[np.arange(both.sum()), rows[both]] = 1
    design[np.arange(both.sum()), cols[both]] = 1
    log_c = np.linalg.lstsq(design, np.log(np.abs(b[both] / a[both])), rcond=None)[0]
    signs = np.zeros((m, m))
    signs[rows[both], cols[both]] = np.sign(b[both] / a[both])
    lead = np.linalg.eigh(signs + signs.T)[1][:, -1]
    start = np.where(lead < 0, -1.0, 1.0) * np.exp(log_c)
    fit = least_squares(lambda c: c[rows] * c[cols] * a - b, start)
    return fit.x[:, None] * R_hat * fit.x[None, :]


def with_R(fwfm, R):
    """A copy of an FwFM whose interaction matrix is replaced by the symmetric R (e.g. pruned, post-hoc)."""
    from ..models.fwfm import FwFM

    if not isinstance(fwfm, FwFM):
        raise ValueError(f"expected an FwFM, got {type(fwfm).__name__}")
    m = fwfm.schema.num_fields
    R = _square_symmetric(R)
    if R.shape != (m, m):
        raise ValueError(f"R must be {m}×{m} for this model, got {R.shape}")
    copy = FwFM(fwfm.schema, **fwfm.hparams())
    copy.load_state_dict(fwfm.state_dict())
    rows, cols = np.triu_indices(m, 1)
    with torch.no_grad():
        copy.r_upper.copy_(torch.as_tensor(R[rows, cols], dtype=copy.r_upper.dtype))
    return copy


def pruned_fwfm(fwfm, keep: int):
    """A copy of an FwFM pruned to its ``keep`` largest |R_ij|, ready to fine-tune.

    The pruned entries stay exactly zero while training: a hook zeroes their gradient, and Adam
    (no weight decay on R, see ``fmlib.train.param_groups``) never moves a parameter whose
    gradient and moments are zero (a fine-tune that continues the FwFM's Adam state gets its
    moments through ``pruned_moments``).
    """
    R = interaction_matrix(fwfm)
    copy = with_R(fwfm, prune(R, keep))
    kept = _kept_upper(R, keep, copy.r_upper.dtype)  # once: the hook runs on every backward pass
    copy.r_upper.register_hook(lambda grad: grad * kept)
    return copy


def _kept_upper(R: np.ndarray, keep: int, dtype) -> torch.Tensor:
    """1 for the kept entries of R's upper triangle (r_upper's order), 0 for the pruned ones."""
    rows, cols = np.triu_indices(R.shape[0], 1)
    return torch.as_tensor(prune_mask(R, keep)[rows, cols], dtype=dtype)


def pruned_moments(state: dict, fwfm, keep: int) -> dict:
    """Adam's moments of a trained FwFM (``Run.optimizer_state``: name -> (m, v, t)) for the copy
    that ``pruned_fwfm(fwfm, keep)`` makes: the same, with the moments of R's pruned entries set to
    zero, so that a fine-tune continuing from them (``fmlib.train.fit(..., resume=...)``) keeps
    what the FwFM learned and its pruned entries at zero."""
    mask = _kept_upper(interaction_matrix(fwfm), keep, torch.float32)
    out = dict(state)
    if "r_upper" in out:
        m, v, t = out["r_upper"]
        out["r_upper"] = (m * mask.to(m.dtype), v * mask.to(v.dtype), t)
    return out
