"""Rank-aware FM: rare features get few factors, frequent ones many (RaFM paper, Fig. 1, eq. 17, Fig. 3)."""

import pandas as pd
import streamlit as st

from app_pages._intuition import block
from app_pages._measured import claims_of, scorecard_rows, verdict_table
from app_pages._queue import submit_in_session, wait_in_session
from app_pages._ui import dataset_name, fail, load_data, load_split, notebook_link, times_quick, variant_as_math
from app_pages._view import (
    ON_DEMAND,
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    main_figure,
    on_demand,
    secondary,
    title_bar,
)
from fmapp.worked import example_rows, rank_example
from fmlib.analysis.frequency import occurrence_histogram, parameter_summary, rank_table, zero_count_note
from fmlib.arguments import int_list
from fmlib.data.synthetic import PLANTED_RANKS
from fmlib.experiments import rafm as rafm_experiment
from fmlib.experiments import tables
from fmlib.experiments.claims import measure_all
from fmlib.models.rafm_ranks import check_ranks
from fmlib.plots.rafm import comparison_figure, occurrence_histogram_figure, rank_share_figure
from fmlib.plots.verdicts import verdict_figure
from fmlib.train import quick_model_settings

bar = title_bar("Rank-aware FM")
notebook_link("03_rank_aware_fm")
st.markdown(
    "**Should a movie rated three times get as many factors as one rated five hundred times?** "
    "An FM gives every feature an embedding of the same rank D. Rare features then over-fit, frequent "
    "ones under-fit. RaFM keeps several embeddings per feature, of ranks $D_1 < \\dots < D_h$ ($h$ levels; [RaFM] writes $m$, here the number of fields), and lets a pair "
    "of features interact at the largest rank *both* have: $k_{ij} = \\min(k_i, k_j)$ (eqs. 4–5)."
)

name = dataset_name()


def valid_ranks(text: str) -> bool:
    try:
        check_ranks(int_list(text))
    except ValueError:
        return False
    return True


VIEW = UrlState(
    rafm_ranks=Bound(
        "8,32", valid_ranks, "strictly increasing positive integers up to 512, comma-separated", fallback=True
    ),
    rafm_shares=ON_DEMAND,
    rafm_training=ON_DEMAND,
    rafm_payoff=ON_DEMAND,
    rafm_scorecard=ON_DEMAND,
)
text = VIEW.widget("rafm_ranks", st.text_input, "Rank set $D_1, \\dots, D_h$ (comma-separated, strictly increasing)")
try:
    ranks = check_ranks(int_list(text))
except ValueError as err:
    fail(f"Rank set: {err}")


def example_field(schema) -> str:
    """The field the worked example draws its features from: movies, else the field with the most features."""
    names = [f.name for f in schema.fields]
    return "movie_id" if "movie_id" in names else max(schema.fields, key=lambda f: f.cardinality).name


def example_labels(data, field, rows) -> list[str]:
    """Each example row's name: a movie's title on MovieLens, else ``field = value``."""
    values = [field.values[r - field.offset] if field.values else str(r - field.offset) for r in rows]
    if field.name == "movie_id" and data.movies is not None:
        titles = data.movies.set_index("movie_id")["title"]
        return [str(titles.get(int(v), v)) if v.isdigit() else v for v in values]
    return [f"{field.name} = {v}" for v in values]


@st.cache_resource(show_spinner=False)
def frequencies(name: str, ranks: tuple) -> dict:
    """Section 1 for this dataset and rank set: the same for every student, so computed once per server."""
    data = load_split(name, 0)
    counts = data.train.feature_counts()
    summary = parameter_summary(counts, ranks)
    field = data.schema.field(example_field(data.schema))
    rows = example_rows(counts, range(field.offset, field.offset + field.cardinality))
    table = rank_table(counts, ranks, data.schema)
    return {
        "summary": summary,
        "note": zero_count_note(counts),
        "table": table,
        "histogram": occurrence_histogram_figure(
            occurrence_histogram(counts, data.schema),
            ranks,
            summary["thresholds"],
            title=f"{name}: occurrences per feature in the training split",
        ),
        "shares": rank_share_figure(table, title="features per rank, by field"),
        "example": rank_example(counts, ranks, rows, example_labels(data.train, field, rows)),
        "example_field": field.name,
    }


try:
    seen = frequencies(name, ranks)
except Exception as err:  # no data source: say why, no traceback
    fail(str(err))
