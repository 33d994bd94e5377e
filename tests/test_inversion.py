"""Attention inversion, single layer: Def. 3.1, the App. A gradient lemmas, Thm. 4.2, invert()."""

import math

import pytest
import torch

from fmlib.inversion import attention_output, gamma_bound, gradient, hessian, invert, loss, planted_instance
from fmlib.inversion.attack import (
    assumption_R,
    descend,
    first_hit,
    near_start,
    replay_trial,
    success_rates,
    trials,
)
from fmlib.inversion.lemmas import SLIPS, lemma_gradient

D64 = torch.float64


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=D64)


def test_attention_output_matches_naive_def_3_1():
    d, n = 3, 5
    X, W, V = rand(d, n, seed=1), rand(d, d, seed=2), rand(d, d, seed=3)
    E = torch.exp(X.T @ W @ X)
    D = torch.diag(E @ torch.ones(n, dtype=D64))  # D(X) = diag(exp(XᵀWX) 1_n)
    naive = torch.linalg.inv(D) @ E @ X.T @ V
    assert attention_output(X, W, V).shape == (n, d)
    torch.testing.assert_close(attention_output(X, W, V), naive)


def test_loss_is_frobenius_plus_ridge():
    inst = planted_instance(4, 3, 1.0, seed=0)
    X = rand(3, 4, seed=5)
    expected = ((attention_output(X, inst.W, inst.V) - inst.B) ** 2).sum() + 0.7 * (X**2).sum()
    torch.testing.assert_close(loss(X, inst.W, inst.V, inst.B, 0.7), expected)
    assert loss(inst.X_true, inst.W, inst.V, inst.B, 0.0).item() == pytest.approx(0.0, abs=1e-24)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [0.0, 0.3])
def test_corrected_lemma_gradient_equals_autograd(seed, gamma):
    n, d = 3 + seed % 2, 2 + seed % 3
    inst = planted_instance(n, d, 1.5, seed=seed)
    X = rand(d, n, seed=10 + seed)
    torch.testing.assert_close(
        lemma_gradient(X, inst.W, inst.V, inst.B, gamma), gradient(X, inst.W, inst.V, inst.B, gamma)
    )


def test_printed_lemmas_show_both_slips():
    inst = planted_instance(4, 3, 1.0, seed=7)
    X = rand(3, 4, seed=8)
    auto = gradient(X, inst.W, inst.V, inst.B)
    printed = lemma_gradient(X, inst.W, inst.V, inst.B, printed=True)
    assert (printed - auto).abs().max() > 1e-2  # non-symmetric W: Def. A.4 orientation slip
    Ws = (inst.W + inst.W.T) / 2  # symmetric W removes the orientation slip ...
    auto_s = gradient(X, Ws, inst.V, inst.B)
    printed_s = lemma_gradient(X, Ws, inst.V, inst.B, printed=True)
    torch.testing.assert_close(2 * printed_s, auto_s)  # ... leaving Lemma A.17's missing factor 2
    assert (printed_s - auto_s).abs().max() > 1e-3
    assert len(SLIPS) == 2 and all({"where", "printed", "corrected"} <= set(s) for s in SLIPS)


def test_hessian_matches_finite_differences_of_gradient():
    inst = planted_instance(3, 2, 1.0, seed=1)
    X = rand(2, 3, seed=2)
    H = hessian(X, inst.W, inst.V, inst.B, 0.1)
    h = 1e-6
    for k in range(6):
        E = torch.zeros(6, dtype=D64)
        E[k] = h
        col = (
            gradient(X + E.reshape(2, 3), inst.W, inst.V, inst.B, 0.1)
            - gradient(X - E.reshape(2, 3), inst.W, inst.V, inst.B, 0.1)
        ).reshape(-1) / (2 * h)
        torch.testing.assert_close(H[:, k], col, atol=1e-6, rtol=1e-5)


def sample_assumption_point(n, d, R, seed):
    """W, V, X with spectral norm ≤ R and |b_ij| ≤ R² (Assumption 4.1)."""

    def normed(M, frac):
        return frac * R * M / torch.linalg.matrix_norm(M, ord=2)

    g = torch.Generator().manual_seed(seed)
    W, V, X = (
        normed(torch.randn(*s, generator=g, dtype=D64), 0.5 + 0.5 * torch.rand(1, generator=g).item())
        for s in ((d, d), (d, d), (d, n))
    )
    B = R**2 * (2 * torch.rand(n, d, generator=g, dtype=D64) - 1)
    return W, V, X, B


