"""Ranking with a cached context: score every movie for one user (DPLR paper §3.1, Alg. 1)."""

from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app_pages._intuition import block, short, vector
from app_pages._queue import submit_in_session, wait_in_session
from app_pages._ui import load_run, load_split, notebook_link, run_store, saved_or_quick_run
from app_pages._view import (
    ON_DEMAND,
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    in_range,
    main_figure,
    on_demand,
    one_of,
    shown_path,
    title_bar,
)
from fmapp.worked import CONTEXT_FIELDS, ITEM_FIELDS, context_split
from fmlib.bench.ranking import cache_payoff, query_timing, ranking_benchmark, sweep_rows, sweep_schemas
from fmlib.experiments.tables import committed_root
from fmlib.models import model_name
from fmlib.plots.ranking import per_item_cost_figure
from fmlib.ranking import (
    DIFFERENT,
    SAME,
    agreement,
    cached_equals_full,
    catalogue,
    context_of,
    layout,
    overlap_table,
    pair_kind,
    query_rows,
    rank_items,
    recipe,
    seed_noise_verdict,
    top_k,
    top_lists,
    user_query,
)
from fmlib.results import read_csv, results_dir
from fmlib.runs import RunError
from fmlib.train import TrainConfig, train_model

RANKABLE = ("fm", "fwfm", "dplr")
QUICK_SIZES = (1_000, 10_000)  # catalogues the quick benchmark times here in seconds
K_MAX = 50  # the largest k of the top-k comparison
BENCH_COLUMNS = ("items", "schema", "m", "item_fields", "model", "per_item_us", "per_item_q1", "per_item_q3", "x_floor")

bar = title_bar("Ranking with a cached context")
notebook_link("02_field_interactions")
st.markdown(
    "**Question.** To recommend movies to one user we score *every* movie. The user and time "
    "fields are the same for all of them — so compute their part once, and pay per movie only for "
    "the movie's own fields. How much does that save, for FM, FwFM and DPLR?"
)


@st.cache_data(show_spinner=False)
def traced_split() -> dict:
    return context_split()


def worked_example() -> None:
    """One user's FM scores for the Playground's three movies, split into the part computed once and the
    part each movie pays for ([DPLR] eq. 2c), before the measured costs."""
    split = traced_split()
    weekday, hour = split["time"]
    keys = ["𝒞", "ℐ", "e_f", "w_0", "w_i", "ŷ", "m"]
    with block("ranking", f"One user, three movies, traced: {split['user']} on a {weekday} at {hour}", keys):
        st.markdown(
            f"The Playground's toy FM with two time fields added: context $\\mathcal C$ = {', '.join(CONTEXT_FIELDS)}, "
            f"item $\\mathcal I$ = {', '.join(ITEM_FIELDS)}. [DPLR] eq. 2c writes the pairs' sum as "
            "$\\tfrac12\\big(\\lVert s_{\\mathcal C} + s_{\\mathcal I}\\rVert^2 - \\sum_{f \\in \\mathcal C} \\lVert e_f\\rVert^2 "
            "- \\sum_{f \\in \\mathcal I} \\lVert e_f\\rVert^2\\big)$ with $s_{\\mathcal C} = \\sum_{f \\in \\mathcal C} e_f$. "
            f"**Once** for {split['user']}: $s_{{\\mathcal C}} = {vector(split['s_C'])}$, "
            f"$\\sum_{{\\mathcal C}} \\lVert e_f\\rVert^2 = {split['norms_C']:.2f}$, "
            f"$w_0 + \\sum_{{\\mathcal C}} w_f = {split['bias_C']:.2f}$. **Per movie**, only its own fields:"
        )
        movies = split["movies"]
        st.table(
            pd.DataFrame(
                {
                    "genres": movies["genres"].tolist(),
                    "sℐ": [short(v) for v in movies["s_I"]],
                    "Σℐ ‖e‖²": movies["norms_I"].tolist(),
                    "Σℐ w": movies["bias_I"].tolist(),
                    "pairs, eq. 2c": movies["pairwise"].tolist(),
                    "ŷ": movies["score"].tolist(),
                },
                index=pd.Index(movies["movie"], name="movie"),
            ).style.format(precision=2)
        )
        count = split["inner_products"]
        st.markdown(
            f"Each movie pays for its {len(ITEM_FIELDS)} fields and {count['eq. 2c']} inner products "
            f"(one $\\lVert s_{{\\mathcal C}} + s_{{\\mathcal I}}\\rVert^2$ and its fields' norms) instead of "
            f"all {count['all pairs']} pairs of m = {len(CONTEXT_FIELDS) + len(ITEM_FIELDS)} fields; the context's "
            "part is the same for every movie, so it is computed once per query however many movies are ranked. "
            "The charts below measure what that saves as fields are added."
        )


