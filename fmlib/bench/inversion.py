"""``python -m fmlib bench inversion``: the bars of the attention-inversion topic, measured now.

1. success rate vs γ over random trials at two sizes (Newton, random and near starts);
2. iterations to ‖X_t − X*‖_F ≤ 1e-4, gradient descent vs damped Newton;
3. MovieLens 100K: top-1/top-10 recovery of users' first two movies vs popularity and chance.
"""

from __future__ import annotations

import time

import torch

from ..arguments import positive_int
from ..inversion import attack

SIZES = ((4, 3), (8, 4))


def add_arguments(parser) -> None:
    parser.add_argument("--trials", type=positive_int, default=100, help="instances per γ and size")
    parser.add_argument("--users", type=positive_int, default=200, help="MovieLens users attacked")
    parser.add_argument("--part", choices=["all", "gamma", "iterations", "movielens"], default="all")
    parser.add_argument("--seed", type=int, default=0)


def bench_gamma(count: int, seed: int) -> None:
    print(f"## success rate vs γ: Newton, 60 steps, {count} instances × 2 starts, R = 1, success = relative error < 1%")
    for n, d in SIZES:
        insts = [attack.planted_instance(n, d, 1.0, seed + t) for t in range(count)]
        R = max(attack.assumption_R(i.W, i.V, i.X_true, i.B) for i in insts)
        bound = attack.gamma_bound(n, d, R)
        gammas = [0.0, 1e-4, 1e-2, 1.0, bound]
        starts = [("random N(0,1) start", None)]
        if (n, d) == SIZES[0]:  # a rough guess of the secret, at the small size (time budget)
            starts.append(("near start X_true + 0.3·noise", 0.3))
        for label, noise in starts:
            t0 = time.perf_counter()
            rates = attack.success_rates(attack.trials(n, d, 1.0, gammas, count, seed=seed, start_noise=noise))
            print(f"n={n} d={d} {label} ({time.perf_counter() - t0:.0f} s; corrected Thm 4.2 bound γ = {bound:.3g})")
            for row in rates.itertuples():
                print(
                    f"  γ={row.gamma:<10.3g} success {row.success_rate:6.1%}  starts agree "
                    f"{row.agree_rate:6.1%}  median rel. error {row.median_rel_error:.2g}"
                )


def bench_iterations(count: int, seed: int, eps: float = 1e-4, cap: int = 10_000) -> None:
    n, d = SIZES[0]
    print(
        f"## iterations to ‖X_t − X*‖_F ≤ {eps:g}: n={n} d={d} R=1, {count} instances, start "
        f"X_true + 0.1·noise; GD step 1/λ_max(∇²L(X*)), at most {cap} steps"
    )
    insts = [attack.planted_instance(n, d, 1.0, seed + t) for t in range(count)]
    W, V, B, X_true = (torch.stack([getattr(i, k) for i in insts]) for k in ("W", "V", "B", "X_true"))
    X0 = X_true + 0.1 * attack.trial_noise(n, d, count, seed)[:count]
    with attack.one_thread():
        for gamma in (0.0, 1.0):
            # X*: the secret when γ = 0, else the regularised minimiser found by Newton from the secret
            X_star = X_true if gamma == 0 else attack.descend(X_true, W, V, B, gamma, "newton", 100, 1.0)[0]
            H = attack.batch_hessian(X_star.flatten(1), W, V, B, gamma)
            lr = 1.0 / torch.linalg.eigvalsh(H)[:, -1:]
            t0 = time.perf_counter()
            _, hn = attack.descend(X0, W, V, B, gamma, "newton", 100, 1.0, X_star, track_hessian=False)
            t1 = time.perf_counter()
            _, hg = attack.descend(X0, W, V, B, gamma, "gd", cap, lr, X_star, track_hessian=False)
            t2 = time.perf_counter()
            it_n, it_g = attack.first_hit(hn["dist"], eps), attack.first_hit(hg["dist"], eps)
            ok = it_n >= 0
            both = ok & (it_g >= 0)
            print(
                f"γ={gamma:g}: Newton reached ε in {int(ok.sum())}/{count} "
                f"(median {it_n[ok].float().median().item():.0f} iterations, {t1 - t0:.1f} s for all); "
                f"GD reached it in {int((it_g >= 0).sum())}/{count} within {cap} "
                f"(median {it_g[both].float().median().item() if both.any() else float('nan'):.0f} "
                f"iterations where both did, {t2 - t1:.1f} s for all)"
            )


def bench_movielens(users: int, seed: int) -> None:
    from ..data import movielens as ml
    from ..inversion import movielens as twist

    t0 = time.perf_counter()
    ds = ml.load("ml-100k")
    exp = twist.prepare(ds.frame, ds.movies, epochs=60, seed=seed)
    print(
        f"## MovieLens 100K ({ds.source}): {len(exp.seqs.users)} users × 12 movies, vocabulary "
        f"{len(exp.titles)}, tiny transformer {sum(p.numel() for p in exp.model.parameters())} "
        f"parameters, training loss {exp.losses[0]:.2f} → {exp.losses[-1]:.2f} "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    t0 = time.perf_counter()
    attacked = twist.attack_users(exp, users, steps=300, seed=seed)
    print(f"attack: 2 hidden movies per user, 300 Adam steps ({time.perf_counter() - t0:.0f} s for both groups)")
    for label, done in attacked.items():
        print(f"{label}: {len(done.tokens)} users")
        for r in done.summary.itertuples():
            print(f"  {r.metric:<6} attack {r.attack:6.1%}  popularity {r.popularity:6.1%}  chance {r.chance:6.1%}")


def run(args) -> int:
    if args.part in ("all", "gamma"):
        bench_gamma(args.trials, args.seed)
    if args.part in ("all", "iterations"):
        bench_iterations(args.trials, args.seed)
    if args.part in ("all", "movielens"):
        bench_movielens(args.users, args.seed)
    return 0
