"""The derivation catalog: every step passes (or is a known slip) and has a wrong variant that fails by value;
every check's summary for the page is short and typesets."""

import re

import pytest

from fmlib.derivations import attention, catalog
from fmlib.derivations.checker import DEFAULT_TIMEOUT, STATUSES, weak_checks
from fmlib.derivations.display import outcome, summary, symbol_families
from fmlib.references import TITLES, keys, with_titles

# (derivation, step number): the printed line fails its check and the corrected line passes
KNOWN_SLIPS = {
    ("fm-gradient", 7),
    ("fm-gradient", 8),
    ("fm-gradient", 9),  # −2P_ij X_j² should be −P_ij X_j²
    ("dplr-proposition-1", 7),  # Alg. 1 prints V_C U_C
    ("rafm-proposition-s3", 2),
    ("rafm-proposition-s3", 4),  # Lemma S4 / S5 typos
    ("rafm-proposition-s3", 7),  # (S4) prints 1 − θδ
    ("rfm-euler", 1),  # ① remark drops the i
    ("rfm-gradient-part1", 4),
    ("rfm-gradient-part1", 5),  # (∂y/∂G)ᵀVᵀ
    ("attention-definitions", 5),  # Σc² is eq. (1) with Wᵀ
    ("attention-gradients", 8),  # Lemma A.17 drops the 2
    ("attention-hessian-bound", 1),  # Lemma H.1: Σ_{i,j} p_iᵀp_j ≤ pᵀp
    ("attention-hessian-bound", 2),  # Lemma H.2: 72ndR⁸ for 144n²dR⁸
}


@pytest.fixture(scope="module")
def results(derivation_results):
    """Every line, its printed slip and its wrong variants, checked once per session (conftest.py; the page tests of
    the group "derivations" find them in the checker's cache)."""
    return derivation_results


def test_every_line_is_checked_within_the_checkers_time_limit(derivation_check_seconds):
    """The page checks a line in a child process and calls it "not checked" after DEFAULT_TIMEOUT s of the child's CPU
    time; the session's catalogue is checked in one process (conftest.py), each line's CPU time measured."""
    lines = [(d.key, number, step) for d in catalog() for number, step in enumerate(d.steps, 1)]
    assert len(derivation_check_seconds) == sum(1 + bool(step.printed) + len(step.wrong) for *_, step in lines)
    slow = [line for line in derivation_check_seconds if line[-1] >= DEFAULT_TIMEOUT]
    assert not slow, f"over the checker's {DEFAULT_TIMEOUT:g} s of CPU time: {slow}"


def test_catalog_covers_every_derivation_of_the_papers(results):
    keys = {d.key for d in catalog()}
    assert {
        "rendle",
        "fm-gradient",
        "identity-1",
        "dplr-proposition-1",
        "r-fm",
        "rafm-theorem-3",
        "rafm-proposition-s3",
        "rfm-euler",
        "rfm-gradient-part1",
        "attention-definitions",
        "attention-gradients",
        "attention-hessian-bound",
    } <= keys
    assert len(results) == sum(len(d.steps) for d in catalog())


def test_every_step_passes_or_is_a_known_slip(results):
    for r in results:
        assert r.status in STATUSES
        expected = "slip" if (r.derivation, r.index + 1) in KNOWN_SLIPS else "passed"
        assert r.status == expected, f"{r.derivation} #{r.index + 1} {r.step}: {r.status} — {r.detail}"
        assert r.corrected.status == "passed"


def test_slips_show_a_failing_printed_line(results):
    slips = [r for r in results if r.status == "slip"]
    assert {(r.derivation, r.index + 1) for r in slips} == KNOWN_SLIPS
    for r in slips:
        assert r.printed.status == "failed" and "slip in the paper" in r.detail


