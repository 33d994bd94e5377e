"""The RFM that trains fast computes the same numbers as a plain statement of its math.

``reference_score`` below is frozen: a direct re-statement, readable and slow, of what
``fmlib.models.rfm.RFM`` computed before its training step was optimized.
Every optimization of the model must keep, in float64 and to rounding:

* the score and every parameter's gradient (schemas with and without a multi-valued field,
  several seeds, the defaults and other sizes);
* in training mode, the dropout masks: the reference draws them with ``F.dropout`` in the same
  order as the model, so a model that consumed the random stream differently would differ;
* the parameters' names, shapes and initial values under a seed (frozen fingerprints), so
  that the same numbers come out of training.
"""

import pytest
import torch
import torch.nn.functional as F

from fmlib.data.schema import Schema
from fmlib.models import build_model


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def reference_field_embeddings(table, schema, index, weight):
    """e_f = Σ_{s in f} weight_s · v_{index_s} (DPLR §3.2; a single-valued field has one slot of weight 1)."""
    out, start = [], 0
    for f in schema.fields:
        slots = slice(start, start + f.slots)
        out.append((weight[:, slots, None] * table[index[:, slots]]).sum(1))
        start += f.slots
    return torch.stack(out, 1)


def reference_rotation_layer(p, name, theta, heads, dropout, training):
    """One self-attentive rotation layer, RFM appendix §1.2:
    Q, K, V = θ_f W_Q[f], θ_f W_K[f], θ_f W_V[f] for every field f (per-field maps);
    per head, ①_il = Σ_c w_c cos(q_ic − k_lc) (Remark ①: Re[(e^{iQ} diag(w)) e^{−iK}ᵀ]);
    G = σ(①) V per head, heads concatenated; out = LayerNorm(G + W_res · dropout(θ))."""
    Q = torch.einsum("bfk,fkh->bfh", theta, p[f"{name}.W_Q"])
    K = torch.einsum("bfk,fkh->bfh", theta, p[f"{name}.W_K"])
    V = torch.einsum("bfk,fkh->bfh", theta, p[f"{name}.W_V"])
    w = p[f"{name}.w"]
    c = w.numel()
    G = []
    for h in range(heads):
        cols = slice(h * c, (h + 1) * c)
        q, k, v = Q[..., cols], K[..., cols], V[..., cols]
        logits = (w * torch.cos(q[:, :, None, :] - k[:, None, :, :])).sum(-1)  # (B, i, l)
        G.append(torch.sigmoid(logits) @ v)
    G = torch.cat(G, -1)
    residual = F.dropout(theta, dropout, training) @ p[f"{name}.W_res.weight"].T
    return F.layer_norm(G + residual, (G.shape[-1],), p[f"{name}.norm.weight"], p[f"{name}.norm.bias"])


def reference_ampnet(p, z, groups):
    """f(z) = Linear(a → 1, no bias)(GroupNorm(ReLU(Linear(m·h → a)(z))))."""
    hidden = F.relu(z.flatten(1) @ p["f.net.0.weight"].T + p["f.net.0.bias"])
    hidden = F.group_norm(hidden, groups, p["f.net.2.weight"], p["f.net.2.bias"])
    return (hidden @ p["f.net.3.weight"].T).squeeze(-1)


def reference_score(model, index, weight, training=False):
    """score = w0 + Σ_i w_i x_i + f(r) + f(p), r = cos G, p = sin G (RFM appendix §1.2, y = f(cos G) + f(sin G)),
    with the first-order residual r ← LN(r + cos(P θ₀)), p ← LN(p + sin(P θ₀)) when the model has it."""
    p = dict(model.named_parameters())
    hp = model.hparams()
    schema = model.schema
    first = p["bias"] + reference_field_embeddings(p["linear.weight"], schema, index, weight).sum((1, 2))
    e = reference_field_embeddings(p["embedding.weight"], schema, index, weight)
    G = e
    for i in range(hp["layers"]):
        G = reference_rotation_layer(p, f"rotations.{i}", G, hp["heads"], hp["dropout"], training)
    r, s = torch.cos(G), torch.sin(G)
    if hp["residual"]:
        angle0 = e @ p["P.weight"].T
        norm = dict(normalized_shape=(G.shape[-1],), weight=p["residual_norm.weight"], bias=p["residual_norm.bias"])
        r = F.layer_norm(r + torch.cos(angle0), **norm)
        s = F.layer_norm(s + torch.sin(angle0), **norm)
    return first + reference_ampnet(p, r, hp["groups"]) + reference_ampnet(p, s, hp["groups"])


