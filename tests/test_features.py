"""Feature sets by name and the relation blocks rated/raters: parsing, no leakage, every model
against a naive FM input x, the Bayesian FM's block draws against brute force, the CLI."""

import itertools

import numpy as np
import pytest
import torch

from fmlib.cli import main
from fmlib.data import Dataset, split
from fmlib.data.features import parse_features, with_features
from fmlib.data.schema import Schema
from fmlib.models import build_model
from fmlib.models.bfm import SWEEPS, BlockDesign, designs, fm_predict

USERS, MOVIES, GENRES = 9, 12, 4
SCHEMA = Schema.build(
    [
        ("user_id", "context", "single", USERS + 1, 1),
        ("time_hour", "context", "single", 5, 1),
        ("movie_id", "item", "single", MOVIES + 1, 1),
        ("genres", "item", "multi", GENRES + 1, 2),
    ]
)


def ratings(n=90, seed=0) -> Dataset:
    """Distinct (user, movie) pairs with an hour and one or two genres, as MovieLens has."""
    gen = torch.Generator().manual_seed(seed)
    pairs = torch.randperm(USERS * MOVIES, generator=gen)[:n]
    user, movie = 1 + pairs // MOVIES, 1 + pairs % MOVIES
    u, h, m, g = SCHEMA.fields
    index = torch.stack(
        [
            u.offset + user,
            h.offset + torch.randint(1, 5, (n,), generator=gen),
            m.offset + movie,
            g.offset + 1 + movie % GENRES,
            g.offset + 1 + (movie + 1) % GENRES,
        ],
        1,
    )
    counts = (1 + movie % 2).to(torch.uint8)[:, None]  # odd movies have two genres
    return Dataset(SCHEMA, index, None, torch.rand(n, generator=gen) * 4 + 1, counts=counts)


@pytest.fixture(scope="module")
def parts():
    return with_features(split(ratings(), seed=3), "all,rated,raters")


def test_names_choose_fields_in_order_and_all_expands():
    assert parse_features("movie_id, user_id", SCHEMA) == ["movie_id", "user_id"]
    assert parse_features("all,rated", SCHEMA) == [*SCHEMA.names, "rated"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("user_id,age", "unknown feature 'age'; this dataset has: all, user_id, time_hour, movie_id, genres, rated"),
        ("all,genres", "named twice"),
        ("movie_id,rated", "add user_id to the feature set"),
        ("rated", "at least one field of user_id, time_hour"),
        ("", "unknown feature ''"),
    ],
)
def test_bad_feature_sets_say_what_exists(text, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        parse_features(text, SCHEMA)


def test_a_chosen_field_keeps_its_values_in_its_new_rows():
    data = split(ratings(), seed=3)
    mf = with_features(data, "movie_id,user_id")
    assert mf.schema.names == ["movie_id", "user_id"] and mf.train.index.shape[1] == 2
    for part, old in ((mf.train, data.train), (mf.test, data.test)):
        for column, name in enumerate(mf.schema.names):
            new_field, old_field = mf.schema.field(name), data.schema.field(name)
            old_column = data.schema.names.index(name)
            torch.testing.assert_close(
                part.index[:, column] - new_field.offset, old.index[:, old_column] - old_field.offset
            )
    assert with_features(data, "all") is data


def test_blocks_hold_the_training_pairs_only(parts):
    """rated(u) is exactly the movies u rated in train, raters(m) the users who rated m there: no
    validation or test rating is in its own user's or movie's set."""
    schema = parts.schema
    user, movie = schema.names.index("user_id"), schema.names.index("movie_id")
    u_off, m_off = schema.field("user_id").offset, schema.field("movie_id").offset

    def sets(name):
        f = schema.field(name)
        return [set(f.members[f.starts[k] : f.starts[k + 1]]) for k in range(len(f.starts) - 1)]

    rated, raters = sets("rated"), sets("raters")
    train_pairs = {(int(a) - u_off, int(b) - m_off) for a, b in parts.train.index[:, [user, movie]]}
    assert {(u, m) for u, s in enumerate(rated) for m in s} == train_pairs
    assert {(u, m) for m, s in enumerate(raters) for u in s} == train_pairs
    for part in (parts.valid, parts.test):
        for a, b in part.index[:, [user, movie]].tolist():
            assert b - m_off not in rated[a - u_off] and a - u_off not in raters[b - m_off]


def naive_x(schema, index, weight) -> list[torch.Tensor]:
    """The FM input x of every field, (B, n) each, written out: a block's row holds 1/√|set| at
    each member of the sample's key's set ([Koren2008] eq. 15)."""
    first = np.cumsum([0] + [f.slots for f in schema.fields])
    xs = []
    for j, f in enumerate(schema.fields):
        x = torch.zeros(len(index), schema.num_features, dtype=torch.float64)
        if f.kind == "block":
            key = schema.field(f.key)
            for b, k in enumerate((index[:, first[schema.names.index(f.key)]] - key.offset).tolist()):
                members = f.members[f.starts[k] : f.starts[k + 1]]
                for member in members:
                    x[b, f.offset + member] = len(members) ** -0.5
        else:
            x.scatter_add_(1, index[:, first[j] : first[j + 1]], weight[:, first[j] : first[j + 1]].double())
        xs.append(x)
    return xs


def naive_score(model, xs, R=None) -> torch.Tensor:
    """w0 + Σ_f x_f w + Σ_{f<g} R_fg ⟨x_f V, x_g V⟩ (DPLR eq. 3; R = 1 for an FM)."""
    V, w = model.embedding.weight.double(), model.linear.weight.double()[:, 0]
    e = [x @ V for x in xs]
    m = len(xs)
    R = torch.ones(m, m, dtype=torch.float64) if R is None else R.double()
    pairs = sum(R[f, g] * (e[f] * e[g]).sum(1) for f in range(m) for g in range(f + 1, m))
    return model.bias.double() + sum(x @ w for x in xs) + pairs


@pytest.mark.parametrize("name", ["fm", "fwfm", "dplr"])
def test_models_with_blocks_match_the_written_out_input(parts, name):
    torch.manual_seed(0)
    model = build_model(name, parts.schema, dim=3)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    index, weight = parts.valid.batch(slice(0, 25))
    xs = naive_x(parts.schema, index, weight)
    R = None if name == "fm" else model.R.detach()
    model.train()
    fast = model(index, weight)
    torch.testing.assert_close(fast.double(), naive_score(model, xs, R).detach(), rtol=1e-4, atol=1e-4)
    fast.sum().backward()  # the training path (FM: the memoised backward pass) against autograd of the naive sum
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    naive_score(model, xs, R if R is None else model.R).sum().backward()
    for p, g in zip(model.parameters(), grads):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(index, weight), fast.detach())


