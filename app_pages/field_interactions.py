"""Field interactions: a toy R first, then the learned R, pruned R vs DPLR at equal budget, one pair's term in one
rating's score (a cell pointed at in any heatmap is outlined in all of them), spectra, Table 1 (DPLR paper)."""

import numpy as np
import streamlit as st

from app_pages._classroom import author, teacher_or_alone
from app_pages._intuition import block, glossary_help
from app_pages._measured import drawn_once, measured_table, source_caption
from app_pages._queue import server_job
from app_pages._replay import replay
from app_pages._ui import (
    dataset_name,
    fail,
    load_run,
    load_split,
    notebook_link,
    run_store,
    saved_or_quick_run,
    selected_run_id,
)
from app_pages._view import (
    LESSON_VIEW,
    MAIN_FIGURE_HEIGHT,
    ON_DEMAND,
    Bound,
    UrlState,
    cached,
    chart,
    copy_link_and_reset,
    error,
    in_range,
    on_demand,
    one_of,
    projector,
    secondary,
    title_bar,
)
from fmapp.recompute import recompute
from fmlib import presets, trainings
from fmlib.analysis.budget_toy import FIELDS as TOY_FIELDS
from fmlib.analysis.budget_toy import ODD as TOY_ODD
from fmlib.analysis.budget_toy import budget_toy
from fmlib.analysis.field_scales import offdiag_correlation, offdiag_cv
from fmlib.analysis.interactions import (
    align_field_scales,
    budget,
    dplr_posthoc,
    interaction_matrix,
    offdiag_error,
    percent_left,
    prune,
    prune_mask,
    r_fm,
    r_summary,
    spectrum,
)
from fmlib.analysis.pair_contribution import pair_contribution, sample_embeddings, sample_label
from fmlib.data import load, split
from fmlib.data.features import with_features
from fmlib.data.synthetic import demo_R
from fmlib.experiments import dplr as dplr_experiment
from fmlib.models import has_interaction_matrix, model_name, usable_models
from fmlib.plots.interactions import (
    deviation_heatmap,
    eigen_spectrum_figure,
    error_spectra_figure,
    interaction_heatmaps,
    pickable,
    picked_pair,
    r_heatmaps,
    room_r_heatmaps,
    toy_heatmaps,
    with_pair,
)
from fmlib.plots.verdicts import verdict_figure
from fmlib.runs import RunError
from fmlib.train import quick_settings, train_model

METRICS, PROTOCOLS = list(dplr_experiment.METRICS), list(dplr_experiment.PROTOCOLS)
# In projector mode the learned R's heatmaps share the lesson's view with the controls' row above them (about 90 px
# at 150 %): shorter than a page's main figure, so that the whole view ends above the fold of 480 CSS pixels; their
# field names in ROOM_TICK_FONT px, one per row of 12 fields.
ROOM_HEATMAPS_HEIGHT = MAIN_FIGURE_HEIGHT - 90
ROOM_TICK_FONT = 12
VIEW = UrlState(
    rho=Bound(2, fallback=True),  # at most the run's m − 1: checked where the run is known
    method=Bound("eig", one_of(["eig", "nuclear"]), "eig or nuclear"),
    fi_run=Bound(None),  # by default an FwFM of the saved runs (chosen_run): cleared by a reset
    fi_f=Bound(None),  # the pair (f, g): its default is the run's (pair_defaults), given to copy_link_and_reset
    fi_g=Bound(None),
    fi_sample=Bound(0, fallback=True),  # a row of the run's validation split: checked where it is loaded
    table1_task=Bound(METRICS[0], one_of(METRICS), "one of " + ", ".join(METRICS)),
    table1_protocol=Bound("ours", one_of(PROTOCOLS), "one of " + ", ".join(PROTOCOLS)),
    fi_data_section=ON_DEMAND,
    fi_spectra=ON_DEMAND,
    table1_section=ON_DEMAND,
)

bar = title_bar("Field interactions")
notebook_link("02_field_interactions")
st.markdown(
    "**Question.** An FwFM learns how strongly every pair of fields interacts: the matrix R. "
    "To serve it fast we must simplify R. Is it better to *prune* it (keep its largest entries) "
    "or to write it as *diagonal plus low rank* (DPLR) with the same number of parameters, ρ(m+1)?"
)