def make_schema(kind):
    if kind == "multi":  # three single-valued fields and genres-like 3 slots
        specs = [
            ("user", "context", "single", 6, 1),
            ("hour", "context", "single", 4, 1),
            ("movie", "item", "single", 7, 1),
            ("genres", "item", "multi", 5, 3),
        ]
    elif kind == "movielens":  # MovieLens 100K's layout: 11 single-valued fields, then genres in 6 slots
        specs = [(f"f{j}", "context", "single", 3 + j, 1) for j in range(11)] + [("genres", "item", "multi", 20, 6)]
    else:  # every field single-valued
        specs = [("a", "context", "single", 5, 1), ("b", "item", "single", 9, 1), ("c", "item", "single", 3, 1)]
    return Schema.build(specs)


def make_batch(schema, n, seed):
    """Random rows: a value ≥ 1 of each single field; 1…slots distinct-or-not values of a multi field,
    averaged, padding slots pointing at the rare bucket with weight 0."""
    gen = torch.Generator().manual_seed(seed)
    index, weight = [], []
    for f in schema.fields:
        if f.kind == "single":
            index.append(f.offset + torch.randint(1, f.cardinality, (n, 1), generator=gen))
            weight.append(torch.ones(n, 1))
        else:
            count = torch.randint(1, f.slots + 1, (n, 1), generator=gen)
            used = torch.arange(f.slots) < count
            values = f.offset + torch.randint(1, f.cardinality, (n, f.slots), generator=gen)
            index.append(torch.where(used, values, f.offset))
            weight.append(used / count)
    return torch.cat(index, 1), torch.cat(weight, 1).double()


def make_model(schema, seed, **hp):
    """A float64 RFM whose every parameter matters: angles of order 1 (not near the identity), random
    norms, diag(w) and linear weights, so a wrong term anywhere shows."""
    torch.manual_seed(seed)
    model = build_model("rfm", schema, **hp).double()
    gen = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        model.embedding.weight.mul_(15)
        for name, p in model.named_parameters():
            if name.endswith(("norm.weight", "norm.bias", "net.2.weight", "net.2.bias", ".w", "linear.weight", "bias")):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.5 + (1.0 if "weight" in name else 0.0))
    return model


HPARAMS = [
    dict(),  # the defaults: dim 16, hidden 32 in 2 heads, 1 layer, AmpNet 64 in 4 groups, residual
    dict(dim=8, hidden=16, heads=4, layers=2, residual=False, mlp_hidden=16, groups=2),
    dict(dim=6, hidden=12, heads=3, layers=3, mlp_hidden=8, groups=2),
    dict(dim=4, hidden=8, heads=1, mlp_hidden=8, groups=1),
]


