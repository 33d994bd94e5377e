"""The scorecard: every paper claim we test, what we measured with its interval, and the verdict.

Computed from the result tables (``tables.newest``: a fresh recomputation in artifacts/, else
the committed results/), never typed in. ``python -m fmlib scorecard`` prints it as markdown;
with ``--readme README.md`` it rewrites the block between the two ``SCORECARD`` markers there.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import dplr, fm_ablation, fmgrad, inversion, rafm, rfm, tables
from .claims import measure_all


def _dplr(frame: pd.DataFrame, task: str):
    return frame, dplr.claims(task, sorted(int(r) for r in frame["rank"].unique() if r > 0))


def _rafm(frame: pd.DataFrame, task: str):
    ranks = sorted({int(r) for r in frame.loc[frame["kind"] == "fm", "rank"]})
    return rafm.claim_frame(frame), rafm.claims(task, ranks)


# (paper, result table name, table -> (rows, claims), the page that shows it, its title)
SOURCES = [
    ("DPLR", dplr.table_name, _dplr, "field_interactions", "Field interactions"),
    ("RaFM", rafm.table_name, _rafm, "rank_aware_fm", "Rank-aware FM"),
    ("fmlib", fm_ablation.table_name, fm_ablation.claims, "train", "Train"),
    ("FMGrad", fmgrad.table_name, fmgrad.claims, "derivations", "Derivations"),
    ("AttnInv", inversion.table_name, inversion.claims, "attention_inversion", "Attention inversion"),
    ("RFM", rfm.table_name, rfm.claims, "gradient_growth", "Gradient growth"),
]
BEGIN, END = "<!-- SCORECARD: begin (python -m fmlib scorecard --readme README.md) -->", "<!-- SCORECARD: end -->"
COLUMNS = ["paper", "claim", "measured", "verdict", "page", "table"]


def scorecard(dataset: str = "ml-100k", task: str = "rating", artifacts=None, committed=None) -> pd.DataFrame:
    """One row per claim whose result table exists (columns ``COLUMNS``)."""
    rows = []
    for _paper, name, claims_of, page, title in SOURCES:
        path = tables.newest(name(dataset, task), artifacts, committed)
        if path is None:
            continue
        frame, header = tables.read(path, columns=("seed", "model", "rank"))
        for _, row in measure_all(*claims_of(frame, task)).iterrows():
            rows.append(
                {
                    "paper": row["paper"],
                    "claim": row["claim"],
                    "measured": row["measured"],
                    "verdict": row["verdict"],
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
        f"Measured on {dataset}: the paired per-seed difference (> 0 favours the claim) with its 95 % t-interval; "
        "rows marked synthetic measure one quantity (an error, a speed-up, a success rate) on generated inputs, "
        "with its 95 % interval (t; for a rate, Wilson) against the threshold the claim needs. "
        "Each row's page shows the bars; each table's header names the command that made it.\n\n"
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
    p.add_argument("--task", choices=list(dplr.METRICS), default="rating")
    p.add_argument("--readme", default=None, help="rewrite the scorecard block of this markdown file")


def run(args) -> int:
    from ..results import write_text

    # the README shows the committed tables only, never a local recomputation in artifacts/
    artifacts = tables.committed_root() if args.readme else None
    text = markdown(scorecard(args.dataset, args.task, artifacts), args.dataset)
    if args.readme:
        path = Path(args.readme)
        write_text(path, replace_block(path.read_text(), text))
    print(text)
    return 0
