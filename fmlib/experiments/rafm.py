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
from ..arguments import BadValue, add_data_arguments, add_device_argument, int_list, on_device, positive_int
from ..data import split as split_data
from ..data.movielens import SPECS
from ..data.synthetic import PLANTED_RANKS
from ..models import build_model
from ..models.rafm_ranks import check_ranks
from ..results import results_dir
from ..train import MONITOR, TrainConfig, evaluate, fit, predict
from . import tables
from .claims import Claim

METRICS = {"rating": ("mse", "rmse"), "click": ("logloss", "auc")}


PROTOCOLS = ("ours", "rafm-paper")
# [RaFM] §6.1: "We adopt L2 regularizations for each model, and search the L2 coefficient from
# {1e−6, 5e−6, 1e−5, …, 1e−1} on the validation set" — nothing else is tuned.
L2_GRID = (1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1)
MARGIN = 0.01  # "RaFM-low achieves similar performance to FM with D_1 factors": at most 1 % worse


def results_path(dataset: str, task: str = "rating", root: str | Path | None = None, protocol: str = "ours") -> Path:
    return Path(root if root is not None else results_dir()) / table_name(dataset, task, protocol)


def table_name(dataset: str, task: str, protocol: str = "ours") -> str:
    return f"rafm_{dataset}_{task}" + ("" if protocol == "ours" else f"_{protocol}") + ".csv"


def cuts_suffix(cuts) -> str:
    """ " (k_i cut at n_i > 128)" for a RaFM whose ranks come from cut-points, "" for eq. 17's."""
    if cuts is None or (isinstance(cuts, float) and cuts != cuts) or cuts == "":
        return ""
    if isinstance(cuts, float):  # one cut-point read back from a table as a number
        cuts = int(cuts)
    return f" (k_i cut at n_i > {cuts})"


def claims(task: str, ranks, variants=("",)) -> list[Claim]:
    """RaFM's claims (§6, Fig. 3, Table 2) in the task's first metric, on ``claim_frame`` rows, for
    every RaFM variant (a ``cuts_suffix``; "" is eq. 17's ranks)."""
    metric = METRICS[task][0]
    fms = tuple(("FM", D) for D in ranks)
    out = []
    for v in variants:
        out += [
            Claim(
                "RaFM", f"RaFM{v} beats the best single-rank FM (chosen on validation)", (f"RaFM{v}", 0), fms, metric
            ),
            Claim(
                "RaFM",
                f"RaFM{v} beats FM({ranks[-1]}), the FM of its largest rank, with fewer parameters",
                (f"RaFM{v}", 0),
                (("FM", ranks[-1]),),
                metric,
            ),
            Claim(
                "RaFM",
                f"RaFM-low{v} (B₁,₁) is about as accurate as FM({ranks[0]}) (at most {100 * MARGIN:.0f} % worse; Fig. 3)",
                (f"RaFM-low{v}", 0),
                (("FM", ranks[0]),),
                metric,
                MARGIN,
            ),
        ]
    return out