TOY_KEYS = ("m", "R_fg", "ρ", "U", "ω", "d", "R̃")


def toy_picture():
    """The toy (``budget_toy``) and its three heatmaps, the odd pair outlined."""
    toy = budget_toy()
    fig = toy_heatmaps(
        {
            f"R ({toy.pairs} pairs)": toy.R,
            f"pruned: {toy.keep} kept": toy.pruned,
            f"DPLR, ρ = {toy.rank}": toy.dplr,
        },
        list(TOY_FIELDS),
        "A made-up R",
    )
    return toy, with_pair(fig, *TOY_ODD[:2])


def toy_section(container=st) -> None:
    """The idea before the evidence: a made-up R of 5 fields, pruned and DPLR at the same budget ρ(m+1), in a
    bordered box (``_intuition.block``) of ``container``."""
    toy, fig = cached(toy_picture)
    m, (a, b, _) = len(toy.R), TOY_ODD
    box = block(
        "field_interactions",
        f"First, a toy: {m} made-up fields, {toy.pairs} pairs, a budget of ρ(m+1) = {toy.keep} numbers (ρ = {toy.rank})",
        TOY_KEYS,
        container=container,
    )
    chart(fig, container=box, key="toy")
    full, _, dplr = toy.odd_pair()
    errors = toy.errors
    box.markdown(
        f"Pruning keeps the {toy.keep} largest $|R_{{fg}}|$ exactly — the odd pair {a} × {b} ({full:+.2f}, outlined) among "
        f"them — and zeroes the other {toy.pairs - toy.keep}. DPLR spends its {toy.keep} numbers "
        f"(U: {toy.rank * m}, ω: {toy.rank}) on the pattern most pairs follow: every pair keeps a value, but the odd "
        f"pair becomes {dplr:+.2f}. Relative error: pruned {errors['pruned']:.2f}, DPLR {errors['dplr']:.2f}. "
        "Which loss costs more depends on the data: below, the same two on a learned R."
    )


@st.dialog("A toy R", width="large")
def toy_dialog() -> None:
    """The toy in a window over the page (projector mode: the room sees it whole, the lesson's view stays put)."""
    toy_section(st.container())  # a box, not the folded expander ``block`` gives the page itself in projector mode


def table1_section():
    """Table 1 with verdicts, from the newest result table; never stops the rest of the page."""
    st.markdown(
        "Every model with a tuned preset (embedding size 8, as in the paper), over seeds. **Our protocol**: "
        "every model tuned with the same training tools (L2, grouped L2 by field, weight averaging) and the "
        "same number of Optuna trials; **the DPLR paper's**: only the learning rate tuned, features seen fewer "
        "than 10 times as rare (§5). The pruned FwFM's fine-tune continues its training (Adam's state kept) "
        "and keeps the pruned weights if fine-tuning does not validate better; DPLR gets the fine-tuning "
        "epochs on top of its budget. Each bar is a paired per-seed difference with its 95 % interval: right "
        "of the dashed line favours the paper's claim."
    )
    table_data = dataset_name()
    if table_data == "synthetic":
        st.caption("Table 1 is measured on MovieLens: pick ml-100k in the sidebar to see it.")
        return
    left, right = st.columns(2)
    table_task = VIEW.widget("table1_task", left.radio, "task", METRICS, horizontal=True)
    protocol = VIEW.widget(
        "table1_protocol",
        right.radio,
        "protocol",
        PROTOCOLS,
        horizontal=True,
        format_func={"ours": "ours (equal tools)", "dplr-paper": "the DPLR paper's (only lr)"}.get,
    )
    table_name = dplr_experiment.table_name(table_data, table_task, protocol)
    argv = ["reproduce", "dplr", "--dataset", table_data, "--task", table_task, "--protocol", protocol]
    server_job(
        f"table1_recompute_{table_data}_{table_task}_{protocol}",
        f"Table 1 on {table_data} ({table_task}, protocol {protocol})",
        f"Recompute here ({table_data}, 5 seeds × 12 trainings: minutes)",
        lambda job: recompute([argv], job),
        lambda lines: f"Recomputed: {lines[-1]}",
        allowed=teacher_or_alone(),
    )
    columns = ("seed", "model", "rank", *dplr_experiment.METRICS[table_task])
    try:  # verdicts as the scorecard measures them
        found = measured_table(table_name, columns, "field_interactions", table_data, table_task)
    except ValueError as err:
        error(err)
        return
    if found is None:
        st.info(
            f"No results for {table_data} ({table_task}, protocol {protocol}) yet. Press *Recompute here*, or run "
            f"`python -m fmlib {' '.join(argv)}` (it needs that protocol's tuned presets)."
        )
        return
    frame, header, verdicts = found
    source_caption(header)
    st.caption(f"{dplr_experiment.preset_note(frame, table_task)} {dplr_experiment.epoch_note(frame)}")
    st.markdown(f"**Where pruning bites.** {dplr_experiment.headline_note(frame)}")
    chart(drawn_once(header, "verdicts", lambda: verdict_figure(verdicts)), key="table1_verdicts")
    st.dataframe(
        verdicts[["claim", "other", "metric", "seeds", "difference", "low", "high", "verdict"]],
        hide_index=True,
        column_config={c: st.column_config.NumberColumn(format="%+.4f") for c in ("difference", "low", "high")},
    )
    with st.expander("how each side was trained (recipes)"):
        st.table(verdicts[["claim", "recipes"]].set_index("claim"))
    for metric in dplr_experiment.METRICS[table_task]:
        st.markdown(f"**{metric.upper()}**, test, mean ± std over seeds")
        st.dataframe(table1_summary(frame, metric), hide_index=True)


