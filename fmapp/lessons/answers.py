"""Computed answers for lesson questions: each function returns a number and one sentence.

A lesson file names one of ANSWERS in a stop's ``compute`` field; the page calls it when the
student presses Reveal. Each is small (well under a second, except ``rafm_parameter_share``,
which loads the data set once).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fmlib.analysis.frequency import parameter_summary
from fmlib.analysis.gradient_growth import ProductBounds, RotationBounds, gradient_growth
from fmlib.analysis.interactions import budget, percent_left
from fmlib.models.fm import fm_pairwise


@dataclass(frozen=True)
class Answer:
    value: float
    text: str


def _embeddings(m: int, k: int, seed: int, batch: int = 64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, m, k, generator=gen, dtype=torch.float64)


def rendle_gap(m: int = 12, k: int = 16, seed: int = 0) -> Answer:
    """Largest relative gap between the naive pair sum Σ_{f<g}⟨e_f, e_g⟩ and Rendle's identity
    ½(‖Σ_f e_f‖² − Σ_f ‖e_f‖²) ([Rendle2010] Lemma 3.1) on random embeddings."""
    e = _embeddings(m, k, seed)
    naive = sum((e[:, f] * e[:, g]).sum(1) for f in range(m) for g in range(f + 1, m))
    gap = float((naive - fm_pairwise(e)).abs().max() / naive.abs().max())
    pairs = m * (m - 1) // 2
    return Answer(
        gap,
        f"Over 64 random samples with m = {m} fields and k = {k}, the largest relative difference is {gap:.1e}: "
        f"float64 rounding. The naive sum takes {pairs} inner products ({pairs * k} multiplications), "
        f"the identity {m + 1} squared norms ({(m + 1) * k}).",
    )


def dplr_budget(m: int = 12, rank: int = 2) -> Answer:
    """Parameters of a rank-ρ DPLR R, ρ(m+1) (DPLR §5.1), against the m(m−1)/2 pairs of FwFM's R (FwFM eq. 3)."""
    kept = budget(m, rank)
    return Answer(
        kept,
        f"ρ(m+1) = {rank}·{m + 1} = {kept}: at this budget a pruned R keeps {kept} of the {m * (m - 1) // 2} "
        f"pairs R_ij, i < j ({percent_left(m, kept):.0f} %).",
    )


def rafm_parameter_share(dataset: str = "ml-100k", ranks: tuple[int, ...] = (8, 32), seed: int = 0) -> Answer:
    """Embedding parameters of RaFM, Σ_k D_k|F_k| (RaFM eq. 17 ranks), as a percentage of an FM of rank D_m."""
    from fmlib.data import movielens, split

    data = split(movielens.load(dataset), seed=seed)
    s = parameter_summary(data.train.feature_counts(), ranks)
    share = 100 * s["share"]
    return Answer(
        share,
        f"On {dataset}'s training split, RaFM with ranks {list(s['ranks'])} stores {s['rafm_parameters']:,} "
        f"embedding numbers, {share:.1f} % of the {s['fm_parameters']:,} of an FM of rank {s['ranks'][-1]} "
        f"(features per rank: {s['F_sizes']}).",
    )


def product_gradient_growth(m_from: int = 8, m_to: int = 32, d: int = 8, trials: int = 3) -> Answer:
    """How much ‖∂y/∂X‖∞ grows from m_from to m_to fields: product interaction vs rotation layer ([RFM] §1.2),
    read from the Gradient growth page's own table (``gradient_growth``, its default bounds, ``trials`` draws per m),
    so that the stop and the page state the same numbers."""
    table = gradient_growth(m_to, d, RotationBounds(), ProductBounds(), trials=trials).set_index("m")
    product = float(table.loc[m_to, "product"] / table.loc[m_from, "product"])
    last = table.loc[m_to]
    return Answer(
        product,
        f"From m = {m_from} to m = {m_to} (d = {d}), the product interaction's gradient grows {product:.3g}-fold "
        f"(the smallest of {trials} draws at each m, as on the page's chart). The rotation layer's gradient at "
        f"m = {m_to} is {last.rotation:.3g}, under its bound C₁·m = {last.rotation_upper_bound:.3g}, which grows "
        f"only {m_to / m_from:.0f}-fold: linear in m.",
    )


PRINTED_COEFFICIENT = 2  # [FMGrad] eq. 8 as printed: X_j Z_i − 2 P_ij X_j²


def fm_gradient_coefficient(m: int = 12, k: int = 16, seed: int = 0) -> Answer:
    """c in [FMGrad] eq. 8, ∂φ/∂P_ij = X_j Z_i − c·P_ij X_j² with Z = PX (printed with c = 2), fitted by least
    squares to autograd's gradient of the FM φ(X) = Σ_{j<j'} ⟨P_{:,j}, P_{:,j'}⟩ X_j X_j' on random P (k × m)
    and X (m features)."""
    gen = torch.Generator().manual_seed(seed)
    P = torch.randn(k, m, generator=gen, dtype=torch.float64).requires_grad_(True)
    X = torch.randn(64, m, generator=gen, dtype=torch.float64)
    pairs = torch.einsum("ij,il,bj,bl->bjl", P, P, X, X)  # ⟨P_:j, P_:l⟩ X_j X_l per sample
    (grad,) = torch.autograd.grad(torch.triu(pairs, diagonal=1).sum(), P)
    P = P.detach()
    Z = X @ P.T  # (64, k): memoised once per sample
    memo = (Z[:, :, None] * X[:, None, :]).sum(0)  # Σ_samples X_j Z_i
    term = (P[None] * (X * X)[:, None, :]).sum(0)  # Σ_samples P_ij X_j²
    c = float(((memo - grad) * term).sum() / term.pow(2).sum())
    residual = float((memo - c * term - grad).abs().max())
    return Answer(
        c,
        f"Autograd's gradient on random $P$ ({k} × {m}) and 64 samples $X$ equals "
        f"$X_j Z_i - {c:.6f}\\,P_{{ij}} X_j^2$ (largest leftover {residual:.1e}): the coefficient is {round(c)}, "
        f"not the printed {PRINTED_COEFFICIENT}. In fmlib's field form, with $e_f = P_{{:,f}} X_f$, that is "
        f"$\\partial\\varphi/\\partial e_f = Z - {round(c) if round(c) != 1 else ''}e_f$, where the print gives "
        f"$Z - {PRINTED_COEFFICIENT}e_f$.",
    )


ANSWERS = {
    f.__name__: f
    for f in (rendle_gap, dplr_budget, rafm_parameter_share, product_gradient_growth, fm_gradient_coefficient)
}
