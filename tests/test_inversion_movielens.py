"""The §5 twist on synthetic sequences: tiny causal transformer + relaxed one-hot recovery."""

import numpy as np
import pandas as pd
import pytest
import torch

from fmlib.inversion.movielens import (
    Recovery,
    TinyTransformer,
    attack_users,
    baseline_verdict,
    hits,
    next_movie_loss,
    popularity_guess,
    prepare,
    recover,
    recovery_summary,
    sequences,
    training_gap,
    trajectory_table,
)


def successor_ratings(users=240, movies=30, length=8, seed=0):
    """Each user starts at a random movie s and then rates s+1, s+2, … (mod movies), in time order;
    rows are shuffled so only the timestamps carry the order."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(users):
        s = rng.integers(movies)
        t0 = rng.integers(10**8)
        rows += [(u + 1, (s + k) % movies + 1, 4.0, t0 + 60 * k) for k in range(length)]
    frame = pd.DataFrame(rows, columns=["user_id", "movie_id", "rating", "timestamp"])
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.fixture(scope="module")
def experiment():
    return prepare(successor_ratings(), None, length=8, vocab_size=30, heldout=0.25, epochs=40, seed=0)


def test_sequences_follow_rating_time():
    frame = successor_ratings(users=5, movies=30, length=8)
    seqs = sequences(frame, length=6, vocab_size=30)
    assert seqs.tokens.shape == (5, 6)
    ids = seqs.movie_ids[seqs.tokens.numpy()]
    assert ((np.diff(ids, axis=1) % 30) == 1).all()  # consecutive movies, as rated
    with pytest.raises(ValueError, match="missing"):
        sequences(frame.drop(columns="timestamp"))
    with pytest.raises(ValueError, match="no user has"):
        sequences(frame, length=50)


def test_model_is_small_and_every_parameter_gets_gradient():
    model = TinyTransformer(vocab=30, length=8)
    assert 1_000 < sum(p.numel() for p in model.parameters()) < 10_000
    tokens = torch.randint(0, 30, (4, 8))
    next_movie_loss(model, tokens).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_causal_mask_hides_the_future():
    model = TinyTransformer(vocab=30, length=8).eval()
    a = torch.randint(0, 30, (1, 8))
    b = a.clone()
    b[0, 5:] = (b[0, 5:] + 1) % 30
    la, lb = model(model.one_hot(a)), model(model.one_hot(b))
    torch.testing.assert_close(la[:, :6], lb[:, :6])  # outputs up to movie 5 see only movies < 5
    assert not torch.allclose(la[:, 6:], lb[:, 6:])


def test_training_loss_falls(experiment):
    assert experiment.losses[-1] < 0.5 * experiment.losses[0]


def test_recovery_beats_chance_and_popularity(experiment):
    rows = experiment.heldout_rows
    tokens = experiment.seqs.tokens[rows]
    rec = recover(experiment.model, tokens, hidden=2, steps=150, lr=0.1, seed=0)
    ranking = popularity_guess(experiment.seqs.tokens[experiment.train_rows], 2, 30)
    summary = recovery_summary(rec, tokens, ranking).set_index("metric")
    assert summary.loc["top-1", "chance"] == pytest.approx(1 / 30)
    assert summary.loc["top-1", "attack"] > 5 * summary.loc["top-1", "chance"]  # exactly 10× here
    assert summary.loc["top-1", "attack"] > 3 * summary.loc["top-1", "popularity"]
    table = trajectory_table(rec, tokens, 0, experiment.titles)
    assert table["step"].iloc[0] == "0" and table["step"].iloc[-1] == "truth"
    assert table["recovered hidden movies"].str.contains("movie").all()


def test_recover_rejects_bad_hidden(experiment):
    with pytest.raises(ValueError, match="hidden must be between"):
        recover(experiment.model, experiment.seqs.tokens[:3], hidden=8)


def test_attack_users_attacks_training_and_heldout_users_alike(experiment):
    attacked = attack_users(experiment, users=5, steps=20)
    assert list(attacked) == ["training users", "held-out users"]
    ranking = popularity_guess(experiment.seqs.tokens[experiment.train_rows], 2, 30)
    for done, rows in zip(attacked.values(), (experiment.train_rows, experiment.heldout_rows)):
        tokens = experiment.seqs.tokens[rows[:5]]
        assert torch.equal(done.tokens, tokens)
        alone = recover(experiment.model, tokens, hidden=2, steps=20, seed=0)
        pd.testing.assert_frame_equal(done.summary, recovery_summary(alone, tokens, ranking))


def test_trajectory_table_has_one_type_per_column_so_arrow_converts_it():
    import pyarrow as pa

    from fmlib.inversion.movielens import Recovery

    guesses = pd.DataFrame(
        {"step": [0, 0, 50, 50], "user_row": 0, "position": [0, 1, 0, 1], "guess": [3, 1, 2, 1], "loss": 0.5}
    )
    recovery = Recovery(logits=torch.zeros(1, 4, 5), guesses=guesses, hidden=2)
    table = trajectory_table(recovery, torch.tensor([[2, 1, 4, 0]]), 0, list("abcde"))
    assert table["step"].tolist() == ["0", "50", "truth"]
    assert table["recovered hidden movies"].iloc[1] == "✔ c | ✔ b"
    pa.Table.from_pandas(table)  # raised ArrowTypeError on the mixed int/str step column


def test_popularity_guess_ranks_movies_by_how_often_training_users_hold_them_at_each_position():
    train = torch.tensor([[2, 0, 5], [2, 1, 5], [3, 1, 4], [2, 4, 4], [3, 1, 0]])
    ranking = popularity_guess(train, hidden=2, vocab=6)
    assert ranking.shape == (2, 6)
    assert ranking[0, :2].tolist() == [2, 3]  # first movies: 2 three times, 3 twice
    assert ranking[1, :3].tolist() == [1, 0, 4]  # second movies: 1 three times, then 0 and 4 once (lower index first)
    assert ranking[0].sort().values.tolist() == list(range(6))  # every movie ranked once
    with pytest.raises(ValueError, match="hidden <= length"):
        popularity_guess(train, hidden=4, vocab=6)


def planted_recovery(guesses, hidden=2, vocab=12):
    """A Recovery whose logits put ``guesses[u][p]`` first at user u, position p (the rest in index order)."""
    logits = -torch.arange(vocab, dtype=torch.float).repeat(len(guesses), hidden, 1)
    for u, row in enumerate(guesses):
        for p, g in enumerate(row):
            logits[u, p, g] = 10.0
    return Recovery(logits, pd.DataFrame(), hidden)


def test_the_summary_counts_hits_by_hand_and_the_verdict_names_the_winner():
    # four users, two hidden movies each; popularity guesses movie 2 first, then 1 (position 0) / 1, then 0 (position 1)
    tokens = torch.tensor([[2, 1, 5], [2, 1, 5], [3, 1, 4], [2, 4, 4]])
    ranking = popularity_guess(torch.tensor([[2, 1, 0], [2, 1, 0], [1, 0, 0]]), 2, 12)
    rec = planted_recovery([[5, 5], [5, 5], [3, 5], [5, 4]])  # the attack's first guesses: 1 of 8 + 1 of 8 right
    attack, popular = hits(rec, tokens, ranking, 1)
    assert attack.tolist() == [[False, False], [False, False], [True, False], [False, True]]
    assert popular.tolist() == [[True, True], [True, True], [False, True], [True, False]]
    summary = recovery_summary(rec, tokens, ranking).set_index("metric")
    top1 = summary.loc["top-1"]
    assert top1["attack"] == 2 / 8 and top1["popularity"] == 6 / 8 and top1["chance"] == 1 / 12
    lead = [-1.0, -1.0, 0.0, 0.0]  # per user: (attack − popularity) hits / 2
    assert top1["lead"] == pytest.approx(np.mean(lead))
    half = 3.182446305284263 * np.std(lead, ddof=1) / 2  # t(0.975, 3) · s / √4
    assert top1["lead_low"] == pytest.approx(np.mean(lead) - half) and top1["lead_high"] == pytest.approx(
        np.mean(lead) + half
    )
    verdict = baseline_verdict(summary.reset_index())
    assert "top-1: attack 25.0%, popularity guess 75.0%, chance 8.3%" in verdict
    assert "top-1" in verdict and "over 4 users" in verdict
    assert ("guessing popular movies beats the attack" in verdict) == (top1["lead_high"] < 0)
    assert ("no difference from the popularity guess is detectable" in verdict) == (top1["lead_high"] >= 0)


def test_the_verdict_follows_the_interval_of_the_lead():
    row = {"metric": "top-10", "attack": 0.4, "popularity": 0.6, "chance": 0.05, "hidden_movies": 400, "users": 200}
    lose = pd.DataFrame([{**row, "lead": -0.2, "lead_low": -0.25, "lead_high": -0.15}])
    win = pd.DataFrame([{**row, "attack": 0.7, "lead": 0.1, "lead_low": 0.05, "lead_high": 0.15}])
    tie = pd.DataFrame([{**row, "lead": -0.02, "lead_low": -0.06, "lead_high": 0.02}])
    assert "guessing popular movies beats the attack (-20.0 points [-25.0, -15.0])" in baseline_verdict(lose)
    assert "the attack beats the popularity guess (+10.0 points [+5.0, +15.0])" in baseline_verdict(win)
    assert "no difference from the popularity guess is detectable" in baseline_verdict(tie)
    assert "the attack is above chance" in baseline_verdict(lose)


def test_training_gap_compares_training_and_heldout_users():
    row = {"chance": 0.05, "hidden_movies": 400, "users": 200, "lead": 0.0, "lead_low": 0.0, "lead_high": 0.0}
    trained = pd.DataFrame([{**row, "metric": "top-10", "attack": 0.44, "popularity": 0.62}])
    heldout = pd.DataFrame([{**row, "metric": "top-10", "attack": 0.31, "popularity": 0.63}])
    text = training_gap(trained, heldout)
    assert "top-10 44.0% of training users' hidden movies against 31.0% of held-out users'" in text
    assert "(popularity guess 62.0% and 63.0%)" in text and "leaks from training" in text
    assert "no sign of a leak" in training_gap(heldout, trained)
