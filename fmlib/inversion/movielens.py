"""The paper's §5 experiment on MovieLens: recover the hidden first movies of a user's sequence
from a trained causal transformer ([AttnInv] §5.1, App. J).

Data: each user's rated movies ordered by rating time (ties broken by a seeded random key, so
the order inside one second carries no signal), restricted to the ``vocab_size`` most-rated
movies, first ``length`` of them. A tiny causal transformer (a few thousand parameters) learns
next-movie prediction.

Attack (§5.1): the first m movies S₁ are hidden, the rest S₂ is known. Free logits X⁰ ~ N(0, 1)
∈ ℝ^{m×N} give the relaxed one-hot S₁ᵗ = softmax(Xᵗ); the model F maps S = [S₁ᵗ; S₂] to row-wise
next-movie distributions, and Adam minimises the cross-entropy
    L(F(Sᵗ), Sᵗ) = Σ_{i=1}^{n−1} Σ_j −S^t_{i+1,j} · log F(Sᵗ)_{i,j}.
The recovered movie at a hidden position is argmax of its logits (top-10: the 10 largest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.stats import t as student_t
from torch import nn
from torch.nn import functional as F

from ..optim import Adam
from .attack import one_thread


@dataclass
class Sequences:
    tokens: torch.Tensor  # (U, length) vocabulary indices, in rating-time order
    users: np.ndarray  # (U,) user_id of each row
    movie_ids: np.ndarray  # (N,) movie_id of each vocabulary index (most-rated first)


def sequences(ratings: pd.DataFrame, length: int = 12, vocab_size: int = 200, seed: int = 0) -> Sequences:
    """Per user, the first ``length`` of their rated movies among the ``vocab_size`` most-rated,
    ordered by timestamp. Users with fewer such movies are left out."""
    missing = {"user_id", "movie_id", "timestamp"} - set(ratings.columns)
    if missing:
        raise ValueError(f"ratings need columns user_id, movie_id, timestamp; missing {sorted(missing)}")
    if length < 2 or vocab_size < 2:
        raise ValueError(f"length and vocab_size must be >= 2, got {length}, {vocab_size}")
    counts = ratings["movie_id"].value_counts(sort=False)
    popular = counts.sort_values(ascending=False, kind="stable").index[:vocab_size].to_numpy()
    index = pd.Series(np.arange(len(popular)), index=popular)
    kept = ratings[ratings["movie_id"].isin(popular)].copy()
    kept["tie"] = np.random.default_rng(seed).random(len(kept))
    kept = kept.sort_values(["user_id", "timestamp", "tie"], kind="stable")
    kept["position"] = kept.groupby("user_id").cumcount()
    kept = kept[kept["position"] < length]
    full = kept.groupby("user_id")["position"].transform("size") == length
    kept = kept[full]
    users = kept["user_id"].unique()
    if len(users) == 0:
        raise ValueError(f"no user has {length} ratings among the {vocab_size} most-rated movies")
    tokens = index.loc[kept["movie_id"].to_numpy()].to_numpy().reshape(len(users), length)
    return Sequences(torch.tensor(tokens, dtype=torch.long), users, popular)


class TinyTransformer(nn.Module):
    """A causal transformer over movie sequences; input rows are distributions over movies.

    Every sequence starts with a start token (index ``vocab``), so the model also learns which
    movies users rate first; inputs have vocab + 1 columns, outputs score the vocab movies.
    A one-hot row is an ordinary token; a softmax row (the attack's relaxed one-hot, §5.1)
    embeds as the probability-weighted average of movie embeddings. Output embedding tied to the
    input one. Attention: softmax(QKᵀ/√k) V per head — Def. 3.1's f with W = KQᵀ (plus scaling).
    """

    def __init__(self, vocab: int, length: int, dim: int = 16, heads: int = 2, layers: int = 1, ff: int = 32):
        super().__init__()
        self.vocab = vocab
        self.embedding = nn.Parameter(torch.randn(vocab + 1, dim) * 0.1)  # last row: start token
        self.position = nn.Parameter(torch.randn(length + 1, dim) * 0.1)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ff, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.out_bias = nn.Parameter(torch.zeros(vocab))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length + 1))

    def forward(self, probs: torch.Tensor) -> torch.Tensor:
        """(B, n, N+1) rows of distributions over [movies, start] → (B, n, N) next-movie logits."""
        n = probs.shape[1]
        h = probs @ self.embedding + self.position[:n]
        for block in self.blocks:
            h = block(h, src_mask=self.mask[:n, :n], is_causal=True)
        return self.norm(h) @ self.embedding[: self.vocab].T + self.out_bias

    def one_hot(self, tokens: torch.Tensor) -> torch.Tensor:
        """Start token, then the one-hot rows of the movies: (B, L) → (B, L+1, N+1)."""
        start = torch.full((tokens.shape[0], 1), self.vocab, dtype=torch.long)
        return F.one_hot(torch.cat([start, tokens], dim=1), self.vocab + 1).float()


def next_movie_loss(model: TinyTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of predicting every movie of the sequence from the ones before it."""
    logits = model(model.one_hot(tokens))[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))


