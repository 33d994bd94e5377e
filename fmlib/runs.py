"""Run store: trained runs on disk, one directory each.

    <root>/<run_id>/model.safetensors   weights (safetensors: no pickle)
    <root>/<run_id>/run.json            config, schema, history, metrics, seconds, author, snapshots
    <root>/<run_id>/snapshots.safetensors  per-epoch R and movie embeddings (``fmlib.snapshots``), if kept

A run is written into a temporary directory and renamed into place, so a crash never leaves
a half-written run. ``load`` rebuilds the model from the saved schema and hyperparameters. A run
saved before runs kept snapshots (no ``snapshots`` entry in run.json) loads with ``snapshots`` None.

Runs shared by a class: a run saved with an ``author`` is that author's; a run saved without
one (the command line, the teacher) is shared. A session's default run is its author's newest,
else the newest shared one (``default_id``), never another author's. A quota on the number of
runs and their bytes (``Quota``: ``FMLIB_MAX_RUNS``, ``FMLIB_MAX_RUN_BYTES``) refuses a save
that would pass it, and nothing is written then.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from safetensors.torch import load_file, save_file

from .data.schema import Schema
from .models import build_model
from .snapshots import Snapshots
from .train import Run

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
AUTHOR = re.compile(r"\w[\w .'-]{0,39}")
# run.json -> ((its mtime, its size), its contents): each version of the file is parsed once
_PARSED: dict[Path, tuple[tuple[int, int], dict]] = {}


class RunError(RuntimeError):
    """A run directory that is missing, incomplete or corrupt, or a run id that cannot name one."""


class QuotaError(ValueError):
    """Saving would pass the run store's quota."""


def default_root() -> Path:
    return Path(os.environ.get("FMLIB_RUNS", "runs"))


