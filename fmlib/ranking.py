"""Ranking many items for one context, with the context part computed once (DPLR paper §3.1, §4.2.2).

A query is one context (user + time fields C) and N candidate items (item fields I). Whatever
depends on the context alone is computed once per query and cached; whatever depends on one
embedding row alone is computed once per model; each item then pays only for a gather of its
own rows. Per-item cost, k the embedding size:

* DPLR-FwFM (Algorithm 1, eq. 10: R = Uᵀ diag(e) U + diag(d)): the pairwise term is
  ½(Σ_i d_i ‖v_i‖² + Σ_r e_r ‖P_r,:‖²) with P = P_C + U_I V_I (eqs. 5, 9). Per model, each
  embedding row j of field f becomes the row (U_1f v_j, …, U_ρf v_j, w_j + ½ d_f ‖v_j‖²) of a
  table T; per query, P_C = U_C V_C and the context's constant are cached; per item, one
  ``embedding_bag`` sum of its |I| rows of T gives U_I V_I and every item-side scalar at once,
  then ½ Σ_r e_r ‖P_C,r + (U_I V_I)_r‖² adds O(ρk): O(ρ|I|k) per item, the cost of gathering
  ρ + 1/k times the rows a plain embedding sum gathers. (Algorithm 1 prints step 1(a) as
  P_C = V_C U_C: the factors are swapped, V_C U_C is undefined unless k = ρ. Its output is the
  full double sum of eq. 9; the pairwise term of eq. 3 is half of it, eq. 5.)
* FM (eq. 2c) is the same computation with R_FM = 11ᵀ − I, i.e. ρ = 1, U = 1ᵀ, e = 1, d = −1
  (eq. 7): per item ½‖s_C + Σ_I v_i‖² − ½‖s_C‖² − ½ Σ_I ‖v_i‖² + Σ_I w_i, O(|I|k).
* A multi-valued item field (genres) has e_f = Σ_s weight_s v_s, whose ‖e_f‖² is not a sum over
  rows: its own weighted ``embedding_bag`` gives e_f, which adds U_:f e_fᵀ to P and ½ d_f ‖e_f‖².
  Single-valued slots weigh 1 (``Dataset``), so their rows need no weights.
* FwFM: the paper counts O(m²k) per item (§3.2), which is what a full forward pass costs. A
  cache helps here too: the context-item terms Σ_c Σ_i R_ci ⟨v_c, v_i⟩ = Σ_i ⟨v_i, w_i⟩ with
  w_i = Σ_c R_ic v_c computed once per query, so the per-item cost is O(|I|k + |I|²k) — quadratic
  in the item fields only. A pruned FwFM skips its zeroed item-item pairs.

Items are scored in chunks of ``BATCH`` so that a chunk's intermediates stay in cache; an FwFM's
full pass in smaller ones (``full_batch``).
``fmlib.bench.ranking`` times all of them, the full forward pass and the gather floor in one run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from scipy.stats import t as student_t

from .data.dataset import Dataset
from .data.schema import Schema
from .models import BilinearForm

BATCH = 4096  # items per chunk: a chunk's gathered rows (≤ 4096 × 65 floats at ρ = 4, k = 16) fit in L2
GRAM_BYTES = 2**21  # an FwFM full pass's chunk: its (chunk, m, m) float32 Gram matrix stays under 2 MiB


@dataclass(frozen=True)
class Layout:
    """Which columns of ``Dataset.index`` (slots) and which fields are context and item."""

    context_slots: torch.Tensor
    item_slots: torch.Tensor
    context_fields: torch.Tensor
    item_fields: torch.Tensor


def layout(schema: Schema) -> Layout:
    """The context and item slots and fields of ``schema``; both roles must be present."""
    slot_field = schema.slot_fields()
    role = [schema.fields[f].role for f in slot_field]

    def long(xs):
        return torch.tensor(xs, dtype=torch.long)

    lay = Layout(
        long([s for s, r in enumerate(role) if r == "context"]),
        long([s for s, r in enumerate(role) if r == "item"]),
        long(schema.field_indices("context")),
        long(schema.field_indices("item")),
    )
    if len(lay.context_fields) == 0 or len(lay.item_fields) == 0:
        raise ValueError(
            "ranking needs at least one context field and one item field; the schema has "
            f"{len(lay.context_fields)} context and {len(lay.item_fields)} item fields"
        )
    return lay


def assemble(lay: Layout, context_index, context_weight, item_index, item_weight):
    """Full rows (N, S) for the full forward pass: the context repeated next to every item."""
    n = item_index.shape[0]
    index = torch.empty(n, len(lay.context_slots) + len(lay.item_slots), dtype=torch.long)
    weight = torch.empty(index.shape)
    index[:, lay.context_slots], weight[:, lay.context_slots] = context_index.long(), context_weight  # int32 or int64
    index[:, lay.item_slots], weight[:, lay.item_slots] = item_index.long(), item_weight
    return index, weight


def chunked(score, n: int, batch: int = BATCH) -> torch.Tensor:
    """``score(start, stop)`` for consecutive chunks of ``batch`` items, written into one (n,) tensor."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    out = torch.empty(n)
    for start in range(0, n, batch):
        out[start : start + batch] = score(start, min(start + batch, n))
    return out


