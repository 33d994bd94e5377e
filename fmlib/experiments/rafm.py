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
and ``rafm-<D_1,…,D_m>``, so FM(32) gets its own L2 instead of FM(8)'s. A RaFM *variant* says how
its k_i are set (eq. 17, or count cut-points) and whether its dependent factors also fit y (the
authors' code, ``RaFM(dependent_fits_target=True)``; written ``+y``, e.g. ``--variants 40,40+y``).
On the planted-ranks data (``synthetic.planted_ranks``) every seed draws new data as well. Validation metrics are
recorded too: "the best single-rank FM" of ``claims`` is chosen on them, never on the test split.
The per-seed records are written as a CSV with its command in a header (``tables.write``) to
``results_path(dataset, task)`` (``$FMLIB_RESULTS``, default ./artifacts; the committed tables are
in results/), which the page plots. Timing uses ``--threads`` torch threads (1 by default: on a
shared 2-core machine more threads slow every run down and make ratios noisy).
"""

from __future__ import annotations

import inspect
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
from ..data import synthetic
from ..data.movielens import SPECS
from ..data.synthetic import PLANTED_RANKS
from ..models import build_for, hyperparameters
from ..models.rafm_ranks import check_ranks
from ..results import results_dir
from ..train import MONITOR, TrainConfig, evaluate, fit, predict
from . import tables
from .claims import Claim, measure_all

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


FITS_TARGET = "dependent factors also fit y"  # how a variant with RaFM(dependent_fits_target=True) is named
CONSISTENCY_GRID = (0.01, 0.1, 1.0)  # c for such a variant, chosen on validation (the authors' dependent_lr_coef)


def variant_suffix(cuts, fits_target=False) -> str:
    """A RaFM variant's name after "RaFM(…)": " (k_i cut at n_i > 40; dependent factors also fit y)",
    " (k_i cut at n_i > 40)", " (dependent factors also fit y)" or "" (eq. 17, Algorithm 1)."""
    parts = []
    if not (cuts is None or (isinstance(cuts, float) and cuts != cuts) or cuts == ""):
        parts.append(f"k_i cut at n_i > {int(cuts) if isinstance(cuts, float) else cuts}")  # a float: read back
    if fits_target is True or fits_target == "True":  # a bool, or read back from a table as text
        parts.append(FITS_TARGET)
    return f" ({'; '.join(parts)})" if parts else ""


def claims(task: str, ranks, variants=("",)) -> list[Claim]:
    """RaFM's claims (§6, Fig. 3, Table 2) in the task's first metric, on ``claim_frame`` rows, for
    every RaFM variant (a ``variant_suffix``; "" is eq. 17's ranks with Algorithm 1)."""
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
    ``variant_suffix``), rank D (0 for RaFM), test metrics without their ``test_`` prefix."""
    out = frame.rename(columns={c: c.removeprefix("test_") for c in frame if c.startswith("test_")})
    name = frame["kind"].map({"fm": "FM", "rafm": "RaFM", "rafm-low": "RaFM-low"})
    out["model"] = [n + ("" if n == "FM" else suffix) for n, suffix in zip(name, suffixes(frame))]
    return out


def suffixes(frame: pd.DataFrame) -> list[str]:
    """Every record's ``variant_suffix`` from its ``cuts`` and ``fits_target`` columns (a table
    made before either existed: eq. 17, Algorithm 1)."""
    cuts = frame["cuts"] if "cuts" in frame else pd.Series("", index=frame.index)
    fits = frame["fits_target"] if "fits_target" in frame else pd.Series(False, index=frame.index)
    return [variant_suffix(c, f) for c, f in zip(cuts, fits)]


def scorecard_claims(frame: pd.DataFrame, task: str):
    """(rows, claims) of a result table for the scorecard: every RaFM variant it holds."""
    rows = claim_frame(frame)
    ranks = sorted({int(r) for r in frame.loc[frame["kind"] == "fm", "rank"]})
    rafm_rows = frame["kind"] == "rafm"
    variants = list(dict.fromkeys(s for s, r in zip(suffixes(frame), rafm_rows) if r))
    return rows, claims(task, ranks, variants or [""])


def top_rank_verdicts(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """``claims.measure`` rows of every RaFM variant's claim against FM(D_m), the FM of its largest rank."""
    rows, found = scorecard_claims(frame, task)
    top = ("FM", max(int(r) for r in frame.loc[frame["kind"] == "fm", "rank"]))
    return measure_all(rows, [c for c in found if c.others == (top,)])