def test_every_step_passes_its_check_and_every_wrong_variant_fails_it_by_value(results):
    """Walks every step of every derivation: each check is shown able to fail."""
    assert len(results) == sum(len(d.steps) for d in catalog())
    for r in results:
        where = f"{r.derivation} #{r.index + 1} {r.step}"
        assert r.corrected.status == "passed", f"{where}: {r.corrected.detail}"
        assert r.wrong, f"{where}: no prepared wrong variant"
        for label, w in r.wrong:
            assert w.status == "failed", f"{where}: wrong variant {label!r} is {w.status}: {w.detail}"
            assert not w.shape_mismatch, f"{where}: wrong variant {label!r} fails by shape only"
        assert r.can_fail
    assert weak_checks(results) == []


def test_r_fm_wrong_eigenvalue_fails_by_value(results):
    [r] = [r for r in results if (r.derivation, r.index + 1) == ("r-fm", 2)]
    assert (r.status, r.corrected.method) == ("passed", "symbolic")
    [(label, wrong)] = r.wrong
    assert label == "eigenvalue m" and wrong.status == "failed" and not wrong.shape_mismatch
    assert "written out at m = 1" in wrong.detail and wrong.how == "checked at n = 1 (algebra at this size only)"


def test_hessian_bound_rejects_a_wrong_chain_with_the_right_product(results):
    [r] = [r for r in results if (r.derivation, r.index + 1) == ("attention-hessian-bound", 2)]
    assert r.status == "slip" and len(r.wrong) == 2
    for label, wrong in r.wrong:  # both chains multiply out to 144 n² d R⁸, as the corrected line does
        assert wrong.status == "failed" and wrong.max_error > 0.1, (label, wrong.detail)
    # the factor 2 of Lemma E.2 comes from sympy's Hessian of L, not from the line
    assert [float(f) for f in attention._e2_factor(2)] == pytest.approx([2.0, 2.0, 2.0], abs=1e-20)


def test_a_check_at_one_size_says_so(results):
    methods = {r.method for r in results}
    assert {"symbolic", "exact", "numeric"} <= methods
    for r in results:
        c = r.corrected
        assert "exact" not in c.how
        if c.method == "exact":
            assert c.size is not None and f"n = {c.size}" in c.detail and c.how.startswith(f"checked at n = {c.size}")
        if c.method == "numeric":
            assert c.trials and c.max_error is not None and c.max_error <= 1e-12
        assert c.lhs and c.rhs


def test_json_records_have_the_documented_fields(results):
    for r in results:
        d = r.to_dict()
        assert {"derivation", "step", "status", "method", "checked", "detail"} <= set(d)
        assert d["status"] in STATUSES


def test_every_source_cites_a_known_paper_and_the_page_shows_its_title():
    for d in catalog():
        assert keys(d.source) and set(keys(d.source)) <= set(TITLES), d.source
        for step in d.steps:
            assert set(keys(step.source)) <= set(TITLES), step.source
    shown = with_titles("[RaFM], eq. (7); [DPLR] eq. (1)")
    assert shown == (
        "[RaFM] *RaFM: Rank-Aware Factorization Machines*, eq. (7); "
        "[DPLR] *Low Rank Field-Weighted Factorization Machines for Low Latency Item Recommendation* eq. (1)"
    )


def katex_problems(latex: str) -> list[str]:
    """What KaTeX would reject in ``latex``: unbalanced braces, a ``*`` (sympy's product sign, ``**`` its power),
    or a ``\\text{…}`` holding ``_`` or ``^`` (math mode only)."""
    problems = ["a * (a sympy product or power)"] if "*" in latex else []
    depth = 0
    for i, c in enumerate(latex):
        escaped = i > 0 and latex[i - 1] == "\\"
        depth += (c == "{" and not escaped) - (c == "}" and not escaped)
        if depth < 0:
            problems.append(f"a closing brace without an opening one at {i}")
            depth = 0
    if depth:
        problems.append(f"{depth} unclosed brace(s)")
    start = latex.find("\\text{")
    while start >= 0:
        end, level = start + len("\\text{"), 1
        while end < len(latex) and level:
            level += {"{": 1, "}": -1}.get(latex[end], 0)
            end += 1
        if any(c in latex[start:end] for c in "_^"):
            problems.append(f"_ or ^ inside {latex[start:end]!r}")
        start = latex.find("\\text{", end)
    return problems


