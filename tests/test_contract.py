"""The model contract (``fmlib.models.Model``): every model fills it, and a model that breaks it is
told what is missing in one line — by the registry, the trainer and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from random_samples import SCHEMA, random_dataset

from fmlib import models
from fmlib.cli import main
from fmlib.data import Dataset, load, split, synthetic
from fmlib.models import BUILT_IN, Model, ModelError, build_for, hyperparameters, model_class
from fmlib.train import TrainConfig, fit, loss_fn


def settings(name: str, data: Dataset) -> dict:
    """Hyperparameters under which every parameter of ``name`` takes part: RaFM's cut-point at the median
    count, so that both levels hold features."""
    if name != "rafm":
        return {}
    counts = data.feature_counts()
    return {"ranks": (2, 4), "thresholds": (int(np.median(counts[counts > 0])),)}


ADAM = [name for name in BUILT_IN if model_class(name).trained_by == "adam"]


@pytest.mark.parametrize("name", ADAM)
def test_every_parameter_of_every_model_receives_gradient(name):
    data = random_dataset(n=400)
    torch.manual_seed(0)
    model = build_for(name, data, **settings(name, data)).train()
    index, weight = data.batch(slice(None))
    model.loss(index, weight, data.rating, loss_fn("rating")).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name}: {pname} gets no gradient"


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_hyperparameters_come_from_the_constructor_and_rebuild_the_model(name):
    data = random_dataset(n=400)
    model = build_for(name, data, **settings(name, data))
    assert set(model.hparams()) == set(hyperparameters(name)), "hparams() reads back the constructor's arguments"
    rebuilt = models.build_model(name, SCHEMA, **model.hparams())
    rebuilt.load_state_dict(model.state_dict())
    assert rebuilt.hparams() == model.hparams()


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_the_views_ask_the_model(name):
    """feature_table(): one row per feature (None for a Bayesian FM before sampling); interaction_matrix():
    m×m for the field-weighted models, None otherwise."""
    data = random_dataset(n=400)
    model = build_for(name, data, **settings(name, data))
    table = model.feature_table()
    if model.trained_by == "gibbs":
        assert table is None
    else:
        assert table.V.shape[0] == table.w.shape[0] == SCHEMA.num_features
    R = model.interaction_matrix()
    assert (R is not None) == (name in ("fwfm", "dplr")) == models.has_interaction_matrix(name)
    if R is not None:
        assert R.shape == (SCHEMA.num_fields, SCHEMA.num_fields) and torch.allclose(R, R.T)


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_a_bilinear_form_is_the_models_own_score(name):
    """bilinear_form(): for FM, FwFM and DPLR, w0 + Σ_i w_i x_i + ½ Σ_{f,g} R_fg ⟨e_f, e_g⟩ over the feature table,
    summed naively field by field, is the model's score, and the factors give R back (eq. 10); None otherwise."""
    data = random_dataset(n=50, seed=1)
    torch.manual_seed(0)
    model = build_for(name, data, **settings(name, data)).eval()
    form = model.bilinear_form()
    assert (form is not None) == (name in ("fm", "fwfm", "dplr"))
    if form is None:
        return
    with torch.no_grad():
        for p in model.parameters():  # away from the start (FwFM's R = 1, zero linear weights)
            p.add_(0.3 * torch.randn_like(p))
        V, w = model.feature_table()
        form = model.bilinear_form()
        index, weight = data.batch(slice(None))
        slot_field = data.schema.slot_fields()
        for row in range(len(index)):
            e = torch.zeros(data.schema.num_fields, V.shape[1])
            first = form.w0.clone()
            for slot, field in enumerate(slot_field):
                e[field] += weight[row, slot] * V[index[row, slot]]
                first += weight[row, slot] * w[index[row, slot]]
            naive = first + 0.5 * sum(form.R[f, g] * (e[f] @ e[g]) for f in range(len(e)) for g in range(len(e)))
            assert torch.allclose(model(index[row : row + 1], weight[row : row + 1]), naive, atol=1e-5)
        if form.factors is not None:
            U, e_, d = form.factors
            assert torch.allclose(U.T @ torch.diag(e_) @ U + torch.diag(d), form.R, atol=1e-6)


class NoForward(Model):
    def __init__(self, schema, dim: int = 4):
        super().__init__()
        self.schema, self.dim = schema, dim


class NoDefault(Model):
    def __init__(self, schema, dim):
        super().__init__()
        self.schema, self.dim = schema, dim

    def forward(self, index, weight):
        return weight.sum(1)