@st.cache_data(show_spinner=False, max_entries=16)
def table1_summary(frame, metric: str):
    """Table 1's mean ± std over seeds, once per version of the result table."""
    return dplr_experiment.summary(frame, metric)


@st.cache_data(show_spinner="Approximating R ...")
def approximations(R, rank: int, method: str):
    keep = budget(R.shape[0], rank)
    return prune(R, keep), dplr_posthoc(R, rank, method).R


TUNED = ("fwfm", 8)  # the tuned FwFM: presets.load(dataset, "fwfm", 8), the preset the starter run trains with


def tuned_preset(name: str) -> dict | None:
    """The tuned FwFM's preset on data set ``name`` (``TUNED``), or None where it has none (synthetic data)."""
    try:
        return presets.load(name, *TUNED)
    except ValueError:
        return None


def quick_name(name: str) -> str:
    """What the FwFM trained here is called: the tuned one where ``name`` has a preset, else a quick one."""
    return "quick FwFM" if tuned_preset(name) is None else f"tuned FwFM (preset {presets.preset_name(*TUNED)})"


def quick_cost(name: str) -> str:
    """What training the tuned FwFM takes, said on its button: nothing where this machine keeps that training
    (``fmlib.trainings``), else the epochs its tuning trained at seed 0 (early stopping deciding)."""
    preset = tuned_preset(name)
    if preset is None:
        return ""
    key = tuned_key(name)
    if key is not None and trainings.kept(key):
        return "kept on this machine: it loads at once"
    epochs = presets.seed0_epochs(preset)
    return f"about {epochs} epochs" if epochs else ""


def tuned_training(name: str, data, preset: dict):
    """(split, config, hyperparameters) of the tuned FwFM on ``name``: ``data`` (split 0) at the preset's min count."""
    if preset["min_count"] != data.min_count:  # read here, outside Streamlit's caches: this runs in a job's thread
        data = split(load(name), seed=data.seed, min_count=preset["min_count"])
    return data, presets.train_config(preset), presets.hyperparameters(preset)


@st.cache_resource(show_spinner=False)
def tuned_key(name: str) -> str | None:
    """The id the tuned FwFM's training on ``name`` is kept under (``fmlib.trainings.key``); None without data."""
    try:
        data, config, hp = tuned_training(name, load_split(name, 0), tuned_preset(name))
    except Exception:  # no data source: the page says why when the training is asked for
        return None
    return trainings.key("fwfm", data, config, hp)