def test_the_katex_scan_sees_what_katex_rejects():
    assert katex_problems(r"\text{w_{1,1}*w_{2,1}}") and katex_problems(r"a**2") and katex_problems(r"\frac{a}{b")
    assert not katex_problems(r"\begin{aligned} \text{left} &= \frac{a}{b} \\ \text{right} &= x_{1}^{2} \end{aligned}")


def test_every_check_is_summed_up_in_a_few_lines_that_typeset(results):
    """Walks every step of every derivation (the results the other tests use: nothing is checked again) and
    sums up its corrected line, printed line and wrong variants, as the page does."""
    for r in results:
        where = f"{r.derivation} #{r.index + 1} {r.step}"
        shown = [summary(r.corrected)] + [outcome(c) for c in [r.printed] + [w for _, w in r.wrong] if c is not None]
        assert len(shown[0]) <= 6 and all(len(lines) <= 2 for lines in shown[1:]), where
        for line in (line for lines in shown for line in lines):
            # (a claim of two matrices too long to typeset shows each one's entry (1,1) of at most 80 characters)
            assert line.kind in ("markdown", "latex") and len(line.text) <= 320, (where, line)
            if line.kind == "latex":
                assert not katex_problems(line.text), (where, line.text, katex_problems(line.text))
            else:
                assert "*" not in line.text.replace("**", "", 2), (where, line.text)  # bold, never a product
        text = "\n".join(line.text for line in shown[0])
        assert len(text) <= 800, where
        assert "**Claim.**" in text and "**Compared.**" in text and "**Result.**" in text, where
        verdicts = ("difference 0", "of the difference are 0", "largest relative gap", "smallest slack")
        assert any(verdict in text for verdict in verdicts), where


def test_a_matrix_line_too_long_to_typeset_names_its_entries_and_its_symbols(results):
    """RaFM's A_{l,k} for every l, k (a 9×1 matrix at n = 5): the summary says that every entry was compared and lists
    the symbols family by family, instead of "a 9 × 1 matrix in 35 symbols" alone."""
    [r] = [r for r in results if r.derivation == "rafm-theorem-3" and r.index == 0]
    text = "\n".join(line.text for line in summary(r.corrected))
    assert "each of the 9 entries of left − right expanded as a polynomial in 35 symbols" in text
    assert "all 9 entries of the difference are 0" in text
    assert r"**Symbols.** the 35 symbols $v^{(1)}_{1,1}, \dots, v^{(1)}_{5,1}\ (5);\ v^{(2)}_{1,1}" in text
    assert r"x_{1}, \dots, x_{5}\ (5)$." in text


def test_symbol_families_are_in_index_order_with_one_subscript():
    names = ["x_{10}", "x_{2}", "x_{3}", "v^{(1)}_{2}_{1}", "v^{(1)}_{1}_{1}", "yhat_1", "delta", "fraction"]
    assert symbol_families(names) == (
        r"\delta;\ \mathrm{fraction};\ v^{(1)}_{1,1}, v^{(1)}_{2,1};\ x_{2}, \dots, x_{10}\ (3);\ \hat{y}_{1}"
    )


# Circled digits (①, U+2460 onwards): KaTeX warns "Unrecognized Unicode character" on them in math and draws them in
# a fallback font. Math writes \text{\textcircled{1}}; plain text keeps ①.
ENCLOSED = re.compile("[\u2460-\u24ff]")


def test_no_formula_holds_a_circled_digit():
    found = []
    for d in catalog():
        for number, step in enumerate(d.steps, 1):
            texts = [step.latex, *re.findall(r"\$([^$]+)\$", step.justification)]
            if step.printed:
                texts += [step.printed.latex, *re.findall(r"\$([^$]+)\$", step.printed.note)]
            for wrong in step.wrong:
                texts += [wrong.latex, *re.findall(r"\$([^$]+)\$", wrong.explanation)]
            found += [(d.key, number, text[:60]) for text in texts if ENCLOSED.search(text)]
    assert not found, f"circled digits in math: {found}"