class _Ranker:
    """Shared part: the model's feature table (v_i, w_i) and w0, the layout, and the context's field vectors and
    first-order term."""

    def __init__(self, model, lay: Layout, form: BilinearForm):
        self.lay, self.w0 = lay, form.w0
        self.v, self.w = (table.detach() for table in model.feature_table())
        schema = model.schema
        slot_to_field = F.one_hot(torch.tensor(schema.slot_fields()), schema.num_fields).float()  # (S, m)
        self.ctx_map = slot_to_field[lay.context_slots][:, lay.context_fields]  # slot -> field sums
        self.ctx_single = len(lay.context_slots) == len(lay.context_fields)
        self.item_map = slot_to_field[lay.item_slots][:, lay.item_fields]
        self.item_single = len(lay.item_slots) == len(lay.item_fields)

    def field_vectors(self, index, weight, slot_map, single):
        """Field vectors e_f = Σ_{s in f} weight_s v_{index_s} of the given slots (DPLR §3.2 average)."""
        v = F.embedding(index, self.v) * weight.unsqueeze(-1)
        return v if single else torch.einsum("nsk,sf->nfk", v, slot_map)

    def cache(self, context_index, context_weight) -> dict:
        """Everything that depends on the context alone (computed once per query)."""
        V_C = self.field_vectors(context_index[None], context_weight[None], self.ctx_map, self.ctx_single)[0]
        first = self.w0 + (self.w[context_index] * context_weight).sum()
        return self.context(V_C, first)

    def score(self, cache: dict, item_index, item_weight, batch: int = BATCH) -> torch.Tensor:
        """Scores (N,) of N items (N, S_I) given the cached context, ``batch`` items at a time."""
        return chunked(lambda a, b: self.items(cache, item_index[a:b], item_weight[a:b]), len(item_index), batch)