def quick_fwfm(name, data, progress):
    """The FwFM trained here when no saved one is shown: with the tuned preset's settings where the data set has one
    (on its split's min count), so the page opens on the R a tuned FwFM learns — a training kept once a machine
    (``fmlib.trainings``: the starter run's and notebook 02's too); else the short training of ``quick_settings``
    (synthetic: enough steps, and the planted embedding size)."""
    preset = tuned_preset(name)
    if preset is None:
        config, hp = quick_settings(name)
        return train_model("fwfm", data, config, progress, **hp)
    data, config, hp = tuned_training(name, data, preset)
    return trainings.trained("fwfm", data, config, progress, **hp)


QUICK = "a quick FwFM, trained here"  # not a run id: those have no spaces
R_MODELS = tuple(filter(has_interaction_matrix, usable_models()[0]))  # the models with an R; FwFM's is learned freely


def runs_with_R(dataset: str) -> dict[str, dict]:
    """Run id -> config of the saved FwFM and DPLR runs of ``dataset`` this session sees by default
    (its author's, the shared ones, and the sidebar's pick), FwFM runs first, each newest first."""
    store = run_store()
    groups = store.by_author()
    ids = [*(groups.get(author(), []) if author() else []), *groups.get(None, [])]
    picked = selected_run_id()
    if picked is not None and picked not in ids:
        ids.append(picked)
    found = {}
    for run_id in ids:
        try:
            config = store.info(run_id)["config"]
        except RunError:  # picking it in the sidebar says why
            continue
        if config.get("dataset") == dataset and config["model"] in R_MODELS:
            found[run_id] = config
    return dict(sorted(found.items(), key=lambda item: R_MODELS.index(item[1]["model"])))


def chosen_run(configs: dict, container=st):
    """The run whose R the page shows, picked on the page (key ``fi_run``): the run a link names (a lesson's stop:
    the starter FwFM, trained with the tuned preset), else by default an FwFM — the sidebar's pick if it is one,
    else the newest FwFM run, else the FwFM trained here (``quick_name``) — never a DPLR run, whose R is low rank
    by construction. A run picked in the sidebar while this page is open is shown, whatever its model."""
    picked = selected_run_id()
    fwfm = [run_id for run_id, config in configs.items() if config["model"] == "fwfm"]
    options = [*configs, QUICK]
    # checked before the linked id is put in the session, so that a link to a run that is not here gets its note
    VIEW.check("fi_run", check=(one_of(options), "a saved FwFM or DPLR run of this dataset"))
    if st.session_state.get("fi_sidebar_seen", picked) != picked and picked in configs:
        st.session_state["fi_run"] = picked  # the reader picked it in the sidebar just now
    st.session_state["fi_sidebar_seen"] = picked
    default = picked if picked in fwfm else (fwfm[0] if fwfm else QUICK)
    if st.session_state.get("fi_run") not in options:  # first visit, or its run was deleted
        linked = st.query_params.get("fi_run")  # checked above: one of the options, or gone with a note
        st.session_state["fi_run"] = linked if linked in options else default
    choice = VIEW.widget(
        "fi_run",
        container.selectbox,
        "Run whose R is shown",
        options,
        default=default,  # shown by id: a bound box writes the label it shows into the URL, and reads it back
        help="An FwFM learns R freely: what it learned is the question. A DPLR run's R is low rank by construction.",
    )
    if picked in configs and picked != choice and configs[picked]["model"] == "dplr":
        secondary(
            f"The sidebar's run {picked} is a DPLR run; this page opens on a learned R: pick it above to see its R."
        )
    return choice


def quick_run(run_id, note=None):
    name = quick_name(dataset_name())
    return saved_or_quick_run(
        lambda run: run.model.interaction_matrix() is not None,
        "it has no field interaction matrix R (an FM is the FwFM with R = 11ᵀ − I fixed). "
        f"Pick an fwfm or dplr run in the sidebar, or train the {name} here.",
        name,
        "interactions_quick_run",
        quick_fwfm,
        run_id=run_id,
        note=note,
        cost=quick_cost(dataset_name()),
    )


def pair_defaults(schema) -> tuple[str, str]:
    """The pair a first visit shows: the first context field × the first item field (user_id × movie_id on
    MovieLens: the pair matrix factorization is made of), else the first two fields."""
    roles = {f.role: f.name for f in reversed(schema.fields)}  # the first field of each role
    if "context" in roles and "item" in roles:
        return roles["context"], roles["item"]
    return schema.names[0], schema.names[1]


