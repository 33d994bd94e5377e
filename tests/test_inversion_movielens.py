"""The §5 twist on synthetic sequences: tiny causal transformer + relaxed one-hot recovery."""

import numpy as np
import pandas as pd
import pytest
import torch

from fmlib.inversion.movielens import (
    TinyTransformer,
    attack_users,
    next_movie_loss,
    popularity_guess,
    prepare,
    recover,
    recovery_summary,
    sequences,
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
    assert summary.loc["top-1", "attack"] > 10 * summary.loc["top-1", "chance"]
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