def test_gamma_bound_is_the_corrected_chain_of_lemmas_h1_h2():
    """γ = ½ · 2 (Lemma E.2's factor) · nd terms · |c| ≤ 2R² (F.2) · ‖∇²c‖ ≤ n · 36R⁶ (H.1 corrected)."""
    for n, d, R in [(3, 2, 1.2), (5, 4, 1.0), (8, 3, 2.0), (1, 7, 1.5)]:
        chain = 0.5 * 2 * (n * d) * (2 * R**2) * (n * 36 * R**6)
        assert gamma_bound(n, d, R) == pytest.approx(chain, rel=1e-12)
    assert gamma_bound(4, 3, 0.5) == gamma_bound(4, 3, 1.0)  # Assumption 4.1 asks R > 1


def hessian_of_c(X, W, V, B, i0, j0):
    """∇²c(X)_{i0,j0} by autograd, ordered token by token: block (i1, i2) is d×d (Lemma H.1's H^{(i1,i2)})."""
    d, n = X.shape

    def c(tokens):
        return attention_output(tokens.reshape(n, d).T, W, V)[i0, j0] - B[i0, j0]

    return torch.autograd.functional.hessian(c, X.T.reshape(-1).clone())


def test_lemma_h1_needs_the_factor_n():
    """|pᵀ∇²c p| ≤ max‖H^{(i1,i2)}‖ · n‖p‖² (corrected Lemma H.1) holds on every instance, while
    the printed step's ≤ max‖H^{(i1,i2)}‖ · ‖p‖² fails on real instances: ‖∇²c‖ exceeds its largest block."""
    d, ratios = 2, []
    for n in (2, 4, 8):
        for seed in range(6):
            W, V, X, B = sample_assumption_point(n, d, 1.0, seed)
            H = hessian_of_c(X, W, V, B, 0, 0)
            blocks = H.reshape(n, d, n, d).permute(0, 2, 1, 3)
            largest_block = torch.linalg.matrix_norm(blocks, ord=2).max().item()
            whole = torch.linalg.matrix_norm(H, ord=2).item()
            assert whole <= n * largest_block * (1 + 1e-12)
            ratios.append(whole / largest_block)
    assert max(ratios) > 1.5


def test_hessian_positive_definite_above_the_corrected_bound():
    n, d, R = 3, 2, 1.2
    gamma = 1.01 * gamma_bound(n, d, R)
    negative_somewhere = False
    for seed in range(30):
        W, V, X, B = sample_assumption_point(n, d, R, seed)
        assert assumption_R(W, V, X, B) <= R + 1e-9
        assert torch.linalg.eigvalsh(hessian(X, W, V, B, gamma))[0] > 0
        negative_somewhere |= torch.linalg.eigvalsh(hessian(X, W, V, B, 0.0))[0].item() < 0
    assert negative_somewhere  # without the regulariser the loss is not convex there


def well_conditioned():
    inst = planted_instance(2, 2, 1.0, seed=18)
    lam = torch.linalg.eigvalsh(hessian(inst.X_true, inst.W, inst.V, inst.B))
    return inst, lam


def test_gd_recovers_planted_input_and_newton_needs_fewer_iterations():
    inst, lam = well_conditioned()
    assert lam[-1] / lam[0] < 10  # the instance is well conditioned at the secret
    X0 = inst.X_true + 0.1 * rand(2, 2, seed=3)
    gd = invert(inst.W, inst.V, inst.B, "gd", steps=500, lr=1 / lam[-1].item(), X0=X0, X_true=inst.X_true)
    newton = invert(inst.W, inst.V, inst.B, "newton", steps=50, X0=X0, X_true=inst.X_true)
    gd_hit = first_hit(torch.tensor(gd.trajectory["dist"].values)[:, None], 1e-4).item()
    newton_hit = first_hit(torch.tensor(newton.trajectory["dist"].values)[:, None], 1e-4).item()
    assert gd_hit > 0 and (gd.X - inst.X_true).norm() < 1e-4
    assert 0 < newton_hit < gd_hit
    assert newton.trajectory["min_eig"].notna().all() and newton.trajectory["min_eig"].iloc[-1] > 0


