"""reproduce fmgrad: [FMGrad]'s memoised gradient against autograd and the naive sum, at tiny size."""

import pytest
import torch

from fmlib.cli import main
from fmlib.experiments import fmgrad, scorecard, tables
from fmlib.experiments.claims import measure_all
from fmlib.experiments.verdict import DOES_NOT_HOLD, HOLDS, VERDICTS


def test_the_gradient_formulas_against_autograd():
    gen = torch.Generator().manual_seed(0)
    P = torch.randn(3, 5, generator=gen, dtype=torch.float64)
    X = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    exact = fmgrad.autograd_gradient(P, X)
    assert exact.shape == (4, 3, 5)
    assert torch.allclose(fmgrad.naive_gradient(P, X), exact)
    assert torch.allclose(fmgrad.memoised_gradient(P, X), exact)
    printed = fmgrad.memoised_gradient(P, X, coefficient=2.0)
    assert torch.allclose(printed - exact, -P[None] * (X * X)[:, None, :])  # the slip: one P_ij X_j² too many
    assert fmgrad.fmlib_error(fields=4, rank=3, seed=0) < fmgrad.TOLERANCE


def test_tiny_experiment_table_and_claims(tmp_path, capsys):
    code = main(["reproduce", "fmgrad", "--seeds", "2", "--fields", "3,5", "--batch", "8", "--calls", "1"]
                + ["--out", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "saved:" in out
    frame, header = tables.read(tmp_path / fmgrad.table_name(), columns=fmgrad.COLUMNS)
    assert header["command"].startswith("python -m fmlib reproduce fmgrad --seeds 2 --fields 3,5")
    assert sorted(set(zip(frame["fields"], frame["seed"]))) == [(3, 0), (3, 1), (5, 0), (5, 1)]
    rows = measure_all(*fmgrad.claims(frame)).set_index("claim")
    verdicts = list(rows["verdict"])
    assert verdicts[:3] == [DOES_NOT_HOLD, HOLDS, HOLDS]  # printed eq. 8, corrected eq. 8, fmlib's backward
    assert len(rows) == 5 and set(verdicts[3:]) <= set(VERDICTS)  # speed-up at d = 3 and d = 5: measured
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    assert list(card["paper"]) == ["FMGrad"] * 5 and card["page"].iloc[0].startswith("Derivations")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--fields", "1,12"], "--fields: every d must be >= 2"),
        (["--seeds", "0"], "--seeds: must be > 0"),
        (["--batch", "x"], "--batch: expected an integer"),
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(capsys, args, message):
    code = main(["reproduce", "fmgrad", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
