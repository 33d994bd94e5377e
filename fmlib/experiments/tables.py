"""Result tables of the reproductions: a small CSV whose header says how it was made.

    # command: python -m fmlib reproduce dplr --seeds 5 --out results
    # commit: 1a2b3c4
    # date: 2026-11-26 07:00:00 UTC
    seed,model,rank,...

The committed tables live in the repository's results/ folder; a command run without ``--out``
writes to ``$FMLIB_RESULTS`` (default ./artifacts). ``newest`` picks, of the two, the table
with the later date, so a page shows a fresh recomputation when there is one and the
committed table otherwise.
"""

from __future__ import annotations

import io
import subprocess
import time
from pathlib import Path

import pandas as pd

from ..results import results_dir, write_text

HEADER_KEYS = ("command", "commit", "date")


def committed_root() -> Path:
    """The repository's results/ folder."""
    return Path(__file__).resolve().parents[2] / "results"


def artifacts_root() -> Path:
    return results_dir()


def git_commit() -> str:
    """The short hash of the checked-out commit (``+`` when the tree has changes), or "unknown"."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+" if dirty else "")


def write(frame: pd.DataFrame, path: Path, command: str) -> Path:
    """Write ``frame`` under its header, atomically."""
    header = {"command": command, "commit": git_commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    return write_text(path, "".join(f"# {k}: {v}\n" for k, v in header.items()) + frame.to_csv(index=False))


def read(path: Path, columns=()) -> tuple[pd.DataFrame, dict]:
    """(table, header) of a result file; a missing header key or column: ValueError naming the file."""
    path = Path(path)
    lines = path.read_text().splitlines(keepends=True)
    found, size = _header_lines(lines)
    missing = [k for k in HEADER_KEYS if k not in found]
    try:
        frame = pd.read_csv(io.StringIO("".join(lines[size:])))
    except (ValueError, pd.errors.ParserError) as err:
        raise ValueError(f"{path} is not a result table ({err})") from None
    missing += [c for c in columns if c not in frame]
    if missing:
        raise ValueError(f"{path} is not a result table: it lacks {', '.join(missing)}")
    return frame, found


def _header_lines(lines) -> tuple[dict, int]:
    """The leading ``# key: value`` lines of a result file as a dict, and how many there were."""
    found, size = {}, 0
    for line in lines:
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(": ")
        found[key] = value.strip()
        size += 1
    return found, size


def mean_std(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of every column but ``seed``, per ``model`` (in the table's order):
    columns ``<column>_mean`` and ``<column>_std``, the model as index."""
    stats = frame.drop(columns=["seed"]).groupby("model", sort=False).agg(["mean", "std"])
    stats.columns = [f"{a}_{b}" for a, b in stats.columns]
    return stats


def header(path: Path) -> dict:
    """The header of a result file (its leading ``# key: value`` lines), without reading the table;
    a missing key: ValueError naming the file."""
    with Path(path).open() as lines:
        found, _ = _header_lines(lines)
    missing = [k for k in HEADER_KEYS if k not in found]
    if missing:
        raise ValueError(f"{path} is not a result table: it lacks {', '.join(missing)}")
    return found


def newest(name: str, artifacts=None, committed=None) -> Path | None:
    """The later-dated of ``<artifacts>/<name>`` and ``<results>/<name>``, or None if neither exists
    (read from their headers: a page asks on every rerun)."""
    found = []
    for root in (artifacts or results_dir(), committed or committed_root()):
        path = Path(root) / name
        if path.exists():
            try:
                found.append((header(path)["date"], path))
            except ValueError:
                continue
    return max(found)[1] if found else None