summary = seen["summary"]


def comparison(result: dict) -> dict:
    """Section 3's figures and verdicts of a comparison."""
    table = rafm_experiment.table_name(result["dataset"], result["task"])
    claims = claims_of("rank_aware_fm", table, result["dataset"], result["task"])  # as the scorecard measures them
    verdicts = measure_all(*claims(pd.DataFrame(result["records"]), result["task"]))
    return {
        **result,
        "figure": comparison_figure(result),
        "verdicts": verdicts,
        "verdict_figure": verdict_figure(verdicts, "RaFM's claims: paired per-seed difference, 95 % interval"),
    }


@st.cache_resource(show_spinner=False)
def saved_comparison(path: str, mtime_ns: int) -> dict:
    """A saved comparison, read and drawn once per version of its file."""
    return comparison(rafm_experiment.load(path))


def shown_comparison(name: str):
    """(the comparison section 3 shows, or None; what to say there when there is none): a run made here
    wins over the saved table, on its own dataset."""
    result = st.session_state.get("rafm_result")
    if result is not None and result["dataset"] == name:
        return result, None
    path = tables.newest(rafm_experiment.table_name(name, "rating"))
    if path is None:
        return None, (
            "info",
            f"No comparison saved for {name} yet. Run `python -m fmlib reproduce rafm --dataset {name} "
            f"--ranks {','.join(map(str, ranks))}` (it needs the tuned presets), or one seed here.",
        )
    try:
        return saved_comparison(str(path), path.stat().st_mtime_ns), None
    except ValueError as err:
        return None, ("error", str(err))


def percent(share: float) -> str:
    """A share as a percentage with one decimal, never rounded to 100 % or 0 % when it is not."""
    if share == 1 or share == 0:
        return f"{100 * share:.0f} %"
    text = f"{100 * share:.1f}"
    if text == "100.0":
        return "> 99.9 %"
    if text == "0.0":
        return "< 0.1 %"
    return f"{text} %"


def table_row(result, ranks) -> dict | None:
    """The comparison table's row of RaFM with eq. 17's ranks ``ranks`` (mean over its seeds), or None."""
    if result is None or tuple(result["ranks"]) != tuple(ranks):
        return None
    return next((r for r in result["summary"] if r["model"] == f"RaFM{tuple(ranks)}"), None)


result, no_result = shown_comparison(name)


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def worked_example(example, ranks, thresholds, field: str) -> None:
    """Eq. 17 on five features of ``field``, from the most to the least frequent, before any evidence."""
    what = "movies" if field == "movie_id" else f"features of {field}"
    top = ranks[-1]
    with block("rafm", f"Eq. 17 on five {what}, from the most to the least seen", ["n_i", "D_p", "k_i", "n̄_p"]):
        shown = example.rename(
            columns={"feature": what, "n_i": "nᵢ (train)", "k_i": "level kᵢ", "D_k_i": "its rank"}
            | {f"n_i / {top}": f"nᵢ / {top}", "n_i / D_k_i": "nᵢ / its rank"}
            | {f"|log n_i − log {D}|": f"|log nᵢ − log {D}|" for D in ranks}
        )
        st.table(shown.set_index(what).style.format(precision=2))
        rare, frequent = example.iloc[-1], example.iloc[0]
        if rare.n_i < top:
            why = (
                f"*{rare.feature}*, seen {plural(rare.n_i, 'time')}, would fit the {top} numbers of a rank-{top} "
                f"embedding from {plural(rare.n_i, 'equation')}, {rare[f'n_i / {top}']:.2g} per number: it "
                "over-fits (§1)."
            )
        else:
            why = f"even the least seen here, *{rare.feature}*, has {rare.n_i} ≥ {top} of them."
        cuts = ", ".join(
            f"$\\bar n_{p} = \\sqrt{{{a}\\cdot{b}}} = {t:.3g}$"
            for p, (a, b, t) in enumerate(zip(ranks, ranks[1:], thresholds), 1)
        )
        close = example[(example.k_i == len(ranks)) & (example.n_i < top)]
        caveat = (
            f" A log-scale rule, not one of at least one sample per number: *{close.iloc[-1].feature}* "
            f"({close.iloc[-1].n_i} times) still gets D = {top}."
            if not close.empty
            else ""
        )
        st.markdown(
            f"Each sample a feature occurs in is one equation for its embedding, so $n_i / D$ is the samples per "
            f"number to fit: {why} Eq. 17 gives each feature "
            f"the $D_p$ closest to $n_i$ on a log scale (the smallest distance in its row): *{rare.feature}* keeps "
            f"$D_{{{rare.k_i}}} = {rare.D_k_i}$ numbers, *{frequent.feature}* ({frequent.n_i} times) "
            f"$D_{{{frequent.k_i}}} = {frequent.D_k_i}$. The cut between neighbouring ranks: {cuts}.{caveat}"
        )


