"""Run store: trained runs on disk, one directory each.

    <root>/<run_id>/model.safetensors   weights (safetensors: no pickle)
    <root>/<run_id>/run.json            config, schema, history, metrics, seconds

A run is written into a temporary directory and renamed into place, so a crash never leaves
a half-written run. ``load`` rebuilds the model from the saved schema and hyperparameters.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from safetensors.torch import load_file, save_file

from .data.schema import Schema
from .models import build_model
from .train import Run


class RunError(RuntimeError):
    """A run directory that is missing, incomplete or corrupt."""


def default_root() -> Path:
    return Path(os.environ.get("FMLIB_RUNS", "runs"))


class RunStore:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_root()

    def save(self, run: Run, name: str | None = None) -> str:
        """Save a run; returns its id (``<model>-<dataset>-<time>`` unless ``name`` is given)."""
        run_id = name or f"{run.config['model']}-{run.config['dataset']}-{time.strftime('%Y%m%d-%H%M%S')}"
        if not run_id.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"run name {run_id!r}: use letters, digits, '-', '_' and '.' only")
        final = self.root / run_id
        if final.exists():
            raise ValueError(f"a run named {run_id!r} already exists in {self.root}")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run_id}-", dir=self.root))
        try:
            state = {k: v.contiguous() for k, v in run.model.state_dict().items()}
            save_file(state, tmp / "model.safetensors")
            meta = {
                "run_id": run_id,
                "config": run.config,
                "schema": run.model.schema.to_dict(),
                "history": run.history,
                "metrics": run.metrics,
                "seconds": run.seconds,
                "created": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            (tmp / "run.json").write_text(json.dumps(meta, indent=1))
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return run_id

    def ids(self) -> list[str]:
        """Saved run ids, newest first (temporary and hidden directories are skipped)."""
        if not self.root.exists():
            return []
        dirs = [d for d in self.root.iterdir() if d.is_dir() and not d.name.startswith(".")]
        return [d.name for d in sorted(dirs, key=lambda d: d.stat().st_mtime, reverse=True)]

    def info(self, run_id: str) -> dict:
        """The run's metadata (config, history, metrics) without loading weights."""
        path = self.root / run_id / "run.json"
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
        meta = self.info(run_id)
        config = meta["config"]
        try:
            model = build_model(config["model"], Schema.from_dict(meta["schema"]), **config["hp"])
            model.load_state_dict(load_file(self.root / run_id / "model.safetensors"))
        except Exception as err:
            raise RunError(f"run {run_id!r}: weights cannot be loaded ({err})") from None
        model.eval()
        return Run(
            model=model, config=config, history=meta["history"], metrics=meta["metrics"], seconds=meta["seconds"]
        )
