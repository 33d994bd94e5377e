"""Model families, one module each, built by name."""

from __future__ import annotations

import inspect
from importlib import import_module

# name -> "module:Class"; every model takes (schema, **hyperparameters)
MODELS = {
    "fm": "fmlib.models.fm:FM",
    "fwfm": "fmlib.models.fwfm:FwFM",
    "dplr": "fmlib.models.dplr:DPLR",
    "rfm": "fmlib.models.rfm:RFM",
    "rafm": "fmlib.models.rafm:RaFM",
    "bfm": "fmlib.models.bfm:BayesianFM",
}


def build_model(name: str, schema, **hp):
    """build_model("fm"|"fwfm"|..., schema, dim=16, ...) -> nn.Module."""
    return model_class(name)(schema, **hp)


def model_name(model) -> str:
    """The registry name of a built model (inverse of build_model)."""
    path = f"{type(model).__module__}:{type(model).__name__}"
    for name, target in MODELS.items():
        if target == path:
            return name
    raise ValueError(f"{path} is not a registered model")


def model_class(name: str):
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    module, cls = MODELS[name].split(":")
    return getattr(import_module(module), cls)


def hyperparameters(name: str) -> dict:
    """The keyword hyperparameters of model ``name`` and their defaults (schema excluded)."""
    params = inspect.signature(model_class(name).__init__).parameters
    return {
        k: p.default
        for k, p in params.items()
        if k not in ("self", "schema", "init_std") and p.default is not inspect.Parameter.empty
    }
