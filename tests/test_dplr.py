"""DPLR-FwFM: Proposition 1 against the double sum, eq. 10, parameters, training, CLI input."""

import pytest
import torch

from fmlib.analysis.interactions import align_field_scales, interaction_matrix, offdiag_error
from fmlib.cli import main
from fmlib.data import split, synthetic
from fmlib.models import build_model, hyperparameters
from fmlib.models.dplr import DPLR, dplr_matrix, dplr_pairwise, dplr_upper
from fmlib.models.fwfm import FwFM
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


@pytest.mark.parametrize("m, k, rho", [(5, 3, 1), (9, 4, 2), (12, 8, 5)])
def test_proposition1_equals_the_double_sum(m, k, rho):
    gen = torch.Generator().manual_seed(m)
    V = torch.randn(4, m, k, generator=gen, dtype=torch.float64)
    U = torch.randn(rho, m, generator=gen, dtype=torch.float64)
    e = torch.randn(rho, generator=gen, dtype=torch.float64)
    R = dplr_matrix(U, e)
    expected = torch.stack(
        [sum(V[b, i] @ V[b, j] * R[i, j] for i in range(m) for j in range(i + 1, m)) for b in range(4)]
    )
    assert torch.allclose(dplr_pairwise(V, U, e), expected, atol=1e-10)


def test_implied_R_is_symmetric_with_zero_diagonal_and_low_rank_off_it():
    gen = torch.Generator().manual_seed(1)
    U, e = torch.randn(3, 10, generator=gen, dtype=torch.float64), torch.randn(3, generator=gen, dtype=torch.float64)
    R = dplr_matrix(U, e)
    assert torch.allclose(R, R.T) and R.diagonal().abs().max() < 1e-12
    d = -(e[:, None] * U**2).sum(0)  # eq. 10 by hand
    assert torch.linalg.matrix_rank(R - torch.diag(d)) == 3


def _fwfm_with_the_weights_and_R_of(dplr: DPLR, **hp) -> FwFM:
    """The FwFM with ``dplr``'s embeddings and linear weights, and R = the DPLR's R formed naively (eq. 10)."""
    fwfm = FwFM(dplr.schema, dim=dplr.dim, **hp)
    fwfm.load_state_dict({k: v for k, v in dplr.state_dict().items() if k not in ("U", "e")}, strict=False)
    m = dplr.schema.num_fields
    rows, cols = torch.triu_indices(m, m, 1)
    with torch.no_grad():
        fwfm.r_upper.copy_(dplr.R[rows, cols])
    return fwfm


def _moved_off_the_fm(dplr: DPLR) -> DPLR:
    """``dplr`` with random embeddings, U and e: R away from the FM's 11ᵀ − I it starts at."""
    with torch.no_grad():
        dplr.embedding.weight.normal_()
        dplr.U.normal_()
        dplr.e.normal_()
    return dplr


def test_dplr_equals_an_fwfm_with_its_R(small_split):
    torch.manual_seed(0)
    dplr = _moved_off_the_fm(DPLR(small_split.schema, dim=4, rank=2))
    fwfm = _fwfm_with_the_weights_and_R_of(dplr)
    data = small_split.test
    assert torch.allclose(dplr(data.index, data.weight), fwfm(data.index, data.weight), atol=1e-5)


def test_starts_next_to_the_fm(small_split):
    torch.manual_seed(0)
    model = DPLR(small_split.schema, rank=3)
    R_fm = 1 - torch.eye(small_split.schema.num_fields)
    assert (model.R - R_fm).abs().max() < 0.2