@pytest.mark.parametrize("name", ["fm", "fwfm", "dplr", "rfm"])
def test_block_rows_are_trained(parts, name):
    model = build_model(name, parts.schema)
    model(*parts.train.batch(slice(0, 64))).pow(2).sum().backward()
    rated = parts.schema.field("rated")
    assert model.embedding.weight.grad[rated.offset + 1 : rated.offset + rated.cardinality].abs().sum() > 0
    for pname, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{pname} gets no gradient"


def test_block_members_count_the_samples_whose_set_holds_them(parts):
    xs = naive_x(parts.schema, parts.train.index, parts.train.weight)
    written_out = sum((x > 0).long() for x in xs).sum(0).numpy()
    np.testing.assert_array_equal(parts.train.feature_counts(), written_out)


def naive_rafm(model, xs) -> torch.Tensor:
    """RaFM eqs. 1, 4, 5 on the written-out input: every pair of features of different fields, at
    rank k_ij = min(k_i, k_j), weighted x_i x_j."""
    tables = [model.embedding_table(p).double() for p in range(1, len(model.ranks) + 1)]
    w = model.linear.weight.double()[:, 0]
    scores = []
    for b in range(len(xs[0])):
        active = [(f, i, x[b, i]) for f, x in enumerate(xs) for i in x[b].nonzero()[:, 0].tolist()]
        total = model.bias.double()[0] + sum(x[b] @ w for x in xs)
        for (f, i, xi), (g, j, xj) in itertools.combinations(active, 2):
            if f != g:
                kij = int(min(model.k[i], model.k[j]))
                total = total + tables[kij - 1][i] @ tables[kij - 1][j] * xi * xj
        scores.append(total)
    return torch.stack(scores)


