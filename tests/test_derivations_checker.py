"""The generic checker and the data model: methods, statuses, limits, timeouts, rejection."""

import json
import time

import pytest
import sympy as sp
from patience import limit

from fmlib.derivations import Check, Derivation, Printed, Step, WrongVariant, cli, run_check
from fmlib.derivations.checker import Side, check_derivations, check_step, weak_checks
from fmlib.derivations.core import sym_matrix
from fmlib.derivations.display import outcome

a, b = sp.symbols("a b", real=True)


def square(sign):
    return lambda n: ((a + b) ** 2, a**2 + sign * 2 * a * b + b**2)


def trace_cyclic(n):
    A, B = sym_matrix("A", n, n), sym_matrix("B", n, n)
    return (A * B).trace(), (B * A).trace()


def trace_wrong(n):
    A, B = sym_matrix("A", n, n), sym_matrix("B", n, n)
    return (A * B).trace(), A.trace() * B.trace()


def step(check, name="s", justification="algebra", **kw):
    return Step(name, "x", justification, "test", check, **kw)


def test_unjustified_step_is_rejected():
    for missing in ("", "   "):
        with pytest.raises(ValueError, match="no justification"):
            step(Check(square(1), "symbolic", size=None), justification=missing)
    with pytest.raises(ValueError, match="no steps"):
        Derivation("empty", "t", "src", (), ())


def test_bad_check_definitions_are_rejected():
    with pytest.raises(ValueError):
        Check(square(1), "guess", size=None)
    with pytest.raises(ValueError):
        Check(square(1), "symbolic", size=3)
    with pytest.raises(ValueError):
        Check(square(1), "numeric", size=2, relation=">=")


def test_symbolic_exact_and_numeric_pass_true_lines():
    symbolic = run_check(Check(square(1), "symbolic", size=None))
    assert symbolic.method == "symbolic" and symbolic.how == "symbolic, for general symbols"
    exact = run_check(Check(trace_cyclic, "exact", size=3))
    assert (exact.status, exact.method, exact.size) == ("passed", "exact", 3)
    assert exact.how == "checked at n = 3 (algebra at this size only)" and "at n = 3" in exact.detail
    numeric = run_check(Check(lambda n: (sp.sin(a) ** 2 + sp.cos(a) ** 2, 1), "numeric", size=1, trials=6))
    assert (numeric.status, numeric.trials) == ("passed", 6) and numeric.max_error < 1e-25
    assert numeric.how.startswith("checked at n = 1, numeric (6 trials")


def test_a_general_size_line_that_does_not_simplify_is_written_out_at_small_sizes():
    m = sp.Symbol("m", integer=True, positive=True)
    one = sp.OneMatrix(m, 1)
    right = run_check(Check(lambda n: (sp.OneMatrix(m, m) * one, m * one), "symbolic", size=None))
    assert right.status == "passed" and right.method == "symbolic"
    wrong = run_check(Check(lambda n: (sp.OneMatrix(m, m) * one, (m + 1) * one), "symbolic", size=None))
    assert wrong.status == "failed" and not wrong.shape_mismatch and "written out at m = 1" in wrong.detail
    assert (wrong.method, wrong.size) == ("exact", 1)


def test_false_lines_fail_with_a_reason():
    wrong = run_check(Check(square(-1), "symbolic", size=None))
    assert wrong.status == "failed" and "nonzero polynomial" in wrong.detail
    assert run_check(Check(trace_wrong, "exact", size=2)).status == "failed"
    transcendental = run_check(Check(lambda n: (sp.exp(a + b), sp.exp(a) + sp.exp(b)), "exact", size=1))
    assert transcendental.status == "failed" and transcendental.method == "numeric"
    shape = run_check(Check(lambda n: (sp.ones(2, 3) * sp.ones(2, 3), sp.zeros(2, 2)), "exact", size=1))
    assert shape.status == "failed" and "not even defined" in shape.detail
    assert shape.shape_mismatch and shape.detail.startswith("shape mismatch")
    sides = run_check(Check(lambda n: (sp.ones(2, 3), sp.ones(3, 2)), "exact", size=1))
    assert sides.status == "failed" and sides.shape_mismatch and "different shapes" in sides.detail
    value = run_check(Check(lambda n: (sp.ones(2, 2), sp.zeros(2, 2)), "exact", size=1))
    assert value.status == "failed" and not value.shape_mismatch