def check_run_id(run_id) -> str:
    """A run id is a plain directory name: letters, digits, '-', '_', '.', not starting with '.'."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValueError(
            f"run name {run_id!r}: use 1 to 80 letters, digits, '-', '_' and '.' (not first), no '/' or spaces"
        )
    return run_id


def check_author(author) -> str:
    """An author name: 1 to 40 letters, digits, spaces, '.', "'", '-' or '_', starting with a letter or digit."""
    if not isinstance(author, str) or not AUTHOR.fullmatch(author):
        raise ValueError(f"author {author!r}: use 1 to 40 letters, digits, spaces, '.', \"'\", '-' and '_'")
    return author


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name} must be a positive integer, got {text!r}")
    return int(text)


@dataclass(frozen=True)
class Quota:
    """The most runs, and bytes in all, the store holds."""

    runs: int = 300
    bytes: int = 1 << 30

    @classmethod
    def from_env(cls) -> Quota:
        return cls(_env_int("FMLIB_MAX_RUNS", cls.runs), _env_int("FMLIB_MAX_RUN_BYTES", cls.bytes))


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class RunStore:
    def __init__(self, root: str | Path | None = None, quota: Quota | None = None):
        self.root = Path(root) if root is not None else default_root()
        self.quota = quota if quota is not None else Quota.from_env()

    def save(self, run: Run, name: str | None = None, author: str | None = None) -> str:
        """Save a run; returns its id: ``name``, else ``<model>-<dataset>-<time>`` (with ``-2``, ``-3``, ...
        when a class saves in the same second).

        ``author`` makes it that author's run; without one it is shared. QuotaError when the store
        is full; nothing is written then."""
        base = check_run_id(name or f"{run.config['model']}-{run.config['dataset']}-{time.strftime('%Y%m%d-%H%M%S')}")
        if author is not None:
            check_author(author)
        if name is not None and (self.root / name).exists():
            raise ValueError(f"a run named {name!r} already exists in {self.root}")
        held = self.ids()
        if len(held) >= self.quota.runs:
            raise QuotaError(
                f"the run store is full: {len(held)} of {self.quota.runs} runs (FMLIB_MAX_RUNS); "
                "nothing was saved — ask the teacher to delete some"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{base}-", dir=self.root))
        try:
            state = {k: v.contiguous() for k, v in run.model.state_dict().items()}
            save_file(state, tmp / "model.safetensors")
            snapshots = run.snapshots if run.snapshots is not None and run.snapshots.count else None
            if snapshots is not None and snapshots.tensors():
                save_file(snapshots.tensors(), tmp / "snapshots.safetensors")
            meta = {
                "run_id": base,
                "author": author,
                "config": run.config,
                "schema": run.model.schema.to_dict(),
                "history": run.history,
                "metrics": run.metrics,
                "seconds": run.seconds,
                "created": time.strftime("%Y-%m-%d %H:%M:%S"),
                "snapshots": None if snapshots is None else snapshots.meta(),
            }
            (tmp / "run.json").write_text(json.dumps(meta, indent=1))
            size, used = _bytes(tmp), sum(self.size(i) for i in held if (self.root / i).exists())
            if used + size > self.quota.bytes:
                raise QuotaError(
                    f"the run store is full: this run needs {size / 2**20:.1f} MiB, {used / 2**20:.1f} of "
                    f"{self.quota.bytes / 2**20:.1f} MiB are used (FMLIB_MAX_RUN_BYTES); nothing was saved — "
                    "ask the teacher to delete some"
                )
            for k in range(1, 1000 if name is None else 2):
                run_id = base if k == 1 else f"{base}-{k}"
                if k > 1:
                    meta["run_id"] = run_id
                    (tmp / "run.json").write_text(json.dumps(meta, indent=1))
                try:
                    tmp.rename(self.root / run_id)  # atomic; fails if another save took the name first
                    return run_id
                except OSError:
                    if not (self.root / run_id).exists():
                        raise
            raise ValueError(f"a run named {base!r} already exists in {self.root}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def ids(self) -> list[str]:
        """Saved run ids, newest first (temporary and hidden directories are skipped)."""
        if not self.root.exists():
            return []
        dirs = [d for d in self.root.iterdir() if d.is_dir() and not d.name.startswith(".")]
        return [d.name for d in sorted(dirs, key=lambda d: d.stat().st_mtime, reverse=True)]

    def by_author(self) -> dict[str | None, list[str]]:
        """Run ids per author (None: shared runs), each newest first."""
        groups: dict[str | None, list[str]] = {}
        for run_id in self.ids():
            try:
                author = self.info(run_id).get("author")
            except RunError:  # a corrupt run is listed with the shared ones; picking it says why
                author = None
            groups.setdefault(author, []).append(run_id)
        return groups

    def default_id(self, author: str | None = None) -> str | None:
        """The author's newest run, else the newest shared run, else None — never another author's."""
        groups = self.by_author()
        mine = groups.get(author) if author is not None else None
        return (mine or groups.get(None) or [None])[0]

    def size(self, run_id: str) -> int:
        """Bytes on disk of a saved run."""
        return _bytes(self._dir(run_id))

    def delete(self, run_id: str) -> None:
        """Remove a saved run (the app offers this to the teacher only)."""
        path = self._dir(run_id)
        if not path.is_dir():
            raise RunError(f"run {run_id!r}: no such run in {self.root}")
        shutil.rmtree(path)
        _PARSED.pop(path / "run.json", None)

    def _dir(self, run_id: str) -> Path:
        try:
            return self.root / check_run_id(run_id)
        except ValueError as err:
            raise RunError(str(err)) from None

    def info(self, run_id: str) -> dict:
        """The run's metadata (config, history, metrics, author) without loading weights. Every page lists
        the runs on every rerun, so run.json is parsed once per version (its mtime and size) and the dict
        is shared: read it, never modify it."""
        path = self._dir(run_id) / "run.json"
        try:
            stat = path.stat()
        except FileNotFoundError:
            _PARSED.pop(path, None)
            raise RunError(f"run {run_id!r}: {path} is missing") from None
        version = (stat.st_mtime_ns, stat.st_size)
        seen, meta = _PARSED.get(path, (None, None))
        if seen != version:
            meta = self._parse(run_id, path)
            _PARSED[path] = (version, meta)
        return meta

    @staticmethod
    def _parse(run_id: str, path: Path) -> dict:
        try:
            meta = json.loads(path.read_text())
            meta["config"]["model"], meta["metrics"]
        except FileNotFoundError:
            raise RunError(f"run {run_id!r}: {path} is missing") from None
        except (ValueError, KeyError, TypeError) as err:
            raise RunError(f"run {run_id!r}: {path} is corrupt ({err})") from None
        return meta

    def load(self, run_id: str) -> Run:
        """Rebuild the model of a saved run with its weights, config, history and metrics."""
        meta = self._parse(run_id, self._dir(run_id) / "run.json")  # its own copy: a Run may be changed
        config = meta["config"]
        try:
            model = build_model(config["model"], Schema.from_dict(meta["schema"]), **config["hp"])
            model.load_state_dict(load_file(self.root / run_id / "model.safetensors"))
        except Exception as err:
            raise RunError(f"run {run_id!r}: weights cannot be loaded ({err})") from None
        model.eval()
        return Run(
            model=model,
            config=config,
            history=meta["history"],
            metrics=meta["metrics"],
            seconds=meta["seconds"],
            snapshots=self._snapshots(run_id, meta.get("snapshots")),
        )

    def _snapshots(self, run_id: str, meta: dict | None) -> Snapshots | None:
        """The run's per-epoch snapshots; None for a run saved without them."""
        if meta is None:
            return None
        path = self.root / run_id / "snapshots.safetensors"
        try:
            tensors = load_file(path) if path.exists() else {}
            return Snapshots.from_saved(meta, tensors)
        except Exception as err:
            raise RunError(f"run {run_id!r}: its snapshots cannot be loaded ({err})") from None