def planted_setup() -> dict:
    """The defaults ``synthetic.planted_ranks`` draws the planted comparison's data with (each seed a
    new draw), and the interaction and noise variances they give (``synthetic.planted_variances``)."""
    given = inspect.signature(synthetic.planted_ranks).parameters
    setup = {k: p.default for k, p in given.items() if k != "seed"}
    return {**setup, "variances": synthetic.planted_variances(setup["ranks"], setup["tail"], setup["noise"])}


def rafm_label(ranks, cuts=None, fits_target: bool = False) -> str:
    return f"RaFM{tuple(ranks)}" + variant_suffix(None if cuts is None else presets.rank_label(cuts), fits_target)


def preset_settings(dataset: str, ranks, task: str = "rating", variants=((None, False),)) -> dict:
    """{label: (TrainConfig, hp, recipe)} from the tuned presets of FM(D_k) and of RaFM(ranks) for
    every variant (cuts, fits_target): cuts None (eq. 17's ranks, preset rafm-<ranks>) or cut-points
    (rafm-<ranks>-t<cuts>); the presets are tuned with Algorithm 1, so fits_target must be False."""
    if any(fits_target for _, fits_target in variants):
        raise ValueError(
            f"no tuned presets for RaFM whose {FITS_TARGET} (+y): use --protocol rafm-paper (an L2 grid per model)"
        )
    settings = {f"FM({D})": presets.load(dataset, "fm", D, task) for D in ranks}
    for cuts, _ in variants:
        size = ranks if cuts is None else presets.thresholds_label(ranks, cuts)
        settings[rafm_label(ranks, cuts)] = presets.load(dataset, "rafm", size, task)
    return {
        label: (presets.train_config(p), presets.hyperparameters(p), presets.recipe(p)) for label, p in settings.items()
    }


