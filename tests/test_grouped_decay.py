"""Grouped L2 (TrainConfig.field_decay, linear_decay): one strength per field group of the tables w and v."""

from __future__ import annotations

import pytest
import torch

from fmlib.models import build_model
from fmlib.train import TrainConfig, fit, param_groups, row_decay


def test_each_field_group_gets_its_decay(small_split):
    schema = small_split.schema
    model = build_model("fm", schema, dim=3)
    config = TrainConfig(weight_decay=0.01, field_decay={"f1": 4.0, "f3": 0.0}, linear_decay=0.5)
    (w, rate_w), (v, rate_v) = row_decay(model, config)
    assert w is model.linear.weight and v is model.embedding.weight
    assert rate_w.shape == (schema.num_features, 1) and rate_v.shape == (schema.num_features, 1)
    for f in schema.fields:
        rows = slice(f.offset, f.offset + f.cardinality)
        expected = 0.01 * {"f1": 4.0, "f3": 0.0}.get(f.name, 1.0)
        torch.testing.assert_close(rate_v[rows], torch.full((f.cardinality, 1), expected), msg=f.name)
        torch.testing.assert_close(rate_w[rows], torch.full((f.cardinality, 1), expected * 0.5), msg=f.name)


def test_grouped_decay_is_the_gradient_of_the_grouped_penalty(small_split):
    """λ ⊙ θ, what fit adds to the gradient, is the autograd gradient of ½ Σ_i λ_i ‖θ_i‖²."""
    torch.manual_seed(0)
    model = build_model("fm", small_split.schema, dim=3)
    torch.nn.init.normal_(model.linear.weight)
    config = TrainConfig(weight_decay=0.02, field_decay={"f0": 3.0}, linear_decay=0.1)
    for p, rate in row_decay(model, config):
        (grad,) = torch.autograd.grad(0.5 * (rate * p.pow(2)).sum(), p)
        torch.testing.assert_close(grad, rate * p.detach())


def test_every_multiple_one_is_adams_own_weight_decay(small_split):
    """field_decay naming every field with 1 takes the grouped path, and trains the same FM as
    Adam's weight_decay on the tables (the linear weights w are an (n, 1) table, so decayed too)."""
    names = small_split.schema.names
    runs = []
    for grouped in ({}, {name: 1.0 for name in names}):
        config = TrainConfig(epochs=2, lr=0.02, weight_decay=0.01, field_decay=grouped, seed=3)
        assert config.grouped_decay == bool(grouped)
        torch.manual_seed(3)
        runs.append(fit(build_model("fm", small_split.schema, dim=3), small_split.train, small_split.valid, config))
    for (name, a), b in zip(runs[0].model.state_dict().items(), runs[1].model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=name)


def test_a_strong_field_decay_shrinks_that_field_only_and_every_parameter_still_learns(small_split):
    schema = small_split.schema
    trained = {}
    for label, grouped in (("plain", {}), ("f0 x1000", {"f0": 1000.0})):
        torch.manual_seed(0)
        model = build_model("fm", schema, dim=3)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        config = TrainConfig(epochs=2, lr=0.02, weight_decay=1e-3, field_decay=grouped, patience=5)
        decays = row_decay(model, config) if config.grouped_decay else []
        groups = param_groups(model, config.lr, config.weight_decay, [p for p, _ in decays])
        assert sum(len(g["params"]) for g in groups) == len(list(model.parameters())), "every parameter is trained"
        fit(model, small_split.train, small_split.valid, config)
        for name, value in model.state_dict().items():
            assert not torch.equal(value, start[name]), f"{label}: {name} received no update"
        trained[label] = model.embedding.weight.detach()

    def norm(field, label):
        f = schema.field(field)
        return trained[label][f.offset : f.offset + f.cardinality].norm()

    assert norm("f0", "f0 x1000") < 0.2 * norm("f0", "plain")
    assert norm("f1", "f0 x1000") > 0.5 * norm("f1", "plain")


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"field_decay": {"f0": -1.0}}, "multiple for f0 must be a number >= 0"),
        ({"linear_decay": -0.5}, "multiple for linear_decay must be a number >= 0"),
    ],
)
def test_bad_multiples_are_named(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


def test_an_unknown_field_is_named(small_split):
    model = build_model("fm", small_split.schema, dim=2)
    with pytest.raises(ValueError, match=r"field_decay: no field \['user_id'\]; fields are"):
        fit(model, small_split.train, small_split.valid, TrainConfig(epochs=1, field_decay={"user_id": 2.0}))


def test_tuning_draws_an_l2_per_field_and_presets_carry_it_as_a_multiple():
    import optuna

    from fmlib import presets
    from fmlib.experiments import search_space

    space = search_space.search_space("fm", {"dim": 8}, ["user_id", "age", "movie_id"])
    assert space["field_l2"] == {"user_id": (1e-7, 0.1), "movie_id": (1e-7, 0.1)}
    assert "field_l2" not in search_space.search_space("fm", {}, ["f0", "f1"]), "only fields the data has"
    flat = {"lr": 0.01, "weight_decay": 1e-4, "average_from": 3, "linear_decay": 0.1}
    flat |= {"field_l2.user_id": 5e-5, "field_l2.movie_id": 2e-4}
    point = search_space.suggest(optuna.trial.FixedTrial(flat), space)
    assert point["field_l2"] == {"user_id": 5e-5, "movie_id": 2e-4} and search_space.nested(flat) == point
    train, hp = search_space.split_params("fm", point, {"dim": 8})
    assert hp == {"dim": 8} and train["field_decay"] == pytest.approx({"user_id": 0.5, "movie_id": 2.0})
    assert search_space.point_values(train)["field_l2"] == pytest.approx(point["field_l2"]), "and back"
    preset = {"task": "rating", "train": {**train, "batch_size": 512, "epochs": 5, "patience": 2}}
    config = presets.train_config(preset, seed=1)
    assert (config.field_decay, config.linear_decay, config.seed) == (train["field_decay"], 0.1, 1)


def test_a_drawn_field_l2_is_the_strength_on_that_fields_rows(small_split):
    """The space draws each field's L2 on its own; TrainConfig carries it as a multiple of weight_decay."""
    from fmlib.experiments import search_space

    point = {"lr": 0.01, "weight_decay": 1e-3, "linear_decay": 0.5, "field_l2": {"f0": 5e-5}}
    train, hp = search_space.split_params("fm", point, {"dim": 3})
    (_, rate_w), (_, rate_v) = row_decay(build_model("fm", small_split.schema, **hp), TrainConfig(**train))
    for f in small_split.schema.fields:
        expected = 5e-5 if f.name == "f0" else 1e-3
        rows = slice(f.offset, f.offset + f.cardinality)
        torch.testing.assert_close(rate_v[rows], torch.full((f.cardinality, 1), expected), msg=f.name)
        torch.testing.assert_close(rate_w[rows], torch.full((f.cardinality, 1), expected * 0.5), msg=f.name)


def test_the_field_decay_flag_parses_field_multiples():
    from fmlib.arguments import BadValue, field_multiples

    assert field_multiples("user_id=0.5, movie_id=2") == {"user_id": 0.5, "movie_id": 2.0}
    assert field_multiples("") == {}
    for bad in ("user_id", "user_id=-1", "=2", "user_id=x"):
        with pytest.raises(BadValue, match="expected field=multiple pairs"):
            field_multiples(bad)
