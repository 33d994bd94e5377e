"""Model families, one module each, built by name; every one fills the contract of ``Model``.

A model of your own joins the registry without editing fmlib: name its class in the environment
variable ``FMLIB_MODELS`` as ``module:Class`` (several separated by commas), e.g.
``FMLIB_MODELS=my_models:FmFM``; it is registered under the class name in lower case ("fmfm") and
the CLI, the experiments and the app's Train page offer it.
"""

from __future__ import annotations

import os
from importlib import import_module

from .base import FieldEmbeddingModel
from .contract import BilinearForm, FeatureTable, Model, ModelError, check_class, check_scores

# name -> "module:Class"; every model takes (schema, **hyperparameters)
BUILT_IN = {
    "fm": "fmlib.models.fm:FM",
    "fwfm": "fmlib.models.fwfm:FwFM",
    "dplr": "fmlib.models.dplr:DPLR",
    "rfm": "fmlib.models.rfm:RFM",
    "rafm": "fmlib.models.rafm:RaFM",
    "bfm": "fmlib.models.bfm:BayesianFM",
}
ENVIRONMENT = "FMLIB_MODELS"


def user_models(text: str | None) -> dict[str, str]:
    """{name: "module:Class"} of the entries of ``FMLIB_MODELS`` (``text``), each named by its class in
    lower case; an entry without a colon is kept as it is, for ``model_class`` to name in its error."""
    entries = [e.strip() for e in (text or "").split(",") if e.strip()]
    return {e.rpartition(":")[2].lower() or e: e for e in entries}


MODELS = {**BUILT_IN, **user_models(os.environ.get(ENVIRONMENT))}
__all__ = [
    "MODELS",
    "BilinearForm",
    "FeatureTable",
    "FieldEmbeddingModel",
    "Model",
    "ModelError",
    "build_for",
    "build_model",
    "check_scores",
    "has_interaction_matrix",
    "hyperparameters",
    "model_class",
    "model_name",
    "register",
    "usable_models",
]


def register(cls: type[Model]) -> str:
    """Register the model class ``cls`` (defined in a notebook, or a module of yours) under its class name in
    lower case, after checking it against the contract; returns that name. ``FMLIB_MODELS`` does the same
    for a class of an importable module, before the app or the CLI starts."""
    name = cls.__name__.lower()
    check_class(cls, name)
    MODELS[name] = f"{cls.__module__}:{cls.__qualname__}"
    return name


def build_model(name: str, schema, **hp) -> Model:
    """build_model("fm"|"fwfm"|..., schema, dim=16, ...) -> a ``Model``; settings saved by an older
    fmlib are read too (``Model.from_settings``)."""
    return model_class(name).from_settings(schema, **hp)


def build_for(name: str, train, **hp) -> Model:
    """``build_model`` on the schema of the training split ``train``, then ``prepare(train)``: a model
    ready to fit."""
    model = build_model(name, train.schema, **hp)
    model.prepare(train)
    return model


def model_name(model) -> str:
    """The registry name of a built model (inverse of build_model)."""
    path = f"{type(model).__module__}:{type(model).__name__}"
    for name, target in MODELS.items():
        if target == path:
            return name
    raise ModelError(f"{path} is not a registered model")


def model_class(name: str) -> type[Model]:
    """The class registered as ``name``, checked against the contract (``check_class``); a ModelError
    in one line when it is not registered, cannot be imported or breaks the contract."""
    if name not in MODELS:
        raise ModelError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    module, colon, cls = MODELS[name].partition(":")
    if not (module and colon and cls):
        raise ModelError(f"{ENVIRONMENT}: entry {MODELS[name]!r} is not module:Class")
    try:
        target = getattr(import_module(module), cls)
    except ImportError as err:
        raise ModelError(f"model {name}: module {module!r} cannot be imported ({err})") from None
    except AttributeError:
        raise ModelError(f"model {name}: module {module!r} has no class {cls}") from None
    check_class(target, name)
    return target


def hyperparameters(name: str) -> dict:
    """The keyword hyperparameters of model ``name`` and their defaults (``Model.hyperparameters``)."""
    return model_class(name).hyperparameters()


def usable_models() -> tuple[list[str], list[str]]:
    """(the registered models that fill the contract, in registry order; one line for each that does
    not), for a page that lists the models and says what is wrong with the others."""
    usable, broken = [], []
    for name in MODELS:
        try:
            model_class(name)
        except ModelError as err:
            broken.append(str(err))
        else:
            usable.append(name)
    return usable, broken


def has_interaction_matrix(name: str) -> bool:
    """Whether model ``name`` has a field interaction matrix R: its class fills ``Model.interaction_matrix``."""
    return model_class(name).interaction_matrix is not Model.interaction_matrix
