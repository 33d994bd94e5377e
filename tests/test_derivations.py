"""The derivation catalog: every step passes (or is a known slip) and has a wrong variant that fails by value."""

import pytest

from fmlib.derivations import attention, catalog
from fmlib.derivations.checker import STATUSES, check_derivations, weak_checks
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
def results():
    return check_derivations(catalog())


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
