"""The scorecard: every paper claim we test, what we measured with its interval, and the verdict.

Computed from the result tables (``tables.newest``: a fresh recomputation in artifacts/, else
the committed results/) of both tasks — rating (MSE) and click (rating ≥ 4, log loss) — never
typed in. ``python -m fmlib scorecard`` prints it as markdown; with ``--readme README.md`` it
rewrites the block between the two ``SCORECARD`` markers there.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..data import synthetic
from ..data.dataset import TASKS
from . import bfm, dplr, fm_ablation, fmgrad, inversion, rafm, rfm, tables
from .claims import measure_all


def _dplr(frame: pd.DataFrame, task: str):
    return frame, dplr.claims(task, sorted(int(r) for r in frame["rank"].unique() if r > 0))


def _dplr_paper(dataset: str, task: str) -> str:
    return dplr.table_name(dataset, task, "dplr-paper")


def _rafm_paper(dataset: str, task: str) -> str:
    return rafm.table_name(dataset, task, "rafm-paper")


def _rafm_planted(dataset: str, task: str) -> str:
    return rafm.table_name(synthetic.PLANTED_RANKS, task, "rafm-paper")


OURS = "ours: each model tuned on validation with the same tools and tuning effort"
# (paper, result table name, table -> (rows, claims), the page that shows it, its title, protocol)
SOURCES = [
    ("DPLR", dplr.table_name, _dplr, "field_interactions", "Field interactions", OURS),
    ("DPLR", _dplr_paper, _dplr, "field_interactions", "Field interactions", "the DPLR paper's: only lr tuned"),
    ("RaFM", rafm.table_name, rafm.scorecard_claims, "rank_aware_fm", "Rank-aware FM", OURS),
    ("RaFM", _rafm_paper, rafm.scorecard_claims, "rank_aware_fm", "Rank-aware FM", "the RaFM paper's: L2 grid"),
    ("RaFM", _rafm_planted, rafm.scorecard_claims, "rank_aware_fm", "Rank-aware FM", "L2 grid, planted data"),
    ("fmlib", fm_ablation.table_name, fm_ablation.claims, "train", "Train", "one change at a time"),
    ("fmlib", bfm.table_name, bfm.claims, "train", "Train", "the ablation's chosen FM vs Gibbs sampling"),
    ("FMGrad", fmgrad.table_name, fmgrad.claims, "derivations", "Derivations", "synthetic"),
    ("AttnInv", inversion.table_name, inversion.claims, "attention_inversion", "Attention inversion", "synthetic"),
    ("RFM", rfm.table_name, rfm.claims, "gradient_growth", "Gradient growth", OURS),
]
BEGIN, END = "<!-- SCORECARD: begin (python -m fmlib scorecard --readme README.md) -->", "<!-- SCORECARD: end -->"
COLUMNS = ["paper", "claim", "protocol", "task", "measured", "verdict", "recipes", "page", "table"]


def scorecard(dataset: str = "ml-100k", tasks=TASKS, artifacts=None, committed=None) -> pd.DataFrame:
    """One row per claim whose result table exists (columns ``COLUMNS``), from the tables of each of
    ``tasks`` (a task's name: that task only); a table of no task (synthetic data) once, its task blank."""
    tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    rows = []
    for _paper, name, claims_of, page, title, protocol in SOURCES:
        by_task = len({name(dataset, task) for task in TASKS}) > 1
        for task in tasks if by_task else tasks[:1]:
            path = tables.newest(name(dataset, task), artifacts, committed)
            if path is None:
                continue
            frame, header = tables.read(path, columns=("seed", "model", "rank"))
            for _, row in measure_all(*claims_of(frame, task)).iterrows():
                rows.append(
                    {
                        "paper": row["paper"],
                        "claim": row["claim"],
                        "protocol": protocol,
                        "task": task if by_task else "",
                        "measured": row["measured"],
                        "verdict": row["verdict"],
                        "recipes": row["recipes"],
                        "page": f"{title} ({page})",
                        "table": f"{path.parent.name}/{path.name} ({header['date']})",
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(card: pd.DataFrame, dataset: str) -> str:
    """The scorecard as a markdown table, with a line on how it was made."""
    from .dplr import markdown_table

    if card.empty:
        return f"No result tables for {dataset} yet: run the `python -m fmlib reproduce ...` commands.\n"
    intro = (
        f"Measured on {dataset}: the paired per-seed difference (> 0 favours the claim) with its 95 % t-interval, "
        "in the metric that *measured* names (*task* rating: predict the stars; click: predict a rating ≥ 4); "
        "rows marked synthetic measure one quantity (an error, a speed-up, a success rate) on generated inputs, "
        "with its 95 % interval (t; for a rate, Wilson) against the threshold the claim needs. "
        "Each row's page shows the bars; each table's header names the command that made it. "
        "*protocol* says how the models were tuned (ours: every model the same training tools — L2, grouped L2 by "
        "field, weight averaging, the epoch budget — and the same number of Optuna trials on validation; a paper's "
        "own protocol where it differs); *recipes* says how each side was trained.\n\n"
    )
    return intro + markdown_table(card) + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between ``BEGIN`` and ``END`` replaced by ``block``."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"the file has no scorecard block: add the lines {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n" + block + END + rest.split(END, 1)[1]


def add_arguments(p) -> None:
    from ..arguments import add_data_arguments

    add_data_arguments(p)
    p.add_argument("--task", choices=TASKS, default=None, help="only this task's tables (default: every task's)")
    p.add_argument("--readme", default=None, help="rewrite the scorecard block of this markdown file")


def run(args) -> int:
    from ..results import write_text

    # the README shows the committed tables only, never a local recomputation in artifacts/
    artifacts = tables.committed_root() if args.readme else None
    text = markdown(scorecard(args.dataset, args.task or TASKS, artifacts), args.dataset)
    if args.readme:
        path = Path(args.readme)
        write_text(path, replace_block(path.read_text(), text))
    print(text)
    return 0
