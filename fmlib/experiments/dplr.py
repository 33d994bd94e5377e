"""``python -m fmlib reproduce dplr``: the analogue of the DPLR paper's Table 1 on MovieLens.

For every seed (it seeds the split, the initialisation and the batches):
* FM and FwFM are trained;
* DPLR-FwFM is trained at every rank ρ;
* the trained FwFM is pruned to the same budget, its ρ(m+1) largest |R_ij| (§5.1), and
  fine-tuned with the pruned entries held at zero (``pruned_fwfm``) — the "Pruned" column;
  the pruned model before fine-tuning is reported too;
* post-hoc DPLR (App. C): the trained FwFM's R replaced by its rank-ρ DPLR approximation,
  by truncated eigendecomposition and by nuclear-norm minimisation, no retraining.
Test metrics go to a long CSV (one row per seed × model × rank) and a markdown summary with
mean ± std over seeds, "% left" = 100·2ρ(m+1)/(m(m−1)) and "DPLR vs Pruned (%)", the paper's
improvement of the mean DPLR over the mean pruned model (positive: DPLR better).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from ..analysis.interactions import (
    budget,
    check_rank,
    dplr_posthoc,
    interaction_matrix,
    percent_left,
    pruned_fwfm,
    with_R,
)
from ..arguments import add_data_arguments, add_train_arguments, positive_int, positive_int_list, train_config
from ..results import results_dir, write_csv, write_text
from ..train import TrainConfig, evaluate, fit, train_model

LOWER_IS_BETTER = {"rmse": True, "mae": True, "logloss": True, "auc": False}
EXTRA_COLUMNS = ["Pruned, no fine-tune", "Post-hoc DPLR (eig)", "Post-hoc DPLR (nuclear)"]


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


def reproduce(
    dataset: str = "ml-100k",
    seeds=(0, 1, 2),
    ranks=(1, 2, 3, 4, 5),
    config: TrainConfig | None = None,
    dim: int = 8,
    finetune_epochs: int = 5,
    min_count: int = 10,
    data_dir=None,
    log=print,
) -> pd.DataFrame:
    """Train and evaluate everything; one row per (seed, model, rank) with the test metrics."""
    config = config or TrainConfig(epochs=15, patience=2)
    if len(seeds) < 1:
        raise ValueError("give at least one seed")
    rows = []

    def record(seed, model, rank, metrics, m, epochs=0, seconds=0.0):
        kept = budget(m, rank) if rank else m * (m - 1) // 2
        rows.append(
            {
                "seed": seed,
                "model": model,
                "rank": rank,
                "percent_left": percent_left(m, kept),
                **metrics,
                "epochs": epochs,
                "seconds": round(seconds, 2),
            }
        )
        log(f"seed {seed} {model:<24} ρ={rank} " + " ".join(f"{k} {v:.4f}" for k, v in metrics.items()))

    for seed in seeds:
        data = load_split(dataset, seed, min_count, data_dir)
        m = data.schema.num_fields
        rank_list = check_rank_list(ranks, m)
        cfg = TrainConfig(**{**config.__dict__, "seed": seed})
        runs = {}
        for name in ("fm", "fwfm"):
            runs[name] = train_model(name, data, cfg, dim=dim)
            record(
                seed,
                {"fm": "FM", "fwfm": "FwFM"}[name],
                0,
                runs[name].metrics["test"],
                m,
                len(runs[name].history),
                runs[name].seconds,
            )
        fwfm = runs["fwfm"].model
        R = interaction_matrix(fwfm)
        for rank in rank_list:
            run = train_model("dplr", data, cfg, dim=dim, rank=rank)
            record(seed, "DPLR", rank, run.metrics["test"], m, len(run.history), run.seconds)
            pruned = pruned_fwfm(fwfm, budget(m, rank))
            record(seed, "Pruned, no fine-tune", rank, evaluate(pruned, data.test, cfg.task), m)
            tuned = fit(pruned, data.train, data.valid, TrainConfig(**{**cfg.__dict__, "epochs": finetune_epochs}))
            record(
                seed, "Pruned", rank, evaluate(tuned.model, data.test, cfg.task), m, len(tuned.history), tuned.seconds
            )
            for method in ("eig", "nuclear"):
                start = time.perf_counter()
                approx = with_R(fwfm, dplr_posthoc(R, rank, method).R)
                record(
                    seed,
                    f"Post-hoc DPLR ({method})",
                    rank,
                    evaluate(approx, data.test, cfg.task),
                    m,
                    seconds=time.perf_counter() - start,
                )
    return pd.DataFrame(rows)


def _mean_std(values: pd.Series, digits: int = 4) -> str:
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {std:.{digits}f}"


def summary(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Table 1 layout for one metric: a row per rank, mean ± std over seeds in every cell."""
    if metric not in LOWER_IS_BETTER or metric not in df:
        raise ValueError(f"metric must be one of the CSV's metrics {[c for c in LOWER_IS_BETTER if c in df]}")
    lower = LOWER_IS_BETTER[metric]
    base = {name: df[df.model == name][metric] for name in ("FM", "FwFM")}
    out = []
    for rank in sorted(r for r in df["rank"].unique() if r > 0):
        at = df[df["rank"] == rank]
        cell = {name: at[at.model == name].set_index("seed")[metric] for name in ["DPLR", "Pruned", *EXTRA_COLUMNS]}
        dplr, pruned = cell["DPLR"], cell["Pruned"]
        gain = (pruned.mean() - dplr.mean()) if lower else (dplr.mean() - pruned.mean())
        wins = ((dplr < pruned) if lower else (dplr > pruned)).sum()
        out.append(
            {
                "Rank": rank,
                "% left": f"{at['percent_left'].iloc[0]:.2f}%",
                "FM": _mean_std(base["FM"]),
                "FwFM": _mean_std(base["FwFM"]),
                "DPLR": _mean_std(dplr),
                "Pruned": _mean_std(pruned),
                "DPLR vs Pruned (%)": f"{100 * gain / pruned.mean():+.2f}%",
                "DPLR better (seeds)": f"{wins}/{len(dplr)}",
                **{name: _mean_std(cell[name]) for name in EXTRA_COLUMNS},
            }
        )
    return pd.DataFrame(out)


