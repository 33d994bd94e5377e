"""RFM appendix §1.2: the rotation layer's gradient against C_1·m, the product's lower bound, the FM's linear growth."""

import math

import numpy as np
import pytest
import torch

from fmlib.analysis import gradient_growth
from fmlib.analysis.gradient_growth import (
    ProductBounds,
    RotationBounds,
    _draw,
    fm_bounds,
    fm_gradient,
    fm_gradient_closed_form,
    growth_notice,
    inf_norm,
    product_gradient,
    rotation_gradient_closed_form,
    rotation_gradient_parts,
    rotation_layer_gradient,
    rotation_layer_output,
    sample_rotation_layer,
)

BOUNDS = [
    RotationBounds(),
    RotationBounds(eta=2.0, alpha=3.0, beta=0.5, gamma=2.0, zeta=4.0, theta=0.3),
    RotationBounds(eta=math.pi, alpha=0.2, beta=5.0, gamma=0.7, zeta=10.0, theta=2.0),
]


def autograd_gradients(s):
    X = s["X"].clone().requires_grad_(True)
    G, y = rotation_layer_output(X, s["B"], s["C"], s["D"], s["w"], s["U"])
    return torch.autograd.grad(y, (X, G))


@pytest.mark.parametrize("m, d, seed", [(2, 1, 0), (3, 4, 1), (7, 2, 2), (12, 8, 3)])
def test_closed_form_gradient_equals_autograd(m, d, seed):
    s = sample_rotation_layer(m, d, BOUNDS[1], seed)
    dydX, dydG = autograd_gradients(s)
    closed = rotation_gradient_closed_form(s["X"], s["B"], s["C"], s["D"], s["w"], dydG)
    assert torch.allclose(closed, dydX, atol=1e-12, rtol=1e-9)


def test_printed_bracket_does_not_type_check_and_the_corrected_one_does():
    """Slip: the printed "(∂y/∂G)ᵀVᵀ" multiplies d×m by d×m; (∂y/∂G)Vᵀ is the m×m factor P."""
    m, d = 5, 3
    s = sample_rotation_layer(m, d, RotationBounds(), 0)
    _, dydG = autograd_gradients(s)
    V = (s["D"] @ s["X"]).T
    with pytest.raises(RuntimeError):
        dydG.T @ V.T
    assert (dydG @ V.T).shape == (m, m)


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("d", [1, 4, 8])
def test_rotation_gradient_stays_below_C1_m_up_to_64_fields(bounds, d):
    C1 = bounds.C1(d)
    for m in list(range(2, 17)) + [24, 32, 48, 64]:
        for seed in range(2):
            r = rotation_layer_gradient(m, d, bounds, seed)
            for name in RotationBounds.ASSUMPTIONS:  # the sampled inputs satisfy every assumption
                assert r[name] < getattr(bounds, name), (name, m)
            assert 0 < r["grad"] <= C1 * m, (m, r["grad"], C1 * m)


@pytest.mark.parametrize("bounds", BOUNDS)
def test_each_part_stays_below_its_bound(bounds):
    """Corrected part bounds: PART III, like PART V, carries no factor d (the print has one)."""
    d = 8
    for m in (2, 5, 16, 64):
        s = sample_rotation_layer(m, d, bounds, m)
        _, dydG = autograd_gradients(s)
        parts = rotation_gradient_parts(s["X"], s["B"], s["C"], s["D"], s["w"], dydG)
        limits = bounds.part_bounds(m, d)
        for name, part in parts.items():
            assert inf_norm(part) <= limits[name], (name, m)


def test_C1_is_the_appendix_constant():
    b = RotationBounds(eta=2.0, alpha=3.0, beta=5.0, gamma=7.0, zeta=11.0, theta=13.0)
    d = 4
    assert b.C1(d) == pytest.approx(7 * 13 + 3 * 11 * 2 * 7 * 13 * d / 2 + 5 * 11 * 7 * 2 * 13 / 2)
    assert sum(b.part_bounds(10, d).values()) == pytest.approx(b.C1(d) * 10)


@pytest.mark.parametrize(
    "bounds", [ProductBounds(), ProductBounds(M=1.2, eps=0.1, exponent=2), ProductBounds(M=0.8, eps=0.3, exponent=3)]
)
def test_product_gradient_meets_its_lower_bound(bounds):
    for m in range(2, 65):
        for d in (1, 8):
            r = product_gradient(m, d, bounds, seed=m)
            lower = bounds.lower_bound(m)
            assert r["min_entry"] >= lower * (1 - 1e-12), (m, d)
            assert r["grad"] >= lower


