"""Field interaction analysis: pruning at equal budget, post-hoc DPLR, spectra (DPLR paper)."""

import numpy as np
import pytest
import torch

from fmlib.analysis import dplr_posthoc, interaction_matrix, prune, spectrum
from fmlib.analysis.field_scales import field_scales, offdiag_correlation, offdiag_cv, rescaled_R
from fmlib.analysis.interactions import (
    align_field_scales,
    budget,
    offdiag_error,
    percent_left,
    prune_mask,
    pruned_fwfm,
    r_fm,
    r_summary,
    with_R,
)
from fmlib.data import synthetic
from fmlib.models import build_model
from fmlib.models.dplr import dplr_matrix
from fmlib.train import TrainConfig, fit


def random_symmetric(m, seed=0):
    A = np.random.default_rng(seed).normal(size=(m, m))
    R = A + A.T
    np.fill_diagonal(R, 0)
    return R


def test_prune_keeps_exactly_the_budget_of_largest_magnitudes():
    R = random_symmetric(12)
    keep = budget(12, 2)
    P = prune(R, keep)
    upper = np.triu_indices(12, 1)
    kept = P[upper] != 0
    assert kept.sum() == keep == 26 and np.allclose(P, P.T)
    assert np.abs(R[upper][kept]).min() >= np.abs(R[upper][~kept]).max()
    assert np.array_equal(P[upper][kept], R[upper][kept])
    assert np.array_equal(prune_mask(R, keep), P != 0)


@pytest.mark.parametrize("keep", [0, -3, 67, 1.5])
def test_bad_budget_is_refused(keep):
    with pytest.raises(ValueError, match=r"budget must be an integer in 1..m\(m−1\)/2 = 1..66"):
        prune(random_symmetric(12), keep)


def test_percent_left_matches_table1():
    """DPLR Table 1 prints % left = 100·2ρ(m+1)/(m(m−1)): MovieLens m = 11, Criteo m = 39."""
    assert [round(percent_left(11, budget(11, r)), 2) for r in (1, 2)] == [21.82, 43.64]
    assert [round(percent_left(39, budget(39, r)), 2) for r in range(1, 6)] == [5.40, 10.80, 16.19, 21.59, 26.99]
    assert budget(39, 5) == 200  # App. C: "top 200 entries (same number of parameters as rank 5)"


@pytest.mark.parametrize("rank", [0, 12, 2.5])
def test_bad_rank_is_refused(rank):
    with pytest.raises(ValueError, match="rank ρ must be an integer in 1..m−1 = 1..11"):
        dplr_posthoc(random_symmetric(12), rank)


def test_r_fm_spectrum():
    """§4.1: R_FM = 11ᵀ − I has eigenvalues {m−1, −1, …, −1}: full rank, yet DPLR of rank 1."""
    m = 9
    assert np.allclose(spectrum(r_fm(m)), [m - 1] + [-1] * (m - 1))
    assert np.linalg.matrix_rank(r_fm(m)) == m


def test_posthoc_recovers_R_fm_where_plain_truncation_does_not():
    R = r_fm(10)
    lam, Q = np.linalg.eigh(R)
    plain = lam[-1] * np.outer(Q[:, -1], Q[:, -1])  # the plain truncated eigendecomposition
    assert np.allclose(plain[0, 1], 9 / 10)
    assert offdiag_error(dplr_posthoc(R, 1).R, R) < 1e-10


@pytest.mark.parametrize("m, rank, seed", [(10, 1, 0), (12, 2, 1), (16, 3, 2), (20, 2, 3)])
@pytest.mark.parametrize("method", ["eig", "nuclear"])
def test_posthoc_recovers_an_exact_dplr_matrix(m, rank, seed, method):
    gen = torch.Generator().manual_seed(seed)
    U = torch.randn(rank, m, generator=gen, dtype=torch.float64)
    e = (0.5 + 1.5 * torch.rand(rank, generator=gen, dtype=torch.float64)) * torch.tensor([1.0, -1.0, 1.0][:rank])
    R = dplr_matrix(U, e).numpy()
    fit = dplr_posthoc(R, rank, method)
    assert offdiag_error(fit.R, R) < 1e-6
    assert np.allclose(np.diag(fit.R), 0)


