"""RaFM: Theorem 3 against the naive definition, storage (Prop. 1), the FM special case,
Algorithm 1's gradient routing, bad input, save/load."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from fmlib.data.schema import Schema
from fmlib.models import build_model, model_name
from fmlib.models.rafm import ColumnPairs, RaFM

SCHEMA = Schema.build(
    [
        ("a", "context", "single", 6, 1),
        ("b", "context", "single", 5, 1),
        ("c", "item", "single", 7, 1),
        ("g", "item", "multi", 6, 3),
    ]
)
RANK_SETS = {2: (2, 5), 3: (2, 4, 7), 4: (1, 3, 6, 10)}


def random_batch(schema, n=24, seed=0):
    """Random rows of every field; a multi-valued field gets 1..slots distinct values, weight 1/len."""
    gen = torch.Generator().manual_seed(seed)
    cols, wts = [], []
    for f in schema.fields:
        idx = torch.stack([f.offset + torch.randperm(f.cardinality, generator=gen)[: f.slots] for _ in range(n)])
        lengths = torch.randint(1, f.slots + 1, (n, 1), generator=gen)
        cols.append(idx)
        wts.append((torch.arange(f.slots) < lengths).float() / lengths)
    return torch.cat(cols, 1), torch.cat(wts, 1)


def counts_for(ranks, seed=0, schema=SCHEMA):
    """Counts that put features at every rank level (and a few at zero occurrences)."""
    gen = np.random.default_rng(seed)
    return gen.choice([0, 1, 3, 5, 9, 30, 100, 400], size=schema.num_features)


def make(ranks, seed=0, init_std=0.5, **kw):
    torch.manual_seed(seed)
    counts = kw.pop("counts", counts_for(ranks, seed))
    return RaFM(SCHEMA, ranks=ranks, init_std=init_std, **kw).set_counts(counts).double()


def naive_rafm(model, index, weight):
    """Eqs. 1, 4, 5 literally: every pair of slots in different fields, at rank k_ij = min(k_i, k_j)."""
    tables = [model.embedding_table(p) for p in range(1, len(model.ranks) + 1)]
    k = model.k
    fields = SCHEMA.slot_fields()
    out = []
    for b in range(index.shape[0]):
        total = model.bias[0] + sum(model.linear.weight[index[b, s], 0] * weight[b, s] for s in range(len(fields)))
        for s, t in itertools.combinations(range(len(fields)), 2):
            if fields[s] == fields[t] or weight[b, s] == 0 or weight[b, t] == 0:
                continue
            i, j = index[b, s], index[b, t]
            kij = int(min(k[i], k[j]))
            total = total + tables[kij - 1][i] @ tables[kij - 1][j] * weight[b, s] * weight[b, t]
        out.append(total)
    return torch.stack(out)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_theorem_3_recursion_equals_the_naive_definition(m):
    model = make(RANK_SETS[m], seed=m).eval()
    with torch.no_grad():
        model.linear.weight.normal_()
    assert len(set(model.k.tolist())) == m, "every rank level is used"
    index, weight = random_batch(SCHEMA, seed=m)
    assert torch.allclose(model(index, weight), naive_rafm(model, index, weight), atol=1e-10)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_dense_evaluation_equals_the_sparse_one_and_the_naive_definition(m):
    """``predict_dense`` (the GPU's: every level read for every sample) is the same score as
    ``predict`` (Corollary 4's cost) and as eqs. 1, 4, 5 literally."""
    model = make(RANK_SETS[m], seed=10 + m).eval()
    with torch.no_grad():
        model.linear.weight.normal_()
        index, weight = random_batch(SCHEMA, seed=10 + m)
        dense, sparse = model.predict_dense(index, weight), model.predict(index, weight)
    assert torch.allclose(dense, sparse, atol=1e-10)
    assert torch.allclose(dense, naive_rafm(model, index, weight), atol=1e-10)


def test_kept_evaluation_tables_follow_every_change_of_the_parameters():
    """The tables kept between evaluation calls are rebuilt after an in-place change, a
    ``load_state_dict``, and a fused Adam step (which leaves no version trace) followed by
    ``eval()``; the scores always equal those of a model built afresh from the same state."""
    from fmlib.optim import Adam

    model = make(RANK_SETS[3], seed=7).eval()
    index, weight = random_batch(SCHEMA, seed=7)

    def fresh():
        twin = make(RANK_SETS[3], seed=7).eval()
        twin.load_state_dict(model.state_dict())
        return twin.predict(index, weight), twin.predict_dense(index, weight)

    def check():
        with torch.no_grad():
            now = model.predict(index, weight), model.predict_dense(index, weight)
        for got, want in zip(now, fresh()):
            assert torch.allclose(got, want, atol=1e-12)

    check()
    with torch.no_grad():
        model.free[-1].mul_(2.0)  # in place
    check()
    model.load_state_dict({k: v + 0.1 if v.is_floating_point() else v for k, v in model.state_dict().items()})
    check()
    optimizer = Adam([{"params": list(model.parameters())}], lr=0.1)
    model.train()
    model.loss(index, weight, torch.zeros(len(index), dtype=torch.float64), nn.MSELoss()).backward()
    optimizer.step()
    model.eval()
    check()


def naive_B(model, index, weight, l, k):
    """Eq. 8: Σ_{pairs} v^(c)·v^(c) x x with c = max(l, min(k, k_ij)), one sample at a time."""
    tables = [model.embedding_table(p) for p in range(1, len(model.ranks) + 1)]
    fields = SCHEMA.slot_fields()
    out = torch.zeros(index.shape[0], dtype=torch.float64)
    for b in range(index.shape[0]):
        for s, t in itertools.combinations(range(len(fields)), 2):
            if fields[s] != fields[t]:
                i, j = index[b, s], index[b, t]
                c = max(l, min(k, int(min(model.k[i], model.k[j]))))
                out[b] += tables[c - 1][i] @ tables[c - 1][j] * weight[b, s] * weight[b, t]
    return out


def test_every_B_1p_is_eq_8():
    """The intermediate B_{1,p} of the recursion are eq. 8 for every p (RaFM-low is B_{1,1})."""
    model = make(RANK_SETS[3], seed=5).eval()
    index, weight = random_batch(SCHEMA, n=8, seed=5)
    with torch.no_grad():
        for p, B in enumerate(model.interactions(index, weight), 1):
            assert torch.allclose(B, naive_B(model, index, weight, 1, p), atol=1e-10)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_stored_parameters_are_sum_of_D_k_times_F_k(m):
    ranks = RANK_SETS[m]
    model = make(ranks, seed=m)
    k = model.k.numpy()
    expected = sum(D * int((k >= p).sum()) for p, D in enumerate(ranks, 1))
    embeddings = sum(p.numel() for name, p in model.named_parameters() if name.startswith(("free", "dependent")))
    assert embeddings == expected == int(np.dot(ranks, model.feature_set_sizes()))
    assert sum(p.numel() for p in model.parameters()) == expected + SCHEMA.num_features + 1
    for p in range(1, m + 1):  # inactive factors are zero rows of the dense view, active ones are stored
        table = model.embedding_table(p)
        assert torch.all(table[model.k < p] == 0) and torch.all(table[model.k >= p].abs().sum(1) > 0)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_equal_ranks_give_the_fm_of_that_rank(level):
    ranks = RANK_SETS[3]
    counts = np.full(SCHEMA.num_features, ranks[level - 1])  # eq. 17: log n_i = log D_level for every i
    model = make(ranks, counts=counts).eval()
    assert torch.all(model.k == level)
    fm = build_model("fm", SCHEMA, dim=ranks[level - 1]).double()
    with torch.no_grad():
        fm.embedding.weight.copy_(model.embedding_table(level))
        fm.linear.weight.copy_(model.linear.weight.normal_())
        fm.bias.copy_(model.bias.fill_(0.3))
    index, weight = random_batch(SCHEMA, seed=level)
    assert torch.allclose(model(index, weight), fm(index, weight), atol=1e-10)


# ---- Algorithm 1 ---------------------------------------------------------------------------
def stored_vector(model, p, row, grad=False):
    """The stored v_row^(p) (or its gradient): in free[p−1] if k_row = p (or p = m), else in dependent[p−1]."""
    pos, n_free = int(model.level_pos[p - 1, row]), model.free[p - 1].shape[0]
    assert model.k[row] >= p, "inactive factor"
    param = model.free[p - 1] if pos < n_free else model.dependent[p - 1]
    return (param.grad if grad else param)[pos if pos < n_free else pos - n_free]


TINY = Schema.build([("a", "context", "single", 2, 1), ("b", "context", "single", 2, 1), ("c", "item", "single", 2, 1)])


def test_algorithm_1_gradients_by_hand():
    """Ranks (1, 2); a and b frequent (k = 2), c rare (k = 1); one sample (a, b, c), y = 0.

    B_{1,2} = v_a^(2)·v_b^(2) + v_a^(1) v_c^(1) + v_b^(1) v_c^(1),  B_{1,1} = all three pairs at rank 1.
    Free: v_c^(1), v_a^(2), v_b^(2), w, w0 — step on L(ŷ_2, y) = (ŷ_2 − y)².
    Dependent: v_a^(1), v_b^(1) — step on c·(ŷ_1 − ŷ_2)² with ŷ_2 held fixed.
    """
    counts = [0, 100, 0, 100, 1, 0]  # rows: a0 a1 b0 b1 c0 c1; the sample uses a1, b1, c0
    model = RaFM(TINY, ranks=(1, 2), consistency=0.5).set_counts(counts).double()
    assert model.k.tolist() == [1, 2, 1, 2, 1, 1]
    assert model.free[0].shape[0] == 4 and model.dependent[0].shape[0] == 2 and model.free[1].shape[0] == 2
    va1, vb1, vc1, va2, vb2 = 0.3, -0.7, 1.1, [0.2, 0.5], [-0.4, 0.9]
    wa, wb, wc, w0 = 0.1, 0.2, -0.3, 0.05
    with torch.no_grad():
        for p, row, value in [(1, 1, [va1]), (1, 3, [vb1]), (1, 4, [vc1]), (2, 1, va2), (2, 3, vb2)]:
            stored_vector(model, p, row)[:] = torch.tensor(value, dtype=torch.float64)
        model.linear.weight[[1, 3, 4], 0] = torch.tensor([wa, wb, wc], dtype=torch.float64)
        model.bias.fill_(w0)
    index, weight, y = (
        torch.tensor([[1, 3, 4]]),
        torch.ones(1, 3, dtype=torch.float64),
        torch.zeros(1, dtype=torch.float64),
    )

    lin = w0 + wa + wb + wc
    y2 = lin + float(np.dot(va2, vb2)) + va1 * vc1 + vb1 * vc1
    y1 = lin + va1 * vb1 + va1 * vc1 + vb1 * vc1
    g, d = 2 * (y2 - 0.0), 2 * 0.5 * (y1 - y2)  # ∂L/∂ŷ_2 and c·∂(ŷ_1 − ŷ_2)²/∂ŷ_1

    model.train()
    criterion = nn.MSELoss()
    out = model(index, weight)
    assert out.item() == pytest.approx(y2)
    model.loss(index, weight, y, criterion).backward()

    def grad_of(row, p):
        return stored_vector(model, p, row, grad=True)

    assert grad_of(4, 1).item() == pytest.approx(g * (va1 + vb1))  # v_c^(1): free
    assert grad_of(1, 2).tolist() == pytest.approx([g * x for x in vb2])  # v_a^(2): free
    assert grad_of(3, 2).tolist() == pytest.approx([g * x for x in va2])  # v_b^(2): free
    assert grad_of(1, 1).item() == pytest.approx(d * (vb1 + vc1))  # v_a^(1): dependent only
    assert grad_of(3, 1).item() == pytest.approx(d * (va1 + vc1))  # v_b^(1): dependent only
    assert model.linear.weight.grad[[1, 3, 4], 0].tolist() == pytest.approx([g] * 3)
    assert model.bias.grad.item() == pytest.approx(g)


PAIR = Schema.build([("user", "context", "single", 2, 1), ("movie", "item", "single", 2, 1)])


def rare_frequent_gradients(dependent_fits_target: bool, rows):
    """Ranks (1, 2) on two fields; user 0 and movie 0 rare (k = 1), user 1 and movie 1 frequent
    (k = 2). One training step's gradients on the samples ``rows`` ((user, movie) pairs), y = 0."""
    torch.manual_seed(0)
    model = RaFM(PAIR, ranks=(1, 2), init_std=0.5, dependent_fits_target=dependent_fits_target)
    model = model.set_counts([1, 100, 1, 100]).double()
    index = torch.tensor([[u, 2 + m] for u, m in rows])
    weight, y = torch.ones(len(rows), 2, dtype=torch.float64), torch.zeros(len(rows), dtype=torch.float64)
    model.train()
    criterion = nn.MSELoss()
    out = model(index, weight)
    model.loss(index, weight, y, criterion).backward()
    return model, out.detach()


def test_a_rare_times_frequent_rating_never_moves_the_frequent_features_low_rank_copy():
    """The mechanism behind RaFM trailing FM(D_h) on planted data (``fmlib.models.rafm``): on a sample
    pairing a rare and a frequent feature, B_{1,1} = B_{1,2}, so Algorithm 1's consistency term
    (eq. 12b) is zero there and the frequent feature's rank-D_1 copy v^(1) — the vector that pair
    is predicted with — gets no gradient from that rating. With the authors' routing
    (``dependent_fits_target``) it gets L(B_{1,2}, y)'s: 2 (ŷ − y) v_rare^(1) / batch."""
    mixed = [(0, 1), (1, 0)]  # (rare user, frequent movie), (frequent user, rare movie)
    model, _ = rare_frequent_gradients(False, mixed)
    assert model.dependent[0].grad.abs().max() == 0
    assert model.free[0].grad.abs().max() > 0  # the rare features' own v^(1) do learn
    model, out = rare_frequent_gradients(True, mixed)
    rare = model.free[0].detach()  # rows: user 0, movie 0 (k = 1, in row order)
    by_hand = torch.stack([2 * out[1] * rare[1], 2 * out[0] * rare[0]]) / len(mixed)  # user 1, movie 1
    assert torch.allclose(model.dependent[0].grad, by_hand, atol=1e-12)
    model, _ = rare_frequent_gradients(False, [(1, 1)])  # frequent × frequent: the consistency term acts
    assert model.dependent[0].grad.abs().min() > 0


def test_the_authors_routing_changes_gradients_only_not_the_model():
    """``dependent_fits_target`` leaves the score and the free variables' gradients alone (only the
    dependent ones change); it is kept in ``hparams`` so that a saved run rebuilds it (its counts
    travel with the weights)."""
    rows = [(0, 1), (1, 1), (1, 0), (0, 0)]
    printed, out = rare_frequent_gradients(False, rows)
    authors, out_authors = rare_frequent_gradients(True, rows)
    assert torch.equal(out, out_authors)
    for p in range(2):
        assert torch.allclose(printed.free[p].grad, authors.free[p].grad, atol=1e-12)
    assert printed.hparams()["dependent_fits_target"] is False and authors.hparams()["dependent_fits_target"] is True
    rebuilt = build_model("rafm", PAIR, **authors.hparams())
    rebuilt.load_state_dict(authors.state_dict())
    assert rebuilt.dependent_fits_target and rebuilt.k.tolist() == authors.k.tolist()


def test_algorithm_1_routing_matches_autograd_of_each_named_loss():
    """m = 3, a batch, click loss: each group's gradient is that of the one loss Algorithm 1 names,
    computed independently by autograd on the naive model (eqs. 1, 4, 5, 8)."""
    model = make(RANK_SETS[3], seed=7, init_std=0.3, consistency=0.7)
    index, weight = random_batch(SCHEMA, n=16, seed=7)
    y = (torch.rand(16, generator=torch.Generator().manual_seed(7)) > 0.5).double()
    criterion = nn.BCEWithLogitsLoss()
    model.train()
    model.loss(index, weight, y, criterion).backward()
    routed = {name: p.grad.clone() for name, p in model.named_parameters()}

    def grads(loss, names):
        params = dict(model.named_parameters())
        return dict(zip(names, torch.autograd.grad(loss, [params[n] for n in names], allow_unused=True)))

    model.eval()
    first = model.first_order(index, weight)
    free = ["bias", "linear.weight"] + [f"free.{p}" for p in range(3)]
    main = grads(criterion(first + naive_B(model, index, weight, 1, 3), y), free)
    for name in free:
        assert torch.allclose(routed[name], main[name], atol=1e-10), name
    for p in range(2):  # dependent v^(p+1)|F_{p+2}: c · L(B_{1,p+1}, B_{1,p+2} fixed)
        target = torch.sigmoid(first + naive_B(model, index, weight, 1, p + 2)).detach()
        low = first.detach() + naive_B(model, index, weight, 1, p + 1)
        dep = grads(0.7 * criterion(low, target), [f"dependent.{p}"])
        assert torch.allclose(routed[f"dependent.{p}"], dep[f"dependent.{p}"], atol=1e-10)


def test_every_parameter_is_registered_and_receives_gradient():
    model = make(RANK_SETS[3], seed=3, init_std=0.1).float()
    index, weight = random_batch(SCHEMA, n=64, seed=3)
    model.train()
    model.loss(index.long(), weight, torch.zeros(len(index)), nn.MSELoss()).backward()
    names = [n for n, _ in model.named_parameters()]
    assert {"free.0", "free.1", "free.2", "dependent.0", "dependent.1", "linear.weight", "bias"} <= set(names)
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name} gets no gradient"


def test_column_pairs_is_rendles_identity_per_column_with_its_gradient():
    """ColumnPairs (the training's A of every column, eq. 7) == the pair sum written out, and its
    memoised backward == autograd of that sum (gradcheck, float64)."""
    e = torch.randn(5, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    pairs = sum(e[:, f] * e[:, g] for f, g in itertools.combinations(range(4), 2))  # (B, C)
    assert torch.allclose(ColumnPairs.apply(e), pairs)
    assert torch.autograd.gradcheck(ColumnPairs.apply, (e,))


def test_a_training_forward_leaves_nothing_on_the_module():
    """The consistency terms live in ``loss``: a forward without a loss, or two in a row, is fine,
    and the module's attributes are the same before and after a training step's loss."""
    model = make(RANK_SETS[2]).train()
    index, weight = random_batch(SCHEMA, n=4)
    before = dict(vars(model))
    model(index, weight)
    model(index, weight)
    model.loss(index, weight, torch.zeros(4, dtype=torch.float64), nn.MSELoss()).backward()
    assert vars(model).keys() == before.keys() and all(vars(model)[k] is v for k, v in before.items())


def test_an_unprepared_model_says_what_it_needs():
    model = RaFM(SCHEMA, ranks=(2, 4))
    index, weight = random_batch(SCHEMA, n=4)
    with pytest.raises(ValueError, match=r"needs the occurrences n_i .*prepare"):
        model(index, weight.float())


def test_training_value_equals_evaluation_value():
    model = make(RANK_SETS[4], seed=4)
    index, weight = random_batch(SCHEMA, seed=4)
    train_out = model.train()(index, weight)
    assert torch.allclose(train_out, model.eval()(index, weight), atol=1e-12)


# ---- bad input, registry, save/load ----------------------------------------------------------
@pytest.mark.parametrize(
    "ranks, message",
    [
        ((32, 8), "strictly increasing"),
        ((8, 8), "strictly increasing"),
        ((0, 8), "positive"),
        ((-4, 8), "positive"),
        ((16,), "at least two ranks"),
        ((8.5, 16), "integers"),
        ("8,32", "list of integers"),
    ],
)
def test_bad_ranks_get_clear_messages(ranks, message):
    with pytest.raises(ValueError, match=message):
        RaFM(SCHEMA, ranks=ranks)


def test_bad_counts_get_clear_messages():
    with pytest.raises(ValueError, match="feature rows"):
        RaFM(SCHEMA).set_counts([1, 2, 3])
    with pytest.raises(ValueError, match="non-negative integers"):
        RaFM(SCHEMA).set_counts(-np.ones(SCHEMA.num_features))
    with pytest.raises(ValueError, match="zero occurrences"):
        RaFM(SCHEMA).set_counts(np.zeros(SCHEMA.num_features, dtype=int))
    with pytest.raises(ValueError, match="consistency"):
        RaFM(SCHEMA, consistency=-1.0)


def test_zero_occurrence_features_get_the_lowest_rank():
    counts = counts_for(RANK_SETS[3])
    model = RaFM(SCHEMA, ranks=RANK_SETS[3]).set_counts(counts)
    assert (counts == 0).any() and torch.all(model.k[torch.as_tensor(counts == 0)] == 1)


def test_save_and_load_round_trip(tmp_path):
    from fmlib.runs import RunStore
    from fmlib.train import Run

    model = make(RANK_SETS[3], seed=9).float().eval()
    assert model_name(model) == "rafm"
    run = Run(model=model, config={"model": "rafm", "hp": model.hparams(), "dataset": "synthetic"})
    assert "counts" not in run.config["hp"], "the counts are data: saved with the weights, not as a setting"
    loaded = RunStore(tmp_path).load(RunStore(tmp_path).save(run, "r"))
    index, weight = random_batch(SCHEMA, seed=9)
    assert loaded.model.hparams() == model.hparams() and torch.equal(loaded.model.counts, model.counts)
    assert torch.equal(loaded.model(index, weight.float()), model(index, weight.float()))


def test_a_run_saved_with_the_counts_in_its_settings_still_loads(tmp_path):
    """The old format: the counts as a list in run.json's hp, the weights without a counts entry."""
    import json

    from safetensors.torch import load_file, save_file

    from fmlib.runs import RunStore
    from fmlib.train import Run

    model = make(RANK_SETS[3], seed=9).float().eval()
    store = RunStore(tmp_path)
    run_id = store.save(
        Run(model=model, config={"model": "rafm", "hp": model.hparams(), "dataset": "synthetic"}), "old"
    )
    meta_path, weights_path = tmp_path / run_id / "run.json", tmp_path / run_id / "model.safetensors"
    meta = json.loads(meta_path.read_text())
    meta["config"]["hp"] = {"ranks": list(RANK_SETS[3]), "consistency": 1.0, "counts": model.counts.tolist()}
    meta_path.write_text(json.dumps(meta))
    weights = {k: v for k, v in load_file(weights_path).items() if k != "counts"}
    save_file(weights, weights_path)
    loaded = store.load(run_id)
    index, weight = random_batch(SCHEMA, seed=9)
    assert torch.equal(loaded.model.counts, model.counts) and torch.equal(loaded.model.k, model.k)
    assert torch.equal(loaded.model(index, weight.float()), model(index, weight.float()))


def test_fmlib_fit_runs_algorithm_1(small_split):
    """Through the foundation's trainer: the dependent tables move only through the consistency terms
    of ``model.loss``; RaFM-low (B_{1,1}) then predicts far better than the mean."""
    from fmlib.experiments.rafm import LevelOutput
    from fmlib.train import TrainConfig, evaluate, fit

    schema = small_split.schema
    counts = np.where(np.arange(schema.num_features) % 2 == 0, 200, 1)  # half the rows at each level
    torch.manual_seed(0)
    model = RaFM(schema, ranks=(2, 4)).set_counts(counts)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    fit(model, small_split.train, small_split.valid, TrainConfig(epochs=10, lr=5e-2, seed=0))
    for name, p in model.named_parameters():
        assert not torch.equal(p, before[name]), f"{name} did not train"
    mean_only = float((small_split.valid.rating - small_split.train.rating.mean()).pow(2).mean().sqrt())
    assert evaluate(LevelOutput(model, 1), small_split.valid, "rating")["rmse"] < 0.8 * mean_only
