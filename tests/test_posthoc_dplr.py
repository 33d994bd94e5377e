"""Post-hoc DPLR (DPLR App. C) recovers an R that is exactly diagonal-plus-rank-ρ (eq. 10)."""

import numpy as np
import pytest
import torch

from fmlib.analysis import dplr_posthoc
from fmlib.analysis.interactions import offdiag_error
from fmlib.models.dplr import dplr_matrix


def exact_dplr(m, rank, signs, seed):
    gen = torch.Generator().manual_seed(seed)
    U = torch.randn(rank, m, generator=gen, dtype=torch.float64)
    e = (0.5 + 1.5 * torch.rand(rank, generator=gen, dtype=torch.float64)) * torch.tensor(signs, dtype=torch.float64)
    return dplr_matrix(U, e).numpy()


def random_cases(count, seed=0):
    """(m, ρ, signs of e, seed) with ρ in 1..4, m in ρ+2..12, every sign pattern possible."""
    rng = np.random.default_rng(seed)
    for case in range(count):
        rank = int(rng.integers(1, 5))
        m = int(rng.integers(rank + 2, 13))
        yield m, rank, [float(s) for s in rng.choice([-1.0, 1.0], size=rank)], case


@pytest.mark.parametrize("m, rank, signs, seed", list(random_cases(40)))
def test_eig_recovers_an_exact_dplr_matrix_for_every_m_and_sign_pattern(m, rank, signs, seed):
    R = exact_dplr(m, rank, signs, seed)
    fit = dplr_posthoc(R, rank, "eig")
    assert offdiag_error(fit.R, R) < 1e-9
    assert np.allclose(np.diag(fit.R), 0)


@pytest.mark.parametrize("m, rank", [(3, 1), (4, 2), (5, 3), (6, 4), (7, 3), (8, 4), (9, 5)])
def test_eig_recovers_at_small_m_with_mixed_signs(m, rank):
    """m ≤ 2ρ, where no minor gives the diagonal directly and the fit has spurious local minima."""
    signs = [(-1.0) ** r for r in range(rank)]
    R = exact_dplr(m, rank, signs, seed=m)
    assert offdiag_error(dplr_posthoc(R, rank, "eig").R, R) < 1e-9


def test_the_signs_of_e_come_back():
    """A rank-3 R with e of signs (+, −, +) at m = 7 (where the alternating fill alone stalls)."""
    R = exact_dplr(7, 3, [1.0, -1.0, 1.0], seed=3)
    fit = dplr_posthoc(R, 3, "eig")
    assert sorted(np.sign(fit.e)) == [-1.0, 1.0, 1.0]
    assert offdiag_error(fit.R, R) < 1e-9


def test_eig_is_the_best_offdiagonal_fit_it_finds_on_a_matrix_that_is_not_dplr():
    """On a random symmetric R no rank-ρ R̃ is exact; the fit beats the plain truncation off the diagonal."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(9, 9))
    R = A + A.T - np.diag(np.diag(A + A.T))
    lam, Q = np.linalg.eigh(R)
    top = np.argsort(-np.abs(lam))[:2]
    plain = (Q[:, top] * lam[top]) @ Q[:, top].T
    fit = dplr_posthoc(R, 2, "eig")
    assert offdiag_error(fit.R, R) < offdiag_error(plain, R)