worked_example()

st.subheader("Per-item cost as the number of fields grows")
# This server's own benchmark if it ran one, else the committed one (the project's 2-core machine), so that a
# fresh server shows the chart the lesson points to.
saved_path = results_dir() / "ranking_bench.csv"
if not saved_path.exists():
    saved_path = committed_root() / "ranking_bench.csv"


@st.cache_data(show_spinner=False, max_entries=4)
def saved_bench(path: str, mtime: int) -> pd.DataFrame:
    """One version (``mtime``) of the benchmark file, read once per server."""
    return read_csv(path, columns=BENCH_COLUMNS, made_by="python -m fmlib bench ranking")


@st.cache_resource(show_spinner=False, max_entries=16)
def cost_charts(bench: pd.DataFrame, n_items: int) -> tuple[go.Figure, go.Figure, str]:
    """The per-item cost against m and against |I| at ``n_items`` items, and what the cache pays: drawn once
    per benchmark and server, not on every rerun."""
    by_m = per_item_cost_figure(sweep_rows(bench, n_items, "m"), "m", f"Cost per item vs m ({n_items:,} items)")
    by_items = per_item_cost_figure(
        sweep_rows(bench, n_items, "item_fields"), "item_fields", f"Cost per item vs |I| ({n_items:,} items)"
    )
    return by_m, by_items, cache_payoff(bench, n_items)


saved = None
if saved_path.exists():
    try:
        saved = saved_bench(str(saved_path), saved_path.stat().st_mtime_ns)
    except ValueError as err:
        st.warning(f"{err} — run `python -m fmlib bench ranking` again.")
quick = st.session_state.get("ranking_bench", {})
sizes = sorted(set(QUICK_SIZES) | set(quick) | (set() if saved is None else set(saved["items"])))
VIEW = UrlState(
    catalogue=Bound(sizes[0], one_of(sizes), "one of " + ", ".join(map(str, sizes))),
    user=Bound(None),  # on MovieLens: a user of the test split, by default the first (cleared by a reset)
    query=Bound(0),  # a test sample: checked where the test split is loaded; on MovieLens never bound
    k=Bound(10, in_range(1, K_MAX, integer=True), f"1 to {K_MAX}"),
    ranking_by_items=ON_DEMAND,
    ranking_cache_section=ON_DEMAND,
    ranking_agreement=ON_DEMAND,
)
n_items = VIEW.widget("catalogue", st.select_slider, "catalogue size (items per query)", sizes)
copy_link_and_reset(VIEW, clear=["user"], container=bar)
if n_items in QUICK_SIZES and st.button(f"Time a quick benchmark here ({n_items:,} items, m = 8 … 64)", key="bench"):
    with st.spinner("timing (warm-up, then 2 runs × 3 rounds) ..."):
        quick = {
            **quick,
            n_items: ranking_benchmark(
                sweep_schemas((8, 16, 32, 64), (5, 35)), sizes=(n_items,), ranks=(2,), repeats=3
            ),
        }
    st.session_state["ranking_bench"] = quick
if n_items in quick:
    bench = quick[n_items]
    st.caption(
        f"From the quick benchmark run here: {n_items:,} items, median and IQR of 2 runs × 3 rounds "
        f"after a warm-up, CPU time of one thread. `python -m fmlib bench ranking` writes the full benchmark to "
        f"{shown_path(saved_path)}."
    )