def assert_same(model, index, weight, seed, training):
    params = dict(model.named_parameters())
    model.train(training)
    torch.manual_seed(seed)
    fast = model(index, weight)
    torch.manual_seed(seed)
    slow = reference_score(model, index, weight, training)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-10)
    upstream = torch.randn(len(fast), dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    grads = torch.autograd.grad(fast, list(params.values()), upstream)
    ref = torch.autograd.grad(slow, list(params.values()), upstream)
    for name, a, b in zip(params, grads, ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("kind", ["multi", "movielens", "single"])
@pytest.mark.parametrize("hp", HPARAMS, ids=["defaults", "2layers-4heads", "3layers-3heads", "1head"])
def test_score_and_every_gradient_equal_the_reference(kind, hp):
    schema = make_schema(kind)
    for seed in range(3):
        model = make_model(schema, seed, **hp)
        index, weight = make_batch(schema, 48, seed)
        assert_same(model, index, weight, seed, training=False)


@pytest.mark.parametrize("kind", ["multi", "movielens"])
@pytest.mark.parametrize("hp", HPARAMS[:3], ids=["defaults", "2layers-4heads", "3layers-3heads"])
def test_training_mode_draws_the_same_dropout_masks(kind, hp):
    """In training mode (dropout 0.4 by default) the model and the reference, started from the same
    seed, draw the same masks: same score, same gradients."""
    schema = make_schema(kind)
    for seed in range(2):
        model = make_model(schema, seed, **{"dropout": 0.3, **hp})
        index, weight = make_batch(schema, 40, seed)
        assert_same(model, index, weight, seed, training=True)


def test_a_training_step_matches_in_float32():
    """The default model in float32, as it trains: one MSE step's gradients agree with the
    reference's to float32 rounding."""
    schema = make_schema("movielens")
    torch.manual_seed(0)
    model = build_model("rfm", schema).train()
    index, weight = make_batch(schema, 256, 0)
    weight = weight.float()
    target = torch.rand(len(index)) * 4 + 1
    params = list(model.parameters())
    torch.manual_seed(1)
    fast = torch.autograd.grad(F.mse_loss(model(index, weight), target), params)
    torch.manual_seed(1)
    slow = torch.autograd.grad(F.mse_loss(reference_score(model, index, weight, True), target), params)
    for (name, _), a, b in zip(model.named_parameters(), fast, slow):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}")


# name -> (shape, Σ x, Σ x²) of the default RFM built with torch.manual_seed(0) on the "movielens"
# schema, as the implementation before the speed work initialized it (frozen)
DEFAULT_INIT = {
    "bias": ((1,), 0.0, 0.0),
    "linear.weight": ((108, 1), 0.0, 0.0),
    "embedding.weight": ((108, 16), -0.7162199063131993, 16.242523992985717),
    "rotations.0.W_Q": ((12, 16, 32), -10.173535794930103, 14.219366589370061),
    "rotations.0.W_K": ((12, 16, 32), -1.453091774987115, 13.680517466421321),
    "rotations.0.W_V": ((12, 16, 32), -5.087886454324462, 13.436862600061096),
    "rotations.0.w": ((16,), 1.0, 0.0625),
    "rotations.0.W_res.weight": ((32, 16), 3.322640746831894, 10.484106531649326),
    "rotations.0.norm.weight": ((32,), 32.0, 32.0),
    "rotations.0.norm.bias": ((32,), 0.0, 0.0),
    "P.weight": ((32, 16), -0.634712427854538, 10.694090030937417),
    "residual_norm.weight": ((32,), 32.0, 32.0),
    "residual_norm.bias": ((32,), 0.0, 0.0),
    "f.net.0.weight": ((64, 384), -0.09984536398178534, 21.13015953605438),
    "f.net.0.bias": ((64,), -0.05360136787930969, 0.04949174034026119),
    "f.net.2.weight": ((64,), 64.0, 64.0),
    "f.net.2.bias": ((64,), 0.0, 0.0),
    "f.net.3.weight": ((1, 64), -0.2307319939136505, 0.373278769915415),
}


def test_defaults_names_shapes_and_initial_values_are_unchanged():
    schema = make_schema("movielens")
    torch.manual_seed(0)
    model = build_model("rfm", schema)
    assert model.hparams() == dict(
        dim=16, hidden=32, heads=2, layers=1, dropout=0.4, mlp_hidden=64, groups=4, residual=True
    )
    seen = {
        name: (tuple(p.shape), float(p.detach().double().sum()), float(p.detach().double().square().sum()))
        for name, p in model.named_parameters()
    }
    assert list(seen) == list(DEFAULT_INIT)
    for name, (shape, total, squares) in DEFAULT_INIT.items():
        assert seen[name][0] == shape, name
        assert seen[name][1] == pytest.approx(total, rel=1e-6, abs=1e-6), name
        assert seen[name][2] == pytest.approx(squares, rel=1e-6, abs=1e-9), name
