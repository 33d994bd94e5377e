"""FM and FwFM: fast formulas against naive double sums; parameters registered and trained."""

from __future__ import annotations

import itertools

import pytest
import torch
from random_samples import SCHEMA, random_batch

from fmlib.data.schema import Schema
from fmlib.models import build_model, hyperparameters, model_name
from fmlib.models.base import FieldRead, SlotLayout, gather_fields, scatter_fields
from fmlib.models.fm import fm_pairwise


def naive_field_embeddings(model, index, weight):
    """e_f = Σ_{slots of f} weight · v[index], one sample and one field at a time."""
    m, k = model.schema.num_fields, model.dim
    slot_field = model.schema.slot_fields()
    e = torch.zeros(index.shape[0], m, k)
    for b in range(index.shape[0]):
        for s, f in enumerate(slot_field):
            e[b, f] += weight[b, s] * model.embedding.weight[index[b, s]]
    return e


def naive_pairwise(e, R=None):
    """Σ_{f<g} R_fg ⟨e_f, e_g⟩ by the explicit double sum (DPLR eq. 2/3)."""
    out = torch.zeros(e.shape[0], dtype=e.dtype)
    for f, g in itertools.combinations(range(e.shape[1]), 2):
        out += (1.0 if R is None else R[f, g]) * (e[:, f] * e[:, g]).sum(1)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_rendle_identity_equals_double_sum(seed):
    e = torch.randn(16, 9, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert torch.allclose(fm_pairwise(e), naive_pairwise(e))


def test_multi_valued_field_is_the_average_of_its_values():
    torch.manual_seed(0)
    model = build_model("fm", SCHEMA, dim=4)
    index, weight = random_batch(SCHEMA)
    e = model.field_embeddings(index, weight)
    assert torch.allclose(e, naive_field_embeddings(model, index, weight), atol=1e-6)
    g = SCHEMA.field("g")
    cols = slice(SCHEMA.num_slots - g.slots, SCHEMA.num_slots)
    n_values = (weight[:, cols] > 0).sum(1)
    mean = torch.stack([model.embedding.weight[index[b, cols][:n]].mean(0) for b, n in enumerate(n_values)])
    assert torch.allclose(e[:, -1], mean, atol=1e-6)


def test_fm_forward_equals_naive():
    torch.manual_seed(1)
    model = build_model("fm", SCHEMA, dim=4, init_std=0.5)
    index, weight = random_batch(SCHEMA, seed=1)
    linear = model.bias + (model.linear.weight[index].squeeze(-1) * weight).sum(1)
    naive = linear + naive_pairwise(naive_field_embeddings(model, index, weight))
    assert torch.allclose(model(index, weight), naive, atol=1e-5)


def test_fwfm_equals_naive_eq3_and_is_fm_at_all_ones():
    torch.manual_seed(2)
    fwfm = build_model("fwfm", SCHEMA, dim=4, init_std=0.5)
    R = fwfm.R
    assert torch.equal(R, R.T) and torch.all(R.diagonal() == 0)
    m = SCHEMA.num_fields
    assert torch.equal(R, torch.ones(m, m) - torch.eye(m)), "starts at R_FM = 11ᵀ − I"
    fm = build_model("fm", SCHEMA, dim=4)
    fm.load_state_dict({k: v for k, v in fwfm.state_dict().items() if k != "r_upper"})
    index, weight = random_batch(SCHEMA, seed=2)
    assert torch.allclose(fwfm(index, weight), fm(index, weight), atol=1e-5)
    with torch.no_grad():
        fwfm.r_upper.normal_()
    e = fwfm.field_embeddings(index, weight)
    assert torch.allclose(fwfm.pairwise(e), naive_pairwise(e, fwfm.R), atol=1e-5)


@pytest.mark.parametrize("name", ["fm", "fwfm"])
def test_every_parameter_is_registered_and_receives_gradient(name):
    torch.manual_seed(3)
    model = build_model(name, SCHEMA, dim=4)
    index, weight = random_batch(SCHEMA, seed=3)
    model(index, weight).pow(2).sum().backward()
    params = dict(model.named_parameters())
    if name == "fwfm":
        assert "r_upper" in params, "FwFM's field weights must be a registered parameter"
    for pname, p in params.items():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{pname} gets no gradient"


def test_registry_round_trip_and_errors():
    model = build_model("fwfm", SCHEMA, dim=3)
    assert model_name(model) == "fwfm" and model.hparams() == {"dim": 3, "r_l2": 0.01}
    assert hyperparameters("fm") == {"dim": 16}
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        build_model("nope", SCHEMA)
    with pytest.raises(ValueError, match="dim must be >= 1"):
        build_model("fm", SCHEMA, dim=0)


@pytest.mark.parametrize("schema", [SCHEMA, Schema(SCHEMA.fields[:3])], ids=["multi", "single"])
def test_memoised_fm_gradient_equals_autograd(schema):
    """FMFunction's backward (∂/∂e_f = Z − e_f, fm-gradient note eq. 8 corrected) == autograd."""
    torch.manual_seed(4)
    fast = build_model("fm", schema, dim=4, init_std=0.5)
    index, weight = random_batch(schema, seed=4)
    plain = fast.first_order(index, weight) + fm_pairwise(fast.field_embeddings(index, weight))
    upstream = torch.randn(len(index))
    grads_plain = torch.autograd.grad(plain, [fast.linear.weight, fast.embedding.weight], upstream)
    out = fast(index, weight)
    assert torch.allclose(out, plain, atol=1e-5)
    grads_fast = torch.autograd.grad(out, [fast.linear.weight, fast.embedding.weight], upstream)
    for a, b in zip(grads_fast, grads_plain):
        assert torch.allclose(a, b, atol=1e-5)


INTERLEAVED = Schema.build(
    [
        ("g1", "item", "multi", 5, 2),
        ("a", "context", "single", 4, 1),
        ("b", "context", "single", 3, 1),
        ("g2", "item", "multi", 6, 4),
        ("c", "item", "single", 5, 1),
    ]
)


def dense_field_sum(v, weight, schema):
    """Σ_s weight_s v_s 1[s in f]: the dense slot-to-field product, (B, S, k) -> (B, m, k)."""
    to_field = torch.eye(schema.num_fields, dtype=v.dtype)[schema.slot_fields()]
    return torch.einsum("bsk,bs,sf->bfk", v, weight, to_field)


@pytest.mark.parametrize(
    "schema", [SCHEMA, INTERLEAVED, Schema(SCHEMA.fields[:3])], ids=["multi-last", "interleaved", "single"]
)
def test_gathered_fields_equal_the_dense_weighted_sum_and_scatter_is_their_gradient(schema):
    """gather_fields == the dense slot-to-field product of the gathered rows; scatter_fields ==
    autograd's gradient of that product to the table, padding slots included (they add zero)."""
    gen = torch.Generator().manual_seed(7)
    index, weight = random_batch(schema, n=16, seed=7)
    weight = weight.double()
    table = torch.randn(schema.num_features, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    layout = SlotLayout.of(schema)
    dense = dense_field_sum(table[index], weight, schema)
    read = FieldRead.of(index, weight, layout, table.dtype)
    assert torch.allclose(gather_fields(table, read, layout), dense)
    upstream = torch.randn(dense.shape, generator=gen, dtype=torch.float64)
    (grad,) = torch.autograd.grad(dense, table, upstream)
    assert torch.allclose(scatter_fields(upstream, read, layout, len(table)), grad)


def test_memoised_fm_gradient_equals_autograd_with_interleaved_multi_fields():
    torch.manual_seed(6)
    fast = build_model("fm", INTERLEAVED, dim=4, init_std=0.5)
    index, weight = random_batch(INTERLEAVED, seed=6)
    plain = fast.first_order(index, weight) + naive_pairwise(naive_field_embeddings(fast, index, weight))
    upstream = torch.randn(len(index))
    params = [fast.linear.weight, fast.embedding.weight]
    out = fast(index, weight)
    assert torch.allclose(out, plain, atol=1e-5)
    for a, b in zip(torch.autograd.grad(out, params, upstream), torch.autograd.grad(plain, params, upstream)):
        assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("name", ["fm", "fwfm", "dplr", "rfm"])
def test_kept_vw_table_follows_every_change_of_the_parameters(name):
    """Evaluation keeps [v | w] between calls (``KeptTables``); after a fused Adam step and
    ``eval()``, an in-place edit or a ``load_state_dict`` the scores equal a fresh model's."""
    from fmlib.optim import Adam

    torch.manual_seed(6)
    model = build_model(name, SCHEMA).double().eval()
    index, weight = random_batch(SCHEMA, seed=6)
    weight = weight.double()

    def check():
        twin = build_model(name, SCHEMA).double().eval()
        twin.load_state_dict(model.state_dict())
        with torch.no_grad():
            assert torch.allclose(model(index, weight), twin(index, weight), atol=1e-12)

    check()
    with torch.no_grad():
        model.embedding.weight.mul_(3.0)
    check()
    model.load_state_dict({k: v + 0.1 for k, v in model.state_dict().items()})
    check()
    optimizer = Adam([{"params": list(model.parameters())}], lr=0.1)
    model.train()
    model(index, weight).pow(2).mean().backward()
    optimizer.step()
    model.eval()
    check()
