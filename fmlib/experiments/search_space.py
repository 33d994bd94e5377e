"""The search space every model is tuned in (``python -m fmlib tune``), and where a recipe lies in it.

* ``SEARCH_SPACES``: the same training ``TOOLS`` for every model plus the model's own sizes; a paper's own
  protocol searches its own space (``PROTOCOL_SPACES``).
* A trial's point (``suggest``) is split into the training values ``TrainConfig`` takes and the model's
  hyperparameters (``split_params``); a preset's values go back into the space's form (``point_values``).
* A value of a recipe within ``EDGE`` of an end of its range lies at that end (``at_edges``): a wider range might
  find better; ``past_the_end`` moves it past the end, for a probe of whether that end binds
  (``fmlib.experiments.convergence.binding``).
"""

from __future__ import annotations

import json
import math

from ..models import hyperparameters

# name -> (low, high) for a log-uniform float, range(low, high + 1) for an integer, or a tuple of
# choices. TOOLS are the training tools every model gets, drawn from the same ranges for every model
# (a tool one model can take and the other cannot would decide a comparison, not the models): lr;
# weight_decay, Adam's L2 on every table row and weight matrix without an L2 of its own; field_l2,
# the L2 of one field's rows (a dict of ranges: field name -> range), drawn on its own rather than
# as a multiple of weight_decay, so a field can take a weak L2 while the others take a strong one
# (``train_values``); linear_decay, the multiple of a row's L2 on its linear weight w; average_from,
# the epoch from which the end-of-epoch weights are averaged (fmlib.train). Every L2 range starts at
# 1e-7, an L2 too weak to matter, so its lower end is "no L2" and never binds (``at_edges``). The
# ranges were widened after the first tunings, whose bests sat at their ends (README, Scorecard), and
# averaging is always on: no tuned preset chose it off, and a study that drew "off" early kept
# drawing it (a categorical choice locks in) at a validation RMSE 0.024 worse.
TOOLS = {
    "lr": (1e-3, 1e-1),
    "weight_decay": (1e-7, 1e-1),
    "field_l2": {"user_id": (1e-7, 1e-1), "movie_id": (1e-7, 1e-1)},
    "linear_decay": (1e-4, 10.0),
    "average_from": range(1, 11),
}


# r_l2: R's L2 toward the FM's (DPLR eq. 7), which an FwFM takes and a DPLR takes too (fmlib.models.dplr), drawn
# from one range for both. It starts at 1e-7, no pull, as every L2 does: its first lower end, 1e-4, still pulled a
# DPLR's R hard (README, "DPLR's pull toward the FM")
R_L2 = (1e-7, 1.0)


MODEL_SPACES = {
    "fm": {"dim": (8, 16, 32, 64)},
    "fwfm": {"dim": (8, 16, 32, 64), "r_l2": R_L2},
    "dplr": {"dim": (8, 16, 32, 64), "r_l2": R_L2},
    # c of Algorithm 1's consistency terms: its first range, 0.1-10, bound RaFM(8, 32) at both ends (c 8-10 in one
    # study's best trials, 0.13-0.18 in the other's; README, "The RaFMs and RFM")
    "rafm": {"consistency": (0.01, 100.0)},
    "rfm": {  # one rotation layer (the default; a second doubles the cost of an epoch)
        "dim": (8, 16),
        "hidden": (8, 16, 32),
        "heads": (1, 2),
        "mlp_hidden": (16, 64),
        "dropout": (0.0, 0.2, 0.4),
    },
}


SEARCH_SPACES = {model: {**TOOLS, **own} for model, own in MODEL_SPACES.items()}


# A paper's own protocol, run beside ours so a verdict can be read under both (``--protocol``):
# [DPLR] §5 tunes only the learning rate with Optuna, at 8-dimensional embeddings with features
# seen fewer than 10 times in train as rare (``--dim 8 --min-count 10``); the rest stays at
# TrainConfig's defaults (one L2, no grouped L2, no averaging). Its presets go to presets/dplr-paper/.
PROTOCOL_SPACES = {"dplr-paper": {"lr": (1e-3, 5e-2)}}


PROTOCOLS = ("ours", *PROTOCOL_SPACES)


TRAIN_PARAMS = ("lr", "weight_decay", "average_from", "field_l2", "linear_decay")


def search_space(model: str, fixed: dict, fields=None, protocol: str = "ours") -> dict:
    """The model's space under ``protocol`` without the hyperparameters ``fixed`` holds. With
    ``fields`` (the data's field names), a dict of per-field ranges (``field_decay``) keeps the
    fields the data has."""
    if model not in SEARCH_SPACES:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(SEARCH_SPACES)}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    full = SEARCH_SPACES[model] if protocol == "ours" else PROTOCOL_SPACES[protocol]
    space = {k: v for k, v in full.items() if k not in fixed}
    for name, rng in list(space.items()):
        if isinstance(rng, dict) and fields is not None:
            space[name] = {f: r for f, r in rng.items() if f in fields}
            if not space[name]:
                del space[name]
    return space


def stored(space: dict) -> dict:
    """``space`` as the study's settings and the preset record it (JSON): an integer range as {"from", "to"}."""
    return json.loads(json.dumps(space, default=lambda r: {"from": r.start, "to": r.stop - 1}))


def draw(trial, name: str, rng):
    """Log-uniform for a (low, high) float range, uniform for an integer range, categorical for a tuple of choices."""
    if isinstance(rng, range):
        return trial.suggest_int(name, rng.start, rng.stop - 1)
    if len(rng) == 2 and isinstance(rng[0], float):
        return trial.suggest_float(name, *rng, log=True)
    return trial.suggest_categorical(name, rng)


