"""The evaluation metrics against naive formulas on small arrays: RMSE, MAE, logloss, AUC."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from fmlib.data.dataset import Dataset
from fmlib.train import auc, evaluate


class FixedScores(nn.Module):
    """A 'model' that returns a given score for sample i (its index column holds i)."""

    def __init__(self, scores):
        super().__init__()
        self.scores = nn.Parameter(torch.as_tensor(scores, dtype=torch.float32), requires_grad=False)

    def forward(self, index, weight):
        return self.scores[index[:, 0]]


def dataset(ratings, rating_range=(1.0, 5.0)):
    n = len(ratings)
    return Dataset(
        schema=None,
        index=torch.arange(n).unsqueeze(1),
        weight=torch.ones(n, 1),
        rating=torch.as_tensor(ratings, dtype=torch.float32),
        rating_range=rating_range,
    )


def naive_auc(y, score):
    """P(score of a positive > score of a negative), ties counted ½, over all pairs."""
    pos = [s for t, s in zip(y, score) if t == 1]
    neg = [s for t, s in zip(y, score) if t == 0]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_rmse_and_mae_by_hand():
    """Errors (−1, 0, −2, 1): RMSE = √(6/4), not the MSE 6/4; MAE = 4/4. Scores clipped to [1, 5]."""
    metrics = evaluate(FixedScores([1.0, 2.0, 3.0, 7.0]), dataset([2.0, 2.0, 5.0, 4.0]), "rating")
    assert metrics["rmse"] == pytest.approx(math.sqrt(6 / 4))  # the 7 counts as 5: error 1, not 3
    assert metrics["mae"] == pytest.approx(1.0)


def test_rmse_and_mae_against_numpy_on_random_arrays():
    rng = np.random.default_rng(0)
    for _ in range(5):
        y = rng.integers(1, 6, size=30).astype(float)
        score = rng.normal(3, 2, size=30)
        metrics = evaluate(FixedScores(score), dataset(y), "rating")
        err = np.clip(score.astype(np.float32), 1, 5) - y
        assert metrics["rmse"] == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-6)
        assert metrics["mae"] == pytest.approx(np.mean(np.abs(err)), rel=1e-6)


def test_logloss_and_auc_by_hand():
    """Clicks are ratings ≥ 4. Logits 0 give logloss log 2; AUC counts ordered pairs."""
    ratings = [5.0, 1.0, 4.0, 2.0]  # clicks 1, 0, 1, 0
    flat = evaluate(FixedScores([0.0, 0.0, 0.0, 0.0]), dataset(ratings), "click")
    assert flat["logloss"] == pytest.approx(math.log(2))
    assert flat["auc"] == pytest.approx(0.5)  # all ties
    # scores 2, −1, −1.5, 0: positives (2, −1.5) against negatives (−1, 0): 2 wins twice, −1.5 loses twice
    metrics = evaluate(FixedScores([2.0, -1.0, -1.5, 0.0]), dataset(ratings), "click")
    assert metrics["auc"] == pytest.approx(2 / 4)
    p = 1 / (1 + np.exp(-np.array([2.0, -1.0, -1.5, 0.0])))
    y = np.array([1, 0, 1, 0])
    assert metrics["logloss"] == pytest.approx(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)), rel=1e-6)


def test_auc_against_the_pair_count_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(10):
        y = rng.integers(0, 2, size=25)
        score = rng.integers(0, 6, size=25).astype(float)  # many ties
        assert auc(y, score) == pytest.approx(naive_auc(y, score))
    assert auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.3, 0.4])) == 1.0
    assert auc(np.array([1, 1, 0, 0]), np.array([0.1, 0.2, 0.3, 0.4])) == 0.0
    assert math.isnan(auc(np.array([1, 1]), np.array([0.1, 0.2])))  # one class only
