"""reproduce inversion: [AttnInv]'s success and agreement rates vs γ, with Wilson intervals."""

import pandas as pd
import pytest

from fmlib.cli import main
from fmlib.experiments import inversion, scorecard, tables
from fmlib.experiments.claims import measure_all
from fmlib.experiments.verdict import DOES_NOT_HOLD, HOLDS, UNDECIDED


def fake_table(success_near: bool) -> pd.DataFrame:
    """40 instances, γ = 0 and the bound: at the bound starts agree and recovery fails."""
    rows = []
    for kind in ("random", "near"):
        for regulariser, gamma in (("0", 0.0), (inversion.BOUND, 1e9)):
            for seed in range(40):
                at_bound = regulariser == inversion.BOUND
                success = (kind == "near" and success_near) if at_bound else seed % 2 == 0
                rows.append(
                    dict(seed=seed, model="newton", rank=0, n=4, d=3, gamma=gamma, regulariser=regulariser,
                         start_kind=kind, rel_error=0.0 if success else 1.0, success=int(success),
                         agree=int(at_bound or seed < 20))
                )  # fmt: skip
    return pd.DataFrame(rows, columns=inversion.COLUMNS)


def test_claims_from_a_small_table():
    rows = measure_all(*inversion.claims(fake_table(success_near=True)))
    assert list(rows["verdict"]) == [HOLDS, DOES_NOT_HOLD, HOLDS]
    assert list(rows["seeds"]) == [40, 40, 40]
    assert rows["measured"][1].startswith("success rate 0.00 [0.00, 0.09], 40 instances")
    rates = inversion.rates(fake_table(success_near=False)).set_index(["start_kind", "regulariser"])
    assert rates.loc[("random", "0"), "success_rate"] == 0.5 and rates.loc[("random", "0"), "agree_rate"] == 0.5
    assert rates.loc[("random", "0"), "success_rate_low"] < 0.5 < rates.loc[("random", "0"), "success_rate_high"]
    few = fake_table(True)
    few = few[few["seed"] < 2]  # 2 of 2 decide nothing; 0 of 2 already refute a rate of 0.9
    assert list(measure_all(*inversion.claims(few))["verdict"]) == [UNDECIDED, DOES_NOT_HOLD, UNDECIDED]


def test_tiny_experiment(tmp_path, capsys):
    code = main(["reproduce", "inversion", "--instances", "2", "--n", "2", "--d", "2", "--steps", "3"]
                + ["--out", str(tmp_path)])  # fmt: skip
    assert code == 0 and "saved:" in capsys.readouterr().out
    frame, header = tables.read(tmp_path / inversion.table_name(), columns=inversion.COLUMNS)
    assert (
        header["command"] == f"python -m fmlib reproduce inversion --instances 2 --n 2 --d 2 --steps 3 --out {tmp_path}"
    )
    assert len(frame) == 2 * 2 * (len(inversion.GAMMAS) + 1)  # start kinds × instances × γ
    assert inversion.BOUND in set(frame["regulariser"])
    card = scorecard.scorecard("ml-100k", "rating", tmp_path, tmp_path / "none")
    assert list(card["paper"]) == ["AttnInv"] * 3 and card["page"].iloc[0].startswith("Attention inversion")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "20", "--d", "20"], "n·d = 400 > 300"),
        (["--instances", "0"], "--instances: must be > 0"),
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(capsys, args, message):
    code = main(["reproduce", "inversion", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
