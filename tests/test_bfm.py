"""Bayesian FM: Gibbs conditionals against brute force, recovery of a planted FM, run store."""

import numpy as np
import pytest
import torch

from fmlib.data import split, synthetic
from fmlib.data.schema import Schema
from fmlib.models import build_model, hyperparameters
from fmlib.models.bfm import ALPHA0, BETA0, GAMMA0, MU0, GibbsSampler, designs, fm_predict, normal_gamma_conditional
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, evaluate, predict, train_model

# two single-valued fields and a multi-valued one (2 slots, values weighted 1/len, padding weight 0)
SCHEMA = Schema.build([("a", "context", "single", 4, 1), ("b", "item", "single", 3, 1), ("g", "item", "multi", 4, 2)])


def tiny_sampler(seed=0, n=40, dim=3):
    rng = np.random.default_rng(seed)
    a, b, g = SCHEMA.fields
    index = np.zeros((n, 4), dtype=np.int64)
    weight = np.zeros((n, 4))
    index[:, 0], index[:, 1] = a.offset + rng.integers(0, 4, n), b.offset + rng.integers(0, 3, n)
    weight[:, :2] = 1.0
    for row in range(n):
        values = rng.choice(4, size=rng.integers(1, 3), replace=False)
        index[row, 2:] = g.offset  # padding: the bucket with weight 0
        index[row, 2 : 2 + len(values)] = g.offset + values
        weight[row, 2 : 2 + len(values)] = 1 / len(values)
    sampler = GibbsSampler(SCHEMA, index, weight, rng.normal(3, 1, n), dim, 0.5, seed)
    # a random state, then caches recomputed from it
    sampler.w0, sampler.w, sampler.V = 0.3, rng.normal(0, 0.5, SCHEMA.num_features), rng.normal(0, 0.5, sampler.V.shape)
    sampler.alpha = 1.7
    sampler.lam_w, sampler.mu_w = rng.gamma(2, 1, 3), rng.normal(0, 0.3, 3)
    sampler.lam_v, sampler.mu_v = rng.gamma(2, 1, (3, dim)), rng.normal(0, 0.3, (3, dim))
    sampler.refresh()
    return sampler, index, weight


def naive_fm(w0, w, V, index, weight):
    """ŷ by explicit loops: w0 + Σ_s x_s w_s + Σ over slot pairs in different fields of x_s x_t ⟨v_s, v_t⟩."""
    fields = SCHEMA.slot_fields()
    out = []
    for idx, x in zip(index, weight):
        y = w0 + sum(x[s] * w[idx[s]] for s in range(len(idx)))
        for s in range(len(idx)):
            for t in range(s + 1, len(idx)):
                if fields[s] != fields[t]:
                    y += x[s] * x[t] * V[idx[s]] @ V[idx[t]]
        out.append(y)
    return np.array(out)


def brute_force_posterior(sampler, index, weight, name, g, c, lam, mu):
    """θ's Gaussian posterior from ŷ evaluated at unit steps of θ (Bayesian linear regression), and a
    check that ŷ is linear in θ (the multilinearity the sampler relies on)."""
    rows = slice(SCHEMA.fields[g].offset, SCHEMA.fields[g].offset + SCHEMA.fields[g].cardinality)

    def y_hat(theta):
        w, V = sampler.w.copy(), sampler.V.copy()
        if name == "w":
            w[rows] = theta
        else:
            V[rows, c] = theta
        return naive_fm(sampler.w0, w, V, index, weight)

    theta = (sampler.w if name == "w" else sampler.V[:, c])[rows].copy()
    base = y_hat(theta)
    H = np.stack([y_hat(theta + np.eye(len(theta))[j]) - base for j in range(len(theta))], 1)
    for j in range(len(theta)):  # linear, not just affine at one point
        np.testing.assert_allclose(y_hat(theta + 2.5 * np.eye(len(theta))[j]) - base, 2.5 * H[:, j], atol=1e-9)
    g_part = base - H @ theta
    precision = sampler.alpha * H.T @ H + lam * np.eye(len(theta))
    cov = np.linalg.inv(precision)
    return cov @ (sampler.alpha * H.T @ (sampler.y - g_part) + lam * mu), cov, theta


@pytest.mark.parametrize("name", ["w", "v"])
@pytest.mark.parametrize("g", [0, 1, 2], ids=["single-a", "single-b", "multi"])
def test_block_conditional_matches_brute_force_gaussian_posterior(name, g):
    sampler, index, weight = tiny_sampler()
    c = 1
    f = sampler.fields[g]
    if name == "w":
        lam, mu, d = sampler.lam_w[g], sampler.mu_w[g], 1.0
    else:
        lam, mu, d = sampler.lam_v[g, c], sampler.mu_v[g, c], sampler.q[c] - sampler.e[c, g]
    want_mean, want_cov, theta = brute_force_posterior(sampler, index, weight, name, g, c, lam, mu)
    mean, cov = sampler.conditional(f, theta, d, lam, mu)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-9, atol=1e-12)
    if f.single:  # features of a single-valued field never share a sample: independent conditionals
        np.testing.assert_allclose(want_cov, np.diag(cov), rtol=1e-9, atol=1e-12)
    else:
        assert np.abs(want_cov - np.diag(np.diag(want_cov))).max() > 1e-6  # genres co-occur: correlated
        np.testing.assert_allclose(cov, want_cov, rtol=1e-9, atol=1e-12)