def pick_from(chart_key: str):
    """The callback of a pickable heatmap figure: the cell clicked there becomes the page's pair (f, g)."""

    def picked() -> None:
        event = st.session_state.get(chart_key)
        pair = picked_pair(event["selection"]["points"] if event else [])
        if pair is not None:
            st.session_state["fi_f"], st.session_state["fi_g"] = pair

    return picked


def linked_figure(draw, args: tuple, pair: tuple[str, str]):
    """The heatmap figure ``draw(*args)``, its cells clickable (``pickable``), the pair outlined (``with_pair``)."""
    return with_pair(pickable(draw(*args)), *pair)


def linked_chart(draw, args: tuple, pair, key: str, container=st, projector_height: int | None = None) -> None:
    """``linked_figure``, built once per server for the same arguments, with a click on a cell picking the pair
    (``projector_height``: as ``chart``'s)."""
    fig = cached(linked_figure, draw, args, pair)
    chart(
        fig,
        container=container,
        projector_height=projector_height,
        key=key,
        on_select=pick_from(key),
        selection_mode="points",
    )


def pair_controls(schema, container):
    """The two select boxes of the pair (f, g) (keys ``fi_f``, ``fi_g``, kept in the URL) in a row of ``container``;
    returns f, g and the row's third column. A click on a heatmap cell sets the same two keys (``pick_from``),
    so both routes show the same pair."""
    names = schema.names
    first_f, first_g = pair_defaults(schema)
    for key, default in (("fi_f", first_f), ("fi_g", first_g)):
        if st.session_state.get(key, default) not in names:  # a run with other fields
            st.session_state[key] = default
    left, mid, right = container.columns(3)
    check = one_of(names), "a field of this run: " + ", ".join(names)
    hint = "or click a cell of any heatmap"
    f = VIEW.widget("fi_f", left.selectbox, "field f", names, default=first_f, check=check, help=hint)
    g = VIEW.widget("fi_g", mid.selectbox, "field g", names, default=first_g, check=check, help=hint)
    return f, g, right


@st.cache_resource(show_spinner="Loading the run's data ...", max_entries=4)
def split_with_features(name: str, seed: int, min_count: int, features: tuple[str, ...]):
    """The split a run was trained on, with its feature set (relation blocks built once per server)."""
    return with_features(load_split(name, seed, min_count), ",".join(features))


def run_validation(run):
    """The validation split of the data the run was trained on, or the reason it cannot be rebuilt here."""
    cfg = run.config.get("split", {})
    try:
        data = load_split(run.config["dataset"], cfg.get("seed", 0), cfg.get("min_count", 1))
        features = tuple(cfg.get("features") or data.schema.names)
        if list(features) != data.schema.names:
            data = split_with_features(run.config["dataset"], cfg.get("seed", 0), cfg.get("min_count", 1), features)
    except Exception as err:  # no data source, or a feature set this dataset cannot build: say why
        return None, str(err)
    if data.schema.names != run.model.schema.names or data.schema.num_features != run.model.schema.num_features:
        return None, "its split cannot be rebuilt here with the same features"
    return data.valid, None


