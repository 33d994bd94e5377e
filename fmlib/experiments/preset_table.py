"""``python -m fmlib presets``: every tuned preset and what its tuning found, one row a preset.

A row for each preset that ``python -m fmlib tune`` wrote (its ``tuning`` records ``studies``): the trials a study,
each study's best validation score (the seeded recipe named where a study's best is one: ``best_is_seed``), the
epochs each study's best trial trained against the cap, the chosen recipe's validation score over the seeds it was
trained at (mean ± sd, ``by_seed``), and whether the tuning converged by the rule (``fmlib.experiments.convergence``)
or which of its checks failed. Presets staged in ``studies/presets/`` (re-tuned, their tables not yet computed again)
are listed after the committed ones. With ``--readme README.md`` the command rewrites that file's presets block,
so the table there is always the one the presets give.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from .. import presets
from ..train import MONITOR
from .convergence import PREVIOUS, failed_checks

BEGIN, END = "<!-- PRESETS: begin (python -m fmlib presets --readme README.md) -->", "<!-- PRESETS: end -->"
STAGED = presets.REPOSITORY / "studies" / "presets"
HEADER = (
    "| preset | task | trials a study | studies' bests (validation RMSE; log loss for clicks) | best trials' epochs | recipe over seeds "
    "(mean ± sd) | converged |\n|---|---|---|---|---|---|---|\n"
)


def tuned_presets(root: Path | None = None, staged: Path | None = STAGED) -> list[tuple[str, dict]]:
    """(name, preset) of every preset under ``root`` (the presets folder) and then ``staged`` that a tuning by studies
    wrote, in path order; a name is the path below ``root``, or from the repository for a staged one."""
    root = Path(root or presets.default_root())
    named = [(str(path.relative_to(root)), path) for path in sorted(root.rglob("*.json"))]
    named += [(presets.shown(path), path) for path in sorted(staged.rglob("*.json"))] if staged else []
    found = [(name, json.loads(path.read_text())) for name, path in named]
    return [(name, preset) for name, preset in found if "studies" in preset.get("tuning", {})]


def seeded(name: str) -> str:
    """A seed's name (``best_is_seed``) for a table cell: "fm-8, the preset it replaces" for "fm-8" + ``PREVIOUS``."""
    return name.replace(PREVIOUS, ", " + PREVIOUS.strip(" ()"))


def row(name: str, preset: dict) -> str:
    """One preset's row of the table (``HEADER``)."""
    tuning, metric = preset["tuning"], MONITOR[preset["task"]]
    key, studies = f"best_valid_{metric}", tuning["studies"]
    trials = sorted({s["finished_trials"] for s in studies})
    bests = ", ".join(
        f"{s[key]:.5f}" + (f" (seeded: {seeded(s['best_is_seed'])})" if s.get("best_is_seed") else "") for s in studies
    )
    epochs = ", ".join(str(s["epochs"]) for s in studies) + f" of {tuning['settings']['epochs']}"
    scores = presets.seed_scores(tuning, f"valid_{metric}")
    over_seeds = (
        f"{statistics.mean(scores):.5f} ± {statistics.stdev(scores):.5f} ({len(scores)} seeds)"
        if len(scores) > 1
        else "not trained at several seeds"
    )
    cells = [name, preset["task"], ", ".join(map(str, trials)), bests, epochs, over_seeds, verdict(preset)]
    return "| " + " | ".join(cells) + " |\n"


def verdict(preset: dict) -> str:
    """ "yes" where the preset's tuning converged, else "no: " and the checks it fails (``failed_checks``)."""
    tuning = preset["tuning"]
    reasons = failed_checks(tuning, f"best_valid_{MONITOR[preset['task']]}")
    return "yes" if tuning["converged"] and not reasons else "no: " + "; ".join(reasons or ["recorded so"])


def markdown(found: list[tuple[str, dict]]) -> str:
    """The table of ``found`` (``tuned_presets``) and a line that counts the converged ones."""
    converged = sum(verdict(preset) == "yes" for _, preset in found)
    rows = "".join(row(name, preset) for name, preset in found)
    return HEADER + rows + f"\n{converged} of {len(found)} tuned presets converged by the rule.\n"


def add_arguments(p) -> None:
    p.add_argument("--readme", default=None, help="rewrite the presets block of this markdown file")


def run(args) -> int:
    from ..results import replace_block, write_text

    text = markdown(tuned_presets())
    if args.readme:
        path = Path(args.readme)
        write_text(path, replace_block(path.read_text(), text, BEGIN, END))
    print(text)
    return 0