def claim_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Records as the rows ``claims.measure`` reads: model FM/RaFM/RaFM-low (with the RaFM's
    ``cuts_suffix``), rank D (0 for RaFM), test metrics without their ``test_`` prefix."""
    out = frame.rename(columns={c: c.removeprefix("test_") for c in frame if c.startswith("test_")})
    name = frame["kind"].map({"fm": "FM", "rafm": "RaFM", "rafm-low": "RaFM-low"})
    cuts = frame["cuts"] if "cuts" in frame else pd.Series("", index=frame.index)
    out["model"] = [n + ("" if n == "FM" else cuts_suffix(c)) for n, c in zip(name, cuts)]
    return out


def scorecard_claims(frame: pd.DataFrame, task: str):
    """(rows, claims) of a result table for the scorecard: every RaFM variant it holds."""
    rows = claim_frame(frame)
    ranks = sorted({int(r) for r in frame.loc[frame["kind"] == "fm", "rank"]})
    cuts = frame.loc[frame["kind"] == "rafm", "cuts"] if "cuts" in frame else pd.Series([""])
    variants = list(dict.fromkeys(cuts_suffix(c) for c in cuts))
    return rows, claims(task, ranks, variants)


def rafm_label(ranks, cuts=None) -> str:
    return f"RaFM{tuple(ranks)}" + cuts_suffix(None if cuts is None else presets.rank_label(cuts))


def preset_settings(dataset: str, ranks, task: str = "rating", variants=(None,)) -> dict:
    """{label: (TrainConfig, hp, recipe)} from the tuned presets of FM(D_k) and of RaFM(ranks) for
    every variant: None (eq. 17's ranks, preset rafm-<ranks>) or cut-points (rafm-<ranks>-t<cuts>)."""
    settings = {f"FM({D})": presets.load(dataset, "fm", D, task) for D in ranks}
    for cuts in variants:
        size = ranks if cuts is None else presets.thresholds_label(ranks, cuts)
        settings[rafm_label(ranks, cuts)] = presets.load(dataset, "rafm", size, task)
    return {
        label: (presets.train_config(p), presets.hyperparameters(p), presets.recipe(p)) for label, p in settings.items()
    }


def grid_settings(
    data, ranks, task: str = "rating", variants=(None,), epochs: int = 40, log=None, device: str = "cpu"
) -> dict:
    """{label: (TrainConfig, hp, recipe)} under the paper's protocol ([RaFM] §6.1): each model's L2
    chosen from ``L2_GRID`` on the validation split of seed 0, everything else at ``TrainConfig``'s
    defaults (Adam's lr, no grouped L2, no weight averaging) — one tool, the same for every model."""
    parts = split_data(data, seed=0)
    key, counts = MONITOR[task], parts.train.feature_counts()
    models = {f"FM({D})": ("fm", {"dim": D}) for D in ranks}
    models.update({rafm_label(ranks, c): ("rafm", {"ranks": tuple(ranks), "thresholds": c}) for c in variants})
    out = {}
    for label, (name, hp) in models.items():
        extra = {"counts": counts} if name == "rafm" else {}
        scores = {}
        for decay in L2_GRID:
            config = TrainConfig(task=task, epochs=epochs, weight_decay=decay, device=device)
            torch.manual_seed(0)
            run = fit(build_model(name, parts.schema, **hp, **extra), parts.train, parts.valid, config)
            scores[decay] = run.metrics["valid"][key]
        best = min(scores, key=scores.get)
        if log:
            log(f"{label}: L2 {best:g} (valid {key} {scores[best]:.4f}; grid {L2_GRID[0]:g} … {L2_GRID[-1]:g})")
        config = TrainConfig(task=task, epochs=epochs, weight_decay=best)
        recipe = (
            f"Adam lr {config.lr:.2g}, L2 {best:g} from the paper's grid on validation, ≤ {epochs} epochs "
            "(no grouped L2, no averaging)"
        )
        out[label] = (config, hp, recipe)
    return out


def default_settings(ranks, config: TrainConfig) -> dict:
    """{label: (config, hp, recipe)}: one shared training config (the page's quick run without presets)."""
    recipe = f"Adam lr {config.lr:.2g}, L2 {config.weight_decay:g}, ≤ {config.epochs} epochs (defaults, not tuned)"
    return {
        **{f"FM({D})": (config, {"dim": D}, recipe) for D in ranks},
        f"RaFM{tuple(ranks)}": (config, {"ranks": ranks}, recipe),
    }


def below_top(rafm: nn.Module, data) -> tuple[float, float]:
    """(share of slots, share of samples) of ``data`` whose feature sits below the top rank
    (k_i < m): where RaFM differs from FM(D_m) at all."""
    low = (rafm.k < len(rafm.ranks))[data.index] & (data.weight > 0)
    return float(low.sum() / (data.weight > 0).sum()), float(low.any(1).float().mean())


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
    for label, (config, hp, recipe) in settings.items():
        name = "rafm" if label.startswith("RaFM") else "fm"
        hp = {**hp, "counts": counts} if name == "rafm" else hp
        cuts = hp.get("thresholds")
        cuts = "" if cuts is None else presets.rank_label(cuts)
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
            "cuts": cuts,
            "recipe": recipe,
        }
        if name == "rafm":
            record["slots_below_top"], record["samples_below_top"] = below_top(model, parts.train)
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
                    "model": "RaFM-low" + cuts_suffix(cuts),
                    "kind": "rafm-low",
                    "epochs": epochs,
                    "train_seconds_per_epoch": float("nan"),
                    "parameters": ranks[0] * n + n + 1,
                    "test_seconds": float("nan"),
                    "rank": 0,
                    **metrics(low, parts, config.task),
                    "cuts": cuts,
                    "recipe": f"{recipe}; read at level 1 (B₁,₁) of the trained RaFM",
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
        for c in ["slots_below_top", "samples_below_top"]:
            row[c] = part[c].mean() if c in part else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def engagement(result: dict) -> pd.DataFrame:
    """Per RaFM of a comparison: how its k_i were set, the share of training slots and of samples
    with a feature below the top rank (where it differs from FM(D_m) at all; mean over seeds) and
    its parameters as a share of FM(D_m)'s."""
    rows = []
    for r in result["summary"]:
        if not r["model"].startswith("RaFM("):
            continue
        cut = r["model"].partition(" (")[2].rstrip(")")
        rows.append(
            {
                "RaFM": r["model"].partition(" (")[0],
                "k_i set by": cut or "eq. 17",
                "slots below the top rank": r.get("slots_below_top", float("nan")),
                "samples below the top rank": r.get("samples_below_top", float("nan")),
                f"parameters vs FM({result['ranks'][-1]})": r["parameters_vs_top_fm"],
            }
        )
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
def variants_arg(text: str) -> tuple:
    """``"eq17,128,2000"`` -> (None, (128,), (2000,)): eq. 17's ranks, then each cut-point set
    (several cut-points of one set joined by ``/``, e.g. ``16/256`` for three ranks)."""
    out = []
    for piece in filter(None, (p.strip() for p in str(text).split(","))):
        out.append(None if piece == "eq17" else int_list(piece.replace("/", ",")))
    if not out:
        raise BadValue(f"expected eq17 and/or cut-points such as eq17,128, got {text!r}")
    return tuple(out)