def test_a_failing_line_stops_at_the_first_trial_that_differs():
    wrong = run_check(Check(lambda n: (sp.sin(a) ** 2 + sp.cos(a) ** 2, 2), "numeric", size=1, trials=6))
    assert (wrong.status, wrong.trials) == ("failed", 1) and "random trial 1 of 6" in wrong.detail
    assert wrong.how == "checked at n = 1, numeric (1 trial, max error 5.0e-01)"
    probed = run_check(Check(lambda n: (sp.exp(a + b), sp.exp(a) + sp.exp(b)), "symbolic", size=None))
    assert (probed.status, probed.method, probed.trials) == ("failed", "numeric", 1)
    assert probed.note == "a first numeric probe already differs, so numbers decide"


def test_a_result_describes_its_sides_and_a_nonzero_difference():
    wrong = run_check(Check(square(-1), "symbolic", size=None))
    assert (
        wrong.left == Side("1", "1", 2, r"\left(a + b\right)^{2}", ("a", "b"))
        and wrong.symbols == 2
        and wrong.polynomial
    )
    assert wrong.gap.latex == "4 a b" and wrong.gap_terms == 1
    big = run_check(Check(trace_wrong, "exact", size=4))
    assert (big.left.rows, big.left.cols, big.left.symbols, big.left.latex) == ("1", "1", 32, "")
    assert big.gap.latex == "" and big.gap_terms > 4
    matrix = run_check(Check(lambda n: (sym_matrix("A", 2, 3), sym_matrix("A", 2, 3)), "exact", size=2))
    assert (matrix.left.rows, matrix.left.cols, matrix.right.symbols) == ("2", "3", 6)


def test_results_are_cached():
    c = Check(trace_cyclic, "exact", size=2)
    assert run_check(c) is run_check(c)


def test_size_limits_fall_back_to_numeric_then_refuse():
    c = Check(trace_cyclic, "exact", size=2, exact_limit=3, build_limit=5)
    fallback = run_check(c, size=4)
    assert fallback.status == "passed" and fallback.method == "numeric" and "limit n ≤ 3 for algebra" in fallback.detail
    assert fallback.how.startswith("checked at n = 4, numeric")
    refused = run_check(c, size=9)
    assert refused.status == "not-checked" and "limit" in refused.detail


def test_timeout_is_not_checked_never_passed():
    """The limit counts the check's CPU time; a check that waits on nothing is stopped after WALL_FACTOR times the
    limit in wall-clock time (here 5 s)."""

    def slow(n):
        time.sleep(30)
        return a, a

    def spinning(n):
        while True:
            pass

    start = time.perf_counter()
    result = run_check(Check(slow, "exact", size=1), timeout=0.5)
    assert result.status == "not-checked" and "time limit" in result.detail
    assert time.perf_counter() - start < limit(10)  # stopped by the wall-clock guard, not after the 30 s sleep
    result = run_check(Check(spinning, "exact", size=1), timeout=0.5)
    assert result.status == "not-checked" and "0.5 s time limit (CPU time)" in result.detail


def test_the_time_limit_counts_cpu_time_not_the_wait_for_a_busy_core():
    def idle_then_true(n):
        time.sleep(1.5)  # longer than the limit in wall-clock time, but no CPU time
        return a, a

    result = run_check(Check(idle_then_true, "exact", size=1), timeout=1.0)
    assert result.status == "passed", result.detail


def test_broken_builder_is_not_checked():
    def broken(n):
        raise KeyError("v_3")

    result = run_check(Check(broken, "exact", size=1))
    assert result.status == "not-checked" and "KeyError" in result.detail


def test_grid_inequality():
    grid = {"a": [0.5, 1.0, 2.0], "b": [0.5, 1.0, 2.0]}
    am_gm = run_check(Check(lambda n: ((a + b) / 2, sp.sqrt(a * b)), "numeric", size=1, relation=">=", grid=grid))
    assert am_gm.status == "passed" and am_gm.trials == 9
    reversed_ = run_check(Check(lambda n: (sp.sqrt(a * b), (a + b) / 2), "numeric", size=1, relation=">=", grid=grid))
    assert reversed_.status == "failed" and "violated" in reversed_.detail
    undefined = run_check(Check(lambda n: (sp.log(-a - b), 0), "numeric", size=1, relation=">=", grid=grid))
    assert undefined.status == "failed" and undefined.least_slack is None
    assert [line.text for line in outcome(undefined)] == [
        "**Result.** not defined: the line is undefined at every grid point."
    ]


def small_derivation(wrong_is_right=False, printed=None):
    wrong = WrongVariant("sign", "x", Check(square(1 if wrong_is_right else -1), "symbolic", size=None), "why")
    return Derivation(
        "toy", "toy", "test", (), (step(Check(square(1), "symbolic", size=None), wrong=(wrong,), printed=printed),)
    )