def grid_settings(
    data, ranks, task: str = "rating", variants=((None, False),), epochs: int = 40, log=None, device: str = "cpu"
) -> dict:
    """{label: (TrainConfig, hp, recipe)} under the paper's protocol ([RaFM] §6.1): each model's L2
    chosen from ``L2_GRID`` on the validation split of seed 0, everything else at ``TrainConfig``'s
    defaults (Adam's lr, no grouped L2, no weight averaging) — one tool, the same for every model.
    A variant whose dependent factors also fit y then takes its consistency weight c from
    ``CONSISTENCY_GRID`` at that L2: there c trades fitting y against agreeing with the level above
    (the authors' code exposes it as ``dependent_lr_coef``); under Algorithm 1 with Adam it acts only
    against L2, and is left at 1."""
    parts = split_data(data, seed=0)
    key = MONITOR[task]
    models = {f"FM({D})": ("fm", {"dim": D}) for D in ranks}
    for cuts, fits_target in variants:
        hp = {"ranks": tuple(ranks), "thresholds": cuts} | ({"dependent_fits_target": True} if fits_target else {})
        models[rafm_label(ranks, cuts, fits_target)] = ("rafm", hp)

    def valid_score(name, hp, decay):
        config = TrainConfig(task=task, epochs=epochs, weight_decay=decay, device=device)
        torch.manual_seed(0)
        run = fit(build_for(name, parts.train, **hp), parts.train, parts.valid, config)
        return run.metrics["valid"][key]

    out = {}
    for label, (name, hp) in models.items():
        scores = {decay: valid_score(name, hp, decay) for decay in L2_GRID}
        best = min(scores, key=scores.get)
        chosen = f"L2 {best:g} from the paper's grid on validation"
        if hp.get("dependent_fits_target"):
            at_default = hyperparameters("rafm")["consistency"]  # the c of the L2 search: scored already
            by_c = {
                c: scores[best] if c == at_default else valid_score(name, {**hp, "consistency": c}, best)
                for c in CONSISTENCY_GRID
            }
            hp = {**hp, "consistency": min(by_c, key=by_c.get)}
            chosen += f", then c {hp['consistency']:g} of {', '.join(map(str, CONSISTENCY_GRID))} at that L2"
        if log:
            log(f"{label}: {chosen} (valid {key}; L2 grid {L2_GRID[0]:g} … {L2_GRID[-1]:g})")
        config = TrainConfig(task=task, epochs=epochs, weight_decay=best)
        recipe = f"Adam lr {config.lr:.2g}, {chosen}, ≤ {epochs} epochs (no grouped L2, no averaging)"
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
    records = []
    for label, (config, hp, recipe) in settings.items():
        name = "rafm" if label.startswith("RaFM") else "fm"
        cuts = hp.get("thresholds")
        cuts = "" if cuts is None else presets.rank_label(cuts)
        fits_target = bool(hp.get("dependent_fits_target", False))
        config = TrainConfig(**{**asdict(config), "seed": seed})
        torch.manual_seed(seed)
        model = build_for(name, parts.train, **hp)
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
            "fits_target": fits_target,
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
                    "model": "RaFM-low" + variant_suffix(cuts, fits_target),
                    "kind": "rafm-low",
                    "epochs": epochs,
                    "train_seconds_per_epoch": float("nan"),
                    "parameters": ranks[0] * n + n + 1,
                    "test_seconds": float("nan"),
                    "rank": 0,
                    **metrics(low, parts, config.task),
                    "cuts": cuts,
                    "fits_target": fits_target,
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
    """Per RaFM of a comparison: how its k_i were set and its dependent factors trained, the share of
    training slots and of samples with a feature below the top rank (where it differs from FM(D_m) at
    all; mean over seeds) and its parameters as a share of FM(D_m)'s."""
    rows = []
    for r in result["summary"]:
        if not r["model"].startswith("RaFM("):
            continue
        parts = r["model"].partition(" (")[2].rstrip(")").split("; ")
        cut = next((p for p in parts if p.startswith("k_i")), "")
        rows.append(
            {
                "RaFM": r["model"].partition(" (")[0],
                "k_i set by": cut or "eq. 17",
                "dependent factors fit": "y and the level above" if FITS_TARGET in parts else "the level above",
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


def compare(data_for, ranks, seeds, settings: dict, log=None) -> dict:
    """``run_seed`` for every seed on ``data_for(seed)`` (one data set for every seed, or a new draw
    per seed), summarised."""
    ranks = check_ranks(ranks)
    if len(seeds) < 1:
        raise ValueError("need at least one seed")
    records = []
    for seed in seeds:
        data = data_for(seed)
        records += run_seed(data, ranks, seed, settings, log)
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
    """``"eq17,128,40+y"`` -> ((None, False), ((128,), False), ((40,), True)): eq. 17's ranks, then
    each cut-point set (several cut-points of one set joined by ``/``, e.g. ``16/256`` for three
    ranks); ``+y``: the dependent factors also fit y (``RaFM(dependent_fits_target=True)``)."""
    out = []
    for piece in filter(None, (p.strip() for p in str(text).split(","))):
        cuts, fits_target = piece.removesuffix("+y"), piece.endswith("+y")
        out.append((None if cuts == "eq17" else int_list(cuts.replace("/", ",")), fits_target))
    if not out:
        raise BadValue(f"expected eq17 and/or cut-points such as eq17,128,128+y, got {text!r}")
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
        help="how RaFM's k_i are set: eq17, and/or count cut-points (each a preset rafm-<ranks>-t<cuts>), e.g. "
        "eq17,128,2000; a trailing +y also lets y reach the dependent factors (the authors' code; --protocol rafm-paper)",
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
    return ",".join(
        ("eq17" if c is None else "/".join(map(str, c))) + ("+y" if fits_target else "") for c, fits_target in variants
    )


def command(args) -> str:
    """The exact command line of these arguments (defaults spelled out)."""
    words = ["python", "-m", "fmlib", "reproduce", "rafm", "--dataset", args.dataset, "--task", args.task]
    words += ["--ranks", ",".join(map(str, args.ranks)), "--variants", variants_text(args.variants)]
    words += ["--protocol", args.protocol, "--seeds", str(args.seeds), "--threads", str(args.threads)]
    return shlex.join(words + (["--out", args.out] if args.out else []))


def data_source(dataset: str, data_dir=None, log=None):
    """``data_for(seed)``: MovieLens, the same for every seed, or the planted-rank synthetic data
    (``fmlib.data.load``'s recipe) drawn anew from each seed."""
    from ..data import load

    if dataset == PLANTED_RANKS:
        return lambda seed: load(dataset, seed=seed)
    data = load(dataset, data_dir=data_dir, log=log)
    return lambda seed: data


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
    data_for = data_source(args.dataset, args.data_dir, log)
    if args.protocol == "ours":
        settings = preset_settings(args.dataset, ranks, args.task, args.variants)
    else:  # the small planted data takes more epochs to converge at Adam's default lr
        epochs = 100 if args.dataset == PLANTED_RANKS else 40
        settings = grid_settings(data_for(0), ranks, args.task, args.variants, epochs, log=log, device=args.device)
    settings = on_device(settings, args.device)
    result = compare(data_for, ranks, list(range(args.seeds)), settings, log)
    path = save(result, results_path(args.dataset, args.task, args.out, args.protocol), command(args))
    print(format_table(result))
    print(f"saved: {path}")
    return 0