class LowRankRanker(_Ranker):
    """Algorithm 1 for R = Uᵀ diag(e) U + diag(d) (eq. 10); FM is U = 1ᵀ, e = 1, d = −1 (eq. 7)."""

    def __init__(self, model, lay: Layout, form: BilinearForm):
        super().__init__(model, lay, form)
        (U, e, d), schema, k = form.factors, model.schema, self.v.shape[1]
        self.U_C, self.e, self.d_C = U[:, lay.context_fields], e, d[lay.context_fields]
        self.coef = e.repeat_interleave(k)  # e_r for every entry of P_r,: (flattened ρ×k)
        # the table T, one row per feature j of field f: (U_1f v_j, …, U_ρf v_j, w_j + ½ d_f ‖v_j‖²)
        field = torch.repeat_interleave(torch.tensor([f.cardinality for f in schema.fields]))
        v, w = self.v, self.w
        scaled = (U.T[field].unsqueeze(-1) * v.unsqueeze(1)).reshape(len(v), -1)  # (rows, ρk)
        self.table = torch.cat([scaled, (w + 0.5 * d[field] * v.pow(2).sum(1))[:, None]], 1)
        # a multi-valued field's d_f ‖e_f‖² is not a sum over rows: its rows come from (v_j, w_j) with
        # their weights, and e_f adds U_:f e_fᵀ to P and ½ d_f ‖e_f‖² to the score
        self.vw = torch.cat([v, w[:, None]], 1)
        slot_field = torch.tensor(schema.slot_fields())[lay.item_slots]
        single = torch.tensor([schema.fields[f].slots == 1 for f in slot_field.tolist()])
        self.single_cols = None if single.all() else single.nonzero()[:, 0]
        self.multi = [
            (U[:, f], float(d[f]), (slot_field == f).nonzero()[:, 0])
            for f in lay.item_fields.tolist()
            if schema.fields[f].slots > 1
        ]

    def context(self, V_C, first) -> dict:
        """Algorithm 1 step 1: P_C = U_C V_C (flattened) and the constant w0 + Σ_C w_c + ½ Σ_C d_c ‖v_c‖²."""
        return {"P_C": (self.U_C @ V_C).reshape(-1), "const": first + 0.5 * (V_C.pow(2).sum(-1) * self.d_C).sum()}

    def items(self, cache, item_index, item_weight) -> torch.Tensor:
        """Algorithm 1 steps 2–3, halved (eq. 5): one gather-sum of T per item, then ½ Σ_r e_r ‖P_r,:‖²."""
        single = item_index if self.single_cols is None else item_index[:, self.single_cols]
        if single.shape[1]:
            rows = F.embedding_bag(single, self.table, mode="sum")  # (N, ρk + 1): U_I V_I and the scalars
        else:
            rows = torch.zeros(len(item_index), self.table.shape[1])
        for U_f, d_f, cols in self.multi:
            g = F.embedding_bag(item_index[:, cols], self.vw, per_sample_weights=item_weight[:, cols], mode="sum")
            e_f = g[:, :-1]
            rows[:, :-1].unflatten(1, (len(U_f), -1)).add_(U_f[:, None] * e_f[:, None, :])
            rows[:, -1] += g[:, -1] + 0.5 * d_f * e_f.pow(2).sum(1)
        P = rows[:, :-1].add_(cache["P_C"]).square_()  # (P_C + U_I V_I)², flattened (N, ρk)
        return torch.addmv(rows[:, -1] + cache["const"], P, self.coef, alpha=0.5)


class FwFMRanker(_Ranker):
    def __init__(self, model, lay: Layout, form: BilinearForm):
        super().__init__(model, lay, form)
        C, I, R = lay.context_fields, lay.item_fields, form.R
        self.R_CC, self.R_IC, self.R_II = R[C][:, C], R[I][:, C], R[I][:, I]
        p, q = torch.triu_indices(len(I), len(I), 1)
        r = self.R_II[p, q]
        kept = r != 0
        # a pruned FwFM visits only its kept item-item pairs when they are under a tenth of them;
        # above that PyTorch's dense batched product is faster than gathering pairs
        self.sparse = bool(kept.sum() < 0.1 * len(r))
        self.p, self.q, self.r = p[kept], q[kept], r[kept]

    def context(self, V_C, first) -> dict:
        """Cached part of DPLR eq. 3: w0 + Σ_C w_c + context pairs ½⟨V_C V_Cᵀ, R_CC⟩, and w_i = Σ_c R_ic v_c."""
        return {"const": first + 0.5 * ((V_C @ V_C.T) * self.R_CC).sum(), "w": self.R_IC @ V_C}

    def items(self, cache, item_index, item_weight) -> torch.Tensor:
        """½⟨PᵀP, R⟩ split into context pairs + Σ_i ⟨v_i, w_i⟩ + item-item pairs (DPLR eq. 3)."""
        V_I = self.field_vectors(item_index, item_weight, self.item_map, self.item_single)
        first = (self.w[item_index] * item_weight).sum(1)
        cross = (V_I * cache["w"]).sum((1, 2))
        if self.sparse:
            item_pairs = ((V_I[:, self.p] * V_I[:, self.q]).sum(-1) * self.r).sum(1)
        else:
            item_pairs = 0.5 * ((V_I @ V_I.transpose(1, 2)) * self.R_II).sum((1, 2))
        return cache["const"] + first + cross + item_pairs


def bilinear_form(model) -> BilinearForm:
    """The model's ``bilinear_form()`` (``fmlib.models.Model``, promise 6), detached; ValueError for a model without
    one, whose items this cache cannot score."""
    form = model.bilinear_form()
    if form is None:
        raise ValueError(
            f"cached-context ranking needs a score w0 + Σ w_i x_i + ½ Σ R_fg ⟨e_f, e_g⟩ (an FM, FwFM or DPLR); "
            f"{type(model).__name__} has no bilinear_form()"
        )
    with torch.no_grad():
        factors = None if form.factors is None else tuple(t.detach() for t in form.factors)
        return BilinearForm(form.w0.detach(), form.R.detach(), factors)


