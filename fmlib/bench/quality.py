"""``python -m fmlib bench quality``: test RMSE/MAE and fit seconds of fmlib's FMs, Surprise SVD and myFM, side by side.

On each split ``split(fmlib.data.load(dataset), seed=s)`` every method fits on the train part:
  * fmlib FM with the defaults, and with each tuned FM preset (``presets/<dataset>/fm.json``, ``fm-*.json``;
    ``fm.json`` averages the weights of the last epochs, ``TrainConfig.average_from``);
  * fmlib's Bayesian FM (``bfm``: Gibbs sampling, [Rendle2012]) at ``--dim`` and ``--iterations``;
  * Surprise SVD (user × movie only), its factors, epochs and regularisation chosen on the
    validation part over a small grid;
  * myFM's Bayesian FM on the same 12 fields, as a sparse matrix built from the same index/weight
    encoding (genres weighted 1/len), one prior group per field, same rank and iterations;
  * "+ rated, raters": the preset FM, fmlib's Bayesian FM and myFM again with the relation blocks
    rated and raters added to the 12 fields (``fmlib.data.features``: SVD++'s implicit feedback
    and its flip, built from the train part; myFM takes them as its ``RelationBlock``s).
Choices use the validation part only; the test part is read once per final model, after every
choice. Predictions are clipped to [1, 5]. scikit-surprise and myfm are bench extras: a missing
one is named with the pip command that installs it, and the other methods still run.
"""

from __future__ import annotations

import json
import statistics

import torch

from .. import presets
from ..arguments import add_data_arguments, int_list, positive_int
from ..data import load, split
from ..data.dataset import Split
from ..data.features import with_features
from ..peers import Fitted, myfm_method, optional_module, svd_method
from ..train import TrainConfig, train_model

BLOCKS = "all,rated,raters"
BLOCKS_LABEL = " + rated, raters"


def add_arguments(p):
    add_data_arguments(p)
    p.add_argument("--splits", type=int_list, default=(0, 1, 2), help="split seeds, e.g. 0,1,2 (default: 0,1,2)")
    p.add_argument("--dim", type=positive_int, default=10, help="rank of both Bayesian FMs (default: 10)")
    p.add_argument(
        "--iterations", type=positive_int, default=300, help="Gibbs sweeps of both Bayesian FMs (default: 300)"
    )


def fmlib_method(name: str, config: TrainConfig, **hp):
    def fit(data: Split) -> Fitted:
        run = train_model(name, data, config, **hp)  # early stopping on valid; test metrics once at the end
        return Fitted(lambda: run.metrics["test"], run.seconds)

    return fit


def methods(args, seed: int, surprise, myfm) -> dict:
    """Method name -> (min_count of its split, its feature set, fit(split)) for split seed ``seed``;
    a missing extra (None) is left out. The rows marked ``BLOCKS_LABEL`` add the relation blocks
    rated and raters (``fmlib.data.features``, SVD++'s implicit feedback) to the 12 fields."""
    found = {"fmlib FM (defaults)": (1, fmlib_method("fm", TrainConfig(seed=seed)))}
    for path in sorted((presets.default_root() / args.dataset).glob("fm*.json")):  # fm.json, fm-8.json, ...
        rank = path.stem.removeprefix("fm").removeprefix("-")
        if rank.isdigit() or not rank:
            preset = presets.load(args.dataset, "fm", int(rank) if rank else None)
            config = presets.train_config(preset, seed=seed)
            fit = fmlib_method("fm", config, **presets.hyperparameters(preset))
            found[f"fmlib FM (preset {path.stem})"] = (preset["min_count"], fit)
            if not rank:
                found[f"fmlib FM (preset {path.stem}){BLOCKS_LABEL}"] = (preset["min_count"], fit)
    bfm = fmlib_method("bfm", TrainConfig(epochs=args.iterations, seed=seed), dim=args.dim)
    found["fmlib BFM (Gibbs)"] = found[f"fmlib BFM (Gibbs){BLOCKS_LABEL}"] = (1, bfm)
    if surprise is not None:
        found["Surprise SVD (valid-tuned)"] = (1, svd_method(surprise, seed))
    if myfm is not None:
        fit = myfm_method(myfm, args.dim, args.iterations, seed)
        found["myFM Bayesian FM"] = found[f"myFM Bayesian FM{BLOCKS_LABEL}"] = (1, fit)
    return {
        name: (min_count, BLOCKS if name.endswith(BLOCKS_LABEL) else "all", fit)
        for name, (min_count, fit) in found.items()
    }


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def run(args) -> int:
    torch.set_num_threads(1)
    data = load(args.dataset, data_dir=args.data_dir)
    extras = optional_module("surprise"), optional_module("myfm")
    results: dict[str, dict[str, list]] = {}
    for seed in args.splits:
        fitted = {}
        for name, (min_count, features, fit) in methods(args, seed, *extras).items():
            fitted[name] = fit(with_features(split(data, seed=seed, min_count=min_count), features))
            if fitted[name].chose:
                print(f"split {seed}: {name} chose {fitted[name].chose}")
        for name, model in fitted.items():  # the test part, once per final model, after every choice
            metrics = model.test()
            row = results.setdefault(name, {"rmse": [], "mae": [], "fit_s": []})
            row["rmse"].append(metrics["rmse"])
            row["mae"].append(metrics["mae"])
            row["fit_s"].append(model.seconds)
            print(
                f"split {seed}: {name:<28} test RMSE {metrics['rmse']:.4f}  MAE {metrics['mae']:.4f}  "
                f"fit {model.seconds:6.1f} s",
                flush=True,
            )
    print(f"\n{args.dataset}, splits {','.join(map(str, args.splits))}: mean ± std over splits")
    print(f"{'method':<30}{'test RMSE':>18}{'test MAE':>18}{'fit s':>14}")
    summary = {}
    for name, row in results.items():
        stats = {k: mean_std(v) for k, v in row.items()}
        summary[name] = {k: [round(x, 4) for x in v] for k, v in row.items()}
        summary[name].update({f"{k}_mean": round(m, 4) for k, (m, _) in stats.items()})
        summary[name].update({f"{k}_std": round(s, 4) for k, (_, s) in stats.items()})
        (r, rs), (a, as_), (f, fs) = stats["rmse"], stats["mae"], stats["fit_s"]
        print(f"{name:<30}{r:>10.4f} ± {rs:.4f}{a:>10.4f} ± {as_:.4f}{f:>8.1f} ± {fs:.1f}")
    for suffix in ("", BLOCKS_LABEL):
        ours, theirs = results.get(f"fmlib BFM (Gibbs){suffix}"), results.get(f"myFM Bayesian FM{suffix}")
        if ours and theirs:
            gaps = [b - m for b, m in zip(ours["rmse"], theirs["rmse"])]
            ratios = [b / m for b, m in zip(ours["fit_s"], theirs["fit_s"])]
            print(f"\nBFM − myFM{suffix} test RMSE per split: {', '.join(f'{g:+.4f}' for g in gaps)}")
            print(f"BFM fit seconds / myFM's{suffix} per split: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(
        json.dumps(
            {
                "bench": "quality",
                "dataset": args.dataset,
                "splits": list(args.splits),
                "dim": args.dim,
                "iterations": args.iterations,
                "methods": summary,
            }
        )
    )
    return 0
