"""Training: Adam on minibatches, L2, early stopping with best-weights restore, metrics.

Rating task: MSE loss; RMSE and MAE of predictions clipped to the rating range [1, 5].
Click task (rating >= 4): logistic loss on the score as a logit; logloss and AUC.
``fit`` calls ``callback(record)`` after every epoch (the app and the CLI draw progress from it), and
keeps per-epoch snapshots of what the pages draw (``fmlib.snapshots``: R, a few dozen movie
embeddings) in ``Run.snapshots``, so that a run can be replayed epoch by epoch.

Weight averaging (``TrainConfig.average_from``): from that epoch on, the model that is evaluated
and kept is the running mean of the end-of-epoch weights — Polyak–Ruppert averaging over epochs,
as in stochastic weight averaging (Izmailov et al. 2018). It is the point-estimate analogue of a
Bayesian FM's prediction, which averages the FM over posterior samples instead of using one.

Grouped L2 (``TrainConfig.field_decay``, ``TrainConfig.linear_decay``): the rows of one field in
the linear table w and the embedding tables (v; RaFM's tables of every level) get their own L2
strength, a multiple of ``weight_decay`` (``row_decay``); every Adam-trained model takes it, so a
comparison never hinges on a tool one side lacks — the point-estimate analogue of a Bayesian FM's prior per field
group, whose precision is learned instead of tuned ([Rendle2012] §MCMC).
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from .data.dataset import TASKS, Dataset, Split, slot_weights
from .models import build_for, check_scores, hyperparameters, model_name
from .optim import Adam
from .snapshots import Snapshots

MONITOR = {"rating": "rmse", "click": "logloss"}  # early-stopping metric, lower is better
DEVICES = ("cpu", "cuda")
# default minibatch per device: on a CPU small batches cost little per step; a GPU is bound by
# kernel launches at small batches, so it takes bigger ones
BATCH_SIZE = {"cpu": 1024, "cuda": 16384}


@dataclass
class TrainConfig:
    task: str = "rating"
    epochs: int = 30
    batch_size: int | None = None  # None: BATCH_SIZE[device]
    lr: float = 5e-3
    weight_decay: float = 3e-4
    patience: int = 3
    seed: int = 0
    device: str = "cpu"
    average_from: int = 0  # 0: no averaging; e >= 1: the mean of the weights after epochs e, e+1, ... (if reached)
    field_decay: dict = field(default_factory=dict)  # field name -> multiple of weight_decay on its rows (w and v)
    linear_decay: float = 1.0  # multiple of weight_decay on the linear weights w (on top of field_decay)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("device cuda: torch sees no CUDA GPU on this machine; use device cpu")
        if self.batch_size is None:
            self.batch_size = BATCH_SIZE[self.device]
        for name in ("epochs", "batch_size", "patience"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if int(self.average_from) < 0:
            raise ValueError(f"average_from must be 0 (off) or an epoch >= 1, got {self.average_from}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        for name, scale in {**self.field_decay, "linear_decay": self.linear_decay}.items():
            if not (isinstance(scale, (int, float)) and scale >= 0):
                raise ValueError(
                    f"field_decay / linear_decay: the multiple for {name} must be a number >= 0, got {scale}"
                )

    @property
    def grouped_decay(self) -> bool:
        """Whether some field or the linear weights have an L2 of their own (``row_decay``)."""
        return bool(self.field_decay) or self.linear_decay != 1.0


@dataclass
class Run:
    model: nn.Module
    config: dict  # model, hp, train config, dataset, split seed
    history: list = field(default_factory=list)  # one record per epoch
    metrics: dict = field(default_factory=dict)  # {"valid": {...}, "test": {...}}
    seconds: float = 0.0
    optimizer_state: dict = field(default_factory=dict, repr=False)  # parameter name -> Adam's (m, v, t) at the end
    snapshots: Snapshots | None = field(default=None, repr=False)  # per epoch: R, movie embeddings (fmlib.snapshots)


def optimizer_state(model: nn.Module, optimizer: Adam) -> dict:
    """Adam's moments and step count by parameter name (copies), so that another ``fit`` of the same
    model — or of a copy with the same parameter names, such as a pruned FwFM — continues from them."""
    return {
        name: tuple(t.detach().clone().cpu() for t in optimizer.state[p])
        for name, p in model.named_parameters()
        if p in optimizer.state
    }


def load_optimizer_state(model: nn.Module, optimizer: Adam, state: dict) -> None:
    """Put ``optimizer_state``'s moments back, matched by parameter name and shape."""
    for name, p in model.named_parameters():
        if name in state:
            m, v, t = state[name]
            if m.shape != p.shape:
                raise ValueError(f"optimizer state: {name} has shape {tuple(m.shape)}, the model's {tuple(p.shape)}")
            optimizer.state[p] = (m.to(p.device).clone(), v.to(p.device).clone(), t.to(p.device).clone())