elif saved is not None and n_items in set(saved["items"]):
    bench = saved
    st.caption(
        f"From {shown_path(saved_path)} (`python -m fmlib bench ranking`): median and IQR over 2 runs, CPU time of one thread."
    )
else:
    bench = None
    st.caption(
        f"`python -m fmlib bench ranking` writes the full benchmark (10³ … 10⁵ items) to {shown_path(saved_path)}."
    )
if bench is not None:
    by_m, by_items, payoff = cost_charts(bench, n_items)
    main_figure(by_m, key="by_m")
    st.markdown(f"**Notice:** {payoff}")
    st.caption(
        "Bars: interquartile range. The dotted floor is an `embedding_bag` sum of each item's rows, timed in the "
        "same run: cached FM and DPLR gather one precomputed row per item field (Algorithm 1), so they stay a "
        "small multiple of it; the full FwFM pass grows like m²."
    )
    # drawn on demand: a second chart of a dozen lines doubles what a visit of the page draws
    on_demand(
        "With m fixed at 40, does the cost grow with the item fields |I|?",
        "ranking_by_items",
        lambda: chart(by_items, key="by_items"),
    )

st.subheader("Rank every movie for one user")
run, source = saved_or_quick_run(
    lambda run: run.config["model"] in RANKABLE,
    f"cached-context ranking is implemented for {', '.join(RANKABLE)}. Pick one of those, or train a quick DPLR here.",
    "quick DPLR (ρ = 2)",
    "ranking_quick_run",
    lambda name, data, progress: train_model(
        "dplr",
        data,
        TrainConfig(epochs=8 if name == "synthetic" else 3, lr=1e-2, patience=2),
        progress,
        dim=8,
        rank=2,
    ),
)


def quick_models(data, config, report) -> dict:
    """A quick FM, FwFM and DPLR (ρ = 2) on ``data``, each with seeds 0 and 1, one after another;
    ``report``: each epoch's record."""
    return {
        f"quick {label} (seed {seed})": train_model(
            kind,
            data,
            replace(config, seed=seed),
            lambda r, label=f"{label}, seed {seed}": report({**r, "label": label}),
            dim=8,
            **hp,
        )
        for label, kind, hp in (("FM", "fm", {}), ("FwFM", "fwfm", {}), ("DPLR ρ=2", "dplr", {"rank": 2}))
        for seed in (0, 1)
    }


def split_of(run):
    split_cfg = run.config.get("split", {"seed": 0, "min_count": 1})
    return load_split(run.config["dataset"], split_cfg["seed"], split_cfg["min_count"])


model = run.model.eval()
data = split_of(run)
lay = layout(model.schema)
candidates = catalogue(data.train, data.valid, data.test)
items, item_weight = candidates.index, candidates.weight
st.caption(
    f"Model: {model_name(model)} from {source} · {len(lay.context_fields)} context fields, "
    f"{len(lay.item_fields)} item fields · {len(items):,} items in the catalogue."
)
movielens = data.test.frame is not None and {"user_id", "movie_id", "rating", "timestamp"} <= set(data.test.frame)
if movielens:
    users = sorted(int(u) for u in data.test.frame.user_id.unique())
    VIEW.check("query", check=(lambda _: False, "on MovieLens the page ranks for a user, not for a test sample number"))
    check = one_of(users), "a user of the test split"
    hint = "their latest test rating gives the time fields"
    user = int(VIEW.widget("user", st.selectbox, "user", users, default=users[0], check=check, help=hint))
    query = user_query(data.test, user)
    sample = data.test.frame.iloc[query]
    seen = data.test.movies.set_index("movie_id")["title"].get(int(sample.movie_id), "")
    st.caption(
        f"Context: user {user} at {pd.to_datetime(int(sample.timestamp), unit='s'):%Y-%m-%d %H:%M} "
        f"(their latest test rating: {seen} {sample.rating:g} stars)."
    )