def add_arguments(parser) -> None:
    add_data_arguments(parser, choices=[*SPECS, PLANTED_RANKS])
    add_device_argument(parser)
    parser.add_argument("--task", choices=list(METRICS), default="rating")
    parser.add_argument("--ranks", type=int_list, default="8,32", help="strictly increasing ranks D_1,…,D_m (m ≥ 2)")
    parser.add_argument(
        "--variants",
        type=variants_arg,
        default="eq17,2000",
        help="how RaFM's k_i are set: eq17, and/or count cut-points (each a preset rafm-<ranks>-t<cuts>), e.g. eq17,128,2000",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="ours",
        help="ours: the tuned presets (every model the same tools); rafm-paper: each model's L2 from the paper's grid",
    )
    parser.add_argument("--seeds", type=positive_int, default=5, help="seeds 0..N−1 (split, init, batches)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (timing)")
    parser.add_argument("--out", default=None, help="folder of the CSV (default: $FMLIB_RESULTS; committed: results)")


def variants_text(variants) -> str:
    return ",".join("eq17" if c is None else "/".join(map(str, c)) for c in variants)


def command(args) -> str:
    """The exact command line of these arguments (defaults spelled out)."""
    words = ["python", "-m", "fmlib", "reproduce", "rafm", "--dataset", args.dataset, "--task", args.task]
    words += ["--ranks", ",".join(map(str, args.ranks)), "--variants", variants_text(args.variants)]
    words += ["--protocol", args.protocol, "--seeds", str(args.seeds), "--threads", str(args.threads)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def load_data(dataset: str, data_dir=None, log=None):
    """MovieLens, or the planted-rank synthetic data (``synthetic.planted_ranks``, its defaults)."""
    from ..data import movielens, synthetic

    if dataset == PLANTED_RANKS:
        return synthetic.planted_ranks()
    return movielens.load(dataset, data_dir=data_dir, log=log)


def run(args) -> int:
    import sys

    ranks = check_ranks(args.ranks)
    torch.set_num_threads(args.threads)

    def log(msg):
        return print(msg, file=sys.stderr, flush=True)

    if args.dataset == PLANTED_RANKS and args.protocol == "ours":
        raise ValueError(
            "the planted-ranks data has no tuned presets: use --protocol rafm-paper (an L2 grid per model)"
        )
    data = load_data(args.dataset, args.data_dir, log)
    if args.protocol == "ours":
        settings = preset_settings(args.dataset, ranks, args.task, args.variants)
    else:  # the small planted data takes more epochs to converge at Adam's default lr
        epochs = 100 if args.dataset == PLANTED_RANKS else 40
        settings = grid_settings(data, ranks, args.task, args.variants, epochs, log=log, device=args.device)
    settings = on_device(settings, args.device)
    result = compare(data, ranks, list(range(args.seeds)), settings, log)
    path = save(result, results_path(args.dataset, args.task, args.out, args.protocol), command(args))
    print(format_table(result))
    print(f"saved: {path}")
    return 0