def pair_panel(run, matrices: dict, pair: tuple[str, str], kept: np.ndarray, sample_box) -> None:
    """The pair's term R_fg⟨e_f, e_g⟩ in one validation rating's score under each R of ``matrices``, beside that
    rating's whole interaction score ([FwFM] eq. 3); the rating picked by number (key ``fi_sample``) in
    ``sample_box``; ``kept``: the pruning's mask (``prune_mask``)."""
    names = run.model.schema.names
    f, g = (names.index(name) for name in pair)
    valid, why = run_validation(run)
    if valid is None:
        sample_box.caption(f"No rating to trace: {why}.")
        return
    last = len(valid) - 1

    row = VIEW.widget(
        "fi_sample",
        sample_box.number_input,
        "validation rating (row)",
        step=1,
        help=f"Row 0 to {last:,} of the validation split the run was trained beside.",
        check=(in_range(0, last, integer=True), f"validation rating: 0 to {last}"),
    )
    if not 0 <= row <= last:
        error(f"validation rating: {row:g} is out of range; use 0 to {last:,}.")
        return
    if f == g:
        st.info(
            f"{pair[0]} × {pair[0]} is on R's diagonal, which the model never uses ([DPLR] eq. 5): pick two fields."
        )
        return
    sample = sample_embeddings(run.model.eval(), valid, int(row))
    table = pair_contribution(sample, matrices, f, g)
    full, pruned, dplr = table["term"]
    full_score, pruned_score, dplr_score = table["interaction"]
    st.markdown(
        f"**Rating {row:,}**: {sample_label(valid, int(row))}. Its score is "
        r"$\hat y = w_0 + \sum_i w_i x_i + \sum_{f<g} R_{fg}\,\langle e_f, e_g\rangle$ ([FwFM] eq. 3), "
        f"the pair {pair[0]} × {pair[1]} adding one term. Each row swaps R, the embeddings kept:",
        help=glossary_help(("ŷ", "w_0", "w_i", "e_f", "R_fg", "R̃")),
    )
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            "R": "R used",
            "R_fg": st.column_config.NumberColumn("R[f,g]", format="%.4g"),
            "inner": st.column_config.NumberColumn("⟨e[f], e[g]⟩", format="%.4g"),
            "term": st.column_config.NumberColumn("the pair's term R[f,g]·⟨e[f], e[g]⟩", format="%.4g"),
            "interaction": st.column_config.NumberColumn("all pairs' terms", format="%.4g"),
            "score": st.column_config.NumberColumn("score ŷ", format="%.4g"),
        },
    )
    st.markdown(
        f"**Notice:** pruning {'keeps' if kept[f, g] else 'drops'} this pair (its term {full:+.3g} → {pruned:+.3g}); DPLR "
        f"changes it to {dplr:+.3g}. Over all pairs, this rating's interaction score moves by "
        f"{pruned_score - full_score:+.3g} (pruned) and {dplr_score - full_score:+.3g} (DPLR)."
    )


def error_picture(R, pruned, posthoc, names, pair, method: str) -> None:
    """The approximation errors E = R̃ − R pair by pair (App. C), pickable, the chosen pair outlined."""
    errors = {"pruned − R": pruned - R, f"post-hoc DPLR ({method}) − R": posthoc - R}
    entry = "E<sub>fg</sub> = R̃<sub>fg</sub> − R<sub>fg</sub>"
    linked_chart(interaction_heatmaps, (errors, names, "Approximation errors", entry), pair, "pair_errors")
    secondary(
        "Each cell is what an approximation gets wrong in one pair: pruning's errors are the pairs it zeroed "
        "(exactly −R there, 0 elsewhere); DPLR's are spread over every pair. The spectra below sum them up."
    )


def data_section(run, R, names, pair) -> None:
    """The learned R against the planted one (synthetic data) or against the FM's uniform 1, and its replay."""
    m = R.shape[0]
    if run.config["dataset"] == "synthetic" and m == len(demo_R()):
        planted = demo_R().double().numpy()
        aligned = align_field_scales(R, planted)
        both = {"planted R": planted, "learned R, field scales aligned": aligned}
        linked_chart(interaction_heatmaps, (both, names), pair, "planted")
        st.caption(
            "A learned R is fixed only up to a scale and sign per field ($e_f / c_f$ with $R_{fg} c_f c_g$ predicts the "
            f"same); aligned that way, it matches the planted one with correlation {offdiag_correlation(aligned, planted):.3f}."
        )
    else:
        linked_chart(deviation_heatmap, (R, names), pair, "deviation")
        upper = R[np.triu_indices(m, 1)]
        st.caption(
            f"The data moved R from the FM's uniform 1 to between {upper.min():.2f} and {upper.max():.2f} "
            f"(off-diagonal coefficient of variation {offdiag_cv(R):.2f}); red pairs interact more than in an FM."
        )
    replay(run, what="R")


