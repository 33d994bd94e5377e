"""Results files of experiments and benchmarks: where they go, how they are written and read back.

They go to ``$FMLIB_RESULTS`` (default ``./artifacts``), where the app's pages look for them.
Every write is atomic (a temporary file in the same folder renamed into place), so a reader
never sees a half-written file; every read checks the keys or columns its caller needs and
names the file when one is missing.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import pandas as pd


def results_dir() -> Path:
    """``$FMLIB_RESULTS``, or ``./artifacts``."""
    return Path(os.environ.get("FMLIB_RESULTS", "artifacts"))


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def replace_block(text: str, block: str, begin: str, end: str) -> str:
    """``text`` with the part between the lines ``begin`` and ``end`` replaced by ``block``: a table that a command
    computes, kept in a file that people also write (the README's scorecard and its presets)."""
    if begin not in text or end not in text:
        raise ValueError(f"the file has no such block: add the lines {begin!r} and {end!r}")
    head, rest = text.split(begin, 1)
    return head + begin + "\n" + block + end + rest.split(end, 1)[1]


def write_json(path, data) -> Path:
    return write_text(path, json.dumps(data, indent=1))


def write_csv(path, frame: pd.DataFrame) -> Path:
    return write_text(path, frame.to_csv(index=False))


def _read(path: Path, made_by: str) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        hint = f": run `{made_by}`" if made_by else ""
        raise FileNotFoundError(f"no results file {path}{hint}") from None


def _check(path: Path, found, needed) -> None:
    missing = [k for k in needed if k not in found]
    if missing:
        raise ValueError(f"{path} is not the expected results file: it lacks {', '.join(map(str, missing))}")


def read_json(path, keys=(), made_by: str = "") -> dict:
    """The JSON object in ``path``; ValueError naming the file if it is not one or lacks a key of ``keys``.
    ``made_by``: the command that writes the file, named when it is missing."""
    path = Path(path)
    try:
        data = json.loads(_read(path, made_by))
    except ValueError as err:
        raise ValueError(f"{path} is not a JSON results file ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON results file (not an object)")
    _check(path, data, keys)
    return data


def read_csv(path, columns=(), made_by: str = "") -> pd.DataFrame:
    """The table in ``path``; ValueError naming the file if it cannot be parsed or lacks a column of ``columns``."""
    path = Path(path)
    try:
        frame = pd.read_csv(io.StringIO(_read(path, made_by)))
    except (ValueError, pd.errors.ParserError) as err:
        raise ValueError(f"{path} is not a CSV results file ({err})") from None
    _check(path, frame.columns, columns)
    return frame
