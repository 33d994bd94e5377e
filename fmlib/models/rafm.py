"""Rank-aware factorization machine (RaFM, Chen et al. 2019).

Paper: [RaFM]. Names from the paper:

* ranks D_1 < … < D_m; feature i has the rank index k_i from its train occurrences n_i (eq. 17,
  ``fmlib.models.rafm_ranks.assign_ranks``) and keeps the embeddings v_i^(1), …, v_i^(k_i) (eq. 3).
* a pair interacts at rank k_ij = min(k_i, k_j) (eqs. 4, 5):
      ŷ = w0 + Σ_i w_i x_i + Σ_{i<j} v_i^(k_ij) · v_j^(k_ij) x_i x_j              (eq. 1 with eq. 4)
* F_k = {i : k_i ≥ k} (eq. 6). Only the *active* factors v^(p)|F_p are stored (Prop. 1):
  Σ_p D_p |F_p| numbers, against D_m |F| for the FM of rank D_m.
* A_{l,k} = Σ_{i<j ∈ F_k} v_i^(l) · v_j^(l) x_i x_j, computed by Rendle's identity (eq. 7).
  The model is B_{1,m}, evaluated by Theorem 3, B_{l,k+1} = B_{l,k} − A_{k,k+1} + A_{k+1,k+1},
  from B_{1,1} = A_{1,1}:   B_{1,p} = Σ_{q≤p} A_{q,q} − Σ_{q<p} A_{q,q+1}   (Cor. 4).
  Evaluation (``predict``) reads only the levels a sample touches, Corollary 4's O(Σ_k D_k |F_k|)
  per sample. Training (``_terms``) reads every A it needs from one gather of one table whose
  columns are the levels, zero rows for inactive factors: a sample reads Σ_p D_p numbers a field
  at every level, more than Corollary 4's count where many features are rare, but in one gather
  and one scatter instead of one per level and consistency pair, which is what a step's time
  follows on a CPU (``python -m fmlib bench train`` times it against a plain PyTorch FM).

**Fields and multi-valued fields.** As in the foundation's FM, pairs are taken between fields
(values of one field never interact with each other) and x_i is the slot weight: 1 for a
single-valued field, 1/len for each value of a multi-valued field (genres). Every genre value
keeps its own rank k_i: the genres field's embedding at level (l, k) is
e_f^(l,k) = Σ_{values i of f in F_k} x_i v_i^(l) — the values outside F_k are left out (zero
rows), the others keep their usual weight 1/len (not re-normalised). Then
A_{l,k} = ½(‖Σ_f e_f‖² − Σ_f ‖e_f‖²) is exactly eq. 7 restricted to cross-field pairs, the pair
(genre g, user u) uses rank min(k_g, k_u), and with all k_i equal the model is the foundation's
FM (averaged genres).

**Relation blocks** (``rated``, ``raters``; [Rendle2013]) follow the same rule: member j of a
sample's set has x_j = 1/√|set| and its own rank index k_j from its count n_j, the number of
training samples whose set holds it; the block's embedding at level (l, k) sums its members in
F_k, once per key (user or movie) and step, read by key (``base.gather_fields``).

**Training (Algorithm 1).** Variables v^(p)|F_p − F_{p+1} (p < m) and v^(m)|F_m are *free*: they
step on L(B_{1,m}, y). Variables v^(p)|F_{p+1} (p < m) are *dependent*: they step on
L(B_{1,p}, B_{1,p+1}) with B_{1,p+1} held fixed (eq. 12b; Algorithm 1, line 5). Free and
dependent variables are separate parameters (``free[p]``, ``dependent[p]``). In training mode
``loss`` computes B_{1,m} with the dependent variables cut from the graph, and the consistency
pairs (B_{1,p} with only v^(p)|F_{p+1} in the graph, B_{1,p+1} cut), and adds
c · Σ_p L(B_{1,p}, B_{1,p+1}) to L(B_{1,m}, y). One backward pass then gives every group exactly
the gradient Algorithm 1 names; nothing is left on the module between batches.

**Counts.** k_i follows from the training counts n_i (eq. 17), which are data, not settings:
``prepare(train)`` takes them from the training split (``set_counts`` takes them directly) and
keeps them in the buffer ``counts``, saved with the weights; the level tables, whose sizes follow
from k_i, are made then. A run saved by an older fmlib kept the counts in its settings
(``from_settings`` reads them). The linear weights and w0 are free variables. c is
the ratio ρ_d/ρ_f for plain SGD; with Adam, which normalises each parameter's step, it only sets
the pull of the consistency term against L2.

**Where Algorithm 1 as printed loses: rare × frequent pairs.** A pair of a rare feature i (k_i = p)
and a frequent one j (k_j > p) interacts through v_j^(p), a dependent variable. On such a sample
B_{1,p} and B_{1,p+1} agree (the pair is at rank D_p in both), so the consistency residual is zero
and the sample moves v_j^(p) not at all: the frequent feature's low-rank copy is fitted only to the
frequent × frequent pairs, as their best rank-D_p summary (eq. 12b), never to the ratings it shares
with rare features. When the D_p directions the rare features interact through are not that
summary's — planted data whose frequent embeddings are alike in every direction
(``synthetic.planted_ranks``, ``tail = 1``) — every rare × frequent pair is predicted through the
wrong subspace, and RaFM trails FM(D_m) although its rank assumption holds by construction (the
planted comparison, ``python -m fmlib reproduce rafm --dataset planted-ranks``, measures it). The
authors' TF code (github.com/cxsmarkchan/RaFM, ``RaFM.py``) uses the same stop-gradients but lets
L(B_{1,m}, y) reach the dependent variables too: ``dependent_fits_target=True`` does the same, and
then c is a real trade-off between fitting the ratings and agreeing with the level above (their
``dependent_lr_coef``). The default follows Algorithm 1 as printed.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .base import FieldRead, FieldSum, LaidOutModel, gather_fields
from .contract import FeatureTable, ModelError
from .fm import fm_pairwise
from .rafm_ranks import assign_ranks, check_counts, check_ranks, check_thresholds, feature_set_sizes


class ColumnPairs(torch.autograd.Function):
    """(B, fields, C) field embeddings -> (B, C): ½((Σ_f e_fc)² − Σ_f e_fc²) for every column c, Rendle's
    identity (eq. 7) before its sum over the columns, with the memoised backward pass of ``fm.FMFunction``,
    ∂/∂e_fc = Z_c − e_fc with Z = Σ_f e_f ([FMGrad] eq. 8, coefficient corrected)."""

    @staticmethod
    def forward(ctx, e):
        Z = e.sum(1)
        ctx.save_for_backward(e, Z)
        return 0.5 * (Z.pow(2) - e.pow(2).sum(1))

    @staticmethod
    def backward(ctx, grad):
        e, Z = ctx.saved_tensors
        return (Z.unsqueeze(1) - e).mul_(grad.unsqueeze(1))


class RaFM(LaidOutModel):
    """RaFM over the shared field schema: ``forward(index, weight) -> (B,)`` scores.

    ``ranks``: D_1 < … < D_m; ``consistency``: c of the consistency terms (``loss``); ``thresholds``:
    count cut-points t_1 < … < t_{m−1} instead of eq. 17's (``rafm_ranks.assign_ranks``);
    ``dependent_fits_target``: L(B_{1,m}, y) also reaches the dependent variables, as in the authors'
    code (default: only the consistency term, Algorithm 1). The occurrences n_i come from
    ``prepare(train)`` (or ``set_counts``) before the model can score.
    """

    def __init__(
        self,
        schema,
        ranks=(8, 32),
        consistency: float = 1.0,
        init_std: float = 0.01,
        thresholds=None,
        dependent_fits_target: bool = False,
    ):
        super().__init__()
        self.ranks = check_ranks(ranks)
        self.thresholds = check_thresholds(thresholds, self.ranks)
        if not consistency >= 0:
            raise ValueError(f"consistency must be >= 0, got {consistency}")
        self.schema, self.consistency, self.init_std = schema, float(consistency), init_std
        self.dependent_fits_target = bool(dependent_fits_target)
        n = schema.num_features
        self.bias = nn.Parameter(torch.zeros(1))
        self.linear = nn.Embedding(n, 1)
        nn.init.zeros_(self.linear.weight)
        # level p = 0..m-1 below is the paper's p+1: free[p] holds v^(p+1) on F_{p+1} − F_{p+2}
        # (rows with k_i = p+1; all of F_m at the top), dependent[p] holds v^(p+1) on F_{p+2}.
        self.free, self.dependent = nn.ParameterList(), nn.ParameterList()
        self.register_buffer("counts", torch.zeros(0, dtype=torch.long))  # n_i, saved with the weights
        self.keep_layout(schema)  # the fields' slots and the blocks' sets, for ``gather_fields``

    @classmethod
    def from_settings(cls, schema, counts=None, **hp) -> RaFM:
        """``build_model``'s reader: settings saved by an older fmlib held the counts n_i (a list)."""
        model = super().from_settings(schema, **hp)
        return model if counts is None else model.set_counts(counts)

    def prepare(self, train) -> None:
        """k_i from the training split's counts n_i (eq. 17): ``set_counts(train.feature_counts())``."""
        self.set_counts(train.feature_counts())

    def set_counts(self, counts) -> RaFM:
        """Take the occurrences n_i of every feature row, assign k_i (eq. 17, or the cut-points) and
        make the level tables, freshly initialised; returns the model."""
        counts = torch.as_tensor(check_counts(counts, self.schema.num_features))
        m, n = len(self.ranks), self.schema.num_features
        k = assign_ranks(counts.numpy(), self.ranks, self.thresholds)  # k_i ∈ 1..m
        device = self.linear.weight.device
        self.counts = counts.to(device)
        self.register_buffer("k", torch.as_tensor(k, device=device), persistent=False)
        self.free, self.dependent = nn.ParameterList(), nn.ParameterList()
        positions = []
        for p, D in enumerate(self.ranks):
            free_rows = np.flatnonzero(k == p + 1)
            dep_rows = np.flatnonzero(k > p + 1)  # empty at the top level
            self.free.append(nn.Parameter(torch.randn(len(free_rows), D, device=device) * self.init_std))
            if p < m - 1:
                self.dependent.append(nn.Parameter(torch.randn(len(dep_rows), D, device=device) * self.init_std))
            # row i -> its row in the level table [free; dependent]; -1 for i ∉ F_{p+1} (no row)
            pos = torch.full((n,), -1, dtype=torch.long)
            pos[torch.as_tensor(free_rows, dtype=torch.long)] = torch.arange(len(free_rows))
            pos[torch.as_tensor(dep_rows, dtype=torch.long)] = len(free_rows) + torch.arange(len(dep_rows))
            positions.append(pos)
        self.register_buffer("level_pos", torch.stack(positions).to(device), persistent=False)  # (m, n)
        # 1(k_i = p) for p = 1..m−1: which lower level a feature's pairs use (``predict``)
        at_level = torch.as_tensor(k[:, None] == np.arange(1, m), device=device)
        self.register_buffer("at_level", at_level, persistent=False)
        self._tables = {}
        return self

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Saved weights bring their counts: the level tables are made for them before they load. A
        run saved by an older fmlib has no ``counts`` entry; its counts came with the settings."""
        key = prefix + "counts"
        if key in state_dict and not torch.equal(state_dict[key].cpu(), self.counts.cpu()):
            self.set_counts(state_dict[key].cpu())
        elif key not in state_dict and len(self.counts):
            state_dict[key] = self.counts
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _check_prepared(self) -> None:
        if not len(self.counts):
            raise ModelError(
                "RaFM needs the occurrences n_i of every feature in the training split (eq. 17): "
                "call model.prepare(split.train) before training or scoring"
            )

    def field_tables(self) -> list[tuple[torch.Tensor, torch.Tensor, bool]]:
        """(table, feature row of each of its rows, linear?) of the linear weights w and of every
        level's free and dependent tables, for the trainer's grouped L2 (``fmlib.train.row_decay``):
        a feature's L2 strength is its field's at every level, as FM's is on its one table."""
        self._check_prepared()
        k = self.k.cpu()
        tables = [(self.linear.weight, torch.arange(len(k)), True)]
        for p in range(len(self.ranks)):
            tables.append((self.free[p], torch.nonzero(k == p + 1).squeeze(1), False))
            if p < len(self.ranks) - 1:
                tables.append((self.dependent[p], torch.nonzero(k > p + 1).squeeze(1), False))
        return tables

    def feature_table(self) -> FeatureTable | None:
        """v_i^(1), the level-1 embeddings, the only level every feature has ([RaFM] eq. 6: F_1 holds
        every feature), and w_i; None before ``prepare``."""
        if not len(self.counts):
            return None
        return FeatureTable(self.level_table(0)[self.level_pos[0]], self.linear.weight[:, 0])

    # ---- storage -------------------------------------------------------------------------
    def feature_set_sizes(self) -> list[int]:
        """|F_p| for p = 1..m (eq. 6)."""
        return feature_set_sizes(self.k.numpy(), len(self.ranks)).tolist()

    def level_table(self, p: int, cut: str | None = None) -> torch.Tensor:
        """[v^(p+1) on F_{p+1} − F_{p+2} (free); v^(p+1) on F_{p+2} (dependent)], p 0-based: only
        active factors. ``cut`` = "free" or "dependent" detaches that group (Algorithm 1's routing)."""
        free = self.free[p].detach() if cut == "free" else self.free[p]
        if p == len(self.ranks) - 1:
            return free
        return torch.cat([free, self.dependent[p].detach() if cut == "dependent" else self.dependent[p]])

    def embedding_table(self, p: int, cut: str | None = None) -> torch.Tensor:
        """v^(p) for every feature row as an (n, D_p) matrix, zero rows for inactive factors
        (i ∉ F_p); p is 1-based as in the paper, ``cut`` as in ``level_table``. Differentiable: the
        training's table (``_terms``), tests and analyses."""
        active = torch.nonzero(self.k >= p).squeeze(1)
        table = self.level_table(p - 1, cut)
        rows = table[self.level_pos[p - 1, active]]
        return table.new_zeros(len(self.k), self.ranks[p - 1]).index_put((active,), rows)

    # ---- evaluation (Theorem 3) ---------------------------------------------------------------
    def first_order(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """w0 + Σ_i w_i x_i (RaFM eq. 1, first two terms), shape (B,)."""
        return self.bias + FieldSum.apply(self.linear.weight, index, weight, self.layout).sum((1, 2))

    def _terms(self, index: torch.Tensor, weight: torch.Tensor, cut: str | None = None, pairs: bool = False):
        """([A_{p,p}], [A_{p,p+1}], [A_{p,p} of the consistency pairs]), p = 1..m (the last two p < m),
        each (B,), from one gather of the table [v^(1) … v^(m) | v^(p) on F_{p+1}, p < m | v^(p) with
        only its dependent rows in the graph, p < m (``pairs``)]: every A is Rendle's identity (eq. 7)
        summed over its columns (``ColumnPairs``). ``cut`` detaches the free or dependent rows of the
        first two groups (``level_table``)."""
        m = len(self.ranks)
        levels = [self.embedding_table(p, cut) for p in range(1, m + 1)]
        upper = [levels[p] * (self.k >= p + 2).unsqueeze(1) for p in range(m - 1)]  # v^(p+1) on F_{p+2}
        own = [self.embedding_table(p, "free") for p in range(1, m)] if pairs else []
        parts = [*levels, *upper, *own]
        e = FieldSum.apply(torch.cat(parts, 1), index, weight, self.layout)  # (B, fields, columns)
        A = [h.sum(1) for h in ColumnPairs.apply(e).split([t.shape[1] for t in parts], 1)]
        return A[:m], A[m : 2 * m - 1], A[2 * m - 1 :]

    def interactions(self, index: torch.Tensor, weight: torch.Tensor) -> list[torch.Tensor]:
        """[B_{1,1}, …, B_{1,m}] by Theorem 3; B_{1,m} is the RaFM's second-order term."""
        diagonal, upper, _ = self._terms(index, weight)
        B = [diagonal[0]]
        for p in range(len(self.ranks) - 1):
            B.append(B[-1] - upper[p] + diagonal[p + 1])  # Theorem 3
        return B

    def outputs(self, index: torch.Tensor, weight: torch.Tensor) -> list[torch.Tensor]:
        """Scores w0 + Σ w_i x_i + B_{1,p} for p = 1..m: p = m is RaFM, p = 1 is "RaFM-low"."""
        first = self.first_order(index, weight)
        return [first + B for B in self.interactions(index, weight)]

    def _fused_tables(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``predict``'s tables, written straight from the stored factors: [v^(m) | w | 1(k_i = p), p < m]
        (n, D_m + m) and, for each level p < m, [v^(p) | v^(p) on F_{p+1}] (n, 2 D_p); zero rows
        and columns for inactive factors; kept between evaluation calls (``KeptTables``)."""
        return self._kept("fused", self._build_fused_tables)

    def _build_fused_tables(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        m, D, n = len(self.ranks), self.ranks[-1], len(self.k)
        top = self.free[-1].new_zeros(n, D + m)
        top[self.k == m, :D] = self.free[-1]  # F_m is the top level's free rows, in row order
        top[:, D] = self.linear.weight[:, 0]
        top[:, D + 1 :] = self.at_level
        lows = []
        for p in range(m - 1):  # 0-based level p: [free; dependent], the dependent rows being F_{p+2}
            level, Dp = self.level_table(p), self.ranks[p]
            stacked = level.new_zeros(len(level) + 1, 2 * Dp)  # a last zero row for i ∉ F_{p+1}
            stacked[: len(level), :Dp] = level
            stacked[len(self.free[p]) : len(level), Dp:] = self.dependent[p]
            pos = self.level_pos[p]
            lows.append(stacked.index_select(0, torch.where(pos < 0, len(level), pos)))
        return top, lows

    def predict(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """The RaFM score w0 + Σ w_i x_i + B_{1,m} with the levels fused (evaluation).

        By Theorem 3, B_{1,m} = A_{m,m} + Σ_{p<m} (A_{p,p} − A_{p,p+1}), and A_{p,p} − A_{p,p+1}
        sums the pairs in F_p that are not both in F_{p+1}: it is zero for a sample without a
        feature of rank index exactly p. So one gather of the table [v^(m) | w | 1(k_i = p), p < m]
        (zero rows for i ∉ F_m) gives every sample's A_{m,m}, its first-order term and the levels
        it touches; level p < m is read, from [v^(p) | v^(p) on F_{p+1}], only for the samples
        that touch it. On MovieLens 100K with ranks (8, 32), 99.5 % of the slots are in F_2, and
        about one sample in sixteen touches level 1. The tables (n rows, ``_fused_tables``) are
        kept between calls while the parameters do not change."""
        m, layout = len(self.ranks), self.layout
        table, lows = self._fused_tables()
        read = FieldRead.of(index, weight, layout, table.dtype)  # the slots, read once for every level
        fields = gather_fields(table, read, layout)  # (B, m fields, D_m + 1 + (m − 1))
        D, sums = self.ranks[-1], fields.sum(1)  # [Σ_f e_f | Σ_i w_i x_i | features at each level p < m]
        A = 0.5 * (sums[:, :D].pow(2).sum(1) - fields[..., :D].pow(2).sum((1, 2)))  # A_{m,m} (eq. 7)
        score = self.bias + sums[:, D] + A
        touched = sums[:, D + 1 :] > 0  # (B, m − 1): has a feature with k_i = p
        for p in range(1, m):
            rows = touched[:, p - 1].nonzero().squeeze(1)
            if len(rows):
                e = gather_fields(lows[p - 1], read.take(rows), layout)
                D = self.ranks[p - 1]
                score.index_add_(0, rows, fm_pairwise(e[..., :D]) - fm_pairwise(e[..., D:]))
        return score

    def _dense_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``predict_dense``'s table [v^(m) | w | v^(1) | v^(1) on F_2 | … | v^(m−1) | v^(m−1) on F_m]
        (n, D_m + 1 + Σ_{p<m} 2 D_p) and the sign of every column in B_{1,m} (Cor. 4): +1 for
        v^(m) and v^(p), −1 for v^(p) on F_{p+1}, 0 for w."""

        def build():
            top, lows = self._fused_tables()
            D = self.ranks[-1]
            signs = [top.new_ones(D), top.new_zeros(1)]
            for Dp in self.ranks[:-1]:
                signs += [top.new_ones(Dp), -top.new_ones(Dp)]
            return torch.cat([top[:, : D + 1], *lows], 1), torch.cat(signs)

        return self._kept("dense", build)

    def predict_dense(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """``predict`` for a GPU: the same score, every level read for every sample.

        Theorem 3 as one sum over the columns of ``_dense_table``: B_{1,m} = A_{m,m} +
        Σ_{p<m} (A_{p,p} − A_{p,p+1}) (Cor. 4), and each A is Rendle's identity per column,
        ½((Σ_f e_f)² − Σ_f e_f²), so B_{1,m} = ½ Σ_c sign_c ((Σ_f e_fc)² − Σ_f e_fc²) from one
        gather of the table. It reads 2 D_p columns of level p for every slot (for (8, 32):
        49 columns against the FM's 33) instead of ``predict``'s Corollary 4 cost, but takes no
        sample-dependent branch: on a GPU, where small kernels cost their launch and choosing
        the samples that touch a level waits for the device, that is the faster trade."""
        table, signs = self._dense_table()
        fields = gather_fields(table, FieldRead.of(index, weight, self.layout, table.dtype), self.layout)
        sums, squares = fields.sum(1), fields.pow(2).sum(1)  # (B, columns): Σ_f e_fc and Σ_f e_fc²
        D = self.ranks[-1]
        return self.bias + sums[:, D] + 0.5 * (sums.pow(2) - squares) @ signs

    def forward(self, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """w0 + Σ_i w_i x_i + B_{1,m}: fused levels in evaluation (``predict``, ``predict_dense``),
        Theorem 3 level by level in training (Algorithm 1's routing of the gradient, ``scores``)."""
        self._check_prepared()
        if not self.training:
            return self.predict_dense(index, weight) if index.is_cuda else self.predict(index, weight)
        return self.scores(index, weight, pairs=False)[0]

    def scores(self, index: torch.Tensor, weight: torch.Tensor, pairs: bool = True) -> tuple[torch.Tensor, list]:
        """(B_{1,m} score with the dependent variables cut, Algorithm 1's consistency pairs): for each
        p < m, B_{1,p} with only the dependent v^(p)|F_{p+1} in the graph and B_{1,p+1} held fixed
        (Algorithm 1, line 5); no pairs when ``pairs`` is False."""
        # main output: B_{1,m}; Algorithm 1 cuts the dependent variables (they do not step on L(B_{1,m}, y))
        cut = None if self.dependent_fits_target else "dependent"
        first = self.first_order(index, weight)
        diagonal, upper, own = self._terms(index, weight, cut, pairs)
        # loop index p is 0-based: level p is the paper's p+1; on entry before = first + B_{1,p+1} − A_{p+1,p+1}
        found, before = [], first
        for p in range(len(self.ranks) - 1):
            if pairs:  # B_{1,p+1} with only the dependent v^(p+1)|F_{p+2} in the graph
                low = before.detach() + own[p]
            before = before + diagonal[p] - upper[p]  # Theorem 3, first half
            if pairs:
                found.append((low, (before + diagonal[p + 1]).detach()))  # B_{1,p+2}, held fixed
        return before + diagonal[-1], found

    def loss(self, index, weight, target, criterion) -> torch.Tensor:
        """L(B_{1,m}, y) + c · Σ_{p<m} L(B_{1,p}, B_{1,p+1}) (eq. 12b; Algorithm 1, line 5), with L the
        task's loss: squared error for ratings; for clicks the logistic loss of the low-rank logit
        against the probability σ(B_{1,p+1}) (a soft label)."""
        self._check_prepared()
        score, pairs = self.scores(index, weight)
        soft = isinstance(criterion, nn.BCEWithLogitsLoss)
        consistency = sum(criterion(low, torch.sigmoid(high) if soft else high) for low, high in pairs)
        return criterion(score, target) + self.consistency * consistency