def spectra_section(R, pruned, posthoc, method: str) -> None:
    """The eigenvalues of R beside the FM's, and the singular values of both approximation errors (App. C)."""
    m = R.shape[0]
    left, right = st.columns(2)
    with left:
        chart(cached(eigen_spectrum_figure, spectrum(R), spectrum(r_fm(m))), key="eigen")
        st.caption(
            "Eigenvalues of R (bars) and of R_FM = 11ᵀ − I (black ticks: m − 1 once, then −1). "
            "The FM's R is not low rank — its zero diagonal makes it full rank — but it *is* "
            "diagonal plus rank one (eq. 7). A few large eigenvalues and a flat rest is what DPLR exploits."
        )
    with right:
        sigma_pruned, sigma_dplr = spectrum(pruned - R, "singular"), spectrum(posthoc - R, "singular")
        spectra = {"pruned": sigma_pruned, f"post-hoc DPLR ({method})": sigma_dplr}
        chart(cached(error_spectra_figure, spectra), key="errors")
        bigger = "post-hoc DPLR's" if sigma_dplr.max() > sigma_pruned.max() else "pruning's"
        st.caption(
            "Singular values of the approximation errors E = R̃ − R (App. C, Fig. 2). The paper found "
            "the post-hoc DPLR error's *largest* singular values much larger than pruning's on Criteo; "
            "that is why it trains DPLR instead of approximating afterwards. "
            f"Here the largest is {bigger}: σ₁ = {sigma_pruned.max():.3g} (pruned) vs "
            f"{sigma_dplr.max():.3g} (post-hoc DPLR)."
        )


