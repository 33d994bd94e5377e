"""Starter runs: on a first start with an empty run store, train FM, FwFM and DPLR once, in the background.

The FM and the DPLR train with the quick settings (``fmlib.train.quick_model_settings``, at the
size ``STARTERS`` names): they train as one job of the server's job queue (``fmapp.jobs``), ahead of
any student's first training, so they must be quick — a tuned preset runs up to its epoch budget
(early stopping decides). The FwFM trains with its tuned preset where there is one: its learned R is
the picture the Field interactions page and the lesson's stop on it exist for, and a few quick
epochs leave R at the FM's 1 (``TUNED``). Each is saved as a shared run
``<model>-<dataset>-starter``, so every page has a run to show. Each is trained through
``fmlib.trainings.trained``: a training this machine ran before (another server's starter runs, the tuned
FwFM of the Field interactions page or of notebook 02) is loaded, not run again. ``tuned=True`` trains every one with
its tuned preset — the teacher's explicit choice when rebuilding them. ``Starter.status`` says what is
happening, for the app to display. ``replace=True`` rebuilds them: each new run replaces the one
of its name.
"""

from __future__ import annotations

from fmlib import presets
from fmlib.train import TrainConfig, quick_model_settings
from fmlib.trainings import trained

from .jobs import Cancelled

STARTERS = [("fm", None), ("fwfm", 8), ("dplr", 2)]  # (model, preset size) — see presets.preset_name
TUNED = {"fwfm"}  # trained with the tuned preset even by default: the model whose R the app exists to show


class Starter:
    """Trains the starter runs of ``dataset`` into ``store``; ``load_split()`` gives the data (split seed 0)."""

    def __init__(self, store, load_split, dataset: str = "ml-100k", replace: bool = False, tuned: bool = False):
        self.store, self.load_split, self.dataset, self.replace = store, load_split, dataset, replace
        self.tuned = tuned
        self.status = "starter runs: waiting for a training slot"
        self.saved: list[str] = []
        self.error: str | None = None
        self.done = False

    def settings(self, model: str, size) -> tuple[TrainConfig, dict, str]:
        """(config, hyperparameters, where they come from) of one starter run: the quick settings at
        ``size`` (its ``presets.RANK_HP``), or with ``tuned`` (or for a model of ``TUNED``) the tuned
        preset where there is one."""
        if self.tuned or model in TUNED:
            try:
                preset = presets.load(self.dataset, model, size)
            except ValueError:
                pass  # no tuned preset: the quick settings
            else:
                return presets.train_config(preset), presets.hyperparameters(preset), "tuned preset"
        config, hp = quick_model_settings(self.dataset, model)
        sized = {} if size is None else {presets.RANK_HP[model]: size}
        return config, {**hp, **sized}, "quick settings"

    def run(self, report=None) -> list[str]:
        """Train and save the starter runs; ``report(record)``: each epoch's record (a job's
        ``report``, where a cancelled job stops). Returns the ids saved."""
        try:
            self.status = "starter runs: loading the data"
            data = self.load_split()
            for i, (model, size) in enumerate(STARTERS, 1):
                config, hp, source = self.settings(model, size)

                def progress(record, model=model, i=i, source=source):
                    if report is not None:
                        report({**record, "label": f"starter run {i}/{len(STARTERS)}, {model}"})
                    self.status = (
                        f"training starter run {i}/{len(STARTERS)}: {model} ({source}), "
                        f"epoch {record['epoch']}/{record['epochs']}"
                    )

                run = trained(model, data, config, progress, **hp)
                name = f"{model}-{self.dataset}-starter"
                if self.replace and name in self.store.ids():
                    self.store.delete(name)
                self.saved.append(self.store.save(run, name))
            self.status = f"starter runs ready: {', '.join(self.saved)}"
        except Cancelled:
            self.status = "starter runs cancelled"
            raise
        except Exception as err:  # shown in the app; the app still works without starter runs
            self.error = f"starter runs stopped: {err}"
            self.status = self.error
        finally:
            self.done = True
        return self.saved


def start(store, load_split, submit, dataset: str = "ml-100k") -> Starter | None:
    """If ``store`` is empty, a ``Starter`` queued with ``submit`` (a ``JobQueue``'s) as ``starter.job``; else None."""
    if store.ids():
        return None
    starter = Starter(store, load_split, dataset)
    starter.job = submit(lambda job: starter.run(job.report))
    return starter
