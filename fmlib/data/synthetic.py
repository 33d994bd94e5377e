"""Synthetic multi-field data with a planted field-interaction matrix R, for tests and teaching.

Each of m single-valued fields draws a feature uniformly from its vocabulary; every feature
has a planted embedding v_i ~ N(0, 1/k) and the target is the FwFM of DPLR eq. 3 with the
planted R plus Gaussian noise:  y = 3 + Σ_{f<g} ⟨v_f, v_g⟩ R_fg + ε.
``block_R`` plants the block structure the DPLR paper observes in trained R (§3, Fig. 1):
fields in the same block interact with strength ``within``, across blocks with ``between``.
Off the diagonal it agrees with a rank ≤ ``blocks`` matrix (the block matrix with ``within`` on
the diagonal); with its diagonal set to zero R itself is in general of full rank, i.e. diagonal
plus rank ≤ ``blocks`` — exactly a DPLR of rank ``blocks`` (DPLR eq. 10).
"""

from __future__ import annotations

import numpy as np
import torch

from .dataset import Dataset
from .schema import Schema


def block_R(m: int, blocks: int = 2, within: float = 1.0, between: float = -0.5) -> torch.Tensor:
    """Symmetric, zero-diagonal m×m R with contiguous field blocks: R + within·I has rank ≤ blocks."""
    if not 1 <= blocks <= m:
        raise ValueError(f"blocks must be in 1..m={m}, got {blocks}")
    member = torch.arange(m) * blocks // m
    same = member[:, None] == member[None, :]
    R = torch.where(same, torch.tensor(within), torch.tensor(between))
    return R.fill_diagonal_(0.0)


def demo_R() -> torch.Tensor:
    """The planted R of the app's synthetic data set: 8 fields in three blocks, interactions of
    both signs (+1 within a block, −0.5 across). Three blocks, not two: a two-block ±pattern is
    s_f s_g times a constant, so it is matched by any uniform R once field signs are aligned."""
    return block_R(8, blocks=3)


def make(
    R: torch.Tensor,
    n_samples: int = 20_000,
    cardinality: int = 30,
    dim: int = 4,
    noise: float = 0.1,
    item_fields: int | None = None,
    seed: int = 0,
) -> Dataset:
    """Sample a Dataset whose rating follows an FwFM with interaction matrix R (DPLR eq. 3).

    The last ``item_fields`` fields (default: half) get role "item", the rest "context".
    """
    m = R.shape[0]
    if R.shape != (m, m) or not torch.allclose(R, R.T) or R.diagonal().abs().max() > 0:
        raise ValueError("R must be a symmetric m×m matrix with zero diagonal")
    if n_samples < 1 or cardinality < 1 or dim < 1:
        raise ValueError("n_samples, cardinality and dim must be >= 1")
    item_fields = m // 2 if item_fields is None else item_fields
    if not 0 <= item_fields <= m:
        raise ValueError(f"item_fields must be in 0..{m}, got {item_fields}")
    gen = torch.Generator().manual_seed(seed)
    roles = ["context"] * (m - item_fields) + ["item"] * item_fields
    # local index 0 is the rare bucket; planted features are 1..cardinality
    schema = Schema.build(
        [(f"f{j}", roles[j], "single", cardinality + 1, 1) for j in range(m)],
        [["<rare>", *map(str, range(1, cardinality + 1))] for _ in range(m)],
    )
    local = torch.randint(1, cardinality + 1, (n_samples, m), generator=gen)
    index = local + torch.tensor([f.offset for f in schema.fields])
    V = torch.randn(schema.num_features, dim, generator=gen) / np.sqrt(dim)
    e = V[index]  # (N, m, k)
    pairwise = 0.5 * ((e @ e.transpose(1, 2)) * R).sum((1, 2))
    rating = 3.0 + pairwise + noise * torch.randn(n_samples, generator=gen)
    return Dataset(
        schema=schema,
        index=index,
        weight=torch.ones(n_samples, m),
        rating=rating.float(),
        name="synthetic",
        source=f"synthetic (m={m}, seed={seed})",
        click_threshold=float(rating.median()),
    )


PLANTED_RANKS = "planted-ranks"