def test_adam_decreases_loss_and_trajectory_columns():
    inst = planted_instance(3, 2, 1.0, seed=2)
    res = invert(inst.W, inst.V, inst.B, "adam", steps=200, seed=1, X_true=inst.X_true)
    traj = res.trajectory
    assert list(traj.columns) == ["step", "loss", "grad_norm", "dist", "min_eig"]
    assert traj["loss"].iloc[-1] < traj["loss"].iloc[0]
    assert traj["min_eig"].notna().sum() >= 10  # tracked at log-spaced steps
    no_truth = invert(inst.W, inst.V, inst.B, "gd", steps=3, seed=1)
    assert no_truth.trajectory["dist"].isna().all()


def test_bad_input_messages():
    inst = planted_instance(3, 2, 1.0, seed=0)
    with pytest.raises(ValueError, match="V must be d×d"):
        invert(inst.W, torch.zeros(3, 3), inst.B)
    with pytest.raises(ValueError, match="B must be n×d"):
        invert(inst.W, inst.V, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="W must be square"):
        invert(torch.zeros(2, 3), inst.V, inst.B)
    bad = inst.B.clone()
    bad[0, 0] = math.nan
    with pytest.raises(ValueError, match="B contains NaN"):
        invert(inst.W, inst.V, bad)
    with pytest.raises(ValueError, match="gamma must be"):
        invert(inst.W, inst.V, inst.B, gamma=-1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        invert(inst.W, inst.V, inst.B, method="bfgs")
    with pytest.raises(ValueError, match="X0 must be d×n"):
        invert(inst.W, inst.V, inst.B, X0=torch.zeros(3, 2))


def test_too_large_for_hessian_falls_back_and_says_so():
    big = planted_instance(31, 10, 0.5, seed=0)  # n·d = 310 > HESSIAN_MAX_DIM
    res = invert(big.W, big.V, big.B, "newton", steps=2, seed=0)
    assert res.method == "gd"
    assert any("Hessian is not formed" in note and "fell back" in note for note in res.notes)
    assert res.trajectory["min_eig"].isna().all()


def test_regulariser_trades_recovery_for_convexity():
    gammas = [0.0, 1.0, 1e4]
    table = trials(3, 2, 1.0, gammas, count=12, steps=40, start_noise=0.1)
    rates = success_rates(table).set_index("gamma")
    assert rates.loc[0.0, "success_rate"] > 0.5  # near starts recover the secret without γ
    assert rates.loc[1e4, "success_rate"] == 0.0  # huge γ: the minimiser shrinks to ≈ 0
    assert rates.loc[1e4, "median_rel_error"] > 0.99
    assert rates.loc[1e4, "agree_rate"] == 1.0  # ... but every start reaches it


def test_descend_batches_independent_problems():
    a, b = planted_instance(3, 2, 1.0, seed=1), planted_instance(3, 2, 1.0, seed=2)
    X0 = torch.stack([rand(2, 3, seed=4), rand(2, 3, seed=5)])
    Xb, _ = descend(X0, *(torch.stack([getattr(a, k), getattr(b, k)]) for k in ("W", "V", "B")), 0.0, "newton", 5, 1.0)
    one = invert(b.W, b.V, b.B, "newton", steps=5, X0=X0[1])
    torch.testing.assert_close(Xb[1], one.X)


def test_replay_trial_reruns_one_row_of_the_trials_table():
    table = trials(3, 2, 1.0, [0.0], count=4, steps=30, seed=3)
    assert table["success"].any() and not table["success"].all()
    for row in table.itertuples():
        again = replay_trial(3, 2, 1.0, row.trial, row.start, 4, steps=30, seed=3)
        secret = planted_instance(3, 2, 1.0, 3 + row.trial).X_true
        assert again.trajectory["dist"].iloc[-1] / secret.norm().item() == pytest.approx(row.rel_error, abs=1e-6)


def test_near_start_is_the_secret_plus_scaled_seeded_noise():
    X = rand(3, 4, seed=2)
    a, b = near_start(X, 0.3, seed=1) - X, near_start(X, 0.1, seed=1) - X
    torch.testing.assert_close(a, 3 * b)
    assert not torch.equal(near_start(X, 0.3, seed=2), near_start(X, 0.3, seed=1))
