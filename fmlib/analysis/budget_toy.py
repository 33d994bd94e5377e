"""A five-field toy R: what pruning and diagonal-plus-low-rank keep of it at one budget ([DPLR] §5.1).

Made up to show the two ideas, not measured: R_fg = u_f u_g off the diagonal (a strong field interacts
strongly with every other, a pattern of rank one), except one odd pair, age × hour, of the other sign.
At ρ = 1 the budget is ρ(m+1) = 6 numbers for m(m−1)/2 = 10 pairs. Pruning keeps the 6 largest |R_fg|
exactly — the odd pair among them — and zeroes the other 4. A rank-1 DPLR R̃ = Uᵀdiag(e)U + diag(d)
([DPLR] eq. 10; U: 1 × 5, e: 1 number) gives every pair a value: close where R follows the pattern,
wrong for the odd pair. The Field interactions page draws it before the learned R.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .interactions import budget, dplr_posthoc, offdiag_error, prune

FIELDS = ("user", "movie", "genre", "age", "hour")
STRENGTH = (1.2, 1.0, 0.8, 0.6, 0.4)  # u_f: R_fg = u_f u_g off the diagonal
ODD = ("age", "hour", -0.6)  # the one pair that breaks the pattern
RANK = 1


def toy_R() -> np.ndarray:
    """The toy's 5 × 5 R: u uᵀ off the diagonal, the odd pair set to its own value."""
    u = np.asarray(STRENGTH)
    R = np.outer(u, u)
    np.fill_diagonal(R, 0.0)
    f, g, value = FIELDS.index(ODD[0]), FIELDS.index(ODD[1]), ODD[2]
    R[f, g] = R[g, f] = value
    return R


@dataclass(frozen=True)
class BudgetToy:
    """The toy R, its pruned and its post-hoc DPLR version at rank ``rank`` (``keep`` = ρ(m+1) numbers each)."""

    R: np.ndarray
    pruned: np.ndarray
    dplr: np.ndarray
    rank: int
    keep: int

    @property
    def pairs(self) -> int:
        """m(m−1)/2, the pairs an FwFM weighs."""
        m = len(self.R)
        return m * (m - 1) // 2

    @property
    def errors(self) -> dict[str, float]:
        """Relative error off the diagonal of each approximation (``offdiag_error``)."""
        return {"pruned": offdiag_error(self.pruned, self.R), "dplr": offdiag_error(self.dplr, self.R)}

    def odd_pair(self) -> tuple[float, float, float]:
        """The odd pair's R_fg in R, pruned R and DPLR R̃."""
        f, g = FIELDS.index(ODD[0]), FIELDS.index(ODD[1])
        return float(self.R[f, g]), float(self.pruned[f, g]), float(self.dplr[f, g])


def budget_toy(rank: int = RANK) -> BudgetToy:
    """The toy R pruned to ρ(m+1) entries and approximated by a rank-ρ DPLR (post hoc, eigen method)."""
    R = toy_R()
    keep = budget(len(R), rank)
    return BudgetToy(R, prune(R, keep), dplr_posthoc(R, rank).R, rank, keep)