else:
    last = len(data.test) - 1
    check = in_range(0, last, integer=True), f"0 to {last}"
    query = int(VIEW.widget("query", st.number_input, "query: test sample #", 0, last, check=check))
context = context_of(data.test, query)
scores = rank_items(model, *context, items, item_weight)
timed = st.session_state.get("ranking_timed")
if timed is None or timed[0] is not model or timed[1] != query:  # timed once per model and query, not per visit
    timed = st.session_state["ranking_timed"] = (model, query, query_timing(model, *context, items, item_weight))
timing = timed[2]
(cached, c1, c3), (full, f1, f3) = timing["cached"], timing["full"]
row = st.container(horizontal=True)  # each metric as wide as its label, wrapping on a narrow screen
row.metric(
    "cached context, per query", f"{cached * 1e3:.2f} ms", help=f"IQR {c1 * 1e3:.2f}–{c3 * 1e3:.2f} ms", width="content"
)
row.metric(
    "full pass, per query", f"{full * 1e3:.2f} ms", help=f"IQR {f1 * 1e3:.2f}–{f3 * 1e3:.2f} ms", width="content"
)
gain = round(full / cached, 1)  # the sentence below follows the number shown
row.metric("full / cached", f"{gain:.1f}×", width="content")
context_slots, slots = len(lay.context_slots), len(lay.context_slots) + len(lay.item_slots)
why = (
    f"it pays: the full pass gathers and multiplies the context's {context_slots} rows again for every item, "
    "the cache once per query"
    if gain > 1
    else f"it does not pay: with {context_slots} context slots there is little to save, and the cache's fixed "
    "costs (building it, the item side's own gathers) outweigh it"
)
st.markdown(
    f"Both timed alike (warm-up, then the median of 7 interleaved rounds of one thread's CPU time, "
    f"{len(items):,} items). "
    f"The context holds {context_slots} of the {slots} slots of a full row, and the cache made a query "
    f"{gain:.1f}× {'faster' if gain > 1 else 'slower'}: {why}. The fewer context fields, the less "
    "a cache saves: see the cost against |I|, opened under the chart above."
)
top = top_k(scores, 10)
table = candidates.items.iloc[top.numpy()].assign(score=scores[top].numpy().round(3))
st.dataframe(table, hide_index=True)


def cache_section() -> None:
    """The cached scores against the full forward pass, for this query."""
    same = cached_equals_full(model, *context, items, item_weight, k=10)
    st.markdown(
        f"No: the cache computes the same sum in another order (DPLR eq. 5, Algorithm 1), not an approximation. "
        f"For this query the cached scores of all {same['items']:,} items differ from the model's full forward pass "
        f"by at most **{same['max_abs_difference']:.1e}** (scores up to {same['largest_score']:.2g}: float32 rounding), "
        f"and the two top-{same['k']} lists overlap at **{same['overlap']:.2f}**."
    )


MAX_COMPARED = 6
QUERIES = 50  # users whose latest test rating is a query of the comparison