def loss_fn(task: str):
    return nn.MSELoss() if task == "rating" else nn.BCEWithLogitsLoss()


@torch.no_grad()
def predict(model: nn.Module, data: Dataset, batch_size: int = 8192) -> torch.Tensor:
    """Scores for every sample (ratings, or click logits), on the CPU; computed on the model's device."""
    model.eval()
    device = next(model.parameters()).device
    out = [
        model(*(t.to(device) for t in data.batch(slice(i, i + batch_size)))).cpu()
        for i in range(0, len(data), batch_size)
    ]
    return torch.cat(out) if out else torch.zeros(0)


def auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve by the Mann–Whitney rank statistic (ties get mean ranks)."""
    from scipy.stats import rankdata  # imported here: scipy.stats takes a second to import

    pos = y == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(score)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def evaluate(model: nn.Module, data: Dataset, task: str) -> dict:
    """Rating: rmse, mae (predictions clipped to the rating range). Click: logloss, auc."""
    score = predict(model, data)
    y = data.target(task)
    if task == "rating":
        if data.rating_range is not None:
            score = score.clamp(*data.rating_range)
        err = score - y
        return {"rmse": float(err.pow(2).mean().sqrt()), "mae": float(err.abs().mean())}
    logloss = float(nn.functional.binary_cross_entropy_with_logits(score, y))
    return {"logloss": logloss, "auc": auc(y.numpy(), score.numpy())}


def param_groups(model: nn.Module, lr: float, weight_decay: float, own_decay=()) -> list[dict]:
    """Adam parameter groups: L2 (``weight_decay``) on parameters with >= 2 dims (embedding
    tables, weight matrices), none on biases and vectors (FwFM's R has its own L2, ``Model.extra_loss``).
    Parameters in ``own_decay`` get no L2 from Adam: ``fit`` adds their grouped L2 (``row_decay``)."""
    own = {id(p) for p in own_decay}
    decayed = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in own]
    others = [p for p in model.parameters() if p.dim() < 2 or id(p) in own]
    groups = [
        {"params": decayed, "weight_decay": weight_decay, "lr": lr},
        {"params": others, "weight_decay": 0.0, "lr": lr},
    ]
    return [g for g in groups if g["params"]]


def check_field_decay(schema, config: TrainConfig) -> None:
    """A ValueError naming the fields of ``config.field_decay`` that ``schema`` does not have."""
    unknown = sorted(set(config.field_decay) - set(schema.names))
    if unknown:
        raise ValueError(f"field_decay: no field {unknown}; fields are {schema.names}")


def row_decay(model: nn.Module, config: TrainConfig) -> list[tuple[nn.Parameter, torch.Tensor]]:
    """Grouped L2: [(table, λ)], one strength per table row as a (rows, 1) column, for every table
    of ``model.field_tables()`` (FM, FwFM, DPLR, RFM: w and v; RaFM: w and each level's free and
    dependent tables). For a row of feature i in field f, λ = weight_decay · field_decay[f] on an
    embedding table and λ · linear_decay on the linear weights w (field_decay[f] = 1 for a field
    not named). ``fit`` adds λ ⊙ θ to the gradient before Adam's step, as Adam's own (coupled)
    weight decay does with one strength: the gradient of ½ Σ_i λ_i ‖θ_i‖², the negative log of a
    Gaussian prior N(0, 1/λ_g) per field group g ([Rendle2012] §MCMC, where λ_g is sampled
    instead of tuned)."""
    tables = model.field_tables()
    if not tables:
        raise ValueError(
            f"field_decay / linear_decay: model {type(model).__name__} has no tables of field rows; "
            "it takes no grouped L2"
        )
    schema = model.schema
    check_field_decay(schema, config)
    rate = torch.full((schema.num_features, 1), float(config.weight_decay))
    for f in schema.fields:
        rate[f.offset : f.offset + f.cardinality] *= config.field_decay.get(f.name, 1.0)
    return [
        (table, (rate[rows] * (config.linear_decay if linear else 1.0)).to(table.device))
        for table, rows, linear in tables
    ]


class WeightAverage:
    """Running mean of weight snapshots: after n updates θ̄_n = (1/n) Σ_{j≤n} θ_j, kept as
    θ̄_n = θ̄_{n−1} + (θ_n − θ̄_{n−1}) / n (Polyak–Ruppert averaging). Floating-point entries of the
    state dict are averaged; others (integer buffers) are taken from the latest snapshot."""

    def __init__(self):
        self.mean: dict | None = None
        self.count = 0

    def update(self, state: dict) -> None:
        self.count += 1
        if self.mean is None:
            self.mean = {k: v.detach().clone() for k, v in state.items()}
            return
        for k, v in state.items():
            if v.is_floating_point():
                self.mean[k] += (v.detach() - self.mean[k]) / self.count
            else:
                self.mean[k] = v.detach().clone()


@contextmanager
def weights_of(model: nn.Module, state: dict):
    """Within the block ``model`` holds the weights ``state``; its own weights are put back after."""
    own = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    try:
        yield model
    finally:
        model.load_state_dict(own)


def evaluate_with(model: nn.Module, state: dict, data: Dataset, task: str) -> dict:
    """``evaluate`` with the weights ``state`` loaded; the model's own weights are put back after."""
    with weights_of(model, state):
        return evaluate(model, data, task)


def optimizer_for(model: nn.Module, config: TrainConfig) -> tuple[Adam, list]:
    """(Adam over ``param_groups``, the grouped L2 of ``row_decay``) for ``model`` under ``config``:
    the tables that take a grouped L2 get none from Adam."""
    decays = row_decay(model, config) if config.grouped_decay else []
    groups = param_groups(model, config.lr, config.weight_decay, [p for p, _ in decays])
    return Adam(groups, lr=config.lr), decays


def train_step(model, optimizer: Adam, criterion, index, weight, target, decays=()) -> torch.Tensor:
    """One Adam step on a minibatch, the step ``fit`` takes and ``bench train`` times: the model's
    objective (``Model.loss``: the task's loss plus its own terms), its gradient, the grouped L2 added
    to it (``row_decay``: Adam's coupled decay, one strength per table row), Adam's update. Returns
    the minibatch loss, on the device (reading it would wait for the device)."""
    optimizer.zero_grad()
    loss = model.loss(index, weight, target, criterion)
    loss.backward()
    for p, rate in decays:
        p.grad.addcmul_(rate, p.detach())
    optimizer.step()
    return loss.detach()


def check_fit(model: nn.Module, train: Dataset, config: TrainConfig) -> None:
    """ValueError in one line before training: a batch larger than the data, or a model whose
    ``forward`` does not return one score per sample (``contract.check_scores``)."""
    if config.batch_size > len(train):
        raise ValueError(
            f"batch_size {config.batch_size} is larger than the {len(train)} training samples: "
            f"choose a batch size of at most {len(train)}"
        )
    rows = min(2, len(train))
    model.eval()
    with torch.no_grad():
        index, weight = (t.to(config.device) for t in train.batch(slice(0, rows)))
        check_scores(model, model(index, weight), rows)


class OnDevice(NamedTuple):
    """The training split on the device, moved once: slot rows ``index``, their ``weight`` (or, for lean
    data, the value ``counts`` the weights are built from per batch: ``Dataset.counts``), the ``target``."""

    index: torch.Tensor
    weight: torch.Tensor
    target: torch.Tensor
    schema: object
    lean: bool

    @classmethod
    def of(cls, train: Dataset, task: str, device) -> OnDevice:
        lean = train.counts is not None
        weight = (train.counts if lean else train.weight).to(device)
        return cls(train.index.to(device), weight, train.target(task).to(device), train.schema, lean)

    def batch(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(index, weight, target) of ``rows``; index_select, not index[rows]: one contiguous row copy
        (advanced indexing costs ~1.5× more); int64 rows for the model: gathers by an int32 index run ~40 %
        slower on the CPU."""
        w = self.weight.index_select(0, rows)
        w = slot_weights(self.schema, w) if self.lean else w
        return self.index.index_select(0, rows).long(), w, self.target.index_select(0, rows)


def run_epoch(model, optimizer, criterion, decays, data: OnDevice, batch_size: int, order) -> float:
    """One pass over ``data`` in a random order (``order``: the seeded generator) in minibatches of
    ``batch_size``; the mean training loss, read once at the end."""
    n, device = len(data.index), data.index.device
    model.train()
    perm = torch.randperm(n, generator=order).to(device)
    total = torch.zeros((), device=device)
    for i in range(0, n, batch_size):
        rows = perm[i : i + batch_size]
        total += train_step(model, optimizer, criterion, *data.batch(rows), decays) * len(rows)
    return float(total) / n


class EarlyStopping:
    """The best validation metric so far (lower is better), its weights, and the epochs since it."""

    def __init__(self, patience: int):
        self.patience, self.best, self.state, self.stale = patience, float("inf"), None, 0

    def update(self, metric: float, state: dict) -> bool:
        """Record an epoch's ``metric`` with its weights ``state``; True when it is the best so far."""
        if metric < self.best:
            self.best, self.stale = metric, 0
            self.state = {k: v.detach().clone() for k, v in state.items()}
            return True
        self.stale += 1
        return False

    @property
    def done(self) -> bool:
        return self.stale >= self.patience


def evaluate_epoch(model, average: WeightAverage, epoch: int, valid: Dataset, config: TrainConfig, snap):
    """(validation metrics, the weights they are of) after ``epoch``: the model's own, or from
    ``config.average_from`` on the running mean of the end-of-epoch weights; a snapshot of them."""
    state, held = model.state_dict(), nullcontext()
    if config.average_from and epoch >= config.average_from:
        average.update(state)
        state = average.mean
        held = weights_of(model, state)
    with held:
        metrics = evaluate(model, valid, config.task)
        if snap is not None:
            snap.take(model, epoch)
    return metrics, state


def run_config(model: nn.Module, config: TrainConfig, train: Dataset) -> dict:
    """What a run records of how it was made: the model's name and hyperparameters, the training
    settings, the data set and its source."""
    return {
        "model": model_name(model),
        "hp": model.hparams(),
        "train": asdict(config),
        "dataset": train.name,
        "data_source": train.source,
    }


def fit(
    model: nn.Module,
    train: Dataset,
    valid: Dataset,
    config: TrainConfig,
    callback=None,
    resume: dict | None = None,
    snapshots: bool | Snapshots = True,
) -> Run:
    """Train with Adam on ``config.device`` (``train_step`` per minibatch); stop when the validation
    metric has not improved for ``patience`` epochs and restore the best weights. Deterministic for a
    given ``config.seed``. A model that needs the training data's statistics is prepared first
    (``Model.prepare``: ``train_model`` does it).

    ``resume`` (a ``Run.optimizer_state``) makes this a fine-tune, not a new fit: Adam continues
    from those moments, the bias is not reset, and the weights the model comes with count as epoch
    0 — they are kept unless an epoch validates better.

    With ``config.average_from`` = e > 0, from epoch e on the validation metric, early stopping and
    the restored weights are those of the running mean of the end-of-epoch weights (``WeightAverage``).
    With ``config.field_decay`` or ``config.linear_decay`` set, the tables w and v take the grouped
    L2 of ``row_decay`` instead of ``weight_decay``.

    ``snapshots``: keep ``fmlib.snapshots.Snapshots`` of epoch 0 (the weights training starts from) and
    of every epoch's evaluated weights in ``Run.snapshots`` (True); fill the given, empty ``Snapshots``,
    which another thread may read while training goes on (the app's live view); or keep none (False).
    The snapshot is taken before ``callback`` sees the epoch's record.

    The step loop never waits on a number: the epoch's loss is summed on the device and read
    once per epoch. A training loss that is not finite stops training with a message."""
    device = torch.device(config.device)
    model.to(device)
    check_fit(model, train, config)
    torch.manual_seed(config.seed)
    order = torch.Generator().manual_seed(config.seed)
    optimizer, decays = optimizer_for(model, config)
    criterion, key = loss_fn(config.task), MONITOR[config.task]
    data = OnDevice.of(train, config.task, device)
    stop = EarlyStopping(config.patience)
    if resume is not None:  # a fine-tune: the weights it starts from are its epoch 0
        load_optimizer_state(model, optimizer, resume)
        stop.update(evaluate(model, valid, config.task)[key], model.state_dict())
    elif config.task == "rating":
        model.start_bias(float(data.target.mean()))  # w0 at the mean rating
    snap = None if snapshots is False else snapshots if isinstance(snapshots, Snapshots) else Snapshots()
    if snap is not None:
        snap.start(model, train)
        snap.take(model, 0)
    average, history, start = WeightAverage(), [], time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        train_loss = run_epoch(model, optimizer, criterion, decays, data, config.batch_size, order)
        if not math.isfinite(train_loss):
            raise ValueError(
                f"the training loss became {train_loss} in epoch {epoch} (training diverged): "
                f"lower the learning rate lr (now {config.lr})"
            )
        metrics, state = evaluate_epoch(model, average, epoch, valid, config, snap)
        record = {"epoch": epoch, "epochs": config.epochs, "train_loss": train_loss}
        record.update({f"valid_{k}": v for k, v in metrics.items()}, seconds=time.perf_counter() - start)
        record["best"] = stop.update(metrics[key], state)
        history.append(record)
        if callback is not None:
            callback(record)
        if stop.done:
            break
    if stop.state is None:  # no epoch had a finite validation metric: nothing to restore
        raise ValueError(
            f"validation {key} was NaN or infinite after every epoch (training diverged): "
            f"lower the learning rate lr (now {config.lr})"
        )
    model.load_state_dict(stop.state)
    metrics = {"valid": evaluate(model, valid, config.task)}
    model.cpu()  # runs are saved and analysed on the CPU
    return Run(
        model=model,
        config=run_config(model, config, train),
        history=history,
        metrics=metrics,
        seconds=time.perf_counter() - start,
        optimizer_state=optimizer_state(model, optimizer),
        snapshots=snap,
    )


def fit_by_sampling(model: nn.Module, train: Dataset, valid: Dataset, config: TrainConfig, callback=None) -> Run:
    """Train a model that draws its own posterior samples (Bayesian FM's Gibbs sweeps, ``model.fit_gibbs``)
    instead of taking Adam steps; ``config.epochs`` is the number of sweeps."""
    start = time.perf_counter()
    history = model.fit_gibbs(train, valid, config, callback)
    metrics = {"valid": evaluate(model, valid, config.task)}
    config_dict = run_config(model, config, train)
    return Run(model=model, config=config_dict, history=history, metrics=metrics, seconds=time.perf_counter() - start)


def quick_settings(dataset: str) -> tuple[TrainConfig, dict]:
    """The short training a page runs when no saved run is chosen: (TrainConfig, model hp).

    MovieLens: 4 epochs at lr 1e-2, dim 8. Synthetic data (a few thousand rows with a planted R,
    ``fmlib.data.synthetic``): batches of 128 at lr 2e-2 for up to 40 epochs, so Adam takes ~1000
    steps instead of 32, and dim 4, the planted embedding size — with a larger dim the embeddings
    can absorb a low-rank planted R (field-wise maps A_f with A_fᵀA_g ∝ R_fg), so R is not
    identifiable. Measured on ``synthetic.demo_R()``, training seeds 0–4: FwFM and DPLR (ρ = 2)
    recover R with off-diagonal correlation 0.976–1.000 after ``align_field_scales`` (at lr 1e-2
    with patience 5, two FwFM seeds stalled at 0.84 and 0.94)."""
    if dataset == "synthetic":
        return TrainConfig(epochs=40, batch_size=128, lr=2e-2, patience=10), {"dim": 4}
    return TrainConfig(epochs=4, lr=1e-2, patience=2), {"dim": 8}


def quick_model_settings(dataset: str, model: str) -> tuple[TrainConfig, dict]:
    """``quick_settings`` for ``model``: its hyperparameters limited to those ``model`` takes (an FM's
    dim, nothing for RaFM, whose ranks keep their defaults). What every default training runs: the
    Train page's first choice and the starter runs; a tuned preset (its epoch budget, early stopping
    deciding) is the explicit other choice."""
    config, hp = quick_settings(dataset)
    takes = hyperparameters(model)
    return config, {k: v for k, v in hp.items() if k in takes}


def train_model(
    name: str, data: Split, config: TrainConfig, callback=None, *, snapshots: bool | Snapshots = True, **hp
) -> Run:
    """Build model ``name`` (seeded), fit it and add test metrics: what the CLI and the Train page do.
    ``snapshots``: as ``fit`` takes them (a model trained by sampling keeps none)."""
    torch.manual_seed(config.seed)
    model = build_for(name, data.train, **hp)
    if model.trained_by == "gibbs":
        run = fit_by_sampling(model, data.train, data.valid, config, callback)
    else:
        run = fit(model, data.train, data.valid, config, callback, snapshots=snapshots)
    run.config["split"] = {"seed": data.seed, "min_count": data.min_count, "features": data.schema.names}
    run.metrics["test"] = evaluate(run.model, data.test, config.task)
    return run