def markdown_table(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub markdown table."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def markdown(df: pd.DataFrame, dataset: str, task: str, note: str) -> str:
    metrics = [k for k in LOWER_IS_BETTER if k in df and k in ("rmse", "logloss", "auc")]
    seeds = sorted(int(s) for s in df.seed.unique())
    parts = [
        f"# DPLR paper Table 1 on {dataset} ({task} task)\n",
        f"Test metrics, mean ± std over seeds {seeds} (each seed: its own split, init and batches). {note}\n",
    ]
    for metric in metrics:
        arrow = "lower" if LOWER_IS_BETTER[metric] else "higher"
        parts.append(f"\n## {metric.upper()} ({arrow} is better)\n\n{markdown_table(summary(df, metric))}\n")
    return "".join(parts)


def add_arguments(p):
    add_data_arguments(p, choices=["ml-100k", "ml-1m", "synthetic"])
    p.add_argument("--seeds", type=positive_int, default=3, help="number of seeds (0, 1, …)")
    p.add_argument("--ranks", type=positive_int_list, default="1,2,3,4,5", help="comma-separated ranks ρ")
    add_train_arguments(p, skip=("seed",), epochs=15, patience=2)
    p.add_argument(
        "--finetune-epochs", type=positive_int, default=5, help="max epochs of the pruned FwFM's fine-tuning"
    )
    p.add_argument("--dim", type=positive_int, default=8, help="embedding size k (the paper uses 8)")
    p.add_argument(
        "--min-count",
        type=positive_int,
        default=10,
        help="features seen fewer times in train go to the rare bucket (the paper: 10)",
    )
    p.add_argument("--out", default=None, help="output directory for the CSV and markdown (default: $FMLIB_RESULTS)")


def run(args) -> int:
    config = train_config(args)

    def log(msg):
        return print(msg, file=sys.stderr, flush=True)

    start = time.perf_counter()
    df = reproduce(
        args.dataset,
        list(range(args.seeds)),
        args.ranks,
        config,
        args.dim,
        args.finetune_epochs,
        args.min_count,
        args.data_dir,
        log,
    )
    note = (
        f"Settings: dim {args.dim}, lr {args.lr}, ≤ {args.epochs} epochs (patience {args.patience}), "
        f"min_count {args.min_count}. Pruned = the trained FwFM's R masked to its ρ(m+1) largest "
        f"|R_ij|, then fine-tuned ≤ {args.finetune_epochs} epochs with the pruned entries held at zero. "
        f"Post-hoc DPLR: the trained FwFM with R replaced by its rank-ρ DPLR approximation, no retraining. "
        f"Wall time {time.perf_counter() - start:.0f} s."
    )
    stem = Path(args.out or results_dir()) / f"dplr_{args.dataset}_{args.task}"
    write_csv(stem.with_suffix(".csv"), df)
    text = markdown(df, args.dataset, args.task, note)
    write_text(stem.with_suffix(".md"), text)
    print(text)
    print(f"written: {stem.with_suffix('.csv')}, {stem.with_suffix('.md')}", file=sys.stderr)
    return 0