def test_slip_status_needs_printed_fail_and_corrected_pass():
    printed = Printed("x", Check(square(-1), "symbolic", size=None), "typo")
    [r] = check_derivations([small_derivation(printed=printed)])
    assert r.status == "slip" and r.printed.status == "failed"
    [r] = check_derivations([small_derivation()])
    assert r.status == "passed" and r.wrong[0][1].status == "failed"


@pytest.fixture
def toy_catalog(monkeypatch):
    def use(*derivations):
        monkeypatch.setattr(cli, "catalog", lambda: list(derivations))

    return use


def test_cli_json_and_exit_codes(toy_catalog, capsys):
    toy_catalog(small_derivation())
    assert cli.main(["check", "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert {"derivation": "toy", "step": "s", "status": "passed", "method": "symbolic"}.items() <= record.items()
    toy_catalog(small_derivation(wrong_is_right=True))
    assert cli.main(["check"]) == 1
    assert "toy #1 s: wrong variant 'sign' PASSED (it must fail)" in capsys.readouterr().out
    failing = Derivation("bad", "bad", "test", (), (step(Check(square(-1), "symbolic", size=None)),))
    toy_catalog(failing)
    assert cli.main(["check"]) == 1
    capsys.readouterr()
    shape_only = WrongVariant("AᵀA", "x", Check(lambda n: (sp.ones(2, 3), sp.ones(3, 2)), "exact", size=1), "why")
    toy_catalog(
        Derivation("toy", "toy", "test", (), (step(Check(square(1), "symbolic", size=None), wrong=(shape_only,)),))
    )
    assert cli.main(["check"]) == 1  # a wrong variant must fail by value
    assert "toy #1 s: wrong variant 'AᵀA' failed by shape mismatch only" in capsys.readouterr().out
    toy_catalog(Derivation("toy", "toy", "test", (), (step(Check(square(1), "symbolic", size=None)),)))
    assert cli.main(["check"]) == 1  # a check with no prepared wrong variant is not shown able to fail
    assert "toy #1 s: no prepared wrong variant" in capsys.readouterr().out


def test_cli_says_at_which_size_a_line_was_checked(toy_catalog, capsys):
    wrong = WrongVariant("AB = BA", "x", Check(trace_wrong, "exact", size=3), "why")
    toy_catalog(Derivation("toy", "toy", "test", (), (step(Check(trace_cyclic, "exact", size=3), wrong=(wrong,)),)))
    assert cli.main(["check"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("toy"))
    assert "checked at n = 3" in row and "exact" not in row
    assert "1 of 1 steps have prepared wrong variants (1 in all) that fail by value" in out
    assert cli.main(["check", "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert record["checked"] == "checked at n = 3 (algebra at this size only)"


def test_cli_bad_input_is_one_line_exit_2(toy_catalog, capsys):
    toy_catalog(small_derivation())
    assert cli.main(["check", "--derivation", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err and "toy" in err
    assert cli.main(["check", "--size", "0"]) == 2
    assert cli.main(["check", "--timeout", "-1"]) == 2


def test_check_step_can_leave_the_wrong_variants_for_later():
    d = small_derivation()
    assert check_step(d, 0, with_wrong=False).wrong == ()
    [(label, wrong)] = check_step(d, 0).wrong
    assert label == "sign" and wrong.status == "failed"


def test_check_derivations_keeps_order():
    d = small_derivation()
    assert [r.derivation for r in check_derivations([d, d])] == ["toy", "toy"]


def test_weak_checks_name_every_step_whose_check_is_not_shown_able_to_fail():
    good = WrongVariant("sign", "x", Check(square(-1), "symbolic", size=None), "why")
    passes = WrongVariant("no slip", "x", Check(square(1), "symbolic", size=None), "why")
    by_shape = WrongVariant("AᵀA", "x", Check(lambda n: (sp.ones(2, 3), sp.ones(3, 2)), "exact", size=1), "why")
    steps = (
        step(Check(square(1), "symbolic", size=None), name="fine", wrong=(good,)),
        step(Check(square(1), "symbolic", size=None), name="none"),
        step(Check(square(1), "symbolic", size=None), name="passes", wrong=(good, passes)),
        step(Check(square(1), "symbolic", size=None), name="shape", wrong=(by_shape,)),
    )
    results = check_derivations([Derivation("toy", "toy", "test", (), steps)])
    assert [r.can_fail for r in results] == [True, False, False, False]
    assert weak_checks(results) == [
        "toy #2 none: no prepared wrong variant",
        "toy #3 passes: wrong variant 'no slip' PASSED (it must fail)",
        "toy #4 shape: wrong variant 'AᵀA' failed by shape mismatch only",
    ]
