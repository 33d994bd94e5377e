"""Starter runs: on a first start with an empty run store, train FM, FwFM and DPLR once, in the background.

Each model trains with its tuned preset when there is one (``STARTERS`` names it) and with the
defaults otherwise, and is saved as a shared run ``<model>-<dataset>-starter``, so every page
has a run to show. ``Starter.status`` says what is happening, for the app to display.
"""

from __future__ import annotations

import threading

from .. import presets
from ..train import TrainConfig, train_model

STARTERS = [("fm", None), ("fwfm", 8), ("dplr", 2)]  # (model, preset size) — see presets.preset_name


class Starter:
    """Trains the starter runs of ``dataset`` into ``store``; ``load_split()`` gives the data (split seed 0)."""

    def __init__(self, store, load_split, dataset: str = "ml-100k"):
        self.store, self.load_split, self.dataset = store, load_split, dataset
        self.status = "starter runs: loading the data"
        self.saved: list[str] = []
        self.error: str | None = None
        self.done = False

    def settings(self, model: str, size) -> tuple[TrainConfig, dict, str]:
        """(config, hyperparameters, where they come from) of one starter run."""
        try:
            preset = presets.load(self.dataset, model, size)
        except ValueError:
            return TrainConfig(), {}, "defaults"
        return presets.train_config(preset), presets.hyperparameters(preset), "tuned preset"

    def run(self) -> None:
        try:
            data = self.load_split()
            for i, (model, size) in enumerate(STARTERS, 1):
                config, hp, source = self.settings(model, size)

                def progress(record, model=model, i=i, source=source):
                    self.status = (
                        f"training starter run {i}/{len(STARTERS)}: {model} ({source}), "
                        f"epoch {record['epoch']}/{record['epochs']}"
                    )

                run = train_model(model, data, config, progress, **hp)
                self.saved.append(self.store.save(run, f"{model}-{self.dataset}-starter"))
            self.status = f"starter runs ready: {', '.join(self.saved)}"
        except Exception as err:  # shown in the app; the app still works without starter runs
            self.error = f"starter runs stopped: {err}"
            self.status = self.error
        finally:
            self.done = True


def start(store, load_split, dataset: str = "ml-100k") -> Starter | None:
    """A running ``Starter`` in a daemon thread if ``store`` is empty, else None."""
    if store.ids():
        return None
    starter = Starter(store, load_split, dataset)
    threading.Thread(target=starter.run, name="starter-runs", daemon=True).start()
    return starter