def test_growth_table_product_explodes_rotation_stays_below_its_line():
    df = gradient_growth(m_max=64, d=4, trials=1)
    assert list(df["m"]) == list(range(2, 65))
    assert (df["product"] >= df["product_lower_bound"]).all()
    assert (df["rotation"] <= df["rotation_upper_bound"]).all()
    assert df["product_lower_bound"].iloc[-1] / df["product_lower_bound"].iloc[0] == pytest.approx(1.25**62)
    assert df["product"].iloc[-1] > 1e6 * df["product"].iloc[0]
    assert df["rotation"].max() < df["rotation_upper_bound"].iloc[0]  # below C_1·2 all the way to m = 64


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rotation_layer_gradient(1, 4), r"m must be an integer in 2\.\.64, got 1"),
        (lambda: rotation_layer_gradient(65, 4), r"m must be an integer in 2\.\.64, got 65"),
        (lambda: gradient_growth(m_max=2.5), r"m must be an integer in 2\.\.64"),
        (lambda: product_gradient(8, 0), r"embedding size d must be an integer in 1\.\.64"),
        (lambda: RotationBounds(alpha=0.0), r"violates the assumption ‖B̃ᵀ‖∞ < α"),
        (lambda: RotationBounds(theta=-1.0), r"theta = -1.0 violates the assumption ‖∂y/∂G‖∞"),
        (lambda: RotationBounds(eta=math.inf), r"eta = inf violates the assumption \|X\| < η"),
        (lambda: ProductBounds(M=0.0), r"M > 0"),
        (lambda: ProductBounds(M=1.0, eps=1.0), r"ε must be in \[0, M\)"),
        (lambda: ProductBounds(exponent=0), r"exponent α_i = 0 must be an integer in 1\.\.3"),
        (lambda: gradient_growth(m_max=64, product=ProductBounds(M=40.0, eps=1.0, exponent=3)), "overflows float64"),
        (lambda: gradient_growth(m_max=8, trials=0), r"trials must be an integer in 1\.\.20"),
    ],
)
def test_bad_input_names_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_product_bound_growth_needs_M_minus_eps_above_one():
    assert ProductBounds(M=1.5, eps=0.25).grows
    assert not ProductBounds(M=1.2, eps=0.3).grows
    assert ProductBounds(M=1.2, eps=0.3).lower_bound(64) < ProductBounds(M=1.2, eps=0.3).lower_bound(2)


def growth_rate(m, values):
    """Least-squares slope of log(values) against m: the base-e growth rate of an exponential."""
    return np.polyfit(np.asarray(m, dtype=float), np.log(np.asarray(values, dtype=float)), 1)[0]


@pytest.mark.parametrize("M, eps, a", [(1.5, 0.0, 1), (1.3, 0.0, 2), (0.8, 0.0, 3), (1.5, 0.25, 1), (1.2, 0.1, 2)])
def test_product_gradient_grows_at_the_rate_a_log_M(M, eps, a):
    """∂y/∂X_ij = a X_ij^{a−1} Π_{k≠i} X_kj^a: its size grows by a factor ≈ M^a per field.

    With ε = 0 (every |X_ij| = M) the rate is exactly a·log M; otherwise it lies in
    [a·log(M − ε), a·log(M + ε)] — and the lower bound's rate is exactly a·log(M − ε) (§1.2)."""
    bounds, ms = ProductBounds(M=M, eps=eps, exponent=a), list(range(2, 41))
    measured = growth_rate(ms, [product_gradient(m, 4, bounds, seed=m)["min_entry"] for m in ms])
    if eps == 0:
        assert measured == pytest.approx(a * math.log(M), rel=1e-9)
    else:
        assert a * math.log(M - eps) < measured < a * math.log(M + eps)
    assert growth_rate(ms, [bounds.lower_bound(m) for m in ms]) == pytest.approx(a * math.log(M - eps), rel=1e-9)


