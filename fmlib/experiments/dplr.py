"""``python -m fmlib reproduce dplr``: the analogue of the DPLR paper's Table 1 on MovieLens.

Every model uses its tuned preset (``python -m fmlib tune``; all at the same embedding size k,
the paper's 8): ``fm-<k>``, ``fwfm-<k>`` and ``dplr-<ρ>`` per rank ρ, so no model inherits
another's learning rate or L2. For every seed (it seeds the split, the initialisation and the
batches):
* FM and FwFM are trained;
* DPLR-FwFM is trained at every rank ρ;
* the trained FwFM is pruned to the same budget, its ρ(m+1) largest |R_ij| (§5.1), and
  fine-tuned with the pruned entries held at zero (``pruned_fwfm``, ``fine_tune``: Adam's state
  carried over, so a fine-tune continues what the FwFM learned instead of starting a new fit) —
  the "Pruned" column, whichever of before / after fine-tuning validates better; the pruned
  model before fine-tuning is reported too;
* post-hoc DPLR (App. C): the trained FwFM's R replaced by its rank-ρ DPLR approximation,
  by truncated eigendecomposition and by nuclear-norm minimisation, no retraining.

**Equal training budget.** The pruned FwFM trains for up to E epochs (its preset) and then up
to F fine-tuning epochs; DPLR gets the same extra epochs, up to E + F. All stop early on the
validation metric; each row records the epochs a model trained, the epoch whose weights it kept and
its cap (``epoch_columns``), so a reader sees whether early stopping or the cap ended it
(``epoch_note``), and the preset it was trained with (``preset_note``). Metrics: MSE and RMSE for
ratings, logloss and AUC for clicks. Our MSE is RMSE² of predictions clipped to the rating range [1, 5] (``train.evaluate``) on MovieLens 100K;
the paper's MovieLens column is an MSE on MovieLens 1M (§5.1) and does not say whether it
clips, so its numbers are a reference in kind, not values to match. The long per-seed table (one row per seed × model × rank, with validation
metrics too) is written with its command in a header (``tables.write``); ``claims`` are the
paper's claims that ``claims.measure_all`` turns into paired intervals and verdicts.

**Where pruning bites.** A pruned R keeps ρ(m+1) of its m(m−1)/2 pairs (``percent_left``): a small share
at small ρ, most of R soon after (on MovieLens' fields, from ρ = 3 on), where the two columns compare two
tuned models more than two approximations of R. The ranks whose pruned R keeps at most ``HEADLINE`` % lead
the claims and the page (``headline_note``); the others are labelled with the share they keep (``rank_label``).
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pandas as pd

from .. import presets
from ..analysis.interactions import (
    budget,
    check_rank,
    dplr_posthoc,
    interaction_matrix,
    percent_left,
    pruned_fwfm,
    pruned_moments,
    with_R,
)
from ..arguments import add_data_arguments, add_device_argument, positive_int, positive_int_list
from ..data.encoding import FIELDS
from ..results import results_dir
from ..train import TrainConfig, evaluate, fit, train_model
from . import tables
from .claims import LOWER_IS_BETTER, Claim, measure_all
from .claims import label as model_label
from .search_space import PROTOCOLS  # whose presets a table is made from: ours, or a paper's own protocol

EXTRA_COLUMNS = ["Pruned, no fine-tune", "Post-hoc DPLR (eig)", "Post-hoc DPLR (nuclear)"]
METRICS = {"rating": ("mse", "rmse"), "click": ("logloss", "auc")}
MARGIN = 0.01  # "about as accurate as FwFM": at most 1 % worse in the claim's metric
HEADLINE = 40.0  # % of R: ranks whose pruned FwFM keeps at most this share lead the claims and the page
TABLE_FIELDS = len(FIELDS)  # m of the claims' budgets: Table 1 is measured on MovieLens, every field of it
NOT_TRAINED = {"epochs": 0, "best_epoch": 0, "epoch_cap": 0}  # the epoch columns of a model made without training


def table_name(dataset: str, task: str, protocol: str = "ours") -> str:
    return f"dplr_{dataset}_{task}" + ("" if protocol == "ours" else f"_{protocol}") + ".csv"


def rank_label(rank: int, kept: float) -> str:
    """ "ρ = 2" for a headline rank, whose pruned FwFM keeps ``kept`` ≤ ``HEADLINE`` % of R; past it the share
    is named, e.g. "ρ = 3 (keeps 59 % of R)": pruning there keeps most of R."""
    return f"ρ = {rank}" if kept <= HEADLINE else f"ρ = {rank} (keeps {kept:.0f} % of R)"


def claims(task: str, ranks, fields: int = TABLE_FIELDS) -> list[Claim]:
    """The paper's claims on Table 1 (DPLR §5.1), in the task's first metric (MSE or logloss): first DPLR against
    the pruned FwFM at the headline ranks (a pruned R of ``fields`` fields keeping at most ``HEADLINE`` % of its
    pairs, §5.1's "% left"), then DPLR against FwFM and FM, then the other ranks, labelled with the share kept."""
    metric = METRICS[task][0]
    kept = {rank: percent_left(fields, budget(fields, rank)) for rank in ranks}

    def beats_pruned(rank: int) -> Claim:
        text = f"DPLR beats the FwFM pruned to the same budget at {rank_label(rank, kept[rank])}"
        return Claim("DPLR", text, ("DPLR", rank), (("Pruned", rank),), metric)

    return [
        *(beats_pruned(rank) for rank in ranks if kept[rank] <= HEADLINE),
        Claim(
            "DPLR",
            f"DPLR (ρ = 2) is about as accurate as the full FwFM (at most {100 * MARGIN:.0f} % worse)",
            ("DPLR", 2),
            (("FwFM", 0),),
            metric,
            MARGIN,
        ),
        Claim("DPLR", "DPLR of rank 1 is worse than an FM", ("FM", 0), (("DPLR", 1),), metric),
        *(beats_pruned(rank) for rank in ranks if kept[rank] > HEADLINE),
    ]


def load_split(dataset: str, seed: int, min_count: int, data_dir=None):
    from ..data import load, split

    data = load(dataset, data_dir=data_dir, log=lambda msg: print(msg, file=sys.stderr))
    return split(data, seed=seed, min_count=min_count)


def check_rank_list(ranks, m: int) -> list[int]:
    """The distinct ranks ρ, sorted; each in 1..m−1 with a budget ρ(m+1) (§5.1) that a pruned R can meet."""
    ranks = sorted({check_rank(rank, m) for rank in ranks})
    pairs = m * (m - 1) // 2
    for rank in ranks:
        if budget(m, rank) > pairs:
            raise ValueError(
                f"rank {rank}: the budget ρ(m+1) = {rank * (m + 1)} exceeds the "
                f"{pairs} interactions of {m} fields; use ranks up to {pairs // (m + 1)}"
            )
    return ranks


def load_presets(dataset: str, task: str, dim: int, ranks, protocol: str = "ours") -> dict:
    """{"fm": …, "fwfm": …, ("dplr", ρ): …}: tuned presets of ``protocol`` (ours: every model with
    the same training tools; dplr-paper: only lr tuned, as [DPLR] §5), all at embedding size
    ``dim`` and one min count."""
    root = presets.protocol_root(protocol)
    found = {"fm": presets.load(dataset, "fm", dim, task, root), "fwfm": presets.load(dataset, "fwfm", dim, task, root)}
    found.update({("dplr", rank): presets.load(dataset, "dplr", rank, task, root) for rank in ranks})
    for key, preset in found.items():
        if preset["hp"].get("dim") != dim:
            raise ValueError(
                f"preset {key} has embedding size {preset['hp'].get('dim')}, not {dim}: tune it with --dim {dim}"
            )
    counts = {preset["min_count"] for preset in found.values()}
    if len(counts) > 1:
        raise ValueError(f"the presets were tuned on splits with different min counts {sorted(counts)}: retune them")
    return found


def train_preset(model: str, preset: dict, data, seed: int, extra_epochs: int = 0, device: str = "cpu"):
    """``model`` trained with its preset's settings and ``extra_epochs`` more epochs of budget."""
    config = presets.train_config(preset, seed=seed, device=device)
    config = TrainConfig(**{**config.__dict__, "epochs": config.epochs + extra_epochs})
    return train_model(model, data, config, **presets.hyperparameters(preset))


def epoch_columns(*runs) -> dict:
    """The per-seed table's epoch columns of a model trained by ``runs``, one after the other (the pruned FwFM:
    the FwFM's training, then its fine-tune): the ``epochs`` it trained, the ``best_epoch`` whose weights it kept
    (counted the same way; a stage no epoch of which validated better keeps the one before) and its
    ``epoch_cap``, the most it could train. ``epochs`` below ``epoch_cap``: early stopping ended it, not the cap."""
    epochs = best = cap = 0
    for run in runs:
        kept = max((record["epoch"] for record in run.history if record["best"]), default=0)
        best = epochs + kept if kept else best
        epochs += len(run.history)
        cap += run.history[0]["epochs"]
    return {"epochs": epochs, "best_epoch": best, "epoch_cap": cap}


def fine_tune(pruned, fwfm_run, preset: dict, data, seed: int, epochs: int, keep: int, device: str = "cpu"):
    """The pruned FwFM fine-tuned for up to ``epochs`` epochs: a continuation of the FwFM's own
    training, not a new fit — Adam keeps the FwFM's moments (those of pruned entries zeroed,
    ``pruned_moments``), the bias is not reset, the end-of-epoch weights are averaged from the
    first fine-tuning epoch when the preset averages, and the pruned weights themselves count as
    epoch 0: the model returned is whichever of before / after fine-tuning validates better."""
    config = presets.train_config(preset, seed=seed, device=device)
    config = TrainConfig(**{**config.__dict__, "epochs": epochs, "average_from": min(config.average_from, 1)})
    state = pruned_moments(fwfm_run.optimizer_state, fwfm_run.model, keep)
    return fit(pruned, data.train, data.valid, config, resume=state)


def reproduce(
    dataset, seeds, ranks, tuned: dict, finetune_epochs: int = 5, data_dir=None, log=print, device: str = "cpu"
) -> pd.DataFrame:
    """Train and evaluate everything; one row per (seed, model, rank) with test and valid metrics."""
    if len(seeds) < 1:
        raise ValueError("give at least one seed")
    min_count, task = tuned["fm"]["min_count"], tuned["fm"]["task"]
    rows = []

    fine = f"; pruned to ρ(m+1) entries of R, fine-tuned ≤ {finetune_epochs} epochs continuing Adam's state"
    recipes = {
        "FM": presets.recipe(tuned["fm"]),
        "FwFM": presets.recipe(tuned["fwfm"]),
        "Pruned": presets.recipe(tuned["fwfm"]) + fine,
        "Pruned, no fine-tune": presets.recipe(tuned["fwfm"]) + "; pruned to ρ(m+1) entries of R",
        "Post-hoc DPLR (eig)": presets.recipe(tuned["fwfm"]) + "; R replaced by its rank-ρ DPLR (eigen)",
        "Post-hoc DPLR (nuclear)": presets.recipe(tuned["fwfm"]) + "; R replaced by its rank-ρ DPLR (nuclear norm)",
    }

    def record(seed, model, rank, net, data, m, trained=NOT_TRAINED, seconds=0.0):
        kept = budget(m, rank) if rank else m * (m - 1) // 2
        recipe = (
            presets.recipe(tuned["dplr", rank]) + f" +{finetune_epochs} epochs" if model == "DPLR" else recipes[model]
        )
        preset = tuned["dplr", rank] if model == "DPLR" else tuned["fm" if model == "FM" else "fwfm"]
        metrics = {"test": evaluate(net, data.test, task), "valid": evaluate(net, data.valid, task)}
        for split in metrics.values():
            if "rmse" in split:
                split["mse"] = split["rmse"] ** 2
        rows.append(
            {
                "seed": seed,
                "model": model,
                "rank": rank,
                "percent_left": percent_left(m, kept),
                **metrics["test"],
                **{f"valid_{k}": v for k, v in metrics["valid"].items()},
                **trained,
                "seconds": round(seconds, 2),
                "preset": presets.preset_name(preset["model"], preset.get("rank"), preset["task"]),
                "recipe": recipe,
            }
        )
        log(f"seed {seed} {model:<24} ρ={rank} " + " ".join(f"{k} {v:.4f}" for k, v in metrics["test"].items()))

    for seed in seeds:
        data = load_split(dataset, seed, min_count, data_dir)
        m = data.schema.num_fields
        rank_list = check_rank_list(ranks, m)

        runs = {name: train_preset(name, tuned[name], data, seed, device=device) for name in ("fm", "fwfm")}
        for name, label in (("fm", "FM"), ("fwfm", "FwFM")):
            run = runs[name]
            record(seed, label, 0, run.model, data, m, epoch_columns(run), run.seconds)
        fwfm = runs["fwfm"].model
        R = interaction_matrix(fwfm)
        for rank in rank_list:
            # finetune_epochs more: the pruned model's extra epochs (module docstring)
            run = train_preset("dplr", tuned["dplr", rank], data, seed, finetune_epochs, device)
            record(seed, "DPLR", rank, run.model, data, m, epoch_columns(run), run.seconds)
            pruned = pruned_fwfm(fwfm, budget(m, rank))
            record(seed, "Pruned, no fine-tune", rank, pruned, data, m)
            tuned_run = fine_tune(
                pruned, runs["fwfm"], tuned["fwfm"], data, seed, finetune_epochs, budget(m, rank), device
            )
            trained = epoch_columns(runs["fwfm"], tuned_run)
            record(seed, "Pruned", rank, tuned_run.model, data, m, trained, runs["fwfm"].seconds + tuned_run.seconds)
            for method in ("eig", "nuclear"):
                start = time.perf_counter()
                approx = with_R(fwfm, dplr_posthoc(R, rank, method).R)
                record(seed, f"Post-hoc DPLR ({method})", rank, approx, data, m, seconds=time.perf_counter() - start)
    return pd.DataFrame(rows)


def _mean_std(values: pd.Series, digits: int = 4) -> str:
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {std:.{digits}f}"


def summary(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Table 1 layout for one metric: a row per rank, mean ± std over seeds in every cell."""
    if metric not in LOWER_IS_BETTER or metric not in df:
        raise ValueError(f"metric must be one of the table's metrics {[c for c in LOWER_IS_BETTER if c in df]}")
    lower = LOWER_IS_BETTER[metric]
    base = {name: df[df.model == name][metric] for name in ("FM", "FwFM")}
    out = []
    for rank in sorted(r for r in df["rank"].unique() if r > 0):
        at = df[df["rank"] == rank]
        cell = {name: at[at.model == name].set_index("seed")[metric] for name in ["DPLR", "Pruned", *EXTRA_COLUMNS]}
        dplr, pruned = cell["DPLR"], cell["Pruned"]
        gain = (pruned.mean() - dplr.mean()) if lower else (dplr.mean() - pruned.mean())
        out.append(
            {
                "Rank": rank_label(rank, at["percent_left"].iloc[0]),
                "% left": f"{at['percent_left'].iloc[0]:.2f}%",
                "FM": _mean_std(base["FM"]),
                "FwFM": _mean_std(base["FwFM"]),
                "DPLR": _mean_std(dplr),
                "Pruned": _mean_std(pruned),
                "DPLR vs Pruned (%)": f"{100 * gain / pruned.mean():+.2f}%",
                **{name: _mean_std(cell[name]) for name in EXTRA_COLUMNS},
            }
        )
    return pd.DataFrame(out)


def _and(items) -> str:
    """[1] -> "1", [1, 2] -> "1 and 2", [3, 4, 5] -> "3, 4 and 5"."""
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def headline_note(df: pd.DataFrame) -> str:
    """Which ranks lead, their pruned FwFM keeping at most ``HEADLINE`` % of R, and what the others keep, from the
    table's ``percent_left``: past the headline the two columns compare two tuned models more than two
    approximations of R."""
    kept = df[df["rank"] > 0].groupby("rank")["percent_left"].first()
    lead, rest = kept[kept <= HEADLINE], kept[kept > HEADLINE]
    parts = []
    if not lead.empty:
        shares = _and(f"{share:.0f} %" for share in lead)
        parts.append(
            f"The headline is ρ = {_and(lead.index)}, where the pruned FwFM keeps {shares} of R; the claims lead with "
            f"{'it' if len(lead) == 1 else 'them'}."
        )
    if not rest.empty:
        parts.append(
            f"At ρ = {_and(rest.index)} it keeps {_and(f'{share:.0f} %' for share in rest)} of R: those rows compare "
            "two tuned models more than two approximations of R."
        )
    return " ".join(parts)


def preset_note(df: pd.DataFrame, task: str) -> str:
    """Whether every rank ρ of DPLR was trained with its own tuned preset dplr-ρ, or which ranks shared one, from
    the table's ``preset`` column."""
    if "preset" not in df:
        return "This table does not record which preset each DPLR rank was trained with (it predates that column)."
    used = df[df["model"] == "DPLR"].groupby("rank")["preset"].first()
    if all(name == presets.preset_name("dplr", rank, task) for rank, name in used.items()):
        return f"Every rank ρ is trained with its own tuned preset ({_and(used)})."
    groups = used.groupby(used, sort=False).groups  # preset -> the ranks trained with it
    return (
        "Not every rank has its own tuned preset: "
        + "; ".join(
            f"ρ = {_and(ranks)} {'uses' if len(ranks) == 1 else 'share'} {name}" for name, ranks in groups.items()
        )
        + "."
    )


def epoch_note(df: pd.DataFrame) -> str:
    """Whether early stopping or the epoch cap ended the trainings, from the table's ``epochs``, ``best_epoch`` and
    ``epoch_cap`` columns (``epoch_columns``): a training that ran to its cap, still improving in its last epoch,
    might have gone on improving."""
    if "epoch_cap" not in df:
        return "This table does not record the epoch caps (it predates that column)."
    trained = df[df["epoch_cap"] > 0]
    capped = trained[trained["epochs"] >= trained["epoch_cap"]]
    if capped.empty:
        return f"Early stopping ended all {len(trained)} trainings before their epoch cap: no cap binds."
    seeds = trained.groupby(["model", "rank"]).size()
    which = _and(
        f"{model_label(model, rank)} {n} of {seeds[model, rank]} seeds"
        for (model, rank), n in capped.groupby(["model", "rank"], sort=False).size().items()
    )
    improving = int((capped["best_epoch"] == capped["epochs"]).sum())
    return (
        f"{len(capped)} of {len(trained)} trainings ran to their epoch cap ({which}), {improving} of them still "
        "improving in their last epoch: the cap, not early stopping, ended them."
    )


def markdown_table(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub markdown table."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def markdown(df: pd.DataFrame, task: str, fields: int = TABLE_FIELDS) -> str:
    """Table 1 per metric, then the claims (on ``fields`` fields) with their 95 % intervals and verdicts."""
    seeds = sorted(int(s) for s in df.seed.unique())
    parts = [f"Test metrics, mean ± std over seeds {seeds} (each seed: its own split, init and batches).\n"]
    parts.append(f"{headline_note(df)} {preset_note(df, task)} {epoch_note(df)}\n")
    for metric in METRICS[task]:
        arrow = "lower" if LOWER_IS_BETTER[metric] else "higher"
        parts.append(f"\n{metric.upper()} ({arrow} is better)\n\n{markdown_table(summary(df, metric))}\n")
    ranks = sorted(r for r in df["rank"].unique() if r > 0)
    verdicts = measure_all(df, claims(task, ranks, fields))
    parts.append("\nClaims (paired per-seed difference, positive favours the claim, 95 % t-interval)\n\n")
    parts.append(
        markdown_table(
            pd.DataFrame(
                {
                    "claim": verdicts["claim"],
                    "difference": [
                        f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                        for d, lo, hi in verdicts[["difference", "low", "high"]].values
                    ],
                    "verdict": verdicts["verdict"],
                }
            )
        )
        + "\n"
    )
    return "".join(parts)


def add_arguments(p):
    add_data_arguments(p, choices=["ml-100k", "ml-1m", "synthetic-16"])
    add_device_argument(p)
    p.add_argument("--task", choices=list(METRICS), default="rating")
    p.add_argument("--seeds", type=positive_int, default=5, help="number of seeds (0, 1, …)")
    p.add_argument("--ranks", type=positive_int_list, default="1,2,3,4,5", help="comma-separated ranks ρ")
    p.add_argument("--dim", type=positive_int, default=8, help="embedding size k of every preset (the paper: 8)")
    p.add_argument(
        "--finetune-epochs", type=positive_int, default=5, help="F: the pruned FwFM's fine-tuning; DPLR gets F more"
    )
    p.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="ours",
        help="whose presets: ours (every model the same tools) or dplr-paper (only lr tuned, [DPLR] §5)",
    )
    p.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed tables: results)")


def command(args) -> str:
    """The exact command line of these arguments (defaults spelled out)."""
    words = ["python", "-m", "fmlib", "reproduce", "dplr", "--dataset", args.dataset, "--task", args.task]
    words += ["--seeds", str(args.seeds), "--ranks", ",".join(map(str, args.ranks)), "--dim", str(args.dim)]
    words += ["--finetune-epochs", str(args.finetune_epochs)]
    words += (["--protocol", args.protocol] if args.protocol != "ours" else []) + (
        ["--out", args.out] if args.out else []
    )
    return shlex.join(words)


def run(args) -> int:
    def log(msg):
        return print(msg, file=sys.stderr, flush=True)

    fields = load_split(args.dataset, 0, 1, args.data_dir).schema.num_fields
    check_rank_list(args.ranks, fields)  # before any preset
    tuned = load_presets(args.dataset, args.task, args.dim, args.ranks, args.protocol)
    TrainConfig(device=args.device)  # a clear error when cuda is asked for and absent
    df = reproduce(
        args.dataset, list(range(args.seeds)), args.ranks, tuned, args.finetune_epochs, args.data_dir, log, args.device
    )
    name = table_name(args.dataset, args.task, args.protocol)
    path = tables.write(df, Path(args.out or results_dir()) / name, command(args))
    print(markdown(df, args.task, fields))
    print(f"written: {path}", file=sys.stderr)
    return 0
