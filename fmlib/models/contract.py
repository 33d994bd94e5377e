"""The contract every fmlib model fills: what the trainer, the analyses and the app may ask of a model.

Read ``Model``'s docstring first: it is the whole interface. ``check_class`` and ``check_scores``
turn a model that breaks it into one line naming what is missing.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import torch
from torch import nn

NOT_HYPERPARAMETERS = ("self", "schema", "init_std")  # init_std sets the random start, not the model


class ModelError(ValueError):
    """A model that breaks the contract: the message names what is missing, in one line."""


class FeatureTable(NamedTuple):
    """One row per feature of the schema: its embedding v_i (``V``, n × k) and its linear weight w_i
    (``w``, n) — the first-order and pairwise factors of [Rendle2010] eq. 1."""

    V: torch.Tensor
    w: torch.Tensor


class BilinearForm(NamedTuple):
    """The score of a model that is w0 + Σ_i w_i x_i + ½ Σ_{f,g} R_fg ⟨e_f, e_g⟩ over its feature table's rows
    ([DPLR] eqs. 2 and 5): its global bias ``w0``, its field interaction matrix ``R`` (m×m), and R's factors
    ``(U, e, d)`` with R = Uᵀ diag(e) U + diag(d) ([DPLR] eq. 10) when it has them, else None."""

    w0: torch.Tensor
    R: torch.Tensor
    factors: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None


class Model(nn.Module):
    """What every fmlib model is: ``forward(index, weight) -> (B,)`` scores, plus seven promises.

    A model is built as ``Model(schema, **hyperparameters)`` and keeps the schema on ``self.schema``.
    ``index`` (B, S) holds the table row of every slot of a batch's samples and ``weight`` (B, S) its
    value x (1 for a single-valued field, 1/len for each value of a multi-valued one); the score is a
    rating, or a click's logit.

    1. **Hyperparameters come from the constructor.** Every keyword argument after ``schema`` (each
       with a default) is a hyperparameter, except ``init_std``, which only sets the random start.
       Keep each on an attribute of the same name (``self.dim = dim``): ``hparams()`` reads them back
       to save a run, and ``build_model(name, schema, **hparams)`` rebuilds it. Nothing is written
       twice.
    2. **prepare(train)**: state learnt from the training split before the first step (RaFM's feature
       counts n_i, from which its ranks k_i follow). Keep it in buffers, so that it is saved with the
       weights, never in the hyperparameters. Default: nothing to learn.
    3. **loss(index, weight, target, criterion)**: the minibatch objective that Adam minimises,
       ``criterion(self(index, weight), target) + self.extra_loss()``. **extra_loss()** is a penalty on
       the parameters alone (FwFM's L2 of R toward the FM); zero by default. A term that needs the
       batch (RaFM's consistency terms, Algorithm 1) overrides ``loss`` and computes it there, so that
       ``forward`` leaves nothing on the module.
    4. **feature_table()**: the per-feature embeddings and linear weights (``FeatureTable``) that the
       movie map and the replay draw, or None for a model without one.
    5. **interaction_matrix()**: the m×m field interaction matrix R (FwFM, DPLR), or None when the
       model has none (an FM: its R is 11ᵀ − I, fixed).
    6. **bilinear_form()**: for a model whose score is exactly w0 + Σ_i w_i x_i + ½ Σ_{f,g} R_fg ⟨e_f, e_g⟩
       over the feature table's rows (FM, FwFM, DPLR): its ``BilinearForm``, which cached-context
       ranking (``fmlib.ranking``) serves. None (the default) for any other model, also one whose
       ``interaction_matrix()`` only summarises a richer interaction (a k×k matrix per pair of fields).
    7. **How it is trained**: ``trained_by`` is "adam" (``fmlib.train.fit`` takes Adam steps on
       ``loss``; ``field_tables()`` lists the tables of feature rows that take the grouped L2) or
       "gibbs" (the model draws its own posterior samples in ``fit_gibbs``, as the Bayesian FM does).
    """

    trained_by = "adam"

    @classmethod
    def hyperparameters(cls) -> dict:
        """{name: default} of the constructor's hyperparameters (promise 1)."""
        params = inspect.signature(cls.__init__).parameters
        missing = [
            name
            for name, p in params.items()
            if name not in NOT_HYPERPARAMETERS
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.default is inspect.Parameter.empty
        ]
        if missing:
            raise ModelError(
                f"model {cls.__name__}: hyperparameter {', '.join(missing)} has no default "
                f"(every argument after schema needs one, e.g. {missing[0]}=16)"
            )
        return {
            name: p.default
            for name, p in params.items()
            if name not in NOT_HYPERPARAMETERS and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    @classmethod
    def from_settings(cls, schema, **hp) -> Model:
        """The model that the saved settings ``hp`` describe (its hyperparameters, and ``init_std``); a
        model whose settings once held more overrides this to read the old form (RaFM's counts)."""
        unknown = set(hp) - set(cls.hyperparameters()) - {"init_std"}
        if unknown:
            raise ModelError(
                f"model {cls.__name__} takes no hyperparameter {', '.join(sorted(unknown))}; "
                f"its hyperparameters: {', '.join(cls.hyperparameters()) or 'none'}"
            )
        return cls(schema, **hp)

    def hparams(self) -> dict:
        """The hyperparameters of this model, read from the attributes of the same name (JSON-ready:
        tuples become lists)."""
        out = {}
        for name in self.hyperparameters():
            try:
                value = getattr(self, name)
            except AttributeError:
                raise ModelError(
                    f"model {type(self).__name__}: keep the hyperparameter {name} on self.{name} "
                    "(hparams() reads it back to save the run)"
                ) from None
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def start_bias(self, value: float) -> None:
        """Start the global bias w0 at ``value`` (``fit`` starts it at the mean rating), when the model
        has a parameter named ``bias``."""
        if isinstance(self._parameters.get("bias"), nn.Parameter):
            with torch.no_grad():
                self.bias.fill_(value)

    def prepare(self, train) -> None:
        """Learn what the model needs from the training split ``train`` (a ``Dataset``) before training."""

    def extra_loss(self) -> torch.Tensor:
        """A penalty on the parameters added to every minibatch loss; zero by default."""
        return torch.zeros(())

    def loss(self, index: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, criterion) -> torch.Tensor:
        """The minibatch objective: ``criterion(scores, target) + extra_loss()``."""
        return criterion(self(index, weight), target) + self.extra_loss()

    def feature_table(self) -> FeatureTable | None:
        """Every feature's embedding and linear weight, or None."""
        return None

    def interaction_matrix(self) -> torch.Tensor | None:
        """The field interaction matrix R (m×m), or None."""
        return None

    def bilinear_form(self) -> BilinearForm | None:
        """The score as a bilinear form of the field embeddings (promise 6), or None."""
        return None

    def field_tables(self) -> list[tuple[torch.Tensor, torch.Tensor, bool]]:
        """(table, feature row of each of its rows, linear?) of every parameter whose rows belong to
        features, for the trainer's grouped L2 (``fmlib.train.row_decay``); none by default."""
        return []

    def fit_gibbs(self, train, valid, config, callback=None) -> list[dict]:
        """Draw the posterior samples (a model with ``trained_by = "gibbs"``); returns one record per sweep."""
        raise ModelError(f"model {type(self).__name__} is trained by {self.trained_by}, not by Gibbs sampling")


def check_class(cls, name: str) -> None:
    """ModelError in one line when the class ``cls`` (registered as ``name``) cannot be a model:
    not a ``Model``, no ``forward`` of its own, a hyperparameter without a default."""
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ModelError(f"model {name}: {cls!r} is not a subclass of fmlib.models.Model")
    if cls.forward is nn.Module.forward:
        raise ModelError(f"model {name}: {cls.__name__} has no forward(index, weight) method")
    if cls.trained_by not in ("adam", "gibbs"):
        raise ModelError(f"model {name}: trained_by must be 'adam' or 'gibbs', got {cls.trained_by!r}")
    cls.hyperparameters()


def check_scores(model: nn.Module, scores, rows: int) -> None:
    """ModelError unless ``scores`` is what ``forward`` must return for ``rows`` samples: a (rows,) tensor."""
    if not isinstance(scores, torch.Tensor) or tuple(scores.shape) != (rows,):
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise ModelError(
            f"model {type(model).__name__}: forward must return one score per sample, shape ({rows},); got {got}"
        )