def r_section() -> tuple[dict, int, tuple[str, str]]:
    """The learned R beside its pruned and post-hoc DPLR approximations at the ρ slider's budget; one pair's term
    in one rating under each; the errors pair by pair, what the data did to R and the error spectra. Returns the
    saved runs with R, the largest ρ and the default pair (the view's defaults)."""
    # in projector mode the run picker, the ρ slider, the method and the toy share one row, in the box where a
    # lesson's link arrives (``view``) with the heatmaps: the room sees the slider and what it changes together
    view = st.container(key=LESSON_VIEW) if projector() else None
    row = view.columns([2.6, 3.4, 2.6, 1.4], vertical_alignment="bottom") if view else None
    configs = runs_with_R(dataset_name())
    if not configs:  # no saved FwFM or DPLR run: the sidebar's pick says why, or a quick FwFM
        run, source = quick_run(selected_run_id())
    else:
        choice = chosen_run(configs, row[0] if row else st)
        if choice == QUICK:
            run, source = quick_run(None, f"The {quick_name(dataset_name())} is picked above.")
        else:
            try:
                run = load_run(choice)
            except RunError as err:
                fail(err)
            source = f"saved run **{choice}** ({run.config['model']} on {run.config['dataset']})"
    model = run.model
    R = interaction_matrix(model)
    m, names = R.shape[0], model.schema.names
    is_dplr = model_name(model) == "dplr"
    st.caption(f"Showing {source}: m = {m} fields.")
    if is_dplr:
        built = model.hparams()["rank"]
        st.info(
            f"This run's R is DPLR of rank ρ = {built} by construction ([DPLR] eq. 10: the matrix its U, e and d "
            f"imply), so a post-hoc DPLR of rank ρ ≥ {built} is exact: a zero error below is no evidence for DPLR "
            "— pick an FwFM run to ask it of a learned R."
        )

    max_rank = min(m - 1, (m * (m - 1) // 2) // (m + 1))
    if max_rank < 1:  # m ≤ 3: the smallest budget, m + 1 numbers, already keeps every pair
        fail(
            f"This run has m = {m} fields, so R has {m * (m - 1) // 2} pairs and the smallest budget, ρ(m+1) = {m + 1} "
            "numbers, keeps them all: there is nothing to prune. Pick a run with 4 fields or more."
        )
    if row:  # the lesson's view: the heatmaps stay above the fold, the toy one click away
        _, left, right, toy_box = row
        if toy_box.button(
            "Toy R", icon=":material/lightbulb:", key="fi_toy", help="A made-up R of 5 fields, pruned and DPLR"
        ):
            toy_dialog()
    else:
        view = st.container(key=LESSON_VIEW)  # the controls and the heatmaps they change
        left, right = view.columns([2, 1])
    if max_rank == 1:  # a slider needs two values
        rank = 1
        left.markdown(
            f"rank ρ = 1 (budget ρ(m+1) = {m + 1} parameters, the only one below the {m * (m - 1) // 2} pairs)"
        )
    else:
        rank = VIEW.widget(
            "rho",
            left.slider,
            "rank ρ (budget ρ(m+1) parameters)",
            1,
            max_rank,
            check=(in_range(1, max_rank, integer=True), f"ρ: 1 to {max_rank} for m = {m} fields"),
        )
    method = VIEW.widget(
        "method",
        right.radio,
        "post-hoc DPLR by",
        ["eig", "nuclear"],
        horizontal=True,
        help="eig: truncated eigendecomposition (diagonal filled in); nuclear: minimise the "
        "nuclear norm of the error (App. C)",
    )
    try:
        pruned, posthoc = approximations(R, rank, method)
    except ValueError as err:
        fail(err)
    keep = budget(m, rank)
    left_pct = percent_left(m, keep)
    # drawn after the pair is read from its controls; the sentence on R under the view, which must fit the room
    heatmap_box, summary_box, metrics_box = view.container(), st.container(), st.container()
    st.subheader("One pair of fields in one rating", anchor="one-pair")
    secondary(
        "Click a cell of any heatmap on this page, or pick its two fields here: the pair is outlined in every "
        "heatmap, and the table shows its term in one validation rating's score under each R."
    )
    f, g, sample_box = pair_controls(model.schema, st)
    pair = (f, g)
    learned = "R implied by DPLR" if is_dplr else "learned R"
    if projector():  # titles on one line, short field names that fit the rows and columns: the view above the fold
        shown = {learned: R, f"pruned: {keep} kept": pruned, f"DPLR, ρ = {rank}": posthoc}
        heatmaps, room = (room_r_heatmaps, (shown, names, ROOM_TICK_FONT)), ROOM_HEATMAPS_HEIGHT
    else:
        shown = {
            learned: R,
            f"pruned: {keep} kept ({left_pct:.1f}% left)": pruned,
            f"post-hoc DPLR, ρ = {rank}": posthoc,
        }
        heatmaps, room = (r_heatmaps, (shown, names)), None
    linked_chart(*heatmaps, pair, "heatmaps", container=heatmap_box, projector_height=room)
    summary_box.markdown(
        "**How far R is from the FM's:** " + r_summary(R, names, "this DPLR model" if is_dplr else "this FwFM")
    )
    row = metrics_box.container(horizontal=True)  # each metric as wide as its label, wrapping on a narrow screen
    row.metric("% left = 2ρ(m+1)/(m(m−1))", f"{left_pct:.1f}%", width="content")
    row.metric("pruned: relative error off the diagonal", f"{offdiag_error(pruned, R):.3f}", width="content")
    row.metric("post-hoc DPLR: relative error", f"{offdiag_error(posthoc, R):.3f}", width="content")
    metrics_box.markdown(
        "**Notice:** pruning keeps the strongest pairs exactly and zeroes the rest; DPLR keeps a "
        "blurred version of *every* pair. Which error matters depends on the embeddings: App. C bounds "
        "the change of the pairwise term by $\\sum_i \\lambda_i(VV^\\top)\\,\\sigma_i(E)$ — so compare the error *spectra* below."
    )
    pair_panel(
        run,
        {
            ("R implied by DPLR" if is_dplr else "learned R"): R,
            f"pruned ({keep} kept)": pruned,
            "post-hoc DPLR": posthoc,
        },
        pair,
        prune_mask(R, keep),
        sample_box,
    )
    error_picture(R, pruned, posthoc, names, pair, method)

    on_demand("What the data did to R", "fi_data_section", lambda: data_section(run, R, names, pair))
    on_demand("Spectra", "fi_spectra", lambda: spectra_section(R, pruned, posthoc, method))
    return configs, max_rank, pair_defaults(model.schema)


# The toy first (the idea on 5 made-up fields), then R and the ρ slider (a lesson's stop prepares them, and they
# explain Table 1), Table 1 below; a run that cannot be shown stops its section only after Table 1 is drawn. In
# projector mode the toy opens in a window from a button beside the ρ slider, so the lesson's view stays above the fold.
if not projector():
    toy_section()
r_box = st.container()
on_demand("Trained DPLR vs pruned FwFM: Table 1 on MovieLens, with verdicts", "table1_section", table1_section)
with r_box:
    configs, max_rank, (first_f, first_g) = r_section()
copy_link_and_reset(
    VIEW.defaults() | {"fi_f": first_f, "fi_g": first_g},  # the run's fields decide the default pair
    clear=["fi_run"] if configs else [],  # its default depends on the saved runs,
    container=bar,
)
