"""``python -m fmlib reproduce rafm``: FM at each rank of a set vs RaFM (the paper's Fig. 3, Table 2).

For every seed (which seeds the split, the initialisation and the batch order) this trains an
FM of rank D_k for each D_k in the rank set and one RaFM with the whole set (eq. 17 ranks from
the train counts of that split; Algorithm 1), and evaluates on the test split:

* FM(D_k) for every k, RaFM = B_{1,m}, and "RaFM-low" = B_{1,1} of the same trained RaFM (the FM
  of rank D_1 trained jointly through the consistency term, eq. 12b);
* the test metric (RMSE for ratings; logloss and AUC for clicks), mean ± std over seeds;
* stored parameters (embeddings + linear weights + bias; RaFM-low counts its D_1|F| share);
* train seconds per epoch and test seconds (prediction over the test split, best of 3),
  as ratios to the FM of the largest rank measured in the same run.

The results are printed and written as JSON to ``results_path(dataset)`` (``$FMLIB_RESULTS``,
default ``./artifacts``), which the page plots. Timing uses ``--threads`` torch threads (1 by
default: on a shared 2-core machine more threads slow every run down and make ratios noisy).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from ..arguments import add_data_arguments, add_train_arguments, int_list, positive_int, train_config
from ..data import split as split_data
from ..models import build_model
from ..models.rafm_ranks import check_ranks
from ..results import read_json, results_dir, write_json
from ..train import MONITOR, TrainConfig, evaluate, fit, predict


def results_path(dataset: str, root: str | Path | None = None) -> Path:
    return Path(root if root is not None else results_dir()) / f"rafm-{dataset}.json"


class LevelOutput(nn.Module):
    """A trained RaFM read at level p: w0 + Σ w_i x_i + B_{1,p} (p = 1 is "RaFM-low")."""

    def __init__(self, rafm: nn.Module, p: int):
        super().__init__()
        self.rafm, self.p = rafm, p

    def forward(self, index, weight):
        return self.rafm.outputs(index, weight)[self.p - 1]


def _test_seconds(model: nn.Module, data, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        predict(model, data)
        best = min(best, time.perf_counter() - start)
    return best


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def run_seed(data, ranks, seed: int, config: TrainConfig, log=None) -> list[dict]:
    """Train FM(D_k) for every k and RaFM(ranks) on the split of ``seed``; one record per model."""
    ranks = check_ranks(ranks)
    parts = split_data(data, seed=seed)
    config = TrainConfig(**{**asdict(config), "seed": seed})
    counts = parts.train.feature_counts()
    records = []
    jobs = [(f"FM({D})", "fm", {"dim": D}) for D in ranks]
    jobs.append((f"RaFM{ranks}", "rafm", {"ranks": ranks, "counts": counts}))
    for label, name, hp in jobs:
        torch.manual_seed(seed)
        model = build_model(name, parts.schema, **hp)
        run = fit(model, parts.train, parts.valid, config)
        epochs = len(run.history)
        record = {
            "seed": seed,
            "model": label,
            "kind": name,
            "epochs": epochs,
            "train_seconds_per_epoch": run.seconds / epochs,
            "parameters": _count(model),
            "test_seconds": _test_seconds(model, parts.test),
            **{f"test_{k}": v for k, v in evaluate(model, parts.test, config.task).items()},
        }
        records.append(record)
        if log:
            log(
                f"seed {seed} {label}: {epochs} epochs, test "
                + ", ".join(
                    f"{k.removeprefix('test_')} {v:.4f}"
                    for k, v in record.items()
                    if k.startswith("test_") and k != "test_seconds"
                )
            )
        if name == "rafm":
            low = LevelOutput(model, 1)
            n = parts.schema.num_features
            records.append(
                {
                    "seed": seed,
                    "model": "RaFM-low",
                    "kind": "rafm-low",
                    "epochs": epochs,
                    "train_seconds_per_epoch": float("nan"),
                    "parameters": ranks[0] * n + n + 1,
                    "test_seconds": float("nan"),
                    **{f"test_{k}": v for k, v in evaluate(low, parts.test, config.task).items()},
                }
            )
    top = next(r for r in records if r["model"] == f"FM({ranks[-1]})")
    for r in records:
        r["parameters_vs_top_fm"] = r["parameters"] / top["parameters"]
        r["train_time_vs_top_fm"] = r["train_seconds_per_epoch"] / top["train_seconds_per_epoch"]
        r["test_time_vs_top_fm"] = r["test_seconds"] / top["test_seconds"]
    return records


def summarize(records: list[dict]) -> pd.DataFrame:
    """Mean ± std over seeds per model (std with ddof = 1; 0 for a single seed)."""
    frame = pd.DataFrame(records)
    metrics = [c for c in frame if c.startswith("test_") and c != "test_seconds"]
    rows = []
    for model, part in frame.groupby("model", sort=False):
        row = {"model": model, "seeds": len(part)}
        for c in metrics:
            row[f"{c}_mean"] = part[c].mean()
            row[f"{c}_std"] = part[c].std(ddof=1) if len(part) > 1 else 0.0
        for c in ["parameters", "parameters_vs_top_fm", "train_time_vs_top_fm", "test_time_vs_top_fm", "epochs"]:
            row[c] = part[c].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def as_result(data, ranks, seeds, config: TrainConfig, records: list[dict]) -> dict:
    """Records and their summary, with the settings that produced them (what ``save`` writes)."""
    return {
        "dataset": data.name,
        "data_source": data.source,
        "ranks": list(ranks),
        "seeds": list(seeds),
        "task": config.task,
        "train": asdict(config),
        "threads": torch.get_num_threads(),
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "records": records,
        "summary": summarize(records).to_dict("records"),
    }


def compare(data, ranks, seeds, config: TrainConfig, log=None) -> dict:
    """``run_seed`` for every seed, summarised."""
    ranks = check_ranks(ranks)
    if len(seeds) < 1:
        raise ValueError("need at least one seed")
    records = [r for seed in seeds for r in run_seed(data, ranks, seed, config, log)]
    return as_result(data, ranks, seeds, config, records)


def save(result: dict, path: Path) -> Path:
    return write_json(path, result)


def load(path: Path) -> dict:
    """Saved results, or a clear error naming the file."""
    return read_json(path, keys=("summary", "ranks", "seeds"), made_by="python -m fmlib reproduce rafm")


def format_table(result: dict) -> str:
    """The summary as text: metric mean ± std, parameters and times relative to FM(D_m)."""
    key = MONITOR[result["task"]]
    top = f"FM({result['ranks'][-1]})"
    lines = [
        f"{result['dataset']}, ranks {tuple(result['ranks'])}, seeds {result['seeds']}, task {result['task']}",
        f"{'model':<22}{'test ' + key:>20}{'#params':>10}{'vs ' + top:>12}{'train ×':>9}{'test ×':>8}{'epochs':>8}",
    ]
    for r in result["summary"]:

        def fmt(v):
            return "—" if v != v else f"{v:.2f}"  # NaN: not measured (RaFM-low is trained jointly)

        lines.append(
            f"{r['model']:<22}{r[f'test_{key}_mean']:>11.4f} ± {r[f'test_{key}_std']:.4f}"
            f"{r['parameters']:>10.0f}{100 * r['parameters_vs_top_fm']:>11.1f}%"
            f"{fmt(r['train_time_vs_top_fm']):>9}{fmt(r['test_time_vs_top_fm']):>8}{r['epochs']:>8.1f}"
        )
    return "\n".join(lines)


# ---- command line ----------------------------------------------------------------------------
def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--ranks", type=int_list, default="8,32", help="strictly increasing ranks D_1,…,D_m (m ≥ 2)")
    parser.add_argument("--seeds", type=positive_int, default=3, help="seeds 0..N−1 (split, init, batches)")
    add_train_arguments(parser, skip=("seed",))
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (timing)")
    parser.add_argument("--out", default=None, help="results file (default: $FMLIB_RESULTS/rafm-<dataset>.json)")


def run(args) -> int:
    import sys

    from ..data import movielens

    ranks = check_ranks(args.ranks)
    torch.set_num_threads(args.threads)
    config = train_config(args)

    def log(msg):
        return print(msg, file=sys.stderr, flush=True)

    data = movielens.load(args.dataset, data_dir=args.data_dir, log=log)
    result = compare(data, ranks, list(range(args.seeds)), config, log)
    path = save(result, Path(args.out) if args.out else results_path(args.dataset))
    print(format_table(result))
    print(f"saved: {path}")
    return 0