def ranker(model) -> _Ranker:
    """The cached-context scorer of a model with a bilinear form: Algorithm 1 on R's factors (an FM, a DPLR-FwFM),
    else the context cache on the full R (an FwFM, pruned or not)."""
    form = bilinear_form(model)
    return (FwFMRanker if form.factors is None else LowRankRanker)(model, layout(model.schema), form)


@torch.no_grad()
def rank_items(model, context_index, context_weight, item_index, item_weight, batch: int = BATCH) -> torch.Tensor:
    """Scores (N,) of N items for one context, the context part computed once (Alg. 1 / eq. 2c).

    context_index/weight: (S_C,) the context slots of one sample; item_index/weight: (N, S_I).
    Equal to ``model(*assemble(...))``, the full forward pass, up to rounding.
    """
    model.eval()
    r = ranker(model)
    if (
        context_index.shape != (len(r.lay.context_slots),)
        or item_index.ndim != 2
        or item_index.shape[1] != len(r.lay.item_slots)
    ):
        raise ValueError(
            f"expected context slots ({len(r.lay.context_slots)},) and item slots "
            f"(N, {len(r.lay.item_slots)}), got {tuple(context_index.shape)} and "
            f"{tuple(item_index.shape)}"
        )
    return r.score(r.cache(context_index, context_weight), item_index, item_weight, batch)


