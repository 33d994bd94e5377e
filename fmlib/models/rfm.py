"""Rotative factorization machine (RFM): features as angles, interactions as rotations.

Paper: [RFM], theory appendix §1.2.
The appendix gives one self-attentive rotation layer on field angles Q, K, V (m×h each):

    ① = Re[(exp(iQ) diag(w)) exp(−iK)ᵀ]                                   (§1.2, "Remark ①")
      = cos Q diag(w) cos Kᵀ + sin Q diag(w) sin Kᵀ                        (§1.2, Euler's formula)
    G = σ(①) · V,        y = f(cos G) + f(sin G)                           (§1.2, first display)

Entry (i, l) of ① is Σ_c w_c cos(q_ic − k_lc): query i and key l are unit complex numbers
e^{iq}, e^{ik}; their agreement is the cosine of the angle between them, weighted by w.
So an interaction is a *rotation* (adding angles), never a product of feature values.

The rest of the model follows the authors' public implementation (RUCAIBox/RFM, a RecBole
plug-in); each choice made here:

* **Angles.** The field embeddings θ ∈ ℝ^{m×k} of the shared table (``FieldEmbeddingModel``)
  are used directly as angles; a multi-valued field (genres) averages its values' angles.
* **Rotation layer** (``RotationLayer``). Per-field projections W_Q, W_K, W_V ∈ ℝ^{m×k×h}
  (q_f = θ_f W_Q[f]: every field has its own map), split into ``heads`` heads of
  h/heads angles. Score = σ(cos q diag(w) cos kᵀ + sin q diag(w) sin kᵀ) — a sigmoid, not a
  softmax, so a field may attend to many fields at once or to none; one w (h/heads numbers)
  is shared by all heads. Output = score · V per head, heads concatenated, then
  LayerNorm(out + W_res · dropout(θ)). ``layers`` such layers are stacked (1–3 in the
  authors' grid). W_Q, W_K, W_V start Xavier-normal and w at 1/(h/heads), so the initial
  logits lie in [−1, 1].
* **Readout.** r = cos(G), p = sin(G). With ``residual=True`` the first-order residual of the
  authors' code is added: r ← LN(r + cos(P θ₀)), p ← LN(p + sin(P θ₀)), θ₀ the input angles
  and P a linear map ℝ^k → ℝ^h (one LayerNorm shared by r and p). r and p are stacked and go
  through the LayerNorm and AmpNet in one pass (both act on each sample alone: the same numbers).
* **AmpNet** f: one small MLP shared by r and p — Linear(m·h → a) → ReLU → group LayerNorm
  (``nn.GroupNorm``: LayerNorm inside each of ``groups`` groups of the a units) → Linear(a → 1).
  Interaction term = f(r) + f(p), the appendix's y = f(cos G) + f(sin G).
* **Score.** score = w0 + Σ_i w_i x_i + f(r) + f(p): the base class's first-order term is
  kept, as in RecBole's context-aware models, so the global mean (ratings ≈ 3.5) and
  per-feature biases are learned directly; the last AmpNet Linear therefore has no bias
  (w0 is the only intercept). The model only returns the score: the trainer uses MSE on it
  for ratings and BCE-with-logits for clicks.
* **Defaults** come from the authors' grid (embedding 16, hidden 16–80, 1–3 layers,
  dropout 0–0.4): embedding 16, hidden 32 in 2 heads, 1 layer, AmpNet width 64, dropout 0.4 —
  the best validation RMSE among the few settings tried on MovieLens 100K (split seed 0) that
  train in about a minute on 2 CPU cores (a second layer roughly doubles the training time).
  Embeddings start at N(0, 0.1²) rather than the base class's N(0, 0.01²) — the better mean
  validation RMSE over 3 training seeds there; with tiny angles every rotation starts near
  the identity.
* **Speed against size.** An RFM epoch costs far more than an FM epoch: per sample it runs a
  rotation layer (three per-field projections, cos/sin, two m×m products per head) and an MLP on
  m·h numbers, where FM runs one O(mk) identity. ``python -m fmlib bench train`` counts the
  multiply-adds of a training step's matrix products and the floor they set at the rate of a large
  float32 product. Measured on a 2-core AMD EPYC (1 thread, batch 1024, the 12 MovieLens 100K
  fields; CPU seconds per epoch as a multiple of FM's 0.055–0.062 s, the smaller sizes with their
  best trials' dropout 0; floor at 56.8 G multiply-adds/s; best validation RMSE on split 0 of a study over lr, L2, dropout and weight
  averaging with the sizes fixed):

      embedding / hidden (heads) / AmpNet   mult-adds/row   floor × FM   measured × FM   best valid RMSE (trials)
      16 / 32 (2) / 64   (the defaults)          282 152      7.1–7.4          29–35       0.9076 (42: the rfm preset)
      16 / 16 (1) / 16                            86 024          2.2           14.6       0.9189 (20)
       8 /  8 (1) / 16                            31 560          0.8           11.0       0.9287 (20)
      (the tuned FM(8) preset: 0.9073)

  The matrix products alone keep the defaults above 3 × FM; the sizes whose floor is below it
  validate 0.011–0.021 worse than the defaults and than FM, so the defaults stay. Tried and not
  kept: the first layer's Q, K, V and P θ₀ projected on the table rows (2 782) instead of the
  (sample, field) pairs (12 288 per batch), exact by linearity — about 5 % less CPU per epoch,
  most of the saving taken back by the per-row reads, for some hundred more lines.
* **Where an epoch's time goes** (the table above was measured before this).
  The training step's attention is written out forward and backward (``RotationAttention``: cos
  and sin once, every elementwise step on contiguous memory, two layout copies each way) and
  AmpNet's group LayerNorm computed as a LayerNorm per group (``AmpNet``): the same numbers
  (tests/test_rfm_speed_equivalence.py holds a frozen statement of the math), about 10 % less CPU
  per training step on the 2-core EPYC under load (9 of the 10 from the attention). The floor stays far off, for a reason in the products themselves: with the data not in
  cache, MKL runs this model's shapes at a fraction of its rate on a large product —
  the per-field projections (12 × 1024 × 16 by 16 × 32 or × 64, and their backward) at about
  10 G multiply-adds/s, AmpNet's 2048 × 384 by 384 × 64 at about 18 G, the per-(sample, head)
  12 × 12 products of the attention at about 6 G, against 38 G on 1024 × 1024 — so the products
  alone take about 3 × the floor, before cos and sin (3 M per step), dropout's random draws
  (about 2.8 ms per step: on this CPU torch draws them one at a time, a serial kernel), the
  LayerNorms and about 320 KiB of memory read and written per training row. Tried and not kept:
  one product for Q, K and V together (the gradient then needs an interleaving copy that costs
  more than the product saves); cos and sin of Q and K side by side ([x, x − π/2] under one cos)
  so that ① is one product of inner size 2c (the interleaving pass costs more than the product
  it saves); the readout's cos and sin and their residual summed in one buffer (no gain
  measured); the batch in chunks of 256 or 512 rows so that each stays in cache (no gain). Not
  tried: ``torch.compile`` (its compile would come before the app's first training, and its
  dropout draws other random numbers than ``nn.Dropout``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .base import FieldEmbeddingModel


def rotation_logits(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """① = Re[(exp(iQ) diag(w)) exp(−iK)ᵀ] in the Euler-expanded real form (RFM appendix §1.2):
    cos Q diag(w) cos Kᵀ + sin Q diag(w) sin Kᵀ.

    q, k: (..., m, h) angles; w: (h,) weights -> (..., m, m).
    """
    return (torch.cos(q) * w) @ torch.cos(k).transpose(-1, -2) + (torch.sin(q) * w) @ torch.sin(k).transpose(-1, -2)


def rotation_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Attention scores σ(①) of a self-attentive rotation layer (RFM appendix §1.2)."""
    return torch.sigmoid(rotation_logits(q, k, w))