def test_the_pull_toward_the_fm_is_the_fwfms_penalty_on_the_R_of_eq10(small_split):
    """DPLR's extra_loss against the FwFM's, on the FwFM that has the DPLR's R (a naive R from eq. 10)."""
    gen = torch.Generator().manual_seed(3)
    U, e = torch.randn(3, 9, generator=gen, dtype=torch.float64), torch.randn(3, generator=gen, dtype=torch.float64)
    rows, cols = torch.triu_indices(9, 9, 1)
    assert torch.allclose(dplr_upper(U, e), dplr_matrix(U, e)[rows, cols], atol=1e-12)
    dplr = _moved_off_the_fm(DPLR(small_split.schema, dim=4, rank=2, r_l2=0.3))
    fwfm = _fwfm_with_the_weights_and_R_of(dplr, r_l2=0.3)
    assert torch.allclose(dplr.extra_loss(), fwfm.extra_loss(), rtol=1e-5)
    assert DPLR(small_split.schema, rank=2).extra_loss() == 0  # the paper's model: no pull
    dplr.extra_loss().backward()
    assert dplr.U.grad.abs().sum() > 0 and dplr.e.grad.abs().sum() > 0


def test_a_strong_pull_holds_rank_one_at_the_fm_it_starts_from():
    """A DPLR of rank 1 starts at R_FM; λ_R keeps it there, and without it the same training leaves it."""
    R = synthetic.block_R(8, blocks=2)
    data = split(synthetic.make(R, n_samples=3000, cardinality=8, dim=4, noise=0.1, seed=0), seed=0)
    R_fm = 1 - torch.eye(8)
    drift = {}
    for r_l2 in (0.0, 10.0):
        run = train_model("dplr", data, TrainConfig(epochs=10, lr=1e-2, patience=10), dim=4, rank=1, r_l2=r_l2)
        drift[r_l2] = float((run.model.R.detach() - R_fm).abs().max())
    assert drift[10.0] < 0.05 < drift[0.0], drift


def test_bad_r_l2_is_refused(small_split):
    with pytest.raises(ValueError, match="r_l2"):
        DPLR(small_split.schema, rank=2, r_l2=-1.0)


def test_every_parameter_gets_gradient(small_split):
    torch.manual_seed(0)
    model = build_model("dplr", small_split.schema, dim=4, rank=2)
    data = small_split.train
    model(data.index[:64], data.weight[:64]).pow(2).mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    assert {"U", "e"} <= {n for n, _ in model.named_parameters()}


@pytest.mark.parametrize("rank", [0, 6, -1, 2.5])
def test_bad_rank_is_refused(small_split, rank):
    with pytest.raises(ValueError, match=r"rank ρ must be an integer in 1..m−1 = 1..5"):
        DPLR(small_split.schema, rank=rank)


def test_registered_with_rank_hyperparameter(small_split, tmp_path):
    assert hyperparameters("dplr") == {"dim": 16, "rank": 2, "r_l2": 0.0}
    run = train_model("dplr", small_split, TrainConfig(epochs=1), dim=4, rank=3)
    store = RunStore(tmp_path)
    loaded = store.load(store.save(run))
    assert loaded.config["hp"] == {"dim": 4, "rank": 3, "r_l2": 0.0}
    assert torch.equal(loaded.model.R, run.model.R)


def test_recovers_a_planted_block_R():
    """The DPLR bar in small: planted rank-2 block R, DPLR ρ = 2 gets it back (up to field scales)."""
    R = synthetic.block_R(8, blocks=2)
    data = split(synthetic.make(R, n_samples=5000, cardinality=8, dim=4, noise=0.1, seed=0), seed=0)
    run = train_model("dplr", data, TrainConfig(epochs=30, lr=1e-2, patience=3), dim=4, rank=2)
    learned = interaction_matrix(run.model)
    assert offdiag_error(align_field_scales(learned, R.double().numpy()), R.double().numpy()) < 0.1
    assert run.metrics["test"]["rmse"] < 0.2


def test_reproduce_cli_refuses_bad_ranks(capsys):
    assert main(["reproduce", "dplr", "--dataset", "synthetic-16", "--ranks", "0"]) == 2
    assert "--ranks: every value must be >= 1" in capsys.readouterr().err
    assert main(["reproduce", "dplr", "--dataset", "synthetic-16", "--ranks", "2,9"]) == 2
    assert "exceeds the 120 interactions of 16 fields" in capsys.readouterr().err
