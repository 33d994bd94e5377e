"""RFM model: the rotation layer against the appendix's complex form, gradients, rebuild, training."""

import math

import pytest
import torch

from fmlib.data import synthetic
from fmlib.data.dataset import Dataset
from fmlib.data.schema import Schema
from fmlib.models import build_model
from fmlib.models.rfm import RFM, CosSin, RotationAttention, RotationLayer, rotation_logits
from fmlib.train import TrainConfig, evaluate, fit


@pytest.fixture(autouse=True)
def one_thread():
    """Small models train far faster on one thread when the 2 cores are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def complex_logits(q, k, w):
    """Re[(exp(iQ) diag(w)) exp(−iK)ᵀ] as printed in the RFM appendix §1.2."""
    return ((torch.exp(1j * q) * w) @ torch.exp(-1j * k).T).real


def multi_field_data(n=200, seed=0) -> Dataset:
    """Three single fields and one multi-valued field (3 slots, averaged), random ratings."""
    gen = torch.Generator().manual_seed(seed)
    schema = Schema.build(
        [
            ("user", "context", "single", 6, 1),
            ("hour", "context", "single", 4, 1),
            ("movie", "item", "single", 7, 1),
            ("genres", "item", "multi", 5, 3),
        ]
    )
    offsets = [f.offset for f in schema.fields]
    single = torch.stack(
        [torch.randint(1, f.cardinality, (n,), generator=gen) + f.offset for f in schema.fields[:3]], 1
    )
    genres = torch.randint(1, 5, (n, 3), generator=gen) + offsets[3]
    count = torch.randint(1, 4, (n,), generator=gen)
    present = torch.arange(3)[None, :] < count[:, None]
    weight = torch.cat([torch.ones(n, 3), present.float() / count[:, None]], 1)
    index = torch.cat([single, torch.where(present, genres, offsets[3])], 1)
    rating = torch.randint(1, 6, (n,), generator=gen).float()
    return Dataset(schema, index, weight, rating, rating_range=(1.0, 5.0))


def test_rotation_logits_equal_complex_and_elementwise_forms():
    gen = torch.Generator().manual_seed(0)
    q, k = 3 * torch.randn(2, 7, 5, generator=gen, dtype=torch.float64)
    w = torch.randn(5, generator=gen, dtype=torch.float64)
    real = rotation_logits(q, k, w)
    assert torch.allclose(real, complex_logits(q, k, w), atol=1e-12)
    # entry (i, l) is Σ_c w_c cos(q_ic − k_lc): the angle between query i and key l
    naive = torch.tensor(
        [[sum(w[c] * math.cos(q[i, c] - k[l, c]) for c in range(5)) for l in range(7)] for i in range(7)],
        dtype=torch.float64,
    )
    assert torch.allclose(real, naive, atol=1e-12)


def naive_attention(theta, W_Q, W_K, W_V, w, residual):
    """residual + σ(Re[(exp(iQ) diag(w)) exp(−iK)ᵀ]) V per sample and head, heads concatenated,
    with Q, K, V the per-field projections: every step spelled out, autograd differentiates it."""
    B, m, _ = theta.shape
    c = w.numel()
    heads = W_Q.shape[-1] // c
    out = []
    for b in range(B):
        Q, K, V = (torch.stack([theta[b, f] @ W[f] for f in range(m)]) for W in (W_Q, W_K, W_V))
        heads_out = [
            torch.sigmoid(complex_logits(Q[:, s], K[:, s], w)) @ V[:, s]
            for s in (slice(j * c, (j + 1) * c) for j in range(heads))
        ]
        out.append(residual[b] + torch.cat(heads_out, 1))
    return torch.stack(out)


@pytest.mark.parametrize("heads", [1, 2, 3])
def test_rotation_attention_equals_the_complex_form_and_autograd(heads):
    """``RotationAttention`` (hand-written backward) == residual + σ(Re[(exp(iQ) diag(w)) exp(−iK)ᵀ]) V
    per (sample, head): values, and gradients for θ, W_Q, W_K, W_V, w and the residual against
    autograd through the complex form; gradcheck."""
    gen = torch.Generator().manual_seed(heads)
    B, m, k, c = 3, 4, 5, 2
    h = heads * c

    def rand(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=gen, dtype=torch.float64)).requires_grad_()

    args = (rand(B, m, k, scale=2), rand(m, k, h), rand(m, k, h), rand(m, k, h), rand(c), rand(B, m, h))
    fast = RotationAttention.apply(*args)
    naive = naive_attention(*args)
    assert torch.allclose(fast, naive, atol=1e-12)
    upstream = torch.randn(B, m, h, generator=gen, dtype=torch.float64)
    for a, b in zip(torch.autograd.grad(fast, args, upstream), torch.autograd.grad(naive, args, upstream)):
        assert torch.allclose(a, b, atol=1e-10)
    assert torch.autograd.gradcheck(RotationAttention.apply, args)


def test_cos_sin_equals_torch_and_its_gradient():
    """``CosSin`` = [cos x, sin x], its gradient reusing the forward's cosines and sines; gradcheck."""
    x = (3 * torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)).requires_grad_()
    assert torch.allclose(CosSin.apply(x), torch.stack([torch.cos(x), torch.sin(x)]), atol=1e-14)
    assert torch.autograd.gradcheck(CosSin.apply, (x,))