def full_batch(model, batch: int = BATCH) -> int:
    """Items per chunk of ``model``'s full forward pass: ``batch``, fewer for an FwFM.

    An FwFM (a full R, no factors) forms the Gram matrix PᵀP (DPLR eq. 5) of every item, (chunk, m, m) floats. Chunks
    whose temporaries are tens of MB are page-faulted in anew on every chunk: at m = 40 and 4096
    items per chunk its full pass measured 8.5 µs per item (368k minor faults per 10⁵ items)
    against 2.2 µs with chunks whose Gram matrix stays under ``GRAM_BYTES``.
    """
    form = model.bilinear_form()
    if form is not None and form.factors is None:
        m = model.schema.num_fields
        return max(1, min(batch, GRAM_BYTES // (4 * m * m)))
    return batch


@torch.no_grad()
def full_pass(model, context_index, context_weight, item_index, item_weight, batch: int = BATCH) -> torch.Tensor:
    """The same scores by the model's own forward pass on full rows, ``full_batch`` items at a time."""
    model.eval()
    index, weight = assemble(layout(model.schema), context_index, context_weight, item_index, item_weight)
    return chunked(lambda a, b: model(index[a:b], weight[a:b]), len(index), full_batch(model, batch))


def top_k(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Positions of the k highest scores, best first."""
    if not 1 <= k <= len(scores):
        raise ValueError(f"k must be in 1..{len(scores)} (the number of items), got {k}")
    return torch.topk(scores, k).indices


def overlap_at_k(a: torch.Tensor, b: torch.Tensor) -> float:
    """overlap@k = |A ∩ B| / k of two top-k lists of the same length k."""
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"overlap@k needs two non-empty top-k lists of one length, got {len(a)} and {len(b)}")
    return len(set(a.tolist()) & set(b.tolist())) / len(a)


def overlap_table(tops: dict) -> pd.DataFrame:
    """overlap@k of every pair of top-k lists ``{model name: positions}``, as a square table."""
    names = list(tops)
    return pd.DataFrame([[overlap_at_k(tops[a], tops[b]) for b in names] for a in names], index=names, columns=names)


def cached_equals_full(model, context_index, context_weight, item_index, item_weight, k: int = 10) -> dict:
    """The cached-context scores of one query against the model's own full forward pass on full rows.

    The cache is an exact rewriting of the same sum (DPLR eq. 5, Alg. 1), so the two differ only by
    float32 rounding: ``max_abs_difference`` = max |cached − full| over the items, ``largest_score``
    = max |score| for scale, and ``overlap`` = overlap@k of their top-k lists (1 unless two scores
    within rounding of each other straddle the k-th place).
    """
    cached = rank_items(model, context_index, context_weight, item_index, item_weight)
    full = full_pass(model, context_index, context_weight, item_index, item_weight)
    k = min(k, len(cached))
    return {
        "items": len(cached),
        "max_abs_difference": float((cached - full).abs().max()),
        "largest_score": float(full.abs().max()),
        "overlap": overlap_at_k(top_k(cached, k), top_k(full, k)),
        "k": k,
    }


def recipe(config: dict) -> str:
    """A run's recipe: everything in its config that says how it was made (model, hyperparameters,
    training settings, data set, split) except the training seed, as one comparable string. Two runs
    of one recipe with different seeds are the same model trained twice: their disagreement is seed noise."""
    train = {key: value for key, value in config.get("train", {}).items() if key != "seed"}
    kept = {key: config.get(key) for key in ("model", "hp", "dataset", "split")}
    return json.dumps({**kept, "train": train}, sort_keys=True, default=str)


def query_rows(data: Dataset, count: int) -> list[int]:
    """Up to ``count`` queries of ``data``: the latest sample of each of its first users (MovieLens),
    else its first samples — the contexts over which ``agreement`` averages."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if data.frame is not None and {"user_id", "timestamp"} <= set(data.frame):
        latest = data.frame.reset_index(drop=True).groupby("user_id")["timestamp"].idxmax()
        return [int(row) for row in latest.sort_index().iloc[:count]]
    return list(range(min(count, len(data))))


@torch.no_grad()
def top_lists(models: dict, data: Dataset, rows, items: "Catalogue", k: int) -> dict:
    """``{label: (Q, k) tensor}``: each model's top k items (best first) for each query row of ``data``."""
    out = {}
    for label, model in models.items():
        model.eval()
        r = ranker(model)
        tops = []
        for row in rows:
            ctx = context_of(data, row)
            scores = r.score(r.cache(*ctx), items.index, items.weight)
            tops.append(top_k(scores, min(k, len(scores))))
        out[label] = torch.stack(tops)
    return out


SAME = "one recipe, two seeds"
DIFFERENT = "different models, different seeds"
SHARED_SEED = "different models, one seed"


def pair_kind(recipe_a: str, seed_a: int, recipe_b: str, seed_b: int) -> str | None:
    """SAME, DIFFERENT or SHARED_SEED for two runs (``agreement``); None for one model twice."""
    if recipe_a == recipe_b:
        return None if seed_a == seed_b else SAME
    return SHARED_SEED if seed_a == seed_b else DIFFERENT


def agreement(tops: dict, recipes: dict, seeds: dict, k: int) -> pd.DataFrame:
    """overlap@k of every pair of models, averaged over the queries of ``top_lists``.

    ``recipes``/``seeds``: each label's ``recipe`` and training seed. A pair is
    SAME — one recipe, two seeds: the same model trained twice, the seed-noise baseline;
    DIFFERENT — different recipes and different seeds: what a comparison of two models sees;
    SHARED_SEED — different recipes, one seed: models that started from the same random draw
    (``train_model`` seeds the embedding initialisation), so their agreement is not only the models'.
    Two runs of one recipe and one seed are one model twice and are left out.
    Columns: a, b, pair, overlap (mean over queries), per_query (the list of overlaps).
    """
    labels = list(tops)
    rows = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            pair = pair_kind(recipes[a], seeds[a], recipes[b], seeds[b])
            if pair is None:
                continue
            per_query = [overlap_at_k(x[:k], y[:k]) for x, y in zip(tops[a], tops[b])]
            rows.append({"a": a, "b": b, "pair": pair, "overlap": float(np.mean(per_query)), "per_query": per_query})
    return pd.DataFrame(rows, columns=["a", "b", "pair", "overlap", "per_query"])


def seed_noise_verdict(pairs: pd.DataFrame, k: int, confidence: float = 0.95) -> dict:
    """Do different models disagree on the top k more than one model trained with two seeds?

    Per query q: D_q = mean overlap@k of the DIFFERENT pairs, S_q = that of the SAME pairs; the
    difference S_q − D_q with its Student-t interval over queries (> 0: models disagree more than
    one model's seeds do). Returns the means, the interval, the numbers of pairs and queries, and
    a sentence (which also gives the SHARED_SEED pairs' overlap where there are some).
    """
    kinds = set(pairs["pair"])
    for needed in (SAME, DIFFERENT):
        if needed not in kinds:
            raise ValueError(f"the seed-noise comparison needs at least one pair of each kind; no {needed!r} pair")
    per_query = {kind: np.mean(np.stack(part["per_query"].to_numpy()), axis=0) for kind, part in pairs.groupby("pair")}
    diff = per_query[SAME] - per_query[DIFFERENT]
    n, mean = len(diff), float(diff.mean())
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1) * diff.std(ddof=1) / np.sqrt(n)) if n > 1 else np.inf
    low, high = mean - half, mean + half
    same, different = float(per_query[SAME].mean()), float(per_query[DIFFERENT].mean())
    counts = pairs["pair"].value_counts()
    if low > 0:
        verdict = f"different models disagree more than one model trained with two seeds, by {mean:.2f}"
    elif high < 0:
        verdict = f"different models agree more than one model's two seeds do, by {-mean:.2f}"
    else:
        verdict = (
            "different models disagree about as much as one model trained with two seeds (no difference detectable)"
        )
    sentence = (
        f"Over {n} queries, overlap@{k} is {different:.2f} between different models trained with different seeds "
        f"({counts[DIFFERENT]} pairs) and {same:.2f} between two seeds of one recipe ({counts[SAME]} pairs): "
        f"seeds minus models {mean:+.2f} [{low:+.2f}, {high:+.2f}] ({confidence:.0%} t-interval over queries) — "
        f"{verdict}."
    )
    if SHARED_SEED in per_query:
        shared = float(per_query[SHARED_SEED].mean())
        sentence += (
            f" Different models started from one seed agree at {shared:.2f} ({counts[SHARED_SEED]} pairs), "
            f"{'more' if shared > different else 'no more'} than different models started from different seeds."
        )
    return {
        "same": same,
        "different": different,
        "difference": mean,
        "low": low,
        "high": high,
        "queries": n,
        "same_pairs": int(counts[SAME]),
        "different_pairs": int(counts[DIFFERENT]),
        "sentence": sentence,
    }


