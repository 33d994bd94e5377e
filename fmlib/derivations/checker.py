"""The generic checker: compare the two sides of a step with sympy and say how.

Methods (the badge on the page):
- symbolic: the difference, built from general symbols, simplifies to 0;
- exact: built from explicit n×n-style matrices of symbols, every entry of the
  difference simplifies to 0 (expand, then cancel of the rational function). This holds at
  that one size n only, so it is shown as "checked at n = …", never as a proof;
- numeric: random substitutions (seeded), evaluated with 30 significant digits;
  reports the number of trials and the max relative error. The first trial at which the
  sides differ settles a failure, so a failing line stops there.
If exact simplification does not reach 0 the checker does not guess: it substitutes
numbers, and reports 'numeric' with the reason. A difference that is not a polynomial is
first probed at one random point: if the sides differ there, that settles it (simplifying a
nonzero transcendental difference can take minutes); an algebraic check stops at the first
entry of the difference that is not 0. A size above the step's exact limit
falls back to numeric; above its build limit, and on a timeout, the step is
"not checked" with the reason, never passed. The time limit counts the CPU time of the process that checks the
line (where the system reports it, as Linux's /proc does), so a busy machine that gives the check a fraction of a
core does not cut it short; a wall-clock limit WALL_FACTOR times as long still stops a check that waits on nothing.

Statuses of a step: passed, failed, not-checked, and slip: the paper's printed line
fails while the corrected line passes. A check that fails only because its sides cannot be
compared (different shapes, an undefined product) says "shape mismatch" and sets
``shape_mismatch``: a wrong variant must fail by value, not that way (`weak_checks` lists the steps whose check
is not shown able to fail). Every check runs in a forked child process so that a timeout really stops the
work; results are cached per (check, size). Each result describes its two sides (`Side`: shape, number of
symbols, LaTeX when short) so that `display.summary` can say what was compared without printing an expansion.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import sympy as sp

from .core import Check, Derivation
from .display import factored_latex

DEFAULT_TIMEOUT = 30.0  # CPU seconds per check (wall seconds where the CPU time cannot be read)
WALL_FACTOR = 10  # a check that has not answered in this many times its limit in wall-clock time is stopped too
TOLERANCE = 1e-12
DIGITS = 30
SEED = 0
WORKERS = 1  # the machine is shared; check_derivations(..., workers=2) runs two checks at a time
STATUSES = ("passed", "failed", "slip", "not-checked")
GENERAL_SIZES = (1, 2, 3, 4)  # where a general-size difference that does not simplify is written out
SHORT_NODES = 60  # a side this small (in expression-tree nodes) is factored and typeset; a bigger one only described
SHORT_LATEX = 80  # ... and only if its LaTeX has at most this many characters


@dataclass(frozen=True)
class Side:
    """A side of a checked line (or an entry of its difference) in numbers a reader can take in.

    rows, cols  its shape as LaTeX ("1" and "1" for a scalar; "m" for a general size)
    symbols     how many distinct symbols it contains
    latex       the side factored and typeset (sympy.latex) when it is short, else ""
    names       the names of its symbols, sorted (``display.symbol_families`` groups them for a reader)
    entry       a matrix side too long to typeset: its entry (1, 1) factored and typeset when that is short, else ""
    """

    rows: str
    cols: str
    symbols: int
    latex: str = ""
    names: tuple[str, ...] = ()
    entry: str = ""


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: status, the method that settled it, a sentence of detail."""

    status: str  # passed | failed | not-checked
    method: str  # symbolic | exact | numeric | none
    detail: str
    lhs: str = ""
    rhs: str = ""
    size: int | None = None
    trials: int | None = None
    max_error: float | None = None
    seconds: float = 0.0
    shape_mismatch: bool = False  # failed only because the sides' shapes differ or a product is undefined
    grid: bool = False  # an inequality evaluated on a grid (trials = the number of grid points)
    left: Side | None = None  # the two sides as built, described (None when the line could not be built)
    right: Side | None = None
    symbols: int = 0  # distinct symbols in the two sides together
    polynomial: bool = False  # every entry of the difference is a polynomial
    note: str = ""  # why numbers decided a line meant for algebra ("" when they did not)
    gap: Side | None = None  # a nonzero entry of the simplified difference (an algebraic failure)
    gap_terms: int = 0  # how many terms that entry has
    least_slack: float | None = None  # an inequality on a grid: the smallest left − right found

    @property
    def how(self) -> str:
        """How the line was checked, in words; a check at one size n says "checked at n = …", never "exact"."""
        if self.method == "symbolic":
            return "symbolic, for general symbols"
        if self.method == "exact":
            return f"checked at n = {self.size} (algebra at this size only)"
        if self.method == "numeric" and self.grid:
            return f"checked on a grid of {self.trials} points"
        if self.method == "numeric":
            where = "at random values" if self.size is None else f"checked at n = {self.size},"
            trials = f"{self.trials} trial" + ("" if self.trials == 1 else "s")
            return f"{where} numeric ({trials}, max error {self.max_error:.1e})"
        return "not checked"