def test_posthoc_of_block_R():
    R = synthetic.block_R(16, blocks=3).double().numpy()
    assert offdiag_error(dplr_posthoc(R, 3).R, R) < 1e-8


def test_nuclear_never_worse_than_eig_in_nuclear_norm():
    R = random_symmetric(10, seed=4)
    eig, nuc = dplr_posthoc(R, 2, "eig"), dplr_posthoc(R, 2, "nuclear")

    def nuclear(fit):
        return spectrum(fit.R - R, "singular").sum()

    assert nuclear(nuc) <= nuclear(eig) + 1e-12


def test_von_neumann_bound_of_appendix_c():
    """|Tr(Vᵀ E V)| ≤ Σ λ_i(VVᵀ) σ_i(E), both sorted descending (App. C)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        V, E = rng.normal(size=(8, 4)), random_symmetric(8, int(rng.integers(1000)))
        bound = (np.sort(np.linalg.eigvalsh(V @ V.T))[::-1] * spectrum(E, "singular")).sum()
        assert abs(np.trace(V.T @ E @ V)) <= bound + 1e-9


def test_spectrum_kinds():
    R = random_symmetric(6)
    assert np.allclose(spectrum(R, "singular"), np.sort(np.abs(np.linalg.eigvalsh(R)))[::-1])
    assert np.all(np.diff(spectrum(R)) <= 0)
    with pytest.raises(ValueError, match="kind must be one of"):
        spectrum(R, "trace")
    with pytest.raises(ValueError, match="symmetric"):
        spectrum(np.arange(9.0).reshape(3, 3))


def test_interaction_matrix_of_models(small_split):
    fwfm = build_model("fwfm", small_split.schema)
    assert np.allclose(interaction_matrix(fwfm), r_fm(6))
    dplr = build_model("dplr", small_split.schema, rank=2)
    assert interaction_matrix(dplr).shape == (6, 6)
    with pytest.raises(ValueError, match="has no field interaction matrix R"):
        interaction_matrix(build_model("fm", small_split.schema))


def test_align_field_scales_undoes_a_rescaling():
    R = synthetic.block_R(10, 2).double().numpy()
    c = np.random.default_rng(0).normal(size=10) * 2
    assert offdiag_error(align_field_scales(R / np.outer(c, c), R), R) < 1e-8


def test_pruned_fwfm_keeps_its_zeros_while_fine_tuned(small_split):
    torch.manual_seed(0)
    fwfm = build_model("fwfm", small_split.schema, dim=4)
    with torch.no_grad():
        fwfm.r_upper.normal_()
    pruned = pruned_fwfm(fwfm, 5)
    before = interaction_matrix(pruned)
    fit(pruned, small_split.train, small_split.valid, TrainConfig(epochs=2, lr=1e-2))
    after = interaction_matrix(pruned)
    assert np.array_equal(before == 0, after == 0) and (after != 0).sum() == 10
    assert not np.allclose(before, after)
    assert np.allclose(interaction_matrix(with_R(fwfm, before)), before)


def test_rescaled_R_with_field_embeddings_divided_by_their_scales_predicts_the_same(small_split):
    torch.manual_seed(7)
    fwfm = build_model("fwfm", small_split.schema, dim=3, init_std=0.5)
    with torch.no_grad():
        fwfm.r_upper.normal_()
    data = small_split.train
    s = field_scales(fwfm, data)
    e = fwfm.field_embeddings(data.index, data.weight).detach().double()
    assert np.allclose(s, e.pow(2).sum(-1).mean(0).sqrt().numpy())
    R2 = torch.as_tensor(rescaled_R(fwfm.R.detach().double().numpy(), s))
    e2 = e / torch.as_tensor(s)[None, :, None]
    assert np.allclose(e2.pow(2).sum(-1).mean(0).numpy(), 1.0), "unit RMS norm after rescaling"
    before = 0.5 * ((e @ e.transpose(1, 2)) * fwfm.R.detach().double()).sum((1, 2))
    after = 0.5 * ((e2 @ e2.transpose(1, 2)) * R2).sum((1, 2))
    assert torch.allclose(before, after)
    with pytest.raises(ValueError, match="positive scales"):
        rescaled_R(np.eye(3), [1.0, 0.0, 1.0])


def test_offdiag_statistics():
    R = synthetic.block_R(6, 2).double().numpy()
    assert offdiag_correlation(R, 2 * R + 1) == pytest.approx(1.0)
    upper = R[np.triu_indices(6, 1)]
    assert offdiag_cv(R) == pytest.approx(upper.std() / abs(upper.mean()))


@pytest.mark.parametrize("name,hp", [("fwfm", {}), ("dplr", {"rank": 2})])
def test_quick_run_recovers_a_planted_R_with_blocks_of_both_signs(name, hp):
    """The page's quick run on planted data finds R (after field scales and signs are aligned)."""
    from fmlib.data import split
    from fmlib.train import quick_settings, train_model

    R0 = synthetic.block_R(8, blocks=3).double().numpy()
    assert R0.min() < 0 < R0.max()
    data = split(synthetic.make(torch.as_tensor(R0).float(), n_samples=4000, cardinality=20, seed=0), seed=0)
    config, quick_hp = quick_settings("synthetic")
    run = train_model(name, data, config, **quick_hp, **hp)
    learned = interaction_matrix(run.model)
    assert offdiag_correlation(align_field_scales(learned, R0), R0) >= 0.95
    assert (
        offdiag_correlation(align_field_scales(learned, R0), R0)
        > offdiag_correlation(align_field_scales(r_fm(8), R0), R0) + 0.1
    )