def suggest(trial, space: dict) -> dict:
    """One point of ``space``; a dict of ranges gives a dict, its entries drawn as ``<name>.<key>``."""
    return {
        name: {key: draw(trial, f"{name}.{key}", r) for key, r in rng.items()}
        if isinstance(rng, dict)
        else draw(trial, name, rng)
        for name, rng in space.items()
    }


def nested(params: dict) -> dict:
    """Optuna's flat parameters in ``suggest``'s form: ``field_decay.user_id`` back into ``field_decay``."""
    out = {}
    for name, value in params.items():
        head, dot, key = name.partition(".")
        if dot:
            out.setdefault(head, {})[key] = value
        else:
            out[name] = value
    return out


def train_values(params: dict) -> dict:
    """A point's training tools as TrainConfig takes them: each field's L2 (``field_l2``) as the multiple of
    ``weight_decay`` that ``fmlib.train.row_decay`` applies (``field_decay``)."""
    train = {k: v for k, v in params.items() if k in TRAIN_PARAMS}
    if "field_l2" in train:
        train["field_decay"] = {f: l2 / train["weight_decay"] for f, l2 in train.pop("field_l2").items()}
    return train


def point_values(train: dict) -> dict:
    """``train_values`` undone: a preset's training tools as the space draws them (``field_l2``)."""
    point = {k: v for k, v in train.items() if k != "field_decay"}
    if "field_decay" in train:
        point["field_l2"] = {f: m * train["weight_decay"] for f, m in train["field_decay"].items()}
    return point


def split_params(model: str, params: dict, fixed: dict) -> tuple[dict, dict]:
    """(TrainConfig overrides, model hyperparameters) of a trial's point plus the fixed sizes."""
    train = train_values(params)
    hp = {**fixed, **{k: v for k, v in params.items() if k not in TRAIN_PARAMS}}
    unknown = set(hp) - set(hyperparameters(model))
    if unknown:
        raise ValueError(f"model {model!r} has no hyperparameter {sorted(unknown)}")
    return train, hp


def flat_space(space: dict) -> dict:
    """A space (or a point) as Optuna names it: a dict entry as ``<name>.<key>`` entries (``suggest``); an integer
    range as stored (``stored``: {"from", "to"}) stays one entry."""
    flat = {}
    for name, rng in space.items():
        if isinstance(rng, dict) and "from" not in rng:
            flat.update({f"{name}.{key}": r for key, r in rng.items()})
        else:
            flat[name] = rng
    return flat


def drawable(value, rng) -> bool:
    """Whether ``draw`` can give ``value``: inside a (low, high) float range, in an integer range, or one of the
    choices."""
    if isinstance(rng, range):
        return isinstance(value, int) and value in rng
    if len(rng) == 2 and isinstance(rng[0], float):
        return isinstance(value, (int, float)) and rng[0] <= value <= rng[1]
    return value in rng


EDGE = 0.05  # a value within this share of its range's width (log scale for a float) from an end lies at that end


NO_L2 = ("weight_decay", "field_l2", "linear_decay", "r_l2")  # ranges whose lower end is an L2 too weak to matter


# ranges whose upper end is a model the tuned one contains: λ_R = 1 holds R at the FM's 11ᵀ − I (``CONTAINS``), a
# stronger pull holds it closer to the same FM, whose own tuning covers beyond the end (README, "DPLR's pull")
HELD = ("r_l2",)


def at_edges(point: dict, space: dict) -> list[str]:
    """The names (Optuna's: ``field_l2.user_id``) of the values of ``point`` (a recipe as the space draws it,
    ``point_values``) that lie at an end of their range in ``space`` (as stored, ``stored``), within ``EDGE`` of its
    width: that range may bind, and a wider one might find a better recipe. Not counted: the lower end of an L2
    (``NO_L2``: "no L2"; a weaker one changes nothing), the upper end of a pull toward a contained model (``HELD``:
    that model, which the containment check compares), the lower end of an integer range (averaging from the first
    epoch) and a choice among values."""
    values, found = flat_space(point), []
    for name, rng in flat_space(space).items():
        if name not in values:
            continue
        value = values[name]
        if isinstance(rng, dict):
            low, high, at, lower_counts, upper_counts = rng["from"], rng["to"], value, False, True
        elif len(rng) == 2 and isinstance(rng[0], float):
            low, high, at = (math.log(v) for v in (*rng, value))
            lower_counts, upper_counts = name.partition(".")[0] not in NO_L2, name not in HELD
        else:
            continue
        share = (at - low) / (high - low)
        if share >= 1 - EDGE and upper_counts or share <= EDGE and lower_counts:
            found.append(name)
    return found


BEYOND = 2  # a probe moves a value at an end of its range past that end: a float this factor, an integer this many


def past_the_end(point: dict, name: str, space: dict) -> dict:
    """``point`` (``suggest``'s form) with its value ``name`` (Optuna's name, as ``at_edges`` gives it) moved past
    the end of its range in ``space`` (as stored) that it lies at: a float ``BEYOND`` times further on a log scale,
    an integer ``BEYOND`` steps. A value the space cannot draw, to ask whether the end binds (``edge_probes``)."""
    rng = flat_space(space)[name]
    head, _, key = name.partition(".")
    value = point[head][key] if key else point[head]
    if isinstance(rng, dict):
        upper = value - rng["from"] > rng["to"] - value
        moved = value + BEYOND if upper else value - BEYOND
    else:
        upper = math.log(value / rng[0]) > math.log(rng[1] / value)
        moved = value * BEYOND if upper else value / BEYOND
    return {**point, head: {**point[head], key: moved}} if key else {**point, head: moved}