def test_rotation_layer_equals_naive_complex_form_values_and_gradients():
    torch.manual_seed(0)
    m, k, h, heads = 4, 3, 6, 2
    layer = RotationLayer(m, k, h, heads, dropout=0.0).double().eval()
    with torch.no_grad():
        layer.w.normal_()
        layer.norm.weight.normal_()
        layer.norm.bias.normal_()
    theta = torch.randn(2, m, k, dtype=torch.float64, requires_grad=True)
    out = layer(theta)
    dh = h // heads
    naive = []
    for b in range(2):
        Q = torch.stack([theta[b, f] @ layer.W_Q[f] for f in range(m)])  # per-field projections
        K = torch.stack([theta[b, f] @ layer.W_K[f] for f in range(m)])
        V = torch.stack([theta[b, f] @ layer.W_V[f] for f in range(m)])
        G = torch.cat(
            [
                torch.sigmoid(complex_logits(Q[:, s], K[:, s], layer.w)) @ V[:, s]
                for s in (slice(i * dh, (i + 1) * dh) for i in range(heads))
            ],
            1,
        )
        naive.append(layer.norm(G + theta[b] @ layer.W_res.weight.T))
    naive = torch.stack(naive)
    assert torch.allclose(out, naive, atol=1e-10)
    upstream = torch.randn_like(out)
    inputs = [theta, *layer.parameters()]
    for a, b in zip(torch.autograd.grad(out, inputs, upstream), torch.autograd.grad(naive, inputs, upstream)):
        assert torch.allclose(a, b, atol=1e-9)


def naive_rfm(model, index, weight):
    """The RFM score with every step spelled out: the rotation layers, r = cos G and p = sin G by
    torch's cos and sin (autograd differentiates them), the residual LayerNorm applied to r and to p
    separately, and AmpNet applied to r and to p separately: w0 + Σ w_i x_i + f(r) + f(p)."""
    e = model.field_embeddings(index, weight)
    G = e
    for layer in model.rotations:
        G = layer(G)
    r, p = torch.cos(G), torch.sin(G)
    if model.residual:
        angle0 = model.P(e)
        r = model.residual_norm(r + torch.cos(angle0))
        p = model.residual_norm(p + torch.sin(angle0))
    return model.first_order(index, weight) + model.f(r) + model.f(p)


@pytest.mark.parametrize("hp", [dict(), dict(layers=2, residual=False, heads=4)])
def test_score_and_gradients_equal_the_step_by_step_form(hp):
    """The stacked readout (cos and sin evaluated once, with their own backward; r and p through
    one LayerNorm and one AmpNet pass) == the step-by-step form, values and gradients."""
    data = multi_field_data()
    torch.manual_seed(0)
    model = build_model("rfm", data.schema, dim=8, **hp).double().eval()
    with torch.no_grad():
        model.embedding.weight.mul_(20)  # angles of order 1, not near the identity
        model.linear.weight.normal_()
    weight = data.weight.double()
    fast, naive = model(data.index, weight), naive_rfm(model, data.index, weight)
    assert torch.allclose(fast, naive, atol=1e-10)
    upstream = torch.randn(len(fast), dtype=torch.float64)
    params = list(model.parameters())
    for a, b in zip(torch.autograd.grad(fast, params, upstream), torch.autograd.grad(naive, params, upstream)):
        assert torch.allclose(a, b, atol=1e-9)


@pytest.mark.parametrize(
    "hp",
    [
        dict(layers=1, residual=True),
        dict(layers=3, residual=False, heads=4),
        dict(layers=2, residual=True, hidden=16, groups=2),
    ],
)
def test_every_parameter_is_registered_and_receives_gradient(hp):
    data = multi_field_data()
    torch.manual_seed(0)
    model = build_model("rfm", data.schema, dim=8, **hp)
    score = model(data.index, data.weight)
    assert score.shape == (len(data),)
    torch.nn.functional.mse_loss(score, data.rating).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name} got no gradient"
    n_layers = hp["layers"]
    assert sum(1 for n, _ in model.named_parameters() if n.endswith(".W_Q")) == n_layers
    assert hasattr(model, "P") == hp["residual"]


def test_hparams_rebuild_the_same_model():
    data = multi_field_data()
    model = build_model(
        "rfm", data.schema, dim=8, hidden=12, heads=3, layers=2, dropout=0.2, mlp_hidden=8, groups=2, residual=False
    ).eval()
    again = build_model("rfm", data.schema, **model.hparams())
    again.load_state_dict(model.state_dict())
    again.eval()
    assert model.hparams() == again.hparams()
    assert torch.equal(model(data.index, data.weight), again(data.index, data.weight))


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(layers=4), "layers must be in 1..3"),
        (dict(hidden=10, heads=3), "multiple of heads"),
        (dict(mlp_hidden=10, groups=4), "multiple of groups"),
        (dict(dropout=1.0), "dropout must be in"),
    ],
)
def test_bad_hyperparameters_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        RFM(multi_field_data().schema, **bad)


@pytest.mark.parametrize("task", ["rating", "click"])
def test_rfm_learns_a_synthetic_task(task):
    data = synthetic.make(synthetic.block_R(4), n_samples=3000, cardinality=8, dim=2, seed=1)
    train, valid = data.subset(range(2500)), data.subset(range(2500, 3000))
    torch.manual_seed(0)
    model = build_model("rfm", data.schema, dim=8, hidden=16, mlp_hidden=16)
    before = evaluate(model, valid, task)
    run = fit(model, train, valid, TrainConfig(task=task, epochs=6, batch_size=256, lr=5e-3, seed=0))
    after = run.metrics["valid"]
    key = "rmse" if task == "rating" else "logloss"
    assert after[key] < 0.8 * before[key]
