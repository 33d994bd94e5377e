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

Every model trains with its tuned preset (``python -m fmlib tune``): ``fm-<D_k>`` for each rank
and ``rafm-<D_1,…,D_m>``, so FM(32) gets its own L2 instead of FM(8)'s. Validation metrics are
recorded too: "the best single-rank FM" of ``claims`` is chosen on them, never on the test split.
The per-seed records are written as a CSV with its command in a header (``tables.write``) to
``results_path(dataset, task)`` (``$FMLIB_RESULTS``, default ./artifacts; the committed tables are
in results/), which the page plots. Timing uses ``--threads`` torch threads (1 by default: on a
shared 2-core machine more threads slow every run down and make ratios noisy).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from .. import presets
from ..arguments import add_data_arguments, int_list, positive_int
from ..data import split as split_data
from ..models import build_model
from ..models.rafm_ranks import check_ranks
from ..results import results_dir
from ..train import MONITOR, TrainConfig, evaluate, fit, predict
from . import tables
from .claims import Claim

METRICS = {"rating": ("mse", "rmse"), "click": ("logloss", "auc")}


def results_path(dataset: str, task: str = "rating", root: str | Path | None = None) -> Path:
    return Path(root if root is not None else results_dir()) / table_name(dataset, task)


def table_name(dataset: str, task: str) -> str:
    return f"rafm_{dataset}_{task}.csv"


def claims(task: str, ranks) -> list[Claim]:
    """RaFM's claims (§6, Fig. 3, Table 2) in the task's first metric, on ``claim_frame`` rows."""
    metric = METRICS[task][0]
    fms = tuple(("FM", D) for D in ranks)
    return [
        Claim("RaFM", "RaFM beats the best single-rank FM (chosen on validation)", ("RaFM", 0), fms, metric),
        Claim(
            "RaFM",
            f"RaFM beats FM({ranks[-1]}), the FM of its largest rank, with fewer parameters",
            ("RaFM", 0),
            (("FM", ranks[-1]),),
            metric,
        ),
    ]


def claim_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Records as the rows ``claims.measure`` reads: model FM/RaFM/RaFM-low, rank D (0 for RaFM),
    test metrics without their ``test_`` prefix."""
    out = frame.rename(columns={c: c.removeprefix("test_") for c in frame if c.startswith("test_")})
    out["model"] = frame["kind"].map({"fm": "FM", "rafm": "RaFM", "rafm-low": "RaFM-low"})
    return out


def preset_settings(dataset: str, ranks, task: str = "rating") -> dict:
    """{label: (TrainConfig, hp)} from the tuned presets of FM(D_k) and RaFM(ranks)."""
    settings = {}
    for label, model, size in [*((f"FM({D})", "fm", D) for D in ranks), (f"RaFM{tuple(ranks)}", "rafm", ranks)]:
        preset = presets.load(dataset, model, size, task)
        settings[label] = (presets.train_config(preset), presets.hyperparameters(preset))
    return settings


def default_settings(ranks, config: TrainConfig) -> dict:
    """{label: (config, hp)}: one shared training config (the page's quick run without presets)."""
    return {**{f"FM({D})": (config, {"dim": D}) for D in ranks}, f"RaFM{tuple(ranks)}": (config, {"ranks": ranks})}


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


def metrics(model, parts, task: str) -> dict:
    """test_* and valid_* metrics, with MSE = RMSE² for ratings (the paper's square loss)."""
    out = {}
    for split_name, data in (("test", parts.test), ("valid", parts.valid)):
        values = evaluate(model, data, task)
        if "rmse" in values:
            values["mse"] = values["rmse"] ** 2
        out.update({f"{split_name}_{k}": v for k, v in values.items()})
    return out


def run_seed(data, ranks, seed: int, settings: dict, log=None) -> list[dict]:
    """Train FM(D_k) for every k and RaFM(ranks) on the split of ``seed``, each with its
    (TrainConfig, hp) from ``settings``; one record per model."""
    ranks = check_ranks(ranks)
    parts = split_data(data, seed=seed)
    counts = parts.train.feature_counts()
    records = []
    for label, (config, hp) in settings.items():
        name = "rafm" if label.startswith("RaFM") else "fm"
        hp = {**hp, "counts": counts} if name == "rafm" else hp
        config = TrainConfig(**{**asdict(config), "seed": seed})
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
            "rank": hp.get("dim", 0),
            "parameters": _count(model),
            "test_seconds": _test_seconds(model, parts.test),
            **metrics(model, parts, config.task),
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
                    "rank": 0,
                    **metrics(low, parts, config.task),
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


def as_result(dataset: str, ranks, seeds, task: str, records: list[dict], made: str = "") -> dict:
    """Records and their summary, as the page and ``format_table`` read them."""
    return {
        "dataset": dataset,
        "ranks": list(ranks),
        "seeds": list(seeds),
        "task": task,
        "made": made,
        "records": records,
        "summary": summarize(records).to_dict("records"),
    }


def compare(data, ranks, seeds, settings: dict, log=None) -> dict:
    """``run_seed`` for every seed, summarised."""
    ranks = check_ranks(ranks)
    if len(seeds) < 1:
        raise ValueError("need at least one seed")
    records = [r for seed in seeds for r in run_seed(data, ranks, seed, settings, log)]
    task = next(iter(settings.values()))[0].task
    return as_result(data.name, ranks, seeds, task, records)


def save(result: dict, path: Path, command: str) -> Path:
    """The records as a result table (CSV under a header with ``command``), written atomically."""
    return tables.write(pd.DataFrame(result["records"]), path, command)


def load(path: Path) -> dict:
    """A saved result table as a result dict; a missing file or column: an error naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no RaFM results at {path}: run `python -m fmlib reproduce rafm`")
    frame, header = tables.read(path, columns=("seed", "model", "kind", "rank", "parameters"))
    task = "rating" if "test_rmse" in frame else "click"
    ranks = sorted(int(r) for r in frame.loc[frame.kind == "fm", "rank"])
    made = f"{header['command']} · commit {header['commit']} · {header['date']}"
    return as_result(
        path.stem.split("_")[1],
        sorted(set(ranks)),
        sorted(frame.seed.unique().tolist()),
        task,
        frame.to_dict("records"),
        made,
    )


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
    parser.add_argument("--task", choices=list(METRICS), default="rating")
    parser.add_argument("--ranks", type=int_list, default="8,32", help="strictly increasing ranks D_1,…,D_m (m ≥ 2)")
    parser.add_argument("--seeds", type=positive_int, default=5, help="seeds 0..N−1 (split, init, batches)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (timing)")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def command(args) -> str:
    """The exact command line of these arguments (defaults spelled out)."""
    words = ["python", "-m", "fmlib", "reproduce", "rafm", "--dataset", args.dataset, "--task", args.task]
    words += ["--ranks", ",".join(map(str, args.ranks)), "--seeds", str(args.seeds), "--threads", str(args.threads)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def run(args) -> int:
    import sys

    from ..data import movielens

    ranks = check_ranks(args.ranks)
    torch.set_num_threads(args.threads)

    def log(msg):
        return print(msg, file=sys.stderr, flush=True)

    settings = preset_settings(args.dataset, ranks, args.task)
    data = movielens.load(args.dataset, data_dir=args.data_dir, log=log)
    result = compare(data, ranks, list(range(args.seeds)), settings, log)
    path = save(result, results_path(args.dataset, args.task, args.out), command(args))
    print(format_table(result))
    print(f"saved: {path}")
    return 0