class WrongShape(Model):
    def __init__(self, schema, dim: int = 4):
        super().__init__()
        self.schema, self.dim = schema, dim
        self.w = torch.nn.Parameter(torch.zeros(schema.num_features, 1))

    def forward(self, index, weight):
        return (self.w[index, 0] * weight).sum(1, keepdim=True)  # (B, 1): one column too many


@pytest.fixture
def registered(monkeypatch):
    """Register this module's broken models, as ``FMLIB_MODELS`` would."""
    for cls in (NoForward, NoDefault, WrongShape):
        monkeypatch.setitem(models.MODELS, cls.__name__.lower(), f"{__name__}:{cls.__name__}")
    monkeypatch.setitem(models.MODELS, "missing", "no_such_module_anywhere:Model")


def test_a_model_that_breaks_the_contract_is_named_in_one_line(registered, small_split):
    with pytest.raises(ModelError, match="NoForward has no forward"):
        model_class("noforward")
    with pytest.raises(ModelError, match="hyperparameter dim has no default"):
        model_class("nodefault")
    with pytest.raises(ModelError, match="'no_such_module_anywhere' cannot be imported"):
        model_class("missing")
    with pytest.raises(ModelError, match=r"one score per sample, shape \(2,\); got \(2, 1\)"):
        fit(models.build_model("wrongshape", small_split.schema), small_split.train, small_split.valid, TrainConfig())
    usable, broken = models.usable_models()
    assert "wrongshape" in usable and "fm" in usable and len(broken) == 3
    assert all("\n" not in line for line in broken)


@pytest.mark.parametrize(
    "model, message",
    [
        ("noforward", "has no forward"),
        ("nodefault", "has no default"),
        ("missing", "cannot be imported"),
        ("wrongshape", "one score per sample"),
    ],
)
def test_the_cli_says_what_is_missing_and_exits_2(registered, model, message, capsys):
    code = main(["train", "--model", model, "--dataset", "synthetic", "--epochs", "1"])
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\n")[-1]  # after the progress bar's first line, if training began
    assert code == 2 and last.startswith("error: ") and message in last and "Traceback" not in err


def test_a_model_of_the_users_own_module_is_registered_by_the_environment(tmp_path, monkeypatch):
    assert models.user_models("my_models:FmFM, other.place:LowRank") == {
        "fmfm": "my_models:FmFM",
        "lowrank": "other.place:LowRank",
    }
    (tmp_path / "my_models.py").write_text(
        "from fmlib.models.fm import FM\n\nclass MyFM(FM):\n    pass\n"  # an FM under another name
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(models, "MODELS", {**models.MODELS, **models.user_models("my_models:MyFM")})
    data = split(synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0), seed=0)
    run = fit(
        models.build_model("myfm", data.schema, dim=2), data.train, data.valid, TrainConfig(epochs=1, batch_size=128)
    )
    assert run.config["model"] == "myfm" and run.config["hp"] == {"dim": 2}


def test_every_committed_preset_still_builds_its_model():
    from fmlib import presets

    schema = load("synthetic").schema  # 8 fields: every committed size fits (DPLR's ρ up to 5)
    files = sorted((Path(__file__).resolve().parent.parent / "presets").glob("**/*.json"))
    assert files
    for path in files:
        preset = json.loads(path.read_text())
        model = models.build_model(preset["model"], schema, **presets.hyperparameters(preset))
        assert set(model.hparams()) == set(hyperparameters(preset["model"])), path


def test_settings_an_older_fmlib_saved_still_build():
    """RFM's settings once held init_std; RaFM's, the counts n_i."""
    rfm = models.build_model("rfm", SCHEMA, dim=4, init_std=0.1)
    assert "init_std" not in rfm.hparams()
    counts = random_dataset(n=400).feature_counts()
    rafm = models.build_model("rafm", SCHEMA, ranks=[2, 4], consistency=1.0, counts=counts.tolist())
    assert rafm.counts.tolist() == counts.tolist() and "counts" not in rafm.hparams()
    with pytest.raises(ModelError, match="takes no hyperparameter rank"):
        models.build_model("fm", SCHEMA, rank=2)


class Unstored(Model):
    def __init__(self, schema, dim: int = 4):
        super().__init__()
        self.schema = schema  # dim is not kept on self.dim

    def forward(self, index, weight):
        return weight.sum(1)


def test_a_hyperparameter_not_kept_on_the_model_and_a_class_that_is_no_model_are_named():
    with pytest.raises(ModelError, match="keep the hyperparameter dim on self.dim"):
        Unstored(SCHEMA).hparams()
    with pytest.raises(ModelError, match="is not a subclass of fmlib.models.Model"):
        models.check_class(torch.nn.Linear, "linear")
    name = models.register(WrongShape)
    assert name == "wrongshape" and models.MODELS.pop(name) == f"{__name__}:WrongShape"
