"""Cross-check corrected formulas of the catalog against torch autograd (seeded random inputs)."""

import numpy as np
import sympy as sp
import torch

from fmlib.derivations import attention, fm_gradient, rfm

torch.manual_seed(0)


def evaluate(matrix, values):
    """Numeric value of a sympy matrix, symbols looked up by name. The symbols are renamed to Python names in one
    pass first: lambdify renames a symbol whose name is no Python name (``X_{1,1}``) by walking the whole matrix
    once per symbol."""
    symbols = sorted(matrix.free_symbols, key=lambda s: s.name)
    plain = sp.symbols(f"s0:{len(symbols)}")
    f = sp.lambdify(plain, matrix.xreplace(dict(zip(symbols, plain))), modules="numpy")
    return np.asarray(f(*[values[s.name] for s in symbols]), dtype=float)


def named(prefix, tensor, column_first=False):
    """name_{i,j} -> value (1-based), as core.sym_matrix names them; x_{i,j} is column i, row j."""
    t = tensor.detach().numpy()
    return {
        f"{prefix}_{{{i + 1},{j + 1}}}": (t[j, i] if column_first else t[i, j])
        for i in range(t.shape[1] if column_first else t.shape[0])
        for j in range(t.shape[0] if column_first else t.shape[1])
    }


def test_fm_gradient_corrected_line_matches_autograd_and_printed_does_not():
    k, d = 3, 4
    P = torch.randn(k, d, dtype=torch.float64, requires_grad=True)
    X = torch.randn(d, dtype=torch.float64)
    phi = 0.5 * ((P @ X).pow(2).sum() - (P * X).pow(2).sum())  # note eq. (1)
    (grad,) = torch.autograd.grad(phi, P)
    Z = (P @ X).detach()
    corrected = torch.outer(Z, X) - P.detach() * X.pow(2)  # X_j Z_i − P_ij X_j²
    printed = torch.outer(Z, X) - 2 * P.detach() * X.pow(2)  # note eq. (8) as printed
    assert torch.allclose(grad, corrected)
    assert not torch.allclose(grad, printed)
    Ps, Xs, _ = fm_gradient._setup(d)
    values = {**named("P", P), **{f"X_{{{j + 1}}}": X[j].item() for j in range(d)}}
    assert np.allclose(evaluate(fm_gradient.sympy_gradient(Ps, Xs), values), grad.numpy())


def test_attention_lemma_a17_with_factor_two_matches_autograd():
    n, d = 2, attention.D
    X = torch.randn(d, n, dtype=torch.float64, requires_grad=True)
    W, V, B = (torch.randn(*s, dtype=torch.float64) for s in ((d, d), (d, d), (n, d)))
    # eq. (1) with Wᵀ: the loss that equals Σ c² of §3.2 for a general W
    A = torch.softmax(X.T @ W.T @ X, dim=1)
    loss = ((A @ X.T @ V - B) ** 2).sum()
    (grad,) = torch.autograd.grad(loss, X)
    values = {**named("x", X, column_first=True), **named("w", W), **named("v", V), **named("b", B)}
    lhs, rhs = attention._lemma_a17(2)(n)
    formula = evaluate(rhs, values).reshape(n, d)  # entries ordered (i1, j1)
    assert np.allclose(formula, grad.numpy().T)
    printed = evaluate(attention._lemma_a17(1)(n)[1], values).reshape(n, d)
    assert np.allclose(2 * printed, grad.numpy().T)  # the printed line is half the gradient
    plain = torch.softmax(X.T @ W @ X, dim=1)  # eq. (1) as printed, with W
    assert not torch.allclose(((plain @ X.T @ V - B) ** 2).sum(), loss)


def test_rfm_part_ii_matches_autograd_through_cos_q():
    m, d = 2, 3  # the derivation's sizes: m = n fields, d = n + 1
    X = torch.randn(d * m, m, dtype=torch.float64)
    Bt, Ct, Dt = (torch.randn(d, d * m, dtype=torch.float64) for _ in range(3))
    w, Gamma = torch.randn(d, dtype=torch.float64), torch.randn(m, d, dtype=torch.float64)
    Xa = X.clone().requires_grad_(True)  # X only inside cos Q
    Q, K, V = (Bt @ X).T, (Ct @ X).T, (Dt @ X).T
    one = torch.cos((Bt @ Xa).T) @ torch.diag(w) @ torch.cos(K.T) + torch.sin(Q) @ torch.diag(w) @ torch.sin(K.T)
    y = (Gamma * (torch.sigmoid(one) @ V)).sum()
    (grad,) = torch.autograd.grad(y, Xa)
    layer = rfm._Layer(m)
    values = {
        **named("X", X),
        **named("B", Bt),
        **named("C", Ct),
        **named("D", Dt),
        **named(r"\Gamma", Gamma),
        **{f"w_{{{i + 1}}}": w[i].item() for i in range(d)},
    }
    formula = evaluate(-layer.B.T * layer.F(printed=False), values)
    assert np.allclose(formula, grad.numpy())


def test_lemma_e2_hessian_of_l_has_the_factor_two():
    """[AttnInv] Lemma E.2 as autograd sees it: ∇²L = 2 Σ (∇c ∇cᵀ + c ∇²c), the factor that
    attention-hessian-bound step 2 measures with sympy (`attention._e2_factor`)."""
    n, d = 2, attention.D
    W, V, B = (torch.randn(*s, dtype=torch.float64) for s in ((d, d), (d, d), (n, d)))

    def c(x):  # every c(X)_{i,j}, X = x as d×n; eq. (1) with Wᵀ (§3.2's Σ c²)
        X = x.reshape(d, n)
        return (torch.softmax(X.T @ W.T @ X, dim=1) @ X.T @ V - B).reshape(-1)

    x = torch.randn(d * n, dtype=torch.float64)
    hessian = torch.autograd.functional.hessian(lambda x: (c(x) ** 2).sum(), x)
    jacobian = torch.autograd.functional.jacobian(c, x)
    curvature = torch.stack([torch.autograd.functional.hessian(lambda x, k=k: c(x)[k], x) for k in range(n * d)])
    parts = jacobian.T @ jacobian + torch.einsum("k,kab->ab", c(x), curvature)
    assert torch.allclose(hessian, 2 * parts)
    assert not torch.allclose(hessian, parts)  # Lemma E.2 as printed
