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
from . import bfm, dplr, features, fm_ablation, fmgrad, inversion, rafm, rfm, tables
from .claims import measure_all
from .verdict import DOES_NOT_HOLD, HOLDS, outcome


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
    ("Rendle2012", features.table_name, features.claims, "train", "Train", "the preset FM's recipe on every input"),
]
BEGIN, END = "<!-- SCORECARD: begin (python -m fmlib scorecard --readme README.md) -->", "<!-- SCORECARD: end -->"
COLUMNS = ["paper", "claim", "protocol", "task", "measured", "verdict", "recipes", "page", "table"]
# the numbers behind "measured" (``claims.measure``), for sentences built from a row; not in the README's table
DETAILS = ["favoured", "other", "metric", "seeds", "favoured_mean", "other_mean", "difference", "low", "high", "margin"]


def scorecard(dataset: str = "ml-100k", tasks=TASKS, artifacts=None, committed=None) -> pd.DataFrame:
    """One row per claim whose result table exists (columns ``COLUMNS``, then ``DETAILS``), from the tables of each of
    ``tasks`` (a task's name: that task only); a table of no task (synthetic data) once, its task blank."""
    tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    rows = []
    for _paper, name, claims_of, page, title, protocol in SOURCES:
        by_task = len({name(dataset, task) for task in TASKS}) > 1
        for task in tasks if by_task else tasks[:1]:
            path = tables.newest(name(dataset, task), artifacts, committed)
            if path is None:
                continue
            frame, header = tables.read(path, columns=("seed", "model"))  # rank: where its claims compare ranks
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
                        **{column: row[column] for column in DETAILS},
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS + DETAILS)


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
    return intro + markdown_table(card[COLUMNS]) + "\n"


def data_of(row) -> str:
    """Where a scorecard row was measured: "MovieLens 100K", "data planted for it" or "synthetic inputs"."""
    if "planted" in row["table"]:
        return "data planted for it"
    return "synthetic inputs" if row["task"] == "" and row["protocol"] == "synthetic" else "MovieLens 100K"


def paper_sentence(card: pd.DataFrame, paper: str) -> str:
    """One plain sentence on ``paper``'s rows: how many of its claims hold, per kind of data, and how many
    do not hold or are undecided (``verdict.outcome``), e.g. "RaFM: 0 of 12 claims hold — 0 of 10 on
    MovieLens 100K, 0 of 2 on data planted for it; 7 do not hold, 5 are undecided." """
    rows = card[card["paper"] == paper]
    if rows.empty:
        return f"{paper}: no result table yet, so no claim is measured."
    decided = rows["verdict"].map(outcome)
    where = rows.apply(data_of, axis=1)
    parts = [f"{(decided[where == w] == HOLDS).sum()} of {(where == w).sum()} on {w}" for w in where.unique()]
    held, refuted = int((decided == HOLDS).sum()), int((decided == DOES_NOT_HOLD).sum())
    open_ = len(rows) - held - refuted
    each = f" — {', '.join(parts)}" if len(parts) > 1 else f" on {where.iloc[0]}"
    claims = "claim holds" if len(rows) == 1 else "claims hold"
    return (
        f"{paper}: {held} of {len(rows)} {claims}{each}; {refuted} {'does' if refuted == 1 else 'do'} not hold, "
        f"{open_} {'is' if open_ == 1 else 'are'} undecided."
    )


def example_row(rows: pd.DataFrame):
    """The row of ``rows`` that ``how_to_read`` explains best: a margin claim if there is one, else a
    comparison of two models, else the first (a claim against a threshold)."""
    paired = rows[~rows["other"].astype(str).str[:1].isin(["<", ">"])]
    for chosen in (paired[paired["margin"] > 0], paired, rows):
        if not chosen.empty:
            return chosen.iloc[0]
    raise ValueError("no scorecard rows to explain")


def how_to_read(row) -> str:
    """How to read one paired scorecard row (``scorecard`` with ``DETAILS``), in its own numbers: the sign,
    the interval, and for a margin claim the line −δ the interval is read against (``verdict.verdict``); a row
    against a threshold (``claims.Threshold``: its *other* is "> τ" or "< τ"), the interval against τ."""
    if str(row["other"])[:1] in "<>":
        side = "above" if row["other"][0] == ">" else "below"
        spread = (
            "the largest of them, a bound that one sample can break"
            if row["low"] == row["high"]
            else f"with its 95 % interval [{row['low']:.3g}, {row['high']:.3g}]"
        )
        return (
            f"**How to read a verdict**, on the row *{row['claim']}*: it measures one quantity, the {row['favoured']} "
            f"{row['difference']:.3g} over {row['seeds']} samples ({spread}), against the threshold the claim needs: "
            f"{side} {row['other_mean']:g}. *holds* when the whole interval lies {side} it, *does not hold* when the "
            f"whole interval lies on the other side, otherwise no difference is detectable. Here: **{row['verdict']}**."
        )
    better = "lower" if row["metric"] in ("mse", "rmse", "mae", "logloss") else "higher"
    text = (
        f"**How to read a verdict**, on the row *{row['claim']}*: *measured* {row['difference']:+.4f} is the mean over "
        f"{row['seeds']} seeds of the paired difference in test {row['metric'].upper()} ({better} is better), signed so "
        f"that **a positive number favours the claim** ({row['favoured']}) and a negative one favours "
        f"{row['other']}. The bracket [{row['low']:+.4f}, {row['high']:+.4f}] is its 95 % t-interval: built this way "
        "from the per-seed differences, such an interval holds the true mean difference in 95 % of repetitions of the "
        "whole experiment. "
    )
    if row["margin"] > 0:
        return text + (
            f'This is a **margin claim** ("about as good"): it does not ask whether {row["favoured"]} is better, only '
            f"whether it is worse by less than the margin δ = {row['margin']:.4f} "
            f"({100 * row['margin'] / abs(row['other_mean']):.0f} % of {row['other']}'s mean "
            f"{row['other_mean']:.4f}). So the interval is read against −δ = {-row['margin']:+.4f}, not against 0: "
            f"*holds* when all of it lies above −δ, *does not hold* when all of it lies below, otherwise the verdict "
            f"says what is left open. Here: **{row['verdict']}**."
        )
    return text + (
        "The verdict reads the interval against 0: *holds* when all of it is above 0, *does not hold* when all of "
        f"it is below, and *no difference detectable* when it contains 0. Here: **{row['verdict']}**. (A margin "
        'claim, "about as good: at most 1 % worse", reads the same interval against −1 % of the other model\'s mean '
        "instead of 0: it asks whether the loss is small, not whether there is a gain.)"
    )


def add_arguments(p) -> None:
    from ..arguments import add_data_arguments

    add_data_arguments(p)
    p.add_argument("--task", choices=TASKS, default=None, help="only this task's tables (default: every task's)")
    p.add_argument("--readme", default=None, help="rewrite the scorecard block of this markdown file")


def run(args) -> int:
    from ..results import replace_block, write_text

    # the README shows the committed tables only, never a local recomputation in artifacts/
    artifacts = tables.committed_root() if args.readme else None
    text = markdown(scorecard(args.dataset, args.task or TASKS, artifacts), args.dataset)
    if args.readme:
        path = Path(args.readme)
        write_text(path, replace_block(path.read_text(), text, BEGIN, END))
    print(text)
    return 0
