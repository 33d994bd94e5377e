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
validation metric. Metrics: MSE and RMSE for ratings, logloss and AUC for clicks. Our MSE is
RMSE² of predictions clipped to the rating range [1, 5] (``train.evaluate``) on MovieLens 100K;
the paper's MovieLens column is an MSE on MovieLens 1M (§5.1) and does not say whether it
clips, so its numbers are a reference in kind, not values to match. The long per-seed table (one row per seed × model × rank, with validation
metrics too) is written with its command in a header (``tables.write``); ``CLAIMS`` are the
paper's claims that ``claims.measure_all`` turns into paired intervals and verdicts.
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
from ..results import results_dir
from ..train import TrainConfig, evaluate, fit, train_model
from . import tables
from .claims import LOWER_IS_BETTER, Claim, measure_all
from .tune import PROTOCOLS  # whose presets a table is made from: ours, or a paper's own protocol

EXTRA_COLUMNS = ["Pruned, no fine-tune", "Post-hoc DPLR (eig)", "Post-hoc DPLR (nuclear)"]
METRICS = {"rating": ("mse", "rmse"), "click": ("logloss", "auc")}
MARGIN = 0.01  # "about as accurate as FwFM": at most 1 % worse in the claim's metric


def table_name(dataset: str, task: str, protocol: str = "ours") -> str:
    return f"dplr_{dataset}_{task}" + ("" if protocol == "ours" else f"_{protocol}") + ".csv"


def claims(task: str, ranks) -> list[Claim]:
    """The paper's claims on Table 1 (DPLR §5.1), in the task's first metric (MSE or logloss)."""
    metric = METRICS[task][0]
    out = [
        Claim(
            "DPLR",
            f"DPLR beats the FwFM pruned to the same budget at ρ = {rank}",
            ("DPLR", rank),
            (("Pruned", rank),),
            metric,
        )
        for rank in ranks
    ]
    out.append(
        Claim(
            "DPLR",
            f"DPLR (ρ = 2) is about as accurate as the full FwFM (at most {100 * MARGIN:.0f} % worse)",
            ("DPLR", 2),
            (("FwFM", 0),),
            metric,
            MARGIN,
        )
    )
    out.append(Claim("DPLR", "DPLR of rank 1 is worse than an FM", ("FM", 0), (("DPLR", 1),), metric))
    return out


def load_split(dataset: str, seed: int, min_count: int, data_dir=None):
    from ..data import movielens, split, synthetic

    if dataset == "synthetic":
        data = synthetic.make(synthetic.block_R(16, 2), n_samples=20_000, cardinality=20, dim=4, seed=0)
    else:
        data = movielens.load(dataset, data_dir=data_dir, log=lambda msg: print(msg, file=sys.stderr))
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

    def record(seed, model, rank, net, data, m, epochs=0, seconds=0.0):
        kept = budget(m, rank) if rank else m * (m - 1) // 2
        recipe = (
            presets.recipe(tuned["dplr", rank]) + f" +{finetune_epochs} epochs" if model == "DPLR" else recipes[model]
        )
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
                "epochs": epochs,
                "seconds": round(seconds, 2),
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
            record(seed, label, 0, run.model, data, m, len(run.history), run.seconds)
        fwfm = runs["fwfm"].model
        R = interaction_matrix(fwfm)
        for rank in rank_list:
            # finetune_epochs more: the pruned model's extra epochs (module docstring)
            run = train_preset("dplr", tuned["dplr", rank], data, seed, finetune_epochs, device)
            record(seed, "DPLR", rank, run.model, data, m, len(run.history), run.seconds)
            pruned = pruned_fwfm(fwfm, budget(m, rank))
            record(seed, "Pruned, no fine-tune", rank, pruned, data, m)
            tuned_run = fine_tune(
                pruned, runs["fwfm"], tuned["fwfm"], data, seed, finetune_epochs, budget(m, rank), device
            )
            epochs = len(runs["fwfm"].history) + len(tuned_run.history)
            record(seed, "Pruned", rank, tuned_run.model, data, m, epochs, runs["fwfm"].seconds + tuned_run.seconds)
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
                "Rank": rank,
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


def markdown_table(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub markdown table."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def markdown(df: pd.DataFrame, task: str) -> str:
    """Table 1 per metric, then the claims with their 95 % intervals and verdicts."""
    seeds = sorted(int(s) for s in df.seed.unique())
    parts = [f"Test metrics, mean ± std over seeds {seeds} (each seed: its own split, init and batches).\n"]
    for metric in METRICS[task]:
        arrow = "lower" if LOWER_IS_BETTER[metric] else "higher"
        parts.append(f"\n{metric.upper()} ({arrow} is better)\n\n{markdown_table(summary(df, metric))}\n")
    ranks = sorted(r for r in df["rank"].unique() if r > 0)
    verdicts = measure_all(df, claims(task, ranks))
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
    add_data_arguments(p, choices=["ml-100k", "ml-1m", "synthetic"])
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

    check_rank_list(args.ranks, load_split(args.dataset, 0, 1, args.data_dir).schema.num_fields)  # before any preset
    tuned = load_presets(args.dataset, args.task, args.dim, args.ranks, args.protocol)
    TrainConfig(device=args.device)  # a clear error when cuda is asked for and absent
    df = reproduce(
        args.dataset, list(range(args.seeds)), args.ranks, tuned, args.finetune_epochs, args.data_dir, log, args.device
    )
    name = table_name(args.dataset, args.task, args.protocol)
    path = tables.write(df, Path(args.out or results_dir()) / name, command(args))
    print(markdown(df, args.task))
    print(f"written: {path}", file=sys.stderr)
    return 0