worked_example(seen["example"], ranks, summary["thresholds"], seen["example_field"])

st.subheader("1 · How often does each feature occur?")
main_figure(seen["histogram"])  # where the lesson's link arrives
st.markdown(
    "Each feature gets the rank closest to its count on a log scale, **eq. 17**: "
    "$k_i = \\arg\\min_k |\\log n_i - \\log D_k|$. Two neighbours are equally close at the geometric mean, so "
    "eq. 17 is a set of thresholds $t_k = \\sqrt{D_k D_{k+1}}$: "
    + ", ".join(f"$n_i > {t:.3g}$ → at least $D = {D}$" for t, D in zip(summary["thresholds"], ranks[1:]))
    + ". Counts come from the training split only (the authors' code also counts valid and test)."
)
if seen["note"]:
    st.info(seen["note"])

left, right = st.columns([1, 2])
with left:  # the numbers the lesson's stop states too, from the same parameter_summary
    st.metric(
        "RaFM's embedding numbers",
        f"{summary['rafm_parameters']:,}",
        f"{percent(summary['share'])} of FM({ranks[-1]})'s",
        delta_color="off",
    )
    row = table_row(result, ranks)
    if row is not None:
        secondary(
            f"With linear weights and bias, as section 3's table counts them (mean over its {row['seeds']} seeds): "
            f"{row['parameters']:,.0f} parameters, {percent(row['parameters_vs_top_fm'])} of FM({ranks[-1]})'s."
        )
with right:
    st.markdown(
        f"Only *active* factors are kept (Prop. 1): $v_i^{{(k)}}$ for $k \\le k_i$, i.e. $\\sum_k D_k |F_k|$ with "
        f"$|F_k|$ = {summary['F_sizes']} features having $k_i \\ge k$, against $D_h |F|$ = {summary['fm_parameters']:,} "
        f"for FM({ranks[-1]}). Share of occurrences in each $F_k$: "
        + ", ".join(percent(s) for s in summary["occurrence_share"])
        + " — what the evaluation time depends on (Remark 5)."
    )


def shares_section() -> None:
    """Eq. 17's ranks field by field, as a chart and as a table."""
    chart(seen["shares"])
    st.dataframe(seen["table"], hide_index=True)


on_demand("Features per rank, field by field", "rafm_shares", shares_section)


THEOREM_3 = r"""The naive sum over all pairs costs $O(D|\mathcal F|^2)$. With $\mathcal A_{l,k}$ the FM of rank
$D_l$ over the features in $\mathcal F_k = \{i : k_i \ge k\}$ (eqs. 6, 7) the model is $\mathcal B_{1,h}$, reached from
$\mathcal B_{1,1} = \mathcal A_{1,1}$ by **Theorem 3**,
$\mathcal B_{l,k+1} = \mathcal B_{l,k} - \mathcal A_{k,k+1} + \mathcal A_{k+1,k+1}$: move the pairs inside $\mathcal F_{k+1}$ from rank $D_k$ to $D_{k+1}$, at cost
$O(\sum_k D_k |\mathcal F_k|)$ (Cor. 4). **Algorithm 1** trains each feature's *highest* embedding (a free
variable) on $L(\mathcal B_{1,h}, y)$; its lower-rank copies (dependent variables) only learn to make
$\mathcal B_{1,k}$ agree with $\mathcal B_{1,k+1}$ (eq. 12b). So a rating of a rare feature with a frequent
one, which is predicted with the frequent one's low-rank copy, never moves that copy: on such a sample
$\mathcal B_{1,k}$ and $\mathcal B_{1,k+1}$ agree and the consistency term is zero (section 4 measures what it
costs). A genre value keeps its own rank; at each level the genres field sums the values present there, each
with its usual weight 1/len."""