def test_rafm_with_blocks_matches_the_written_out_input(parts):
    model = build_model("rafm", parts.schema, ranks=[2, 3], thresholds=[50])
    model.prepare(parts.train)
    for name in ("rated", "raters"):  # members at both ranks
        f = parts.schema.field(name)
        assert set(model.k[f.offset + 1 : f.offset + f.cardinality].tolist()) == {1, 2}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    index, weight = parts.valid.batch(slice(0, 20))
    xs = naive_x(parts.schema, index, weight)
    model.train()
    fast = model(index, weight)
    torch.testing.assert_close(fast.double(), naive_rafm(model, xs).detach(), rtol=1e-4, atol=1e-5)
    model.loss(index, weight, torch.zeros(len(index)), torch.nn.MSELoss()).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{pname} gets no gradient"
    model.zero_grad()
    model(index, weight).sum().backward()  # the free variables' gradient: the dependent ones are cut from L(B_{1,m}, y)
    free = [model.linear.weight, model.free[0], model.free[1]]
    grads = [p.grad.clone() for p in free]
    model.zero_grad()
    naive_rafm(model, xs).sum().backward()
    for p, g in zip(free, grads):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(index, weight), fast.detach(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model.predict_dense(index, weight), fast.detach(), rtol=1e-5, atol=1e-5)


def test_block_design_products_match_the_written_out_columns(parts):
    index, weight = parts.train.index.numpy(), parts.train.weight.numpy()
    fields = designs(parts.schema, index, weight)
    xs = naive_x(parts.schema, parts.train.index, parts.train.weight)
    rng = np.random.default_rng(0)
    for f, x in zip(fields, xs):
        X = x.numpy()[:, f.features]
        theta, r = rng.normal(size=X.shape[1]), rng.normal(size=len(X))
        np.testing.assert_allclose(f.times(theta), X @ theta)
        np.testing.assert_allclose(f.transposed_times(r), X.T @ r)


def test_block_draws_are_the_single_site_conditionals(parts):
    """``BlockDesign.draw`` against libFM's update of one θ at a time with the residual kept up to
    date ([Rendle2012]), on the written-out columns and the same normal draws."""
    fields = designs(parts.schema, parts.train.index.numpy(), parts.train.weight.numpy())
    block = next(f for f in fields if isinstance(f, BlockDesign))
    X = naive_x(parts.schema, parts.train.index, parts.train.weight)[block.g].numpy()[:, block.features]
    rng = np.random.default_rng(1)
    theta, d, r = rng.normal(size=X.shape[1]), rng.normal(size=len(X)), rng.normal(size=len(X))
    alpha, lam, mu = 1.3, 0.7, 0.2
    drawn = block.draw(theta, d, r, alpha, lam, mu, np.random.default_rng(5))
    z = np.random.default_rng(5).standard_normal(len(theta))
    expected, residual = theta.copy(), r.copy()
    for j in range(len(theta)):
        h = X[:, j] * d
        precision = alpha * h @ h + lam
        mean = (alpha * h @ (residual + expected[j] * h) + lam * mu) / precision
        new = mean + z[j] / np.sqrt(precision)
        residual -= h * (new - expected[j])
        expected[j] = new
    np.testing.assert_allclose(drawn, expected, rtol=1e-9, atol=1e-9)


def test_bayesian_fm_with_blocks_predicts_the_mean_of_its_samples(parts):
    from fmlib.train import TrainConfig, predict, train_model

    run = train_model("bfm", parts, TrainConfig(epochs=4, seed=0), dim=2, burn_in=1)
    m = run.model
    fields = designs(parts.schema, parts.test.index.numpy(), parts.test.weight.numpy().astype(np.float64))
    samples = [fm_predict(float(m.w0[s]), m.w[s].double().numpy(), m.V[s].double().numpy(), fields) for s in range(3)]
    np.testing.assert_allclose(predict(m, parts.test).numpy(), np.mean(samples, 0), rtol=1e-4, atol=1e-4)


def test_cli_refuses_a_bad_feature_set_in_one_line(capsys):
    assert main(["train", "--model", "fm", "--features", "user_id,nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown feature 'nope'" in err


def test_bfm_runs_its_own_sweeps_by_default():
    from fmlib.cli import build_parser

    assert SWEEPS == 300
    assert build_parser().parse_args(["train", "--model", "bfm"]).epochs is None  # cmd_train fills in SWEEPS


def test_a_run_with_blocks_is_saved_and_loaded_with_its_sets(parts, tmp_path):
    from fmlib.runs import RunStore
    from fmlib.train import TrainConfig, predict, train_model

    run = train_model("fm", parts, TrainConfig(epochs=2, batch_size=32, seed=0), dim=3)
    store = RunStore(tmp_path)
    loaded = store.load(store.save(run))
    assert loaded.model.schema == parts.schema and loaded.config["split"]["features"][-2:] == ["rated", "raters"]
    torch.testing.assert_close(predict(loaded.model, parts.test), predict(run.model, parts.test))