@dataclass(frozen=True)
class Catalogue:
    """The items a query ranks: their item slots (N, S_I) and one row per item describing it."""

    index: torch.Tensor
    weight: torch.Tensor
    items: pd.DataFrame


def catalogue(*datasets: Dataset) -> Catalogue:
    """Every distinct item of the given datasets (all splits of one encoding), in order of first appearance.

    MovieLens: one item per movie_id — a movie the training split never saw is encoded as the rare
    feature, yet stays its own item — described by title, movie_id, year and all its genres; other
    data: one item per distinct item-slot row, described by its fields' values.
    """
    lay = layout(datasets[0].schema)
    index = torch.cat([d.index[:, lay.item_slots] for d in datasets])
    weight = torch.cat([d.weight[:, lay.item_slots] for d in datasets])
    movies = datasets[0].movies
    if movies is not None and all(d.frame is not None and "movie_id" in d.frame for d in datasets):
        keys = pd.concat([d.frame.movie_id for d in datasets]).to_numpy()
    else:
        keys = index.numpy()
    _, rows = np.unique(keys, axis=0, return_index=True)
    rows = np.sort(rows)
    if keys.ndim == 1:
        ids = keys[rows].astype(int)
        items = movies.set_index("movie_id").reindex(ids)[["title", "year", "genres"]].reset_index()
        items = items[["title", "movie_id", "year", "genres"]]
    else:
        items = _decoded(datasets[0].schema, lay, index[rows])
    return Catalogue(index[torch.as_tensor(rows)], weight[torch.as_tensor(rows)], items)


def _decoded(schema: Schema, lay: Layout, item_index: torch.Tensor) -> pd.DataFrame:
    """Item slots decoded to field values (a multi-valued field: its first value)."""
    item_slot_fields = [schema.slot_fields()[s] for s in lay.item_slots.tolist()]
    table = {}
    for f in lay.item_fields.tolist():
        field = schema.fields[f]
        codes = item_index[:, item_slot_fields.index(f)] - field.offset
        table[field.name] = [field.values[c] if field.values else c for c in codes.tolist()]
    return pd.DataFrame(table)


def context_of(data: Dataset, row: int):
    """The context slots (index, weight) of sample ``row``: one query."""
    lay = layout(data.schema)
    return data.index[row, lay.context_slots], data.weight[row, lay.context_slots]


def user_query(data: Dataset, user_id: int) -> int:
    """The row of ``user_id``'s latest sample in ``data`` (MovieLens): its user and time fields are a query."""
    if data.frame is None or not {"user_id", "timestamp"} <= set(data.frame):
        raise ValueError("user_query needs MovieLens data (user_id and timestamp columns)")
    mine = data.frame[data.frame.user_id == user_id]
    if mine.empty:
        raise ValueError(
            f"user_id {user_id} has no sample here; users range over {sorted(set(data.frame.user_id))[:3]} …"
        )
    return int(mine.timestamp.idxmax())