def training_section() -> None:
    """Section 2: Theorem 3's recursion and Algorithm 1, with the levels of the chosen ranks."""
    st.markdown(THEOREM_3)
    sizes = summary["F_sizes"] + [0]  # |F_1|, …, |F_h|, and F_{h+1} = ∅
    rows = [
        {
            "level k": k,
            "rank Dₖ": D,
            "free features (Fₖ − Fₖ₊₁)": sizes[k - 1] - sizes[k],
            "dependent features (Fₖ₊₁)": sizes[k],
            "stored numbers": D * sizes[k - 1],
        }
        for k, D in enumerate(ranks, 1)
    ]
    st.table(pd.DataFrame(rows).set_index("level k"))


def one_seed(name: str, ranks, data, settings: dict, job) -> dict:
    """Seed 0 of FM at each rank and RaFM, as a job: each model's line is reported as it finishes."""
    lines = []

    def log(line):
        lines.append(line)
        job.report({"step": len(lines), "steps": len(settings), "text": line})

    records = rafm_experiment.run_seed(data, ranks, 0, settings, log=log)
    return rafm_experiment.as_result(name, ranks, [0], "rating", records, "one seed, here")


def payoff_section() -> None:
    """Section 3: FM at each rank against RaFM, saved or run here (one seed), with the verdicts."""
    if no_result is not None:
        getattr(st, no_result[0])(no_result[1])
    job = wait_in_session("rafm_seed_job", f"Your seed of FM at each rank and RaFM{ranks}")
    if job is not None and job.state == "done":
        st.session_state["rafm_result"] = comparison(job.result)
        st.rerun()  # draw the page again from the session, without the messages about the saved file
    elif job is not None and job.state == "cancelled":
        st.info("The seed was cancelled.")
    elif job is not None:  # bad settings: say why, no traceback
        st.error(job.error)
    if "rafm_seed_job" in st.session_state:
        return
    quick = quick_model_settings(name, "fm")[0]
    try:  # the tuned presets, when every model has one
        tuned = rafm_experiment.preset_settings(name, ranks)
    except ValueError:
        tuned = None
    choices = {f"quick: {quick.epochs} epochs each at lr {quick.lr:g}": "quick"}
    if tuned is not None:
        budget = max(config.epochs for config, _, _ in tuned.values())
        label = f"tuned presets: up to {budget} epochs each, early stopping deciding ({times_quick(budget, quick.epochs)}× the quick epochs)"
        choices[label] = "tuned"
    chosen = choices[st.radio("Settings of the seed run here", list(choices), key="rafm_seed_settings")]
    if st.button(f"Run one seed here (FM at each rank and RaFM{ranks} on {name})", key="rafm_run_seed"):
        settings = tuned if chosen == "tuned" else rafm_experiment.default_settings(ranks, quick)
        data = load_data(name)
        submit_in_session("rafm_seed_job", lambda job: one_seed(name, ranks, data, settings, job))
        st.rerun()  # show its place in line

    if result is not None:
        if tuple(result["ranks"]) != ranks:
            st.warning(f"The saved comparison used ranks {tuple(result['ranks'])}, not {ranks}.")
        chart(result["figure"])
        st.caption(f"{result['dataset']} · seeds {result['seeds']} · made by {result['made']}")
        st.code(rafm_experiment.format_table(result), language=None)
        chart(result["verdict_figure"])
        st.dataframe(
            result["verdicts"][["claim", "other", "metric", "seeds", "difference", "low", "high", "verdict"]],
            hide_index=True,
        )
        st.markdown(
            "Notice whether RaFM's interval lies right of zero, and how many parameters it needs for it. "
            "RaFM-low is the rank-$D_1$ part of the same trained model ($\\mathcal B_{1,1}$, the paper's Fig. 3): the "
            "$D_1$ factors of its frequent features are *dependent* variables that only learn to make "
            "$\\mathcal B_{1,1}$ agree with $\\mathcal B_{1,2}$ (eq. 12b), never the ratings themselves, so where it "
            "trails FM($D_1$) that is the price of training it as a by-product. The best single-rank FM is picked "
            "on the validation split."
        )