def train_model(
    tokens: torch.Tensor,
    vocab: int,
    epochs: int = 60,
    lr: float = 1e-2,
    batch_size: int = 64,
    seed: int = 0,
    progress=None,
    **arch,
) -> tuple[TinyTransformer, list]:
    """Fit next-movie prediction with Adam; returns the model and the mean loss of each epoch."""
    torch.manual_seed(seed)
    model = TinyTransformer(vocab, tokens.shape[1], **arch)
    opt = Adam([{"params": model.parameters()}], lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    with one_thread():
        for epoch in range(epochs):
            order = torch.randperm(len(tokens), generator=gen)
            total = 0.0
            for start in range(0, len(tokens), batch_size):
                batch = tokens[order[start : start + batch_size]]
                loss = next_movie_loss(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(batch)
            losses.append(total / len(tokens))
            if progress is not None:
                progress(epoch + 1, epochs, losses[-1])
    model.eval()
    return model, losses


@dataclass
class Recovery:
    logits: torch.Tensor  # (U, m, N) final free logits X^T
    guesses: pd.DataFrame  # step, user_row, position, guess (argmax index), loss of that user
    hidden: int


def recover(
    model: TinyTransformer,
    tokens: torch.Tensor,
    hidden: int = 2,
    steps: int = 300,
    lr: float = 0.1,
    seed: int = 0,
    record_every: int = 25,
) -> Recovery:
    """Recover tokens[:, :hidden] from the model and tokens[:, hidden:] (§5.1), all users at once.

    Adam on free logits (App. J uses lr 1e-3 over 10 000 steps; here a larger lr, fewer steps).
    Every ``record_every`` steps (and at 0 and the end) the current argmax guesses are recorded.
    """
    U, n = tokens.shape
    if not 1 <= hidden < n:
        raise ValueError(f"hidden must be between 1 and {n - 1}, got {hidden}")
    trainable = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():  # only X moves; the model's weights are what the attacker knows
        p.requires_grad_(False)
    try:
        rows = model.one_hot(tokens)
        start, known = rows[:, :1], rows[:, 1 + hidden :]  # the start token and S₂
        gen = torch.Generator().manual_seed(seed)
        X = torch.randn(U, hidden, model.vocab, generator=gen).requires_grad_(True)  # X⁰ ~ N(0, 1)
        opt = Adam([{"params": [X]}], lr=lr)
        no_start = torch.zeros(U, hidden, 1)
        frames = []
        with one_thread():
            for t in range(steps + 1):
                S1 = torch.cat([torch.softmax(X, dim=-1), no_start], dim=-1)  # S₁ᵗ = softmax(Xᵗ)
                S = torch.cat([start, S1, known], dim=1)  # Sᵗ = [start; S₁ᵗ; S₂]
                log_probs = torch.log_softmax(model(S), dim=-1)  # log F(Sᵗ)
                per_user = -(S[:, 1:, :-1] * log_probs[:, :-1]).sum(dim=(1, 2))  # L(F(Sᵗ), Sᵗ)
                if t % record_every == 0 or t == steps:
                    guess = X.detach().argmax(dim=-1)
                    frames.append(
                        pd.DataFrame(
                            {
                                "step": t,
                                "user_row": np.repeat(np.arange(U), hidden),
                                "position": np.tile(np.arange(hidden), U),
                                "guess": guess.reshape(-1).numpy(),
                                "loss": np.repeat(per_user.detach().numpy(), hidden),
                            }
                        )
                    )
                if t == steps:
                    break
                opt.zero_grad()
                per_user.sum().backward()
                opt.step()
    finally:
        for p, flag in zip(model.parameters(), trainable):
            p.requires_grad_(flag)
    return Recovery(X.detach(), pd.concat(frames, ignore_index=True), hidden)


def popularity_guess(train_tokens: torch.Tensor, hidden: int, vocab: int) -> torch.Tensor:
    """Baseline without the model's inversion: guess the most popular movies. Per hidden position
    p, every movie ranked by how many training sequences hold it at position p (ties: the lower
    index, i.e. the more-rated movie, first). (hidden, vocab) ranking; its first k columns are the guess."""
    if train_tokens.ndim != 2 or not 1 <= hidden <= train_tokens.shape[1]:
        raise ValueError(
            f"need (users, length) training tokens and 1 <= hidden <= length, got {tuple(train_tokens.shape)}, {hidden}"
        )
    counts = torch.stack([torch.bincount(train_tokens[:, p], minlength=vocab) for p in range(hidden)])
    return counts.float().argsort(dim=1, descending=True, stable=True)


def hits(recovery: Recovery, tokens: torch.Tensor, ranking: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(U, m) booleans: whether each hidden movie is among the attack's top k (largest logits) and
    among the popularity guess's top k (``popularity_guess``)."""
    truth = tokens[:, : recovery.hidden]
    attack = (recovery.logits.topk(k, dim=-1).indices == truth[..., None]).any(dim=-1)
    popular = (ranking[None, :, :k] == truth[..., None]).any(dim=-1)
    return attack, popular


def recovery_summary(recovery: Recovery, tokens: torch.Tensor, ranking: torch.Tensor) -> pd.DataFrame:
    """Top-1 and top-10 recovery of the hidden movies: attack, popularity baseline, uniform chance, and
    the attack's lead over the popularity guess: the mean over users of (attack − popularity) hit share
    with its 95 % Student-t interval over users (a user's hidden movies are not independent)."""
    m = recovery.hidden
    vocab = recovery.logits.shape[-1]
    users = len(tokens)
    rows = []
    for k in (1, 10):
        attack, popular = hits(recovery, tokens, ranking, k)
        lead = (attack.double() - popular.double()).mean(dim=1).numpy()  # per user
        mean = float(lead.mean())
        half = float(student_t.ppf(0.975, users - 1) * lead.std(ddof=1) / np.sqrt(users)) if users > 1 else np.inf
        rows.append(
            {
                "metric": f"top-{k}",
                "attack": attack.double().mean().item(),
                "popularity": popular.double().mean().item(),
                "chance": k / vocab,
                "hidden_movies": users * m,
                "users": users,
                "lead": mean,
                "lead_low": mean - half,
                "lead_high": mean + half,
            }
        )
    return pd.DataFrame(rows)


def baseline_verdict(summary: pd.DataFrame) -> str:
    """Which wins, per metric of a ``recovery_summary``: the attack or guessing popular movies (the
    lead's interval above or below 0; otherwise no difference is detectable), and against chance."""
    clauses = []
    for r in summary.itertuples():
        numbers = f"attack {r.attack:.1%}, popularity guess {r.popularity:.1%}, chance {r.chance:.1%}"
        lead = f"{100 * r.lead:+.1f} points [{100 * r.lead_low:+.1f}, {100 * r.lead_high:+.1f}]"
        if r.lead_low > 0:
            winner = f"the attack beats the popularity guess ({lead})"
        elif r.lead_high < 0:
            winner = f"guessing popular movies beats the attack ({lead})"
        else:
            winner = f"no difference from the popularity guess is detectable ({lead})"
        chance = "above" if r.attack > r.chance else "not above"
        clauses.append(f"{r.metric}: {numbers} — {winner}; the attack is {chance} chance")
    users = int(summary["users"].iloc[0])
    return "; ".join(clauses) + f" (attack − popularity, 95 % t-interval over {users} users)."


def training_gap(trained: pd.DataFrame, heldout: pd.DataFrame) -> str:
    """Training users against held-out users (never trained on), from their ``recovery_summary`` tables:
    the attack's hit rates side by side, per metric, and the popularity guess's for scale."""
    parts = [
        f"{a.metric} {a.attack:.1%} of training users' hidden movies against {h.attack:.1%} of held-out users' "
        f"(popularity guess {a.popularity:.1%} and {h.popularity:.1%})"
        for a, h in zip(trained.itertuples(), heldout.itertuples())
    ]
    lead = trained.set_index("metric")["attack"] - heldout.set_index("metric")["attack"]
    if (lead > 0).all():
        meaning = (
            "the attack does better on the users the model was trained on: that gap, not the hit rate itself, "
            "is what leaks from training"
        )
    else:
        meaning = "the attack does no better on the users the model was trained on at every k: no sign of a leak"
    return "The attack recovers " + "; ".join(parts) + f" — {meaning}."


def trajectory_table(recovery: Recovery, tokens: torch.Tensor, row: int, titles: list) -> pd.DataFrame:
    """The paper's Table 1 for one user: guessed titles of the hidden movies at recorded steps.

    titles[i] is the title of vocabulary index i.
    """
    g = recovery.guesses[recovery.guesses["user_row"] == row]
    out = []
    for step, part in g.groupby("step", sort=True):
        guesses = part.sort_values("position")["guess"].tolist()
        hits = [gi == tokens[row, p].item() for p, gi in enumerate(guesses)]
        out.append(
            {
                "step": str(step),  # one type per column: the last row's step is "truth"
                "recovered hidden movies": " | ".join(
                    (f"✔ {titles[gi]}" if hit else titles[gi]) for gi, hit in zip(guesses, hits)
                ),
                "loss": round(float(part["loss"].iloc[0]), 3),
            }
        )
    truth = " | ".join(titles[t] for t in tokens[row, : recovery.hidden].tolist())
    out.append({"step": "truth", "recovered hidden movies": truth, "loss": float("nan")})
    return pd.DataFrame(out)


@dataclass
class Experiment:
    seqs: Sequences
    train_rows: np.ndarray
    heldout_rows: np.ndarray
    model: TinyTransformer
    losses: list
    titles: list


def prepare(
    ratings: pd.DataFrame,
    movies: pd.DataFrame | None = None,
    length: int = 12,
    vocab_size: int = 200,
    heldout: float = 0.2,
    epochs: int = 60,
    seed: int = 0,
    progress=None,
    **arch,
) -> Experiment:
    """Build sequences, hold out a fraction of users (never trained on), train the model."""
    if not 0 <= heldout < 1:
        raise ValueError(f"heldout (the fraction of users never trained on) must be in [0, 1), got {heldout}")
    seqs = sequences(ratings, length, vocab_size, seed)
    order = np.random.default_rng(seed).permutation(len(seqs.users))
    cut = int(round(len(order) * (1 - heldout)))
    train_rows, heldout_rows = np.sort(order[:cut]), np.sort(order[cut:])
    model, losses = train_model(
        seqs.tokens[train_rows], len(seqs.movie_ids), epochs=epochs, seed=seed, progress=progress, **arch
    )
    if movies is not None:
        title = movies.set_index("movie_id")["title"]
        titles = [str(title.get(m, m)) for m in seqs.movie_ids]
    else:
        titles = [f"movie {m}" for m in seqs.movie_ids]
    return Experiment(seqs, train_rows, heldout_rows, model, losses, titles)


@dataclass
class UserAttack:
    tokens: torch.Tensor  # (U, length) the attacked users' sequences
    recovery: Recovery
    summary: pd.DataFrame  # recovery_summary: attack vs popularity vs chance


def attack_users(exp: Experiment, users: int, steps: int = 300, hidden: int = 2, seed: int = 0) -> dict:
    """§5.1's attack on the first ``users`` training users and the first ``users`` held-out users
    (never trained on), each against the popularity baseline of the training sequences:
    {"training users": UserAttack, "held-out users": UserAttack}."""
    if users < 1:
        raise ValueError(f"users must be >= 1, got {users}")
    ranking = popularity_guess(exp.seqs.tokens[exp.train_rows], hidden, len(exp.titles))
    out = {}
    for label, rows in (("training users", exp.train_rows), ("held-out users", exp.heldout_rows)):
        tokens = exp.seqs.tokens[rows[:users]]
        rec = recover(exp.model, tokens, hidden=hidden, steps=steps, seed=seed)
        out[label] = UserAttack(tokens, rec, recovery_summary(rec, tokens, ranking))
    return out