def test_normal_gamma_conditionals_match_the_unnormalised_density():
    """log p(λ | μ, θ) and log p(μ | λ, θ) from prior × likelihood, against the returned shape/rate, mean/precision."""
    rng = np.random.default_rng(1)
    theta, mu, lam = rng.normal(0.4, 0.7, 9), 0.2, 1.3
    shape, rate, mean, scale = normal_gamma_conditional(theta, mu)

    def log_joint(lam, mu):  # Γ(α0/2, β0/2) on λ, N(μ0, 1/(γ0 λ)) on μ, N(μ, 1/λ) on each θ
        log = (ALPHA0 / 2 - 1) * np.log(lam) - BETA0 / 2 * lam
        log += 0.5 * np.log(GAMMA0 * lam) - GAMMA0 * lam * (mu - MU0) ** 2 / 2
        return log + len(theta) / 2 * np.log(lam) - lam * ((theta - mu) ** 2).sum() / 2

    lams = np.array([0.5, 1.0, 2.0, 3.0])
    gamma_log = (shape - 1) * np.log(lams) - rate * lams
    diff = np.array([log_joint(x, mu) for x in lams]) - gamma_log
    np.testing.assert_allclose(diff, diff[0], atol=1e-10)  # equal up to a constant
    mus = np.array([-1.0, 0.0, 0.5, 2.0])
    normal_log = -scale * lam * (mus - mean) ** 2 / 2
    diff = np.array([log_joint(lam, x) for x in mus]) - normal_log
    np.testing.assert_allclose(diff, diff[0], atol=1e-10)


def test_sweep_keeps_the_caches_equal_to_a_recomputation():
    sampler, _, _ = tiny_sampler(seed=2)
    for _ in range(3):
        sampler.sweep()
    r, e, q = sampler.r.copy(), sampler.e.copy(), sampler.q.copy()
    sampler.refresh()
    np.testing.assert_allclose(r, sampler.r, atol=1e-9)
    np.testing.assert_allclose(e, sampler.e, atol=1e-9)
    np.testing.assert_allclose(q, sampler.q, atol=1e-9)


def planted(noise):
    R = synthetic.block_R(4, blocks=1, within=1.0)  # R = 1 off the diagonal: a plain FM
    return split(synthetic.make(R, n_samples=4000, cardinality=8, dim=2, noise=noise, seed=3), seed=0)


def test_recovers_the_planted_fm_predictions():
    data, truth = planted(noise=0.1), planted(noise=0.0).test.rating  # same samples, noiseless target
    run = train_model("bfm", data, TrainConfig(epochs=80, seed=0), dim=2, burn_in=20)
    error = predict(run.model, data.test) - truth
    assert float(error.pow(2).mean().sqrt()) < 0.15 * float(truth.std())
    assert run.metrics["test"]["rmse"] < 0.2  # noise 0.1 plus the estimation error


def test_run_store_roundtrip_and_history(tmp_path):
    data = planted(noise=0.1)
    records = []
    run = train_model("bfm", data, TrainConfig(epochs=6, seed=1), records.append, dim=3, burn_in=2)
    assert [r["epoch"] for r in records] == list(range(1, 7)) and records[-1]["best"]
    assert run.model.V.shape == (4, data.schema.num_features, 3)  # 6 sweeps, 2 burnt
    # the last record is the posterior mean of the kept samples: what the model predicts
    assert records[-1]["valid_rmse"] == pytest.approx(run.metrics["valid"]["rmse"], rel=1e-4)
    # forward is the mean over kept samples of each sample's FM prediction (not the FM of the mean sample)
    m = run.model
    fields = designs(data.schema, data.test.index.numpy(), data.test.weight.numpy().astype(np.float64))
    per_sample = [
        fm_predict(float(m.w0[s]), m.w[s].double().numpy(), m.V[s].double().numpy(), fields) for s in range(4)
    ]
    np.testing.assert_allclose(predict(m, data.test).numpy(), np.mean(per_sample, 0), rtol=1e-5, atol=1e-5)
    store = RunStore(tmp_path)
    loaded = store.load(store.save(run))
    assert loaded.config["hp"] == {"dim": 3, "burn_in": 2}
    torch.testing.assert_close(predict(loaded.model, data.test), predict(run.model, data.test))
    assert evaluate(loaded.model, data.test, "rating") == run.metrics["test"]


def test_bad_input_is_named():
    data = planted(noise=0.1)
    with pytest.raises(ValueError, match="rating task only"):
        train_model("bfm", data, TrainConfig(task="click", epochs=3))
    with pytest.raises(ValueError, match="burn_in"):
        train_model("bfm", data, TrainConfig(epochs=3), burn_in=3)
    with pytest.raises(RuntimeError, match="no posterior samples"):
        build_model("bfm", data.schema)(data.test.index, data.test.weight)
    assert hyperparameters("bfm") == {"dim": 10, "burn_in": 5}