def planted_text(frame: pd.DataFrame) -> str:
    """What the planted comparison shows, every number from its table and from the data's defaults."""
    setup = rafm_experiment.planted_setup()
    v, (low, high) = setup["variances"], setup["ranks"]
    rows = rafm_experiment.top_rank_verdicts(frame, "rating")
    every = measure_all(*rafm_experiment.scorecard_claims(frame, "rating"))
    fits_low = every[
        every["favoured"].str.startswith("RaFM-low") & every["favoured"].str.contains(rafm_experiment.FITS_TARGET)
    ]
    low_rank = "; ".join(
        f"{r.difference:+.4f} [{r.low:+.4f}, {r.high:+.4f}] MSE, *{r.verdict}*" for r in fits_low.itertuples()
    )
    found = "; ".join(
        f"**{variant_as_math(r.favoured)}** {r.difference:+.4f} [{r.low:+.4f}, {r.high:+.4f}] MSE, *{r.verdict}*"
        for r in rows.itertuples()
    )
    shape = (
        "alike in every direction"
        if setup["tail"] == 1
        else f"its last {high - low} coordinates scaled by {setup['tail']:g}"
    )
    return (
        f"**Planted data, where the rank assumption holds by construction.** {setup['users']:,} users × "
        f"{setup['movies']:,} movies with Zipf popularity (exponent {setup['zipf']:g}), {setup['n_samples']:,} ratings "
        f"drawn anew for every seed; a feature expected at most {setup['cut']} times in training has an embedding "
        f"of rank {low}, a frequent one of rank {high} ({shape}). A frequent pair's interaction has variance "
        f"{v['frequent pair']:.2f} ({v['its last D_2 − D_1 coordinates']:.2f} of it beyond rank {low}), a pair with a "
        f"rare feature {v['pair with a rare feature']:.2f}, the noise {v['noise']:.2f}. Against FM({high}), each at "
        f"the L2 the paper's grid chose on validation (> 0: RaFM better, 95 % interval over seeds): {found}. "
        f"Algorithm 1 fits a frequent feature's rank-{low} copy only to the frequent pairs (eq. 12b), never to the "
        f"ratings it shares with rare features (section 2): where the rank-{low} directions the rare features use "
        f"are not the frequent pairs' best rank-{low} summary, those pairs are predicted through the wrong ones. The "
        "authors' code lets the rating reach the dependent factors too (*dependent factors also fit y*, its "
        f"consistency weight c chosen on validation). Its level {low} alone, RaFM-low, against FM({low}): {low_rank}."
    )


def planted_section() -> None:
    """The planted comparison's finding, when its table is there."""
    path = tables.newest(rafm_experiment.table_name(PLANTED_RANKS, "rating", "rafm-paper"))
    if path is None:
        return
    frame = pd.DataFrame(rafm_experiment.load(path)["records"])
    st.markdown(planted_text(frame))
    st.caption(f"From `{path.name}`; the data's settings are the defaults of `fmlib.data.synthetic.planted_ranks`.")


def scorecard_section() -> None:
    """Section 4: where RaFM can differ from FM, and its claims under every protocol."""
    st.markdown(
        "RaFM differs from FM($D_h$) only on samples with a feature below the top rank. With eq. 17 the cut-points "
        "are fixed by the ranks ($t = \\sqrt{D_1 D_2}$ = 16 for (8, 32)), so on a small data set few features sit "
        "below it; the paper regards the $k_i$ as hyperparameters (§3), so a cut-point inside the data's frequency "
        "range is fair play. The scorecard also measures RaFM under the paper's own protocol (each model's L2 from "
        "its grid, nothing else tuned) and on planted data whose rare features are truly low-rank (below)."
    )
    if result is not None:
        shares = rafm_experiment.engagement(result)
        if not shares.empty:
            st.dataframe(
                shares,
                hide_index=True,
                column_config={c: st.column_config.NumberColumn(format="percent") for c in shares.columns[2:]},
            )
    planted_section()
    rows = scorecard_rows("rank_aware_fm")
    if rows.empty:
        st.info("No RaFM result tables yet: run the `python -m fmlib reproduce rafm …` commands of the README.")
    else:
        verdict_table(rows)
        counts = rows["verdict"].value_counts()
        st.markdown(
            f"Across {len(rows)} claims in {rows['protocol'].nunique()} protocols: "
            + ", ".join(f"**{verdict}** {n}×" for verdict, n in counts.items())
            + ". A verdict that stays the same under every protocol does not depend on how the models were tuned."
        )
        with st.expander("how each side was trained (recipes)"):
            st.table(rows[["claim", "protocol", "recipes"]].set_index("claim"))


on_demand("2 · Evaluating and training it", "rafm_training", training_section)
on_demand("3 · Does it pay off?", "rafm_payoff", payoff_section)
on_demand("4 · When can rank-awareness help?", "rafm_scorecard", scorecard_section)

copy_link_and_reset(VIEW, container=bar)