@pytest.mark.parametrize("bounds", BOUNDS[:2])
@pytest.mark.parametrize("d", [1, 4])
def test_rotation_gradient_grows_at_most_linearly_in_m(bounds, d):
    """The bound C_1·m has slope exactly C_1 in m (exponent 1 in log-log); the measured ‖∂y/∂X‖∞
    grows no faster — its log-log slope over m = 4..64 stays below 1 — while the product's grows
    exponentially (previous test)."""
    ms = [4, 8, 16, 32, 64]
    df = gradient_growth(m_max=64, d=d, rotation=bounds, trials=2).set_index("m")
    upper = df["rotation_upper_bound"]
    assert np.allclose(np.diff(upper.to_numpy()), bounds.C1(d))  # slope C_1 in m
    loglog = np.polyfit(np.log(ms), np.log(df.loc[ms, "rotation"].to_numpy()), 1)[0]
    assert loglog < 1.0, loglog
    exact = np.polyfit(np.log(ms), np.log(upper.loc[ms].to_numpy()), 1)[0]
    assert exact == pytest.approx(1.0)


@pytest.mark.parametrize("m, d, seed", [(2, 1, 0), (5, 3, 1), (12, 8, 2)])
def test_fm_gradient_is_Z_minus_X_i_by_a_naive_double_sum(m, d, seed):
    """∂/∂X_i of Σ_{i<j} ⟨X_i, X_j⟩, written as a loop over pairs, is Z − X_i ([FMGrad] eq. 8, coefficient 1)."""
    X = torch.randn(m, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).requires_grad_(True)
    y = sum(X[i] @ X[j] for i in range(m) for j in range(i + 1, m))
    (naive,) = torch.autograd.grad(y, X)
    torch.testing.assert_close(fm_gradient_closed_form(X.detach()), naive, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(fm_gradient_closed_form(X.detach()), 2 * naive)  # the printed coefficient 2 is not it
    draw = ProductBounds(M=1.3, eps=0.2)
    for signs in ("same", "mixed"):
        size, sign = _draw(m, d, draw, seed)  # the draw fm_gradient differentiates
        closed = fm_gradient_closed_form(size if signs == "same" else sign * size)
        assert fm_gradient(m, d, draw, seed, signs)["grad"] == pytest.approx(inf_norm(closed), rel=1e-12)


@pytest.mark.parametrize("M, eps", [(1.5, 0.0), (1.5, 0.25), (0.8, 0.3), (1.0, 0.0)])
@pytest.mark.parametrize("d", [1, 4])
def test_fm_gradient_grows_linearly_in_m(M, eps, d):
    """With one sign, d(m−1)(M−ε) ≤ ‖∂y/∂X‖∞ ≤ d(m−1)(M+ε) (exactly d(m−1)M at ε = 0): linear in m,
    whatever M — unlike the single product term, whose growth needs M − ε > 1; mixed signs only cancel."""
    bounds, ms = ProductBounds(M=M, eps=eps), np.arange(2, 65)
    same = np.array([fm_gradient(int(m), d, bounds, seed=int(m))["grad"] for m in ms])
    mixed = np.array([fm_gradient(int(m), d, bounds, seed=int(m), signs="mixed")["grad"] for m in ms])
    low, high = np.array([fm_bounds(int(m), d, bounds) for m in ms]).T
    assert np.all(low * (1 - 1e-12) <= same) and np.all(same <= high * (1 + 1e-12))
    assert np.all(mixed <= same * (1 + 1e-12))
    if eps == 0:
        np.testing.assert_allclose(same, d * (ms - 1) * M, rtol=1e-12)
    loglog = np.polyfit(np.log(ms[14:]), np.log(same[14:]), 1)[0]  # m = 16..64
    assert loglog == pytest.approx(1.0, abs=0.05)


def test_growth_table_has_the_fm_between_its_lines_and_the_notice_reads_its_numbers():
    df = gradient_growth(m_max=24, d=4, trials=2)
    assert (df["fm_lower_bound"] <= df["fm"]).all() and (df["fm"] <= df["fm_upper_bound"]).all()
    assert np.allclose(np.diff(df["fm_upper_bound"]), 4 * 1.75) and np.allclose(np.diff(df["fm_lower_bound"]), 4 * 1.25)
    notice = growth_notice(df)
    ratio = df["fm"].iloc[-1] / df["fm"].iloc[0]
    assert f"The FM's grows ×{ratio:.3g}" in notice and "linearly in m" in notice
    assert f"product term's gradient grows ×{df['product'].iloc[-1] / df['product'].iloc[0]:.3g}" in notice
    flat = growth_notice(gradient_growth(m_max=6, d=2, product=ProductBounds(M=1.0, eps=0.0), trials=1))
    assert "product term's gradient stays at 2" in flat and "exponential" not in flat
