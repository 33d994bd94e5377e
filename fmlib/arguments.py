"""Command-line arguments shared by ``python -m fmlib`` and its topic commands.

Value parsers (``positive_int``, ``int_list``, ...) raise ``BadValue``: argparse prints its
message in one line (exit code 2), and any other caller (a page parsing a text box) catches
it as a ``ValueError``. ``add_train_arguments`` adds one flag per ``TrainConfig`` field, its
default taken from ``TrainConfig``, so a new field appears on every command that trains; with
``unset=True`` a flag left out stays None, so a command tells the flags given from the rest
(``given_train_settings``: the train command lets them override a preset).
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields, replace
from typing import get_type_hints

from .data.dataset import TASKS
from .train import DEVICES, TrainConfig


class BadValue(argparse.ArgumentTypeError, ValueError):
    """A value outside its allowed range: argparse shows the message; other callers catch ValueError."""


def _number(kind, text: str):
    try:
        return kind(text)
    except ValueError:
        raise BadValue(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None


def positive_int(text: str) -> int:
    value = _number(int, text)
    if not value > 0:
        raise BadValue(f"must be > 0, got {text}")
    return value


def at_least_two(text: str) -> int:
    """A count an interval is read from (seeds): two at least."""
    value = _number(int, text)
    if not value >= 2:
        raise BadValue(f"must be >= 2 (an interval needs two values), got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(float, text)
    if not value > 0:  # NaN fails too
        raise BadValue(f"must be > 0, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(int, text)
    if not value >= 0:
        raise BadValue(f"must be >= 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(float, text)
    if not value >= 0:
        raise BadValue(f"must be >= 0, got {text}")
    return value


def field_multiples(text: str) -> dict[str, float]:
    """'user_id=0.5,movie_id=2' -> {'user_id': 0.5, 'movie_id': 2.0}: multiples >= 0 per field name."""
    out = {}
    for piece in filter(None, (p.strip() for p in str(text).split(","))):
        name, sep, value = piece.partition("=")
        try:
            scale = float(value)
        except ValueError:
            scale = None
        if not (sep and name.strip() and scale is not None and scale >= 0):
            raise BadValue(f"expected field=multiple pairs, multiples >= 0 (e.g. user_id=0.5,movie_id=2), got {text!r}")
        out[name.strip()] = scale
    return out


def int_list(text: str) -> tuple[int, ...]:
    """``"8, 32"`` -> ``(8, 32)``; empty pieces (a trailing comma) are skipped."""
    try:
        values = tuple(int(piece) for piece in str(text).split(",") if piece.strip())
    except ValueError:
        raise BadValue(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise BadValue(f"expected comma-separated integers, got {text!r}")
    return values


def positive_int_list(text: str) -> tuple[int, ...]:
    values = int_list(text)
    if min(values) < 1:
        raise BadValue(f"every value must be >= 1, got {text}")
    return values


# argparse settings of the TrainConfig fields; a field not listed gets the type of its annotation.
TRAIN_FIELDS = {
    "task": {"choices": TASKS, "help": "rating: predict the stars (MSE); click: rating >= 4 (logistic loss)"},
    "epochs": {"type": positive_int, "help": "max epochs (early stopping)"},
    "batch_size": {"type": positive_int, "help": "minibatch size; when not given, 1024 on cpu and 16384 on cuda"},
    "lr": {"type": positive_float, "help": "Adam's learning rate"},
    "weight_decay": {"type": non_negative_float, "help": "L2 on embedding tables and weight matrices"},
    "patience": {"type": positive_int, "help": "epochs without a better validation metric before stopping"},
    "seed": {"type": int, "help": "seeds the split, the init and the batches"},
    "device": {"choices": DEVICES, "help": "where to train: cpu, or cuda (an NVIDIA GPU)"},
    "average_from": {
        "type": non_negative_int,
        "help": "from this epoch on, keep the mean of the end-of-epoch weights (0: off)",
    },
    "field_decay": {
        "type": field_multiples,
        "help": "L2 per field group, multiples of weight_decay on the field's rows of w and v, e.g. user_id=0.5",
    },
    "linear_decay": {"type": non_negative_float, "help": "multiple of weight_decay on the linear weights w"},
}


def add_train_arguments(parser, skip=(), unset: bool = False, **defaults) -> None:
    """``--epochs``, ``--batch-size``, ... for every ``TrainConfig`` field not in ``skip``; a
    command's own default for a field goes in ``defaults`` (e.g. ``epochs=15``). ``unset``: a flag
    not given is None (its help still names the default that ``train_config`` then takes)."""
    names = [f.name for f in fields(TrainConfig)]
    unknown = set(defaults) - set(names)
    if unknown:
        raise TypeError(f"not TrainConfig fields: {sorted(unknown)}")
    hints = get_type_hints(TrainConfig)
    for f in fields(TrainConfig):
        if f.name in skip:
            continue
        default = defaults.get(f.name, f.default if f.default is not MISSING else f.default_factory())
        settings = dict(TRAIN_FIELDS.get(f.name, {"type": hints[f.name]}))
        settings["help"] = f"{settings.get('help', f.name.replace('_', ' '))} (default: {default})"
        parser.add_argument("--" + f.name.replace("_", "-"), default=None if unset else default, **settings)


def given_train_settings(args) -> dict:
    """The ``TrainConfig`` fields that parsed arguments set: every flag whose value is not None
    (with ``add_train_arguments(unset=True)``: the flags given on the command line)."""
    return {f.name: getattr(args, f.name) for f in fields(TrainConfig) if getattr(args, f.name, None) is not None}


def train_config(args, **fixed) -> TrainConfig:
    """The ``TrainConfig`` of parsed arguments, ``TrainConfig``'s defaults for the fields they leave
    None; ``fixed`` sets fields the command has no flag for."""
    return TrainConfig(**{**given_train_settings(args), **fixed})


def add_device_argument(parser) -> None:
    """``--device`` for a command that trains from presets: a preset's batch size is part of its
    tuned recipe and is kept on every device."""
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default="cpu",
        help="where to train: cpu, or cuda (an NVIDIA GPU); presets keep their batch size (default: cpu)",
    )


def on_device(settings: dict, device: str) -> dict:
    """{label: (TrainConfig, ...)} with every config moved to ``device`` (checked: a clear error
    when cuda is asked for and absent)."""
    TrainConfig(device=device)
    return {label: (replace(config, device=device), *rest) for label, (config, *rest) in settings.items()}


def add_data_arguments(parser, choices=None) -> None:
    """``--dataset`` (MovieLens by default; ``choices`` for commands that take others) and ``--data-dir``."""
    from .data.movielens import SPECS

    parser.add_argument("--dataset", default="ml-100k", choices=list(choices or SPECS))
    parser.add_argument(
        "--data-dir",
        default=None,
        help="directory with the original GroupLens files (default: $FMLIB_DATA_DIR, then the cache, then download)",
    )


def add_features_argument(parser) -> None:
    """``--features``: the feature set by field names (``fmlib.data.features``)."""
    parser.add_argument(
        "--features",
        default=None,
        help="comma-separated field names; 'all' = every field of the dataset; 'rated' (SVD++: the movies the "
        "user rated in train) and 'raters' (the users who rated the movie there) can be added, e.g. "
        "user_id,movie_id (matrix factorization), user_id,movie_id,rated (SVD++), all,rated,raters "
        "(default: the preset's, else all)",
    )
