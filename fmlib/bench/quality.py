"""``python -m fmlib bench quality``: test RMSE/MAE and fit seconds of fmlib's FMs, Surprise SVD and myFM, side by side.

On each split ``split(movielens.load(dataset), seed=s)`` every method fits on the train part:
  * fmlib FM with the defaults, and with each tuned FM preset (``presets/<dataset>/fm.json``, ``fm-*.json``;
    ``fm.json`` averages the weights of the last epochs, ``TrainConfig.average_from``);
  * fmlib's Bayesian FM (``bfm``: Gibbs sampling, [Rendle2012]) at ``--dim`` and ``--iterations``;
  * Surprise SVD (user × movie only), its factors, epochs and regularisation chosen on the
    validation part over a small grid;
  * myFM's Bayesian FM on the same 12 fields, as a sparse matrix built from the same index/weight
    encoding (genres weighted 1/len), one prior group per field, same rank and iterations.
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
from ..data import movielens, split
from ..data.dataset import Split
from ..peers import Fitted, myfm_method, optional_module, svd_method
from ..train import TrainConfig, train_model


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
    """Method name -> (min_count of its split, fit(split)) for split seed ``seed``; a missing extra
    (None) is left out."""
    found = {"fmlib FM (defaults)": (1, fmlib_method("fm", TrainConfig(seed=seed)))}
    for path in sorted((presets.default_root() / args.dataset).glob("fm*.json")):  # fm.json, fm-8.json, ...
        rank = path.stem.removeprefix("fm").removeprefix("-")
        if rank.isdigit() or not rank:
            preset = presets.load(args.dataset, "fm", int(rank) if rank else None)
            config = presets.train_config(preset, seed=seed)
            fit = fmlib_method("fm", config, **presets.hyperparameters(preset))
            found[f"fmlib FM (preset {path.stem})"] = (preset["min_count"], fit)
    bfm = fmlib_method("bfm", TrainConfig(epochs=args.iterations, seed=seed), dim=args.dim)
    found["fmlib BFM (Gibbs)"] = (1, bfm)
    if surprise is not None:
        found["Surprise SVD (valid-tuned)"] = (1, svd_method(surprise, seed))
    if myfm is not None:
        found["myFM Bayesian FM"] = (1, myfm_method(myfm, args.dim, args.iterations, seed))
    return found


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def run(args) -> int:
    torch.set_num_threads(1)
    data = movielens.load(args.dataset, data_dir=args.data_dir)
    extras = optional_module("surprise"), optional_module("myfm")
    results: dict[str, dict[str, list]] = {}
    for seed in args.splits:
        fitted = {}
        for name, (min_count, fit) in methods(args, seed, *extras).items():
            fitted[name] = fit(split(data, seed=seed, min_count=min_count))
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
    if "myFM Bayesian FM" in results:
        gaps = [b - m for b, m in zip(results["fmlib BFM (Gibbs)"]["rmse"], results["myFM Bayesian FM"]["rmse"])]
        ratios = [b / m for b, m in zip(results["fmlib BFM (Gibbs)"]["fit_s"], results["myFM Bayesian FM"]["fit_s"])]
        print(f"\nBFM − myFM test RMSE per split: {', '.join(f'{g:+.4f}' for g in gaps)}")
        print(f"BFM fit seconds / myFM's per split: {', '.join(f'{r:.2f}' for r in ratios)}")
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