def cos_sin(x: torch.Tensor) -> torch.Tensor:
    """[cos x, sin x] stacked on a new first axis: the unit complex number e^{ix} (RFM appendix
    §1.2), on contiguous memory, where the CPU's vector units apply (strided cos and sin are
    several times slower)."""
    x = x.contiguous()
    out = x.new_empty(2, *x.shape)
    torch.cos(x, out=out[0])
    torch.sin(x, out=out[1])
    return out


class CosSin(torch.autograd.Function):
    """``cos_sin`` whose backward pass reuses cos and sin (d cos x = −sin x dx, d sin x = cos x dx)
    instead of evaluating them again."""

    @staticmethod
    def forward(ctx, x):
        out = cos_sin(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        d_cos, d_sin = grad.contiguous()
        return torch.addcmul(d_sin * out[0], d_cos, out[1], value=-1)


class RotationAttention(torch.autograd.Function):
    """The attention of a rotation layer with its residual added, written out forward and backward
    (RFM appendix §1.2): for every sample and head, with Q, K, V the per-field projections of θ,

        ① = cos Q diag(w) cos Kᵀ + sin Q diag(w) sin Kᵀ        (Remark ①, by Euler's formula)
        out = residual + G,   G = σ(①) V                      (heads concatenated)

    θ: (B, m, k), W_Q, W_K, W_V: (m, k, h) per-field maps, w: (c,) with c = h / heads (shared by
    the heads), residual: (B, m, h) -> (B, m, h).

    Why by hand: autograd would keep a zero-filled gradient buffer for every slice of cos and sin
    and evaluate its elementwise steps on strided slices (several times slower on a CPU). Here
    every elementwise step runs on contiguous memory, cos and sin are evaluated once (the backward
    reuses them), and the layout changes are few:

    * the projections are one batched product per field over all samples (Q and K together), so
      they come out field-major, (m, B, h); Q and K are copied once to sample-major (sample, head,
      m, c) blocks for cos and sin; V stays field-major (``bmm`` reads it strided);
    * G is added to the residual straight from its (sample, head) layout: no copy of its own.

    Backward, with dL = ∂/∂① and ∂①_il/∂q_ic = −w_c sin(q_ic − k_lc) = −∂①_il/∂k_lc (the
    appendix's PART II–V), products per (sample, head):

        ∂σ = ∂G Vᵀ,  ∂V = σᵀ ∂G,  dL = ∂σ ⊙ σ (1 − σ)
        ∂Q = cos Q diag(w) ⊙ dL sin K − sin Q diag(w) ⊙ dL cos K
        ∂K = cos K ⊙ dLᵀ (sin Q diag(w)) − sin K ⊙ dLᵀ (cos Q diag(w))
        ∂w = Σ_{samples, heads, fields} (cos Q ⊙ dL cos K + sin Q ⊙ dL sin K)

    then the per-field maps' products (∂W_Q = θᵀ ∂Q per field, ∂θ = Σ ∂Q W_Qᵀ + ...)."""

    @staticmethod
    def forward(ctx, theta, W_Q, W_K, W_V, w, residual):
        B, m, _ = theta.shape
        h, c = W_V.shape[-1], w.numel()
        heads = h // c
        N = B * heads  # (sample, head) pairs
        x = theta.transpose(0, 1)  # (m, B, k): field f's rows are the B samples' θ_f
        qk = torch.bmm(x, torch.cat([W_Q, W_K], 2))  # (m, B, 2h): [θ_f W_Q[f] | θ_f W_K[f]]
        v = torch.bmm(x, W_V)  # (m, B, h) = (m, N, c)
        qk = qk.view(m, B, 2, heads, c).permute(2, 1, 3, 0, 4).reshape(2, N, m, c)  # (Q/K, N, m, c)
        trig = cos_sin(qk)  # (cos/sin, Q/K, N, m, c)
        query = trig[:, 0] * w  # [cos Q diag(w), sin Q diag(w)]
        cos_k, sin_k = trig[0, 1], trig[1, 1]
        logits = torch.baddbmm(torch.bmm(query[0], cos_k.transpose(1, 2)), query[1], sin_k.transpose(1, 2))
        scores = torch.sigmoid(logits)  # σ(①), (N, m, m)
        G = torch.bmm(scores, v.view(m, N, c).transpose(0, 1))  # σ(①) V, (N, m, c)
        out = torch.empty_like(residual)
        torch.add(residual.view(B, m, heads, c), G.view(B, heads, m, c).transpose(1, 2), out=out.view(B, m, heads, c))
        ctx.save_for_backward(theta, W_Q, W_K, W_V, v, trig, query, scores)
        return out

    @staticmethod
    def backward(ctx, d_out):
        theta, W_Q, W_K, W_V, v, trig, query, scores = ctx.saved_tensors
        B, m, _ = theta.shape
        h, c = W_V.shape[-1], trig.shape[-1]
        heads = h // c
        N = B * heads
        dG = d_out.view(B, m, heads, c).transpose(1, 2).reshape(N, m, c)
        v = v.view(m, N, c).transpose(0, 1)
        d_scores = torch.bmm(dG, v.transpose(1, 2))
        dV = torch.bmm(scores.transpose(1, 2), dG)
        d_logits = torch.ops.aten.sigmoid_backward(d_scores, scores)  # ∂σ ⊙ σ (1 − σ), one pass
        cos_k, sin_k = trig[0, 1], trig[1, 1]
        at_q = torch.empty_like(query)  # [dL cos K, dL sin K]
        torch.bmm(d_logits, cos_k, out=at_q[0])
        torch.bmm(d_logits, sin_k, out=at_q[1])
        d_logits_t = d_logits.transpose(1, 2)
        at_k_cos, at_k_sin = torch.bmm(d_logits_t, query[0]), torch.bmm(d_logits_t, query[1])
        d_q = torch.addcmul(query[0] * at_q[1], query[1], at_q[0], value=-1)
        d_k = torch.addcmul(cos_k * at_k_sin, sin_k, at_k_cos, value=-1)
        d_w = (trig[:, 0] * at_q).sum((0, 1, 2))
        xt = theta.permute(1, 2, 0)  # (m, k, B)
        d_maps, d_x = [], None
        for i, (d, W) in enumerate(((d_q, W_Q), (d_k, W_K), (dV, W_V)), start=1):
            d = d.transpose(0, 1).reshape(m, B, h)  # back to field-major
            d_maps.append(torch.bmm(xt, d) if ctx.needs_input_grad[i] else None)
            if ctx.needs_input_grad[0]:  # ∂θ_f = Σ ∂Q_f W_Q[f]ᵀ + ∂K_f W_K[f]ᵀ + ∂V_f W_V[f]ᵀ
                d_x = torch.bmm(d, W.transpose(1, 2)) if d_x is None else torch.baddbmm(d_x, d, W.transpose(1, 2))
        return None if d_x is None else d_x.transpose(0, 1), *d_maps, d_w, d_out


class RotationLayer(nn.Module):
    """One self-attentive rotation layer: (B, m, k) angles -> (B, m, h) angles,
    LayerNorm(σ(①) V + W_res · dropout(θ)) with heads concatenated (RFM appendix §1.2;
    ``RotationAttention`` computes the attention and adds the residual)."""

    def __init__(self, num_fields: int, in_dim: int, hidden: int, heads: int, dropout: float):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden={hidden} must be a multiple of heads={heads}")
        self.heads = heads
        self.W_Q = nn.Parameter(torch.empty(num_fields, in_dim, hidden))
        self.W_K = nn.Parameter(torch.empty(num_fields, in_dim, hidden))
        self.W_V = nn.Parameter(torch.empty(num_fields, in_dim, hidden))
        for W in (self.W_Q, self.W_K, self.W_V):
            nn.init.xavier_normal_(W)
        head_dim = hidden // heads
        self.w = nn.Parameter(torch.full((head_dim,), 1.0 / head_dim))  # diag(w), shared by heads
        self.W_res = nn.Linear(in_dim, hidden, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, theta: torch.Tensor) -> torch.Tensor:
        residual = self.W_res(self.dropout(theta))
        return self.norm(RotationAttention.apply(theta, self.W_Q, self.W_K, self.W_V, self.w, residual))


class AmpNet(nn.Module):
    """f: Linear -> ReLU -> group LayerNorm -> Linear to a scalar, (B, m, h) -> (B,).

    The group LayerNorm is ``nn.GroupNorm``'s (its parameters, its numbers), computed as a
    LayerNorm over each group's units followed by the per-unit scale and shift: the same
    arithmetic, about a third of ``group_norm``'s time forward and backward on a CPU at these
    sizes (its kernel is slow for small groups)."""

    def __init__(self, in_features: int, hidden: int, groups: int):
        super().__init__()
        if hidden % groups:
            raise ValueError(f"mlp_hidden={hidden} must be a multiple of groups={groups}")
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(), nn.GroupNorm(groups, hidden), nn.Linear(hidden, 1, bias=False)
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        first, relu, norm, last = self.net
        a = relu(first(z.flatten(1)))  # (rows, units)
        rows, units = a.shape
        a = F.layer_norm(a.view(rows, norm.num_groups, -1), (units // norm.num_groups,), eps=norm.eps)
        return last(torch.addcmul(norm.bias, a.view(rows, units), norm.weight)).squeeze(-1)


class RFM(FieldEmbeddingModel):
    """Rotative FM; see the module docstring for every design choice."""

    def __init__(
        self,
        schema,
        dim: int = 16,
        hidden: int = 32,
        heads: int = 2,
        layers: int = 1,
        dropout: float = 0.4,
        mlp_hidden: int = 64,
        groups: int = 4,
        residual: bool = True,
        init_std: float = 0.1,
    ):
        super().__init__(schema, dim, init_std)
        if not 1 <= layers <= 3:
            raise ValueError(f"layers must be in 1..3 (the authors' grid), got {layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if hidden < 1 or heads < 1 or mlp_hidden < 1 or groups < 1:
            raise ValueError("hidden, heads, mlp_hidden and groups must be >= 1")
        m = schema.num_fields
        self.hidden, self.heads, self.layers, self.dropout = hidden, heads, layers, dropout
        self.mlp_hidden, self.groups = mlp_hidden, groups
        self.rotations = nn.ModuleList(
            RotationLayer(m, dim if i == 0 else hidden, hidden, heads, dropout) for i in range(layers)
        )
        if residual:
            self.P = nn.Linear(dim, hidden, bias=False)
            self.residual_norm = nn.LayerNorm(hidden)
        self.residual = residual
        self.f = AmpNet(m * hidden, mlp_hidden, groups)

    def pairwise(self, e: torch.Tensor) -> torch.Tensor:
        """Interaction term f(cos G) + f(sin G) (RFM appendix §1.2), (B, m, k) -> (B,).

        Named ``pairwise`` to fit the base-class contract; rotations mix all orders, not pairs.
        """
        G = e
        for layer in self.rotations:
            G = layer(G)
        rp = CosSin.apply(G)  # r = cos G, p = sin G, stacked: (2, B, m, h)
        if self.residual:  # LN(r + cos(P θ₀)), LN(p + sin(P θ₀)): one LayerNorm, shared
            rp = self.residual_norm(rp + CosSin.apply(self.P(e)))
        return self.f(rp.flatten(0, 1)).view(2, -1).sum(0)  # f(r) + f(p), one pass of f