def planted_ranks(
    n_samples: int = 50_000,
    users: int = 1500,
    movies: int = 1500,
    ranks: tuple[int, int] = (2, 8),
    cut: int = 40,
    zipf: float = 1.0,
    tail: float = 1.0,
    noise: float = 0.5,
    seed: int = 0,
) -> Dataset:
    """Two fields, ``user_id`` and ``movie_id``, drawn with Zipf popularity ∝ 1/r^``zipf``, and a
    rating y = 3 + ⟨v_u, v_m⟩ + ε, ε ~ N(0, ``noise``²), whose planted embeddings follow a
    frequency-dependent rank, as the rank-aware FM assumes ([RaFM] §3, eq. 4): a feature expected
    in the training split (80 %) at most ``cut`` times keeps only its first D_1 = ``ranks[0]``
    coordinates (the rest are zero), a frequent one has all D_2 = ``ranks[1]``. So a pair interacts
    through min(k_u, k_m)'s coordinates, RaFM's own rule, and a RaFM with ranks ``ranks`` and
    cut-point ``cut`` can express the truth while FM(D_1) cannot fit the frequent pairs and FM(D_2)
    must learn D_2 numbers per rare feature from a few ratings.

    Coordinates are N(0, s_j² D_2^{−1/2}), s_j = 1 for the first D_1 and s_j = ``tail`` for the
    others, so the interaction of a pair has the variances of ``planted_variances`` (defaults: 1.0
    for a frequent pair, 0.75 of it in the last D_2 − D_1 coordinates, 0.25 for a pair with a rare
    feature, against a noise variance of 0.25). With ``tail`` = 1 a frequent embedding is alike in
    every direction: the rare features' D_1 coordinates are *not* the best rank-D_1 summary of the
    frequent pairs, which is what RaFM's Algorithm 1 fits the frequent features' low-rank copies to
    (eq. 12b; ``fmlib.models.rafm``). With ``tail`` < 1 they are. Each ``seed`` draws new samples,
    embeddings and noise."""
    low, high = ranks
    if not 1 <= low < high:
        raise ValueError(f"ranks must be two sizes D_1 < D_2, got {ranks}")
    if min(n_samples, users, movies, cut) < 1:
        raise ValueError("n_samples, users, movies and cut must be >= 1")
    gen = torch.Generator().manual_seed(seed)
    fields, rows = [], []
    offset = 0
    for name, size in (("user_id", users), ("movie_id", movies)):
        popularity = 1.0 / torch.arange(1, size + 1, dtype=torch.float64) ** zipf
        popularity /= popularity.sum()
        local = torch.multinomial(popularity, n_samples, replacement=True, generator=gen) + 1  # 0: rare bucket
        expected = 0.8 * n_samples * popularity
        fields.append((name, "context" if name == "user_id" else "item", "single", size + 1, 1))
        rows.append((local + offset, expected))
        offset += size + 1
    schema = Schema.build(
        fields, [["<rare>", *map(str, range(1, users + 1))], ["<rare>", *map(str, range(1, movies + 1))]]
    )
    scale = torch.where(torch.arange(high) < low, 1.0, tail).double()
    V = torch.randn(schema.num_features, high, generator=gen, dtype=torch.float64) * scale / high**0.25
    for (_, expected), field in zip(rows, schema.fields):
        rare = field.offset + 1 + torch.nonzero(expected <= cut).squeeze(1)
        V[rare, low:] = 0.0
    index = torch.stack([r[0] for r in rows], 1)
    e = V[index]
    rating = 3.0 + (e[:, 0] * e[:, 1]).sum(1) + noise * torch.randn(n_samples, generator=gen, dtype=torch.float64)
    return Dataset(
        schema=schema,
        index=index,
        weight=torch.ones(n_samples, 2),
        rating=rating.float(),
        name=PLANTED_RANKS,
        source=f"synthetic ({PLANTED_RANKS}: ranks {ranks}, cut {cut}, seed={seed})",
        click_threshold=float(rating.median()),
    )


def planted_variances(ranks: tuple[int, int] = (2, 8), tail: float = 1.0, noise: float = 0.5) -> dict:
    """Variance of ⟨v_u, v_m⟩ in ``planted_ranks`` by the kind of pair, and of the noise: a coordinate
    product s_j² s_j² / D_2 summed over the pair's coordinates (D_1 of them at s = 1, and for two
    frequent features D_2 − D_1 more at s = ``tail``)."""
    low, high = ranks
    tail_part = (high - low) * tail**4 / high
    return {
        "frequent pair": low / high + tail_part,
        "its last D_2 − D_1 coordinates": tail_part,
        "pair with a rare feature": low / high,
        "noise": noise**2,
    }