@dataclass(frozen=True)
class StepResult:
    """A step's status plus the results of its corrected line, printed line and wrong variants."""

    derivation: str
    index: int
    step: str
    status: str
    method: str
    detail: str
    corrected: CheckResult
    printed: CheckResult | None
    wrong: tuple[tuple[str, CheckResult], ...]

    @property
    def can_fail(self) -> bool:
        """Whether the step has prepared wrong variants and every one fails its check by value."""
        return bool(self.wrong) and all(w.status == "failed" and not w.shape_mismatch for _, w in self.wrong)

    @property
    def wrong_passed(self) -> list[str]:
        """Labels of prepared wrong variants that (wrongly) passed."""
        return [label for label, r in self.wrong if r.status == "passed"]

    def to_dict(self) -> dict:
        return {
            "derivation": self.derivation,
            "step": self.step,
            "index": self.index + 1,
            "status": self.status,
            "method": self.method,
            "checked": self.corrected.how,
            "detail": self.detail,
            "size": self.corrected.size,
            "trials": self.corrected.trials,
            "max_error": self.corrected.max_error,
            "printed": None if self.printed is None else asdict(self.printed),
            "wrong_variants": [
                {"label": label, "status": r.status, "method": r.method, "detail": r.detail} for label, r in self.wrong
            ],
        }


def weak_checks(results: list[StepResult]) -> list[str]:
    """Steps whose check is not shown able to fail, one sentence each.

    A checked step needs at least one prepared wrong variant, and each must fail by value: a
    variant that passes, is not checked, or fails only by a shape mismatch is reported. Steps whose
    corrected line was not checked (say, above its size limit) are skipped."""
    problems = []
    for r in results:
        if r.corrected.status == "not-checked":
            continue
        where = f"{r.derivation} #{r.index + 1} {r.step}"
        if not r.wrong:
            problems.append(f"{where}: no prepared wrong variant")
        for label, w in r.wrong:
            if w.status == "passed":
                problems.append(f"{where}: wrong variant {label!r} PASSED (it must fail)")
            elif w.status == "not-checked":
                problems.append(f"{where}: wrong variant {label!r} was not checked ({w.detail})")
            elif w.shape_mismatch:
                problems.append(f"{where}: wrong variant {label!r} failed by shape mismatch only")
    return problems


_CACHE: dict[tuple[Check, int | None], CheckResult] = {}


def run_checks(
    checks: list[Check], size: int | None = None, timeout: float | None = DEFAULT_TIMEOUT, workers: int = WORKERS
) -> list[CheckResult]:
    """Check several lines at `size` (default: each check's own size), `workers` at a time.

    Passed and failed results are cached per (check, size); "not checked" ones are not.
    """
    results: list[CheckResult | None] = []
    jobs = {}
    for i, check in enumerate(checks):
        n = None if check.method == "symbolic" else (check.size if size is None else size)
        results.append(_CACHE.get((check, n)))
        if results[-1] is not None:
            continue
        if n is not None and n > check.build_limit:
            results[-1] = CheckResult(
                "not-checked",
                "none",
                f"not checked: n = {n} is above this step's limit n ≤ {check.build_limit} for building its matrices",
                size=n,
            )
            continue
        method, note = check.method, ""
        if method == "exact" and n > check.exact_limit:
            method = "numeric"
            note = f"n = {n} is above the limit n ≤ {check.exact_limit} for algebra, so numbers decide: "
        jobs[i] = (check, n, _timed(check, n, method, note))
    answers = _run_in_children([job for _, _, job in jobs.values()], timeout, workers)
    for (i, (check, n, _)), answer in zip(jobs.items(), answers):
        if answer is None:
            answer = CheckResult(
                "not-checked",
                "none",
                f"not checked: no answer within the {timeout:g} s time limit (CPU time)",
                size=n,
                seconds=timeout,
            )
        elif answer.status != "not-checked":
            _CACHE[(check, n)] = answer
        results[i] = answer
    return results


