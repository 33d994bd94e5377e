"""Ranking with a cached context: score every movie for one user (DPLR paper §3.1, Alg. 1)."""

import time

import pandas as pd
import streamlit as st
import torch

from app_pages._ui import load_split, saved_or_quick_run
from fmlib.bench.ranking import ranking_benchmark, synthetic_schema
from fmlib.models import model_name
from fmlib.plots.ranking import per_item_cost_figure
from fmlib.ranking import assemble, context_of, item_candidates, layout, rank_items
from fmlib.results import read_csv, results_dir
from fmlib.train import TrainConfig, train_model

RANKABLE = ("fm", "fwfm", "dplr")

st.title("Ranking with a cached context")
st.markdown(
    "**Question.** To recommend movies to one user we score *every* movie. The user and time "
    "fields are the same for all of them — so compute their part once, and pay per movie only for "
    "the movie's own fields. How much does that save, for FM, FwFM and DPLR?"
)


st.subheader("Per-item cost as the number of fields grows")
saved = results_dir() / "ranking_bench.csv"
bench = st.session_state.get("ranking_bench")
if bench is None and st.button("Run a quick benchmark here (m = 8 … 64, a few seconds)", key="bench"):
    schemas = [(f"synthetic m={m}, |I|={m // 2}", synthetic_schema(m, m // 2)) for m in (8, 16, 32, 64)]
    schemas += [(f"synthetic m=40, |I|={i}", synthetic_schema(40, i)) for i in (5, 10, 20, 35)]
    with st.spinner("timing ..."):
        bench = ranking_benchmark(schemas, ranks=(1, 2), n_items=1000, repeats=3)
    st.session_state["ranking_bench"] = bench
if bench is not None:
    st.caption(
        "From the quick benchmark run here (1000 items, median of 3 repeats). "
        f"`python -m fmlib bench ranking` writes the full benchmark to {saved}."
    )
elif saved.exists():
    bench = read_csv(saved, columns=("schema", "m", "item_fields", "model", "per_item_us", "ratio_to_fm"))
    st.caption(f"From {saved} (`python -m fmlib bench ranking`).")
else:
    st.caption(f"`python -m fmlib bench ranking` writes the full benchmark to {saved}.")
if bench is not None:
    synthetic = bench[bench.schema.str.startswith("synthetic")]
    by_m = synthetic[synthetic.item_fields * 2 == synthetic.m]
    by_items = synthetic[synthetic.m == 40]
    left, right = st.columns(2)
    left.plotly_chart(per_item_cost_figure(by_m, "m"), key="by_m")
    right.plotly_chart(per_item_cost_figure(by_items, "item_fields"), key="by_items")
    st.markdown(
        "**Notice:** the full FwFM pass grows like m²; with the context cached every model pays "
        "only for the item fields — FM and DPLR linearly in |I| (DPLR about ρ times FM's work), "
        "FwFM quadratically in |I|. Timings are medians on a shared CPU: expect noise."
    )

st.subheader("Rank every movie for one user")


run, source = saved_or_quick_run(
    lambda run: run.config["model"] in RANKABLE,
    f"cached-context ranking is implemented for {', '.join(RANKABLE)}. Pick one of those, or train a quick DPLR here.",
    "quick DPLR (ρ = 2)",
    "ranking_quick_run",
    lambda name, progress: train_model(
        "dplr",
        load_split(name, 0),
        TrainConfig(epochs=8 if name == "synthetic" else 3, lr=1e-2, patience=2),
        progress,
        dim=8,
        rank=2,
    ),
)
model = run.model.eval()
split_cfg = run.config.get("split", {"seed": 0, "min_count": 1})
data = load_split(run.config["dataset"], split_cfg["seed"], split_cfg["min_count"])
lay = layout(model.schema)
st.caption(
    f"Model: {model_name(model)} from {source} · {len(lay.context_fields)} context fields, "
    f"{len(lay.item_fields)} item fields."
)

items, item_weight, rows = item_candidates(data.train)
query = int(
    st.number_input(
        "query: test sample #", 0, len(data.test) - 1, 0, key="query", help="its user and time fields are the context"
    )
)
if data.test.frame is not None and {"user_id", "movie_id", "rating", "timestamp"} <= set(data.test.frame):
    sample = data.test.frame.iloc[query]
    user, movie = int(sample.user_id), int(sample.movie_id)
    seen = data.test.movies.set_index("movie_id")["title"].get(movie, "") if data.test.movies is not None else ""
    st.caption(
        f"Context: user {user} at {pd.to_datetime(int(sample.timestamp), unit='s'):%Y-%m-%d %H:%M} "
        f"(in the test set they gave movie {movie} {seen} {sample.rating:g} stars)."
    )
ctx_index, ctx_weight = context_of(data.test, query)
start = time.perf_counter()
cached = rank_items(model, ctx_index, ctx_weight, items, item_weight)
cached_s = time.perf_counter() - start
with torch.no_grad():
    start = time.perf_counter()
    full = model(*assemble(lay, ctx_index, ctx_weight, items, item_weight))
    full_s = time.perf_counter() - start
c1, c2, c3 = st.columns(3)
c1.metric("items scored", len(items))
c2.metric("max |cached − full pass|", f"{float((cached - full).abs().max()):.1e}")
c3.metric("cached / full pass time", f"{cached_s * 1e3:.1f} / {full_s * 1e3:.1f} ms")

top = torch.argsort(cached, descending=True)[:10]
schema = model.schema
item_names = [schema.fields[f].name for f in lay.item_fields.tolist()]
first_slot = [schema.slot_fields().index(f) for f in lay.item_fields.tolist()]
table = pd.DataFrame(
    {
        name: [
            schema.fields[f].values[int(data.train.index[rows[i], s]) - schema.fields[f].offset]
            if schema.fields[f].values
            else int(data.train.index[rows[i], s])
            for i in top.tolist()
        ]
        for name, f, s in zip(item_names, lay.item_fields.tolist(), first_slot)
    }
)
if data.train.movies is not None and "movie_id" in table:
    movies = data.train.movies.set_index("movie_id")
    ids = [int(v) if str(v).isdigit() else None for v in table["movie_id"]]
    table.insert(0, "title", [movies["title"].get(i, v) for i, v in zip(ids, table["movie_id"])])
    if "genres" in table and "genres" in movies:  # the index table holds one genre per slot: show them all
        table["genres"] = [movies["genres"].get(i, g) for i, g in zip(ids, table["genres"])]
table["score"] = cached[top].numpy().round(3)
st.dataframe(table, hide_index=True)
st.markdown(
    "**Notice:** the cached scores equal the full forward pass up to float rounding; only the "
    "item fields are touched per item. Here there are few items and fields, so both are fast — "
    "the gap opens as the number of fields grows (below)."
)
