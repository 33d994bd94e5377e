"""Bayesian factorization machine: Rendle's MCMC FM, trained by Gibbs sampling ([Rendle2012], libFM's MCMC).

Model (the field form of fmlib's FM, DPLR eq. 2), with e_f = Σ_{s in f} x_s v_{i_s} and slot values x_s:
    ŷ = w0 + Σ_s x_s w_{i_s} + Σ_{f<g} ⟨e_f, e_g⟩,        y ~ N(ŷ, 1/α).
Priors per field group g ([Rendle2012] §MCMC): w_i ~ N(μ_w[g], 1/λ_w[g]), v_{i,c} ~ N(μ_v[g,c], 1/λ_v[g,c]),
w0 ~ N(μ0, 1/γ0); hyperpriors α, λ ~ Γ(α0/2, β0/2) (shape, rate) and μ | λ ~ N(μ0, 1/(γ0 λ)), with
α0 = β0 = γ0 = 1, μ0 = 0 as in libFM.

Multilinearity ([Rendle2012]): for each single parameter θ, ŷ = g_θ + θ h_θ where h_θ does not
depend on θ:  h_{w0} = 1,  h_{w_i} = x_i,  h_{v_{i,c}} = x_i (q_c − e_{f(i),c}) with q_c = Σ_f e_{f,c}
(e_f's own part cancels in the field form, so features of one field never interact). Hence the
conditional of θ given everything else is Gaussian ([Rendle2012], the MCMC update of θ):
    precision = α Σ_n h_n² + λ_θ,   mean = (α Σ_n h_n (r_n + θ h_n) + λ_θ μ_θ) / precision,
where r = y − ŷ is the residual, cached and updated after every draw (as libFM caches e and q).

Blocked, vectorised Gibbs: in the field form h of a feature never depends on its own field's
parameters, so ŷ is jointly linear in all w of one field (and in one factor column of all v of one
field), and that block is drawn from its joint Gaussian conditional in one step. For a
single-valued field the block's features never share a sample: the joint is a product of the
scalar conditionals libFM draws one by one, computed for the whole field with a few sparse
matrix-vector products over the field's CSR columns. A multi-valued field (genres) gets one small
joint Gaussian. (libFM and myFM, given the same design matrix, also model the pairs of genres of
one movie; the field form, like fmlib's FM, does not.) Predictions average the posterior
samples kept after ``burn_in`` sweeps; the model stores them and its ``forward`` is that
posterior-mean prediction.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from scipy import sparse
from torch import nn

from ..data.features import first_slots, set_matrix
from ..data.schema import Schema
from .base import SlotLayout
from .contract import FeatureTable, Model

# hyperprior constants of libFM's MCMC ([Rendle2012]): Γ(α0/2, β0/2) for α and every λ, μ | λ ~ N(μ0, 1/(γ0 λ))
ALPHA0, BETA0, GAMMA0, MU0 = 1.0, 1.0, 1.0, 0.0
SWEEPS = 300  # the Gibbs sweeps ``train --model bfm`` runs by default (the Adam models' epochs are another count)
SAMPLE_CHUNK = 16  # posterior samples per step of the forward pass: bounds its memory to 16·B·S·k floats


class FieldDesign:
    """The columns of one field in the design matrix: X_f (N × F, CSR) holds sample n's value x of
    feature ``offset + j`` at (n, j), X_fᵀ (F × N, CSR) its transpose. The field's parameters enter ŷ
    jointly linearly (h of a feature does not depend on its own field), so each sweep draws a
    field's w, and each factor column of its V, as one block: independent scalars for a
    single-valued field, whose features never share a sample (HᵀH is diagonal), one joint
    Gaussian for a multi-valued field (genres), whose features co-occur."""

    def __init__(self, g: int, field, index: np.ndarray, x: np.ndarray, starts: np.ndarray):
        self.g, self.single, self.size = g, field.kind == "single", field.cardinality
        self.features = slice(field.offset, field.offset + field.cardinality)
        local = index[:, starts[g] : starts[g] + field.slots] - field.offset
        values = x[:, starts[g] : starts[g] + field.slots]
        n = len(index)
        row, slot = np.nonzero(values)
        self.X = sparse.csr_matrix((values[row, slot], (row, local[row, slot])), shape=(n, self.size))
        self.XT = self.X.T.tocsr()
        self.XT_squared = self.XT.multiply(self.XT).tocsr()  # x², for the diagonal of HᵀH
        if not self.single:  # (HᵀH)_jl = Σ_n X_nj X_nl d_n²: a sum over the pairs of nonzero slots of a sample
            pairs = [
                (s, t, np.flatnonzero(values[:, s] * values[:, t]))
                for s in range(field.slots)
                for t in range(field.slots)
            ]
            self.pair_code = np.concatenate([local[r, s] * self.size + local[r, t] for s, t, r in pairs])
            self.pair_x = np.concatenate([values[r, s] * values[r, t] for s, t, r in pairs])
            self.pair_row = np.concatenate([r for _, _, r in pairs])

    def times(self, theta: np.ndarray) -> np.ndarray:
        """X_f θ, (N,)."""
        return self.X @ theta

    def transposed_times(self, r: np.ndarray) -> np.ndarray:
        """X_fᵀ r, (F,)."""
        return self.XT @ r

    def gram(self, d: np.ndarray) -> np.ndarray:
        """HᵀH for h_n = X_n d_n: its diagonal (F,) for a single-valued field, else (F, F)."""
        if self.single:
            return self.XT_squared @ (d * d)
        weights = self.pair_x * (d * d)[self.pair_row]
        return np.bincount(self.pair_code, weights, minlength=self.size**2).reshape(self.size, self.size)


class BlockDesign:
    """The columns of a relation block ([Rendle2013]; ``Field`` kind "block") in the design matrix,
    never formed: sample n's row is row ``keys[n]`` of the block's own matrix B (keys × F, CSR:
    1/√|set| at each member of a key's set, [Koren2008] eq. 15), so X_f = P B with P the 0/1
    matrix sending each sample to its key. Every product goes through B once per key:
    X_f θ = (Bθ)[keys], X_fᵀ r = Bᵀ (Pᵀ r) — the cost of the sets, not of one set per sample.
    The block's features co-occur, and a joint draw over its F features (1,683 movies) would
    cost O(F³) per factor column; ``draw`` samples them one at a time instead, as libFM does."""

    single = False

    def __init__(self, g: int, field, key_column: np.ndarray, key_offset: int, offset: int):
        self.g, self.size = g, field.cardinality
        self.features = slice(offset, offset + field.cardinality)
        self.keys = key_column - key_offset
        self.B = set_matrix(field)
        self.BT = BT = self.B.T.tocsr()
        # feature j's keys, B_{uj} and B_{uj}² over them, sliced once (``draw`` visits every feature per column)
        self.columns = [
            (BT.indices[s:e], BT.data[s:e], BT.data[s:e] ** 2) for s, e in zip(BT.indptr[:-1], BT.indptr[1:])
        ]

    def per_key(self, values: np.ndarray) -> np.ndarray:
        """Pᵀ values: the sum of ``values`` over each key's samples."""
        return np.bincount(self.keys, values, minlength=self.B.shape[0])

    def times(self, theta: np.ndarray) -> np.ndarray:
        return (self.B @ theta)[self.keys]

    def transposed_times(self, r: np.ndarray) -> np.ndarray:
        return self.BT @ self.per_key(r)

    def draw(self, theta, d, r, alpha, lam, mu, rng) -> np.ndarray:
        """θ after single-site Gibbs draws of each of the block's features in turn ([Rendle2012],
        the MCMC update of one θ): for feature j, h_n = B_{u(n)j} d_n, so with per-key sums
        a_u = Σ_{n of u} d_n² and c_u = Σ_{n of u} d_n r_n, Σ_n h_n² = Σ_u B_uj² a_u and
        Σ_n h_n r_n = Σ_u B_uj c_u; after θ_j moves by δ, c_u falls by B_uj δ a_u."""
        a, c, theta = self.per_key(d * d), self.per_key(d * r), theta.copy()
        z = rng.standard_normal(len(theta))
        for j, (keys, b, b2) in enumerate(self.columns):
            a_keys = a[keys]
            mean, var = gaussian_conditional(b2 @ a_keys, b @ c[keys], theta[j], alpha, lam, mu)
            new = mean + np.sqrt(var) * z[j]
            c[keys] -= (new - theta[j]) * (b * a_keys)
            theta[j] = new
        return theta


def designs(schema: Schema, index: np.ndarray, x: np.ndarray) -> list:
    """The design of every field: ``BlockDesign`` for a relation block, else ``FieldDesign``."""
    starts = first_slots(schema)
    return [
        BlockDesign(g, f, index[:, starts[schema.names.index(f.key)]], schema.field(f.key).offset, f.offset)
        if f.kind == "block"
        else FieldDesign(g, f, index, x, starts)
        for g, f in enumerate(schema.fields)
    ]


def gaussian_conditional(gram, hr, theta, alpha, lam, mu):
    """Mean and covariance of the block θ | rest for ŷ = g + Hθ, y ~ N(ŷ, 1/α), θ ~ N(μ, 1/λ):
    precision P = α HᵀH + λI, mean = P⁻¹ (α Hᵀ(r + Hθ) + λμ) with r = y − ŷ the residual
    (the multilinearity update of [Rendle2012], jointly for a block). ``gram`` is HᵀH, or its
    diagonal when it is diagonal (then the covariance returned is the diagonal too)."""
    if np.ndim(gram) < 2:
        precision = alpha * gram + lam
        return (alpha * (hr + gram * theta) + lam * mu) / precision, 1.0 / precision
    cov = np.linalg.inv(alpha * gram + lam * np.eye(len(theta)))
    return cov @ (alpha * (hr + gram @ theta) + lam * mu), cov


def normal_gamma_conditional(theta: np.ndarray, mu):
    """λ | μ, θ ~ Γ(shape, rate) and μ | λ, θ ~ N(mean, 1/(scale λ)) for the Normal-Gamma hyperprior
    of [Rendle2012] over the n values θ (axis 0) of one group:
    shape (α0 + n + 1)/2, rate (β0 + γ0(μ − μ0)² + Σ(θ − μ)²)/2, mean (γ0 μ0 + Σθ)/(γ0 + n), scale γ0 + n."""
    n = theta.shape[0]
    rate = (BETA0 + GAMMA0 * (mu - MU0) ** 2 + ((theta - mu) ** 2).sum(0)) / 2
    return (ALPHA0 + n + 1) / 2, rate, (GAMMA0 * MU0 + theta.sum(0)) / (GAMMA0 + n), GAMMA0 + n


def field_embeddings(V: np.ndarray, fields: list) -> np.ndarray:
    """e_f = X_f V_f for every sample and field (the field's columns of the design times its block
    of V): (N, m, k)."""
    return np.stack([f.times(V[f.features]) for f in fields], 1)


def fm_predict(w0, w, V, fields: list) -> np.ndarray:
    """ŷ = w0 + Σ_f X_f w_f + ½(‖Σ_f e_f‖² − Σ_f ‖e_f‖²) (DPLR eqs. 1–2) for one parameter sample,
    over the samples of the designs ``fields`` (``designs``)."""
    e = field_embeddings(V, fields)
    return w0 + sum(f.times(w[f.features]) for f in fields) + 0.5 * ((e.sum(1) ** 2).sum(1) - (e**2).sum((1, 2)))


class GibbsSampler:
    """State (w0, w, V, α, μ, λ) of the MCMC FM on one training set, with libFM's caches:
    the residual r = y − ŷ and, per factor column c, the field embeddings e_{f,c} and q_c = Σ_f e_{f,c}."""

    def __init__(self, schema: Schema, index, weight, y, dim: int, init_std: float, seed: int):
        self.rng = np.random.default_rng(seed)
        self.schema, self.y = schema, np.asarray(y, np.float64)
        self.fields = designs(schema, np.asarray(index), np.asarray(weight, np.float64))
        m, n = schema.num_fields, schema.num_features
        self.w0, self.w = 0.0, np.zeros(n)
        self.V = self.rng.normal(0.0, init_std, (n, dim))
        self.alpha = 1.0
        self.mu_w, self.lam_w = np.zeros(m), np.ones(m)
        self.mu_v, self.lam_v = np.zeros((m, dim)), np.ones((m, dim))
        self.refresh()

    def refresh(self):
        """Recompute the caches from the state: e (k, m, N), q (k, N), r (N,)."""
        self.e = np.ascontiguousarray(field_embeddings(self.V, self.fields).transpose(2, 1, 0))
        self.q = self.e.sum(1)
        self.r = self.y - fm_predict(self.w0, self.w, self.V, self.fields)

    def predict(self, fields: list) -> np.ndarray:
        """ŷ of the current sample on the samples of ``fields`` (``designs``)."""
        return fm_predict(self.w0, self.w, self.V, fields)

    def _normal(self, mean, cov):
        z = self.rng.standard_normal(np.shape(mean))
        return mean + (np.sqrt(cov) * z if np.ndim(cov) == np.ndim(mean) else np.linalg.cholesky(cov) @ z)

    def sweep(self):
        """One Gibbs sweep in libFM's order: α, w0, (λ_w, μ_w), w, (λ_v, μ_v), then V column by column."""
        self.alpha = self.rng.gamma((ALPHA0 + len(self.y)) / 2, 2 / (BETA0 + self.r @ self.r))
        new = float(self._normal(*gaussian_conditional(len(self.y), self.r.sum(), self.w0, self.alpha, GAMMA0, MU0)))
        self.r -= new - self.w0
        self.w0 = new
        self.lam_w, self.mu_w = self._draw_hyper(self.w, self.mu_w)
        for f in self.fields:
            self.w[f.features] = self._draw_block(f, self.w[f.features], 1.0, self.lam_w[f.g], self.mu_w[f.g])
        self.lam_v, self.mu_v = self._draw_hyper(self.V, self.mu_v)
        for c in range(self.V.shape[1]):
            for f in self.fields:
                d = self.q[c] - self.e[c, f.g]  # h_{v_{i,c}} = x_i (q_c − e_{f,c})
                self.V[f.features, c] = self._draw_block(
                    f, self.V[f.features, c], d, self.lam_v[f.g, c], self.mu_v[f.g, c], c
                )

    def conditional(self, f, theta, d, lam, mu):
        """Mean and covariance of a field's block θ | rest when h_n = X_n d_n (d = 1 for w)."""
        d = np.broadcast_to(d, self.r.shape)
        return gaussian_conditional(f.gram(d), f.transposed_times(d * self.r), theta, self.alpha, lam, mu)

    def _draw_block(self, f, theta, d, lam, mu, c: int | None = None):
        if isinstance(f, BlockDesign):
            new = f.draw(theta, np.broadcast_to(d, self.r.shape), self.r, self.alpha, lam, mu, self.rng)
        else:
            new = self._normal(*self.conditional(f, theta, d, lam, mu))
        change = f.times(new - theta)
        self.r -= d * change
        if c is not None:  # a factor column moved: its field embedding and q move with it
            self.e[c, f.g] += change
            self.q[c] += change
        return new

    def _draw_hyper(self, values, mu):
        """λ then μ of every field group (per factor column for V): Normal-Gamma conditionals."""
        lam, new_mu = np.empty_like(mu), np.empty_like(mu)
        for f in self.fields:
            shape, rate, mean, scale = normal_gamma_conditional(values[f.features], mu[f.g])
            lam[f.g] = self.rng.gamma(shape, 1 / rate)
            new_mu[f.g] = self._normal(mean, 1 / (scale * lam[f.g]))
        return lam, new_mu


class BayesianFM(Model):
    """Posterior-mean FM: ``forward`` averages the FM prediction over the kept Gibbs samples.

    Parameters ``w0`` (S,), ``w`` (S, n), ``V`` (S, n, k), one row per kept sample, drawn by
    ``fit_gibbs`` and never trained by gradient (``requires_grad`` is off); a loaded run gets
    however many samples were saved.
    """

    def __init__(self, schema: Schema, dim: int = 10, burn_in: int = 5, init_std: float = 0.1):
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if burn_in < 0:
            raise ValueError(f"burn_in must be >= 0, got {burn_in}")
        self.schema, self.dim, self.burn_in, self.init_std = schema, dim, burn_in, init_std
        n = schema.num_features
        self._set_samples(torch.zeros(0), torch.zeros(0, n), torch.zeros(0, n, dim))
        self.register_buffer("slot_to_field", torch.tensor(schema.slot_fields()), persistent=False)
        layout = SlotLayout.of(schema)
        self.blocks, self.block_columns = layout.blocks, [int(layout.first[b.f]) for b in layout.blocks]

    trained_by = "gibbs"

    def feature_table(self) -> FeatureTable | None:
        """The posterior means of w_i and v_i over the kept samples ([Rendle2012] §MCMC); None before sampling."""
        if self.V.shape[0] == 0:
            return None
        return FeatureTable(self.V.mean(0), self.w.mean(0))

    def _set_samples(self, w0: torch.Tensor, w: torch.Tensor, V: torch.Tensor):
        for name, value in (("w0", w0), ("w", w), ("V", V)):
            setattr(self, name, nn.Parameter(value.float(), requires_grad=False))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        if all(prefix + name in state_dict for name in ("w0", "w", "V")):  # as many samples as were saved
            self._set_samples(*(torch.empty_like(state_dict[prefix + name]) for name in ("w0", "w", "V")))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """(1/S) Σ_samples ŷ_s: the linear part of the mean sample plus the mean pairwise part."""
        samples = self.V.shape[0]
        if samples == 0:
            raise RuntimeError("bfm has no posterior samples: train it with train_model (Gibbs sampling) first")
        blocks = [(b, b.keys(index)) for b in self.blocks]
        if blocks:  # a block's slot holds its bucket row: its sets are read by key instead (``base.Block``)
            weight = weight.clone()
            weight[:, self.block_columns] = 0
        w = self.w.mean(0)
        first = self.w0.mean() + (w[index] * weight).sum(1) + sum(b.sums(w[:, None], keys)[:, 0] for b, keys in blocks)
        fields = self.schema.num_fields
        pair = torch.zeros(index.shape[0], device=index.device)
        for start in range(0, samples, SAMPLE_CHUNK):
            V = self.V[start : start + SAMPLE_CHUNK]
            v = V[:, index] * weight[None, :, :, None]  # (c, B, S, k)
            e = v.new_zeros(v.shape[0], v.shape[1], fields, self.dim).index_add_(2, self.slot_to_field, v)
            for b, keys in blocks:
                e[:, :, b.f] = torch.stack([b.sums(V_s, keys) for V_s in V])
            pair += 0.5 * (e.sum(2).pow(2) - e.pow(2).sum(2)).sum((0, 2))
        return first + pair / samples

    def fit_gibbs(self, train, valid, config, callback=None) -> list[dict]:
        """Run ``config.epochs`` Gibbs sweeps on ``train``; keep the samples after ``burn_in``.

        After each sweep ``callback(record)`` gets the train MSE of the current sample and the
        validation RMSE/MAE of the running posterior mean (of the current sample during burn-in).
        Returns the records."""
        if config.task != "rating":
            raise ValueError(
                f"model 'bfm' samples a Gaussian likelihood and trains the rating task only, got task {config.task!r}"
            )
        if config.grouped_decay:
            raise ValueError(
                "model 'bfm' samples a prior per field group itself ([Rendle2012] §MCMC): "
                "field_decay and linear_decay apply to the Adam-trained models only"
            )
        if config.epochs <= self.burn_in:
            raise ValueError(f"epochs (Gibbs sweeps) must exceed burn_in={self.burn_in}, got {config.epochs}")
        start = time.perf_counter()
        sampler = GibbsSampler(
            train.schema,
            train.index.numpy(),
            train.weight.numpy(),
            train.rating.numpy(),
            self.dim,
            self.init_std,
            config.seed,
        )
        valid_fields, valid_y = designs(valid.schema, valid.index.numpy(), valid.weight.numpy()), valid.rating.numpy()
        low, high = valid.rating_range or (-np.inf, np.inf)
        kept, valid_sum, history = [], np.zeros(len(valid_y)), []
        for sweep in range(1, config.epochs + 1):
            sampler.sweep()
            prediction = sampler.predict(valid_fields)
            if sweep > self.burn_in:
                kept.append((sampler.w0, sampler.w.copy(), sampler.V.copy()))
                valid_sum += prediction
                prediction = valid_sum / len(kept)
            err = np.clip(prediction, low, high) - valid_y
            record = {
                "epoch": sweep,
                "epochs": config.epochs,
                "train_loss": float(sampler.r @ sampler.r / len(sampler.r)),
                "valid_rmse": float(np.sqrt(np.mean(err**2))),
                "valid_mae": float(np.mean(np.abs(err))),
                "seconds": time.perf_counter() - start,
                "best": sweep == config.epochs,  # the model keeps the average of every kept sample
            }
            history.append(record)
            if callback is not None:
                callback(record)
        w0, w, V = zip(*kept)
        self._set_samples(torch.tensor(w0), torch.from_numpy(np.stack(w)), torch.from_numpy(np.stack(V)))
        return history