def agreement_section() -> None:
    """Every saved FM, FwFM and DPLR run on this dataset (and quick ones) ranked for the same users: overlap@k,
    against the seed noise of one recipe trained twice."""
    st.markdown(
        "Every saved FM, FwFM and DPLR run on this dataset ranks the whole catalogue for the same users. "
        "overlap@k = |top-k of one ∩ top-k of the other| / k. Two *different* trained models can disagree for two "
        "reasons: they are different models, or they started from different random draws. The baseline is the "
        "same recipe trained with two seeds: its disagreement is seed noise."
    )
    store, runs, unreadable = run_store(), {}, []
    for run_id in store.ids():  # newest first
        try:
            config = store.info(run_id)["config"]
            if config["model"] in RANKABLE and config.get("dataset") == run.config["dataset"]:
                runs[run_id] = load_run(run_id)
        except RunError:
            unreadable.append(run_id)
        if len(runs) == MAX_COMPARED:
            st.caption(f"The newest {MAX_COMPARED} runs are compared.")
            break
    if unreadable:
        st.caption(f"Skipped unreadable runs: {', '.join(unreadable)} (pick one in the sidebar to see why).")
    runs.update(st.session_state.get("ranking_quick_models", {}))
    recipes = {label: recipe(other.config) for label, other in runs.items()}
    seeds = {label: other.config.get("train", {}).get("seed", 0) for label, other in runs.items()}
    kinds_found = {pair_kind(recipes[a], seeds[a], recipes[b], seeds[b]) for a in runs for b in runs if a < b} - {None}
    if not {SAME, DIFFERENT} <= kinds_found:
        name = run.config["dataset"]
        lacking = " and ".join(f"*{kind}*" for kind in (SAME, DIFFERENT) if kind not in kinds_found)
        st.info(
            f"{len(runs)} saved FM/FwFM/DPLR run(s) on {name}, with no pair of the kind {lacking}: train quick ones "
            "here — each model with two seeds — to compare models with seed noise."
        )
        job = wait_in_session("ranking_quick_models_job", "Your quick FM, FwFM and DPLR, two seeds each")
        if job is not None and job.state == "done":
            st.session_state["ranking_quick_models"] = job.result
            st.rerun()  # draw the comparison with them
        elif job is not None and job.state == "cancelled":
            st.info("The quick models were cancelled.")
        elif job is not None:  # bad settings: say why, no traceback
            st.error(job.error)
        if "ranking_quick_models_job" not in st.session_state and "ranking_quick_models" not in st.session_state:
            if st.button(f"Train a quick FM, FwFM and DPLR (ρ = 2) on {name}, seeds 0 and 1", key="quick_models"):
                config = TrainConfig(epochs=8 if name == "synthetic" else 3, lr=1e-2, patience=2)
                quick_data = split_of(run)
                submit_in_session("ranking_quick_models_job", lambda job: quick_models(quick_data, config, job.report))
                st.rerun()  # show its place in line
    if len(runs) >= 2:
        k = VIEW.widget("k", st.slider, "k", 1, K_MAX)
        tops, rows = {}, []
        for label, other in runs.items():
            other_model = other.model.eval()
            other_scores = rank_items(other_model, *context, items, item_weight)
            tops[label] = top_k(other_scores, k)
            median, q1, q3 = query_timing(other_model, *context, items, item_weight)["cached"]
            rows.append(
                {
                    "run": label,
                    "model": model_name(other_model),
                    "seed": seeds[label],
                    "ms per query (cached)": round(median * 1e3, 3),
                    "IQR (ms)": f"{q1 * 1e3:.3f}–{q3 * 1e3:.3f}",
                    "top 1": candidates.items.iloc[int(tops[label][0]), 0],
                }
            )
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        st.markdown(f"overlap@{k} between the runs' top {k} lists for this query (1 = the same items):")
        st.dataframe(overlap_table(tops).round(2))
        queries = query_rows(data.test, QUERIES)
        cache_key = (tuple(runs), run.config["dataset"], tuple(queries))
        if st.session_state.get("ranking_tops", (None,))[0] != cache_key:  # scored once per set of runs
            with st.spinner(f"ranking the catalogue for {len(queries)} queries with {len(runs)} models …"):
                models = {label: other.model for label, other in runs.items()}
                found = top_lists(models, data.test, queries, candidates, min(K_MAX, len(items)))
            st.session_state["ranking_tops"] = (cache_key, found)
        pairs = agreement(st.session_state["ranking_tops"][1], recipes, seeds, k)
        st.markdown(f"Averaged over {len(queries)} queries (each a test user's latest rating), pair by pair:")
        st.dataframe(pairs[["a", "b", "pair", "overlap"]].round(3), hide_index=True)
        if {SAME, DIFFERENT} <= set(pairs["pair"]):
            st.markdown(f"**Notice:** {seed_noise_verdict(pairs, k)['sentence']}")


on_demand("Does the cache change the ranking?", "ranking_cache_section", cache_section)
on_demand(
    "Do different models agree on the top k — more than one model trained twice?",
    "ranking_agreement",
    agreement_section,
)