def run_check(check: Check, size: int | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> CheckResult:
    """Check one line; see run_checks."""
    return run_checks([check], size, timeout)[0]


def _step_checks(step, with_wrong: bool = True) -> list[Check]:
    wrong = [w.check for w in step.wrong] if with_wrong else []
    return [step.check] + ([step.printed.check] if step.printed else []) + wrong


def check_derivations(
    derivations: list[Derivation],
    size: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    workers: int = WORKERS,
) -> list[StepResult]:
    """Every step of every derivation, checks run `workers` at a time; one StepResult per step."""
    checks = [c for d in derivations for step in d.steps for c in _step_checks(step)]
    results = iter(run_checks(checks, size, timeout, workers))
    return [
        _step_result(d, i, [next(results) for _ in _step_checks(step)])
        for d in derivations
        for i, step in enumerate(d.steps)
    ]


def check_step(
    derivation: Derivation,
    index: int,
    size: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    with_wrong: bool = True,
) -> StepResult:
    """Check step `index` of a derivation: corrected line, printed line (if any), wrong variants (unless
    ``with_wrong`` is False: then `StepResult.wrong` is empty, and a page checks a variant when it shows it)."""
    step = derivation.steps[index]
    return _step_result(derivation, index, run_checks(_step_checks(step, with_wrong), size, timeout))


def _step_result(derivation: Derivation, index: int, results: list[CheckResult]) -> StepResult:
    step = derivation.steps[index]
    corrected, rest = results[0], results[1:]
    printed = rest.pop(0) if step.printed else None
    wrong = tuple((w.label, r) for w, r in zip(step.wrong, rest))
    status, detail = corrected.status, corrected.detail
    if printed is not None and corrected.status == "passed":
        if printed.status == "failed":
            status = "slip"
            detail = (
                f"slip in the paper: the printed line fails ({printed.detail}); "
                f"the corrected line passes ({corrected.detail})"
            )
        elif printed.status == "passed":
            detail = f"{corrected.detail} The printed line passes too."
        else:
            detail = f"{corrected.detail} The printed line was not checked ({printed.detail})."
    return StepResult(derivation.key, index, step.name, status, corrected.method, detail, corrected, printed, wrong)


def _timed(check: Check, n: int | None, method: str, note: str):
    def job() -> CheckResult:
        start = time.perf_counter()
        result = _compare(check, n, method, note)
        return replace(result, seconds=time.perf_counter() - start)

    return job


# ---- comparison -------------------------------------------------------------------


def _compare(check: Check, n: int | None, method: str, note: str) -> CheckResult:
    try:
        lhs, rhs = check.build(n)
    except sp.matrices.exceptions.ShapeError as exc:
        return CheckResult(
            "failed", method, f"{note}shape mismatch: the line is not even defined: {exc}", size=n, shape_mismatch=True
        )
    shown = dict(
        lhs=_short(lhs),
        rhs=_short(rhs),
        size=n,
        left=_side(lhs),
        right=_side(rhs),
        symbols=len(_free_symbols(lhs) | _free_symbols(rhs)),
    )
    if isinstance(lhs, sp.MatrixExpr) or isinstance(rhs, sp.MatrixExpr):
        return _check_general_matrices(lhs, rhs, shown)
    lhs_m, rhs_m = _as_matrix(lhs), _as_matrix(rhs)
    if check.relation == ">=":
        return _check_grid(check, lhs_m[0], rhs_m[0], shown)
    if lhs_m.shape != rhs_m.shape:
        return CheckResult(
            "failed",
            method,
            f"{note}shape mismatch: the two sides have different shapes {lhs_m.shape} and {rhs_m.shape}",
            shape_mismatch=True,
            **shown,
        )
    diff = lhs_m - rhs_m
    polynomial = all(e.is_polynomial() for e in diff)
    shown["polynomial"] = polynomial
    if method in ("symbolic", "exact") and not polynomial:
        # simplifying a nonzero transcendental difference can take minutes; one random trial settles it
        probe = Check(check.build, "numeric", size=1, ranges=check.ranges, trials=1)
        reason = note + "a first numeric probe already differs, so numbers decide"
        first = _check_numeric(probe, lhs_m, rhs_m, reason + ": ", {**shown, "note": reason})
        if first.status == "failed":
            return first
    if method in ("symbolic", "exact"):
        where = f" at n = {n}" if method == "exact" else " for general symbols"
        # the first entry that does not simplify to 0 settles the line; the rest are simplified only for a pass
        bad = next((r for r in (_simplify(e, method) for e in diff) if r != 0), None)
        if bad is None:
            return CheckResult(
                "passed", method, f"{note}the difference simplifies to 0{where} ({_count(diff)}).", **shown
            )
        if polynomial:
            return CheckResult(
                "failed",
                method,
                f"{note}the difference is a nonzero polynomial{where}, e.g. {_short(bad, 200)}",
                **shown,
                **_gap(bad),
            )
        note += "exact simplification did not reach 0, so numbers decide: "
    return _check_numeric(check, lhs_m, rhs_m, note, {**shown, "note": note.removesuffix(": ")})


def _check_general_matrices(lhs, rhs, shown: dict) -> CheckResult:
    """Matrix expressions of general (symbolic) size: expand, evaluate, simplify.

    A difference that does not simplify to 0 is written out at the sizes GENERAL_SIZES: a nonzero
    entry there fails the line by value; if every entry is 0 there, the line is not checked."""
    difference = sp.simplify((lhs - rhs).expand().doit())
    if getattr(difference, "is_ZeroMatrix", False) or difference == 0:
        return CheckResult(
            "passed", "symbolic", "the difference simplifies to the zero matrix for general size.", **shown
        )
    sizes = sorted((s for s in difference.free_symbols if s.is_integer), key=lambda s: s.name)
    for value in GENERAL_SIZES:
        explicit = difference.subs({s: value for s in sizes}).as_explicit()
        bad = [e for e in explicit if _simplify(e, "symbolic") != 0]
        if bad:
            where = ", ".join(f"{s} = {value}" for s in sizes)
            return CheckResult(
                "failed",
                "exact",
                f"the general-size difference does not simplify to 0, and written out at {where} "
                f"it is nonzero, e.g. {_short(bad[0], 200)}.",
                **{**shown, "size": value},
                **_gap(_simplify(bad[0], "symbolic")),
            )
    return CheckResult(
        "not-checked",
        "none",
        f"not checked: sympy could not simplify the general-size difference "
        f"to 0 (left with {_short(difference, 200)}), and it is 0 at the sizes {GENERAL_SIZES} it was written out at",
        **shown,
    )


def _simplify(e: sp.Expr, method: str) -> sp.Expr:
    """Exact simplification: expand; trig and complex exponentials as exponentials; cancel."""
    e = sp.expand(e)
    if e == 0:
        return e
    if e.has(sp.re, sp.im):
        e = sp.expand(sp.expand_complex(e))
    if e.has(sp.sin, sp.cos) or (e.has(sp.exp) and e.has(sp.I)):
        # expand() splits exp(a + b) into exp(a)·exp(b): a canonical form for linear arguments
        e = sp.expand(e.rewrite(sp.exp))
    e = sp.cancel(sp.together(e))
    if e != 0 and method == "symbolic":
        e = sp.simplify(e)
    return e


def _check_numeric(check: Check, lhs: sp.Matrix, rhs: sp.Matrix, note: str, shown: dict) -> CheckResult:
    symbols = sorted(lhs.free_symbols | rhs.free_symbols, key=lambda s: s.name)
    rng = np.random.default_rng(SEED)
    worst, worst_at, trial = 0.0, None, 0
    while trial < check.trials and worst <= TOLERANCE:  # one trial where the sides differ settles a failure
        trial += 1
        values = {s: _sample(s, check.ranges, rng) for s in symbols}
        for k, (a, b) in enumerate(zip(lhs, rhs)):
            a, b = (sp.N(x.xreplace(values), DIGITS) for x in (a, b))
            err = float(abs(sp.N(a - b, DIGITS))) / max(1.0, float(abs(a)), float(abs(b)))
            if not err <= worst:  # also catches nan
                worst, worst_at = err, (k, values)
    if worst <= TOLERANCE:
        return CheckResult(
            "passed",
            "numeric",
            f"{note}{check.trials} random trials, max relative error {worst:.1e}.",
            trials=check.trials,
            max_error=worst,
            **shown,
        )
    k, values = worst_at
    row, col = divmod(k, lhs.cols)
    entry = "" if lhs.shape == (1, 1) else f" in entry ({row + 1}, {col + 1})"
    point = ", ".join(f"{s}={float(v):.3g}" for s, v in list(values.items())[:6])
    return CheckResult(
        "failed",
        "numeric",
        f"{note}the sides differ at random trial {trial} of {check.trials}: relative error {worst:.1e}{entry} "
        f"(e.g. at {point}{', …' if len(values) > 6 else ''}).",
        trials=trial,
        max_error=worst,
        **shown,
    )


def _check_grid(check: Check, lhs: sp.Expr, rhs: sp.Expr, shown: dict) -> CheckResult:
    names = list(check.grid)
    symbols = {s.name: s for s in (lhs - rhs).free_symbols}
    missing = set(symbols) - set(names)
    if missing:
        return CheckResult("not-checked", "none", f"not checked: no grid values for {sorted(missing)}", **shown)
    args = [symbols.get(name, sp.Symbol(name)) for name in names]
    f, size = sp.lambdify(args, lhs - rhs, modules="numpy"), sp.lambdify(args, abs(lhs) + abs(rhs), modules="numpy")
    mesh = np.meshgrid(*[np.asarray(check.grid[name], dtype=float) for name in names], indexing="ij")
    with np.errstate(all="ignore"):
        slack = np.broadcast_to(np.asarray(f(*mesh), dtype=complex), mesh[0].shape)
        scale = np.maximum(1.0, np.abs(np.broadcast_to(np.asarray(size(*mesh), dtype=complex), mesh[0].shape)))
    undefined = ~np.isfinite(slack) | (np.abs(slack.imag) > 1e-12)
    # rounding: a slack within TOLERANCE · max(1, |left| + |right|) of 0 counts as equality
    slack = np.where(undefined, np.nan, np.where(np.abs(slack.real) <= TOLERANCE * scale, 0.0, slack.real))
    shown = {**shown, "trials": slack.size, "grid": True}
    if undefined.all():
        return CheckResult("failed", "numeric", f"the line is undefined at all {slack.size} grid points.", **shown)
    low = float(np.nanmin(slack))
    at = np.unravel_index(int(np.nanargmin(slack)), slack.shape)
    where = ", ".join(f"{name}={check.grid[name][i]:.3g}" for name, i in zip(names, at))
    detail = f"slack = left − right on a grid of {slack.size} points: min {low:.3g} at {where}"
    if undefined.any():
        detail += f"; undefined (log of a negative number or division by 0) at {int(undefined.sum())} points"
    elif low < 0:
        detail += " — negative, so the inequality is violated there"
    passed = low >= 0 and not undefined.any()
    return CheckResult(
        "passed" if passed else "failed", "numeric", detail + ".", max_error=max(0.0, -low), least_slack=low, **shown
    )


def _sample(symbol: sp.Symbol, ranges, rng) -> sp.Float:
    name = symbol.name
    lo, hi = ranges.get(name) or ranges.get(name.split("_")[0]) or ((0.25, 2.0) if symbol.is_positive else (-1.5, 1.5))
    # a random multiple of 1/1024 inside the range: a rational number a binary float holds exactly
    numerator = int(rng.integers(int(np.ceil(lo * 1024)), int(np.floor(hi * 1024)) + 1))
    return sp.Float(sp.Rational(numerator, 1024), DIGITS)


def _as_matrix(x) -> sp.Matrix:
    if isinstance(x, sp.MatrixBase):
        return sp.Matrix(x)
    return sp.Matrix([[sp.sympify(x)]])


def _count(m: sp.Matrix) -> str:
    return "1 expression" if m.shape == (1, 1) else f"all {m.rows * m.cols} entries of the {m.rows}×{m.cols} result"


def _larger_than(x, nodes: int) -> bool:
    """Whether the expression tree of ``x`` has more than ``nodes`` nodes (stops counting there)."""
    return any(count > nodes for count, _ in enumerate(sp.preorder_traversal(x), start=1))


def _free_symbols(x) -> set:
    """The symbols of a side (a plain number has none)."""
    return getattr(x, "free_symbols", set())


def _side(x) -> Side:
    """Describe a side for a reader: its shape, its number of symbols, and its LaTeX if it is short."""
    if isinstance(x, sp.MatrixBase) and x.shape == (1, 1):
        x = x[0]
    x = sp.sympify(x)
    rows, cols = getattr(x, "shape", (1, 1))
    names = tuple(sorted(s.name for s in _free_symbols(x)))
    latex = _short_latex(x)
    entry = _short_latex(x[0, 0], 2 * SHORT_NODES) if isinstance(x, sp.MatrixBase) and not latex else ""
    return Side(sp.latex(rows), sp.latex(cols), len(names), latex, names, entry)


def _short_latex(x, nodes: int = SHORT_NODES) -> str:
    """``x`` factored and typeset when it is short (at most ``nodes`` nodes and SHORT_LATEX characters), else ""."""
    latex = "" if _larger_than(x, nodes) else factored_latex(x)
    return latex if len(latex) <= SHORT_LATEX else ""


def _gap(entry: sp.Expr) -> dict:
    """The fields of a CheckResult that describe a nonzero entry of a simplified difference."""
    return {"gap": _side(entry), "gap_terms": len(sp.Add.make_args(entry))}


def _short(x, limit: int = 1500) -> str:
    """Printable form of a side; very large expressions are summarised (printing them takes seconds)."""
    if _larger_than(x, 4 * limit):
        shape = f"a {x.shape[0]}×{x.shape[1]} matrix" if hasattr(x, "shape") else "an expression"
        return f"{shape} too large to print (more than {4 * limit} nodes)"
    text = str(x)
    return text if len(text) <= limit else text[:limit] + " …"


# ---- running checks in child processes (so a timeout can stop them) -------------------


def _run_in_children(jobs: list, timeout: float | None, workers: int) -> list[CheckResult | None]:
    """Run each job in a forked child, `workers` at a time; None for a job that exceeded `timeout` s of CPU time
    (or WALL_FACTOR × `timeout` s of wall-clock time: a child that waits without computing)."""
    if timeout is None or "fork" not in multiprocessing.get_all_start_methods():
        return [_guarded(job) for job in jobs]
    ctx = multiprocessing.get_context("fork")
    results: list[CheckResult | None] = [None] * len(jobs)
    pending, running = list(enumerate(jobs)), {}
    try:
        while pending or running:
            while pending and len(running) < max(1, workers):
                i, job = pending.pop(0)
                receive, send = ctx.Pipe(duplex=False)
                child = ctx.Process(target=_child_main, args=(job, send), daemon=True)
                child.start()
                send.close()
                running[i] = (child, receive, time.monotonic())
            ready = multiprocessing.connection.wait([r for _, r, _ in running.values()], timeout=0.05)
            for i, (child, receive, started) in list(running.items()):
                if receive in ready:
                    try:
                        results[i] = receive.recv()
                    except EOFError:
                        results[i] = CheckResult(
                            "not-checked", "none", "not checked: the checking process ended without an answer"
                        )
                elif not _over_limit(child, started, timeout):
                    continue
                _stop(child, receive)
                del running[i]
    finally:
        for child, receive, _ in running.values():
            _stop(child, receive)
    return results


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) that process ``pid`` has used, from Linux's /proc; None where unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # what follows the name: the state is field 3
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


def _over_limit(child, started: float, timeout: float) -> bool:
    """Whether the child has used more than ``timeout`` s of CPU time (wall time where CPU time cannot be read),
    or more than WALL_FACTOR × ``timeout`` s of wall time."""
    wall = time.monotonic() - started
    cpu = _cpu_seconds(child.pid)
    return (wall if cpu is None else cpu) > timeout or wall > WALL_FACTOR * timeout


def _stop(child, receive) -> None:
    if child.is_alive():
        child.kill()
    child.join()
    receive.close()


def _child_main(job, send) -> None:
    send.send(_guarded(job))
    send.close()


def _guarded(job) -> CheckResult:
    try:
        return job()
    except Exception as exc:  # a broken builder is reported, never counted as passed
        return CheckResult("not-checked", "none", f"not checked: building the check raised {type(exc).__name__}: {exc}")