def test_deviation_heatmap_draws_R_minus_R_fm_on_a_scale_fitted_to_it():
    from fmlib.plots.interactions import deviation_heatmap

    R = r_fm(4) + 0.01 * random_symmetric(4)
    (trace,) = deviation_heatmap(R, list("abcd")).data
    z = np.array(trace.z, dtype=float)
    off = ~np.eye(4, dtype=bool)
    assert np.allclose(z[off], (R - r_fm(4))[off]) and np.isnan(z[~off]).all()
    assert trace.zmax == -trace.zmin == pytest.approx(np.abs(z[off]).max())


def test_a_pickable_figure_names_the_pair_of_every_cell_and_the_pair_is_outlined_in_every_heatmap():
    from fmlib.plots.interactions import PAIR_OUTLINE, interaction_heatmaps, pickable, picked_pair, with_pair

    names = list("abcd")
    R = random_symmetric(4)
    fig = with_pair(pickable(interaction_heatmaps({"R": R, "pruned": prune(R, 2)}, names)), "b", "d")
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    markers = [t for t in fig.data if t.type == "scatter"]
    assert len(heatmaps) == len(markers) == 2 and all(t.hoverinfo == "skip" for t in heatmaps)
    for heat, marker in zip(heatmaps, markers):
        assert (marker.xaxis, marker.yaxis) == (heat.xaxis or "x", heat.yaxis or "y") and marker.marker.opacity == 0
        cells = {(f, g): z for f, g, z in marker.customdata}
        assert len(cells) == 16 and cells["b", "d"] == pytest.approx(np.asarray(heat.z)[1, 3])
    shapes = [(s.xref, s.x0, s.y0) for s in fig.layout.shapes]  # (d, b) at column 3, row 1 and its mirror
    assert sorted(shapes) == sorted(
        (axis, x - 0.5, y - 0.5) for axis in ("x", "x2") for x, y in ((3, 1), (1, 3)) for _ in PAIR_OUTLINE
    )
    assert picked_pair([]) is None and picked_pair(None) is None
    # the markers' padding leaves no empty strip: each heatmap's axes span its 4 cells, rows top down
    assert [fig.layout[axis].range for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2")] == [(-0.5, 3.5), (3.5, -0.5)] * 2
    assert picked_pair([{"x": "d", "y": "b", "customdata": ["b", "d", 0.3]}]) == ("b", "d")


def test_a_pickable_figure_leaves_blank_cells_out_and_a_blank_diagonal_keeps_one_colour_scale():
    from fmlib.plots.interactions import deviation_heatmap, pickable, toy_heatmaps

    fig = pickable(deviation_heatmap(random_symmetric(4), list("abcd")))  # its diagonal is NaN
    (marker,) = [t for t in fig.data if t.type == "scatter"]
    assert len(marker.customdata) == 12 and all(f != g for f, g, _ in marker.customdata)
    toy = toy_heatmaps({"R": random_symmetric(4), "half": random_symmetric(4) / 2}, list("abcd"), "A toy")
    limits = {(t.zmin, t.zmax) for t in toy.data}
    assert len(limits) == 1 and all(np.isfinite(limit) for limit in next(iter(limits)))
    assert all(np.isnan(np.asarray(t.z, dtype=float).diagonal()).all() for t in toy.data)


def test_r_summary_names_the_range_the_spread_and_the_strongest_and_weakest_pair():
    R = r_fm(4)
    R[0, 1] = R[1, 0] = 1.9  # a × b: the strongest
    R[2, 3] = R[3, 2] = 0.92  # c × d: the weakest
    upper = R[np.triu_indices(4, 1)]
    assert r_summary(R, list("abcd")) == (
        f"R runs from 0.92 to 1.90 where an FM has 1 on every pair (std {upper.std():.2g} over the 6 pairs); "
        "the strongest pair: a × b (1.90), the weakest: c × d (0.92)."
    )


def test_r_summary_says_when_R_stays_close_to_the_fms_one_with_its_numbers():
    R = r_fm(4) + 0.01 * random_symmetric(4)  # every |R_fg − 1| well below 0.05
    distance = np.abs(R - 1)[np.triu_indices(4, 1)].max()
    text = r_summary(R, list("abcd"), "the tuned FwFM")
    assert text.startswith(f"R stays within {distance:.2g} of the FM's 1 on every pair (std ")
    assert text.endswith("over the 6 pairs): the tuned FwFM is close to an FM on this data.")
    assert r_summary(r_fm(3), list("abc")).startswith("R stays within 0 of the FM's 1")
    assert r_summary(R, list("abcd"), tolerance=distance / 2).startswith("R runs from")


def test_r_heatmaps_share_one_scale_centred_on_the_fms_one_with_the_diagonal_blank():
    from fmlib.plots.interactions import r_heatmaps

    R = r_fm(4) + 0.1 * random_symmetric(4)
    pruned = prune(R, 3)  # its zeros are the largest departure from 1
    fig = r_heatmaps({"learned R": R, "pruned": pruned}, list("abcd"))
    spread = max(np.abs(M - 1)[~np.eye(4, dtype=bool)].max() for M in (R, pruned))
    assert [(t.zmin, t.zmax) for t in fig.data] == [pytest.approx((1 - spread, 1 + spread))] * 2
    assert all(np.isnan(np.asarray(t.z, dtype=float).diagonal()).all() for t in fig.data)
    assert "the FM's 1" in fig.layout.title.text
    alone = r_heatmaps({"learned R": R}, list("abcd")).data[0]
    near = np.abs(R - 1)[~np.eye(4, dtype=bool)].max()
    assert (alone.zmin, alone.zmax) == pytest.approx((1 - near, 1 + near)), "fitted to the data"


def test_short_field_names_fit_their_width_read_apart_and_fall_back_to_the_full_names():
    from fmlib.plots.interactions import short_names

    names = ["user_id", "occupation", "time_weekday", "time_year", "release_year", "genres"]
    assert short_names(names) == ["user", "occupa.", "t.week.", "t.year", "r.year", "genres"]
    assert short_names(["time_year", "tall_year"]) == ["time_year", "tall_year"], "t.year twice: the full names"


def test_the_rooms_r_heatmaps_label_each_field_shortly_and_keep_its_full_name_for_the_hover():
    from fmlib.plots.interactions import room_r_heatmaps, short_names

    names = ["user_id", "movie_id", "time_weekday", "genres"]
    fig = room_r_heatmaps({"learned R": r_fm(4), "pruned": prune(r_fm(4), 2)}, names, tick_size=12)
    axes = [fig.layout[axis] for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2")]
    assert all(list(axis.tickvals) == names and list(axis.ticktext) == short_names(names) for axis in axes)
    assert all(axis.tickfont.size == 12 and not axis.title.text for axis in axes)
    assert all(list(t.x) == names and list(t.y) == names for t in fig.data), "a cell's hover names the fields in full"
