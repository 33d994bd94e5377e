"""Train: pick a model and a few hyperparameters, watch it learn, save the run."""

import pandas as pd
import streamlit as st

from app_pages._classroom import author, follow_training, save_message, save_run, submit_training
from app_pages._feature_sets import SECTION, features_box, features_section
from app_pages._measured import scorecard_rows
from app_pages._replay import replay_choice
from app_pages._ui import (
    bounded_number,
    dataset_name,
    fail,
    load_run,
    load_split,
    notebook_link,
    selected_run_id,
    times_quick,
)
from app_pages._view import (
    ON_DEMAND,
    Bound,
    UrlState,
    cached,
    chart,
    copy_link_and_reset,
    on_demand,
    one_of,
    shown_path,
    title_bar,
    training_line,
)
from fmlib import presets
from fmlib.arguments import int_list
from fmlib.data.dataset import TASKS
from fmlib.data.features import with_features
from fmlib.experiments import bfm as bfm_experiment
from fmlib.experiments import fm_ablation, tables
from fmlib.experiments.claims import Threshold, measure_all
from fmlib.experiments.verdict import HOLDS
from fmlib.models import hyperparameters, usable_models
from fmlib.plots.fm_ablation import ablation_figure
from fmlib.plots.trace import trace_figure
from fmlib.plots.training import learning_curves
from fmlib.runs import RunError
from fmlib.train import TrainConfig, quick_model_settings

bar = title_bar("Train a model")
notebook_link("01_fm_from_scratch")
notebook_link("08_your_own_model")
MODELS, unusable = usable_models()  # the registered models, yours (FMLIB_MODELS) included, that fill the contract
for line in unusable:
    st.error(line)
st.markdown(
    "**What does an FM learn, and how fast?** Pick a model, press *Train*, and watch the "
    "training loss and the validation metric epoch by epoch. Training stops when the "
    "validation metric has not improved for a few epochs, and keeps the best weights. "
    "Settings live in the URL: share the link to share a preset."
)
st.markdown(
    "What it learns are the numbers of one formula. Here is a single prediction, term by term: a global "
    "bias, one weight per feature, and one inner product ⟨v, v⟩ per pair of fields. Training nudges every "
    "w and every v so that such sums match the ratings in the data."
)
chart(cached(trace_figure), key="trace")

name = dataset_name()
# the first choice is the quick training (a few epochs); a tuned preset, up to its epoch budget, is the other
defaults = quick_model_settings(name, "fm")[0]


def widget_default(value):
    """A hyperparameter's default as its widget holds it (a tuple as comma-separated text)."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else value


def default_hp(model: str) -> dict:
    """The model's hyperparameters under the quick settings (an FM's dim) and its own defaults otherwise."""
    return {**hyperparameters(model), **quick_model_settings(name, model)[1]}


def preset_label(choice: str) -> str:
    """A choice of the *Preset* menu with its cost: the quick settings' epochs, or a preset's budget."""
    if choice == "defaults":
        return f"quick: {defaults.epochs} epochs at lr {defaults.lr:g}"
    try:
        preset = presets.load_named(name, choice, model, task, root)
    except ValueError:
        return f"{choice} (unreadable: choose it to see why)"
    budget, used = presets.train_config(preset).epochs, presets.seed0_epochs(preset)
    stopped = f", {used} in its tuning" if used else ""
    times = times_quick(used or budget, defaults.epochs)  # the epochs it will likely train, else its cap
    return f"{choice}: tuned, up to {budget} epochs{stopped} ({times}× the quick run's)"


def tuning_caption(choice: str) -> str:
    """The chosen preset's tuning record in a sentence (``presets.tuning_summary``)."""
    try:
        return presets.tuning_summary(presets.load_named(name, choice, model, task, root))
    except (ValueError, KeyError) as err:
        return f"{choice}: its tuning record is unreadable ({err})."


def base_config() -> TrainConfig:
    """The settings without a widget (batch size, patience) of the chosen preset, or of the quick run."""
    choice = st.session_state.get("preset", "defaults")
    if choice not in tuned:  # the quick settings (or a preset of another model, left from before)
        return defaults
    try:
        return presets.train_config(presets.load_named(name, choice, model, task, root))
    except ValueError as err:
        fail(str(err))


def apply_preset():
    """Fill the widgets from the chosen preset (or the quick settings); they stay editable."""
    model, task, choice = st.session_state["model"], st.session_state["task"], st.session_state["preset"]
    try:
        root = presets.features_root(st.session_state.get("train_features"))
        preset = presets.load_named(name, choice, model, task, root) if choice != "defaults" else None
    except ValueError as err:
        st.session_state["preset_error"] = str(err)
        return
    config = presets.train_config(preset) if preset else defaults
    hp = presets.hyperparameters(preset) if preset else default_hp(model)
    st.session_state.update(
        lr=config.lr, weight_decay=config.weight_decay, epochs=config.epochs, average_from=config.average_from
    )
    # grouped L2 has no widget: the preset's is kept and used by Train (shown under the widgets)
    st.session_state["grouped_decay"] = {"field_decay": config.field_decay, "linear_decay": config.linear_decay}
    for key, default in hyperparameters(model).items():
        st.session_state[f"hp_{model}_{key}"] = widget_default(hp.get(key, default))


def valid_int_list(text: str) -> bool:
    try:
        int_list(text)
    except ValueError:
        return False
    return True


def hp_label(key: str) -> str:
    return "dim (embedding size k)" if key == "dim" else key


def hp_bound(key: str, default) -> Bound:
    """A hyperparameter's URL entry: its default as its widget holds it, and the check its widget needs."""
    if isinstance(default, bool):
        return Bound(default, lambda text: text.lower() in ("true", "false"), f"{hp_label(key)}: true or false")
    if isinstance(default, (tuple, list)):
        text = widget_default(tuple(default))
        return Bound(text, valid_int_list, f"{hp_label(key)}: comma-separated integers", fallback=True)
    return Bound(default)  # a number: bounded_number checks its range


VIEW = UrlState(
    model=Bound(next(iter(MODELS)), one_of(MODELS), "one of " + ", ".join(MODELS)),
    train_features=Bound("all"),  # checked against the dataset's fields by features_box
    task=Bound(defaults.task, one_of(TASKS), "one of " + ", ".join(TASKS)),
    preset=Bound("defaults"),  # not bound (a preset fills the widgets below): "Reset to defaults" sets it back
    # the numbers below: bounded_number checks their ranges
    seed=Bound(defaults.seed),
    epochs=Bound(defaults.epochs),
    lr=Bound(defaults.lr),
    weight_decay=Bound(defaults.weight_decay),
    average_from=Bound(defaults.average_from),
    **{
        f"hp_{m}_{key}": hp_bound(key, value)
        for m in MODELS
        for key, value in default_hp(m).items()
        if value is not None
    },
    watch_saved_run=ON_DEMAND,
    bfm_section=ON_DEMAND,
    feature_sets_section=ON_DEMAND,
)


left, right = st.columns(2)
with left:
    model = VIEW.widget("model", st.selectbox, "Model", list(MODELS))
    task = VIEW.widget(
        "task",
        st.radio,
        "Task",
        TASKS,
        horizontal=True,
        help="rating: predict the 1–5 stars (RMSE). click: predict rating ≥ 4 (logloss, AUC).",
    )
    features = features_box(lambda: load_split(name, 0).schema, VIEW)
    root = presets.features_root(features)
    tuned = presets.available(name, model, task, root)
    st.selectbox(
        "Preset",
        ["defaults", *tuned],
        key="preset",
        format_func=preset_label,
        on_change=apply_preset,
        help="The quick settings train a few epochs, enough to watch an FM learn. A tuned preset (python -m fmlib "
        "tune) fills in the learning rate, L2, epochs and hyperparameters that did best on the validation split, "
        "and trains up to its epoch budget, early stopping deciding, at the cost its label says; the line below "
        "the menu says whether its tuning converged.",
    )
    if st.session_state.get("preset") in tuned:
        st.caption(tuning_caption(st.session_state["preset"]))
    seed = int(
        VIEW.widget(
            "seed", bounded_number, "Seed", 0, 10_000, help="Seeds the split, the initialisation and the batch order."
        )
    )
with right:
    epochs = int(VIEW.widget("epochs", bounded_number, "Max epochs", 1, 200))
    lr = VIEW.widget("lr", bounded_number, "Learning rate", 1e-5, 1.0, format="%.4f")
    weight_decay = VIEW.widget("weight_decay", bounded_number, "Weight decay (L2)", 0.0, 1.0, format="%.5f")
    average_from = int(
        VIEW.widget(
            "average_from",
            bounded_number,
            "Average weights from epoch (0: off)",
            0,
            200,
            help="From this epoch on, the model kept is the mean of the weights after each epoch "
            "(the point-estimate analogue of a Bayesian FM's average over posterior samples).",
        )
    )

grouped_decay = st.session_state.get("grouped_decay", {})
if TrainConfig(**grouped_decay).grouped_decay:
    multiples = {**grouped_decay["field_decay"], "w": grouped_decay["linear_decay"]}
    st.caption(
        "Grouped L2 from the preset (multiples of the weight decay): "
        + ", ".join(f"{name} × {scale:g}" for name, scale in multiples.items())
    )
if "preset_error" in st.session_state:
    st.error(st.session_state.pop("preset_error"))
hp = {}
with st.expander(f"{model} hyperparameters", expanded=True):
    for key, default in default_hp(model).items():
        label, url_key = hp_label(key), f"hp_{model}_{key}"
        if isinstance(default, bool):
            hp[key] = VIEW.widget(url_key, st.checkbox, label)
        elif isinstance(default, int):
            hp[key] = int(VIEW.widget(url_key, bounded_number, label, 1, 512))
        elif isinstance(default, float):
            hp[key] = VIEW.widget(url_key, bounded_number, label, 0.0, 100.0)
        elif isinstance(default, (tuple, list)):
            text = VIEW.widget(url_key, st.text_input, f"{label} (comma-separated)")
            try:
                hp[key] = int_list(text)
            except ValueError as err:
                fail(f"{key}: {err}")

copy_link_and_reset(VIEW, container=bar)
if st.button("Train", type="primary"):
    base = base_config()
    try:
        config = TrainConfig(
            task=task,
            epochs=epochs,
            lr=lr,
            weight_decay=weight_decay,
            seed=seed,
            average_from=average_from,
            batch_size=base.batch_size,
            patience=base.patience,
            **grouped_decay,
        )
        if features is None:
            raise ValueError("the feature set above names a field this dataset lacks")
        data = with_features(load_split(name, seed), features)
    except Exception as err:  # bad settings or no data source: say why, no traceback
        fail(str(err))
    submit_training(model, data, config, hp)


def watch_saved_run() -> None:
    """The replay of the run picked in the sidebar, when this session has no training of its own."""
    try:
        saved = load_run(selected_run_id())
    except RunError as err:  # a damaged run: say which, keep the page
        st.error(str(err))
    else:
        st.caption(
            f"{saved.config['model']} on {saved.config['dataset']}, the run picked in the sidebar; "
            "train your own above to watch it instead."
        )
        replay_choice(saved, key="saved_replay_what")


follow_training()
run = st.session_state.get("trained")
if run is not None and (run.config["model"], run.config["train"]["task"]) != (model, task):
    st.info(
        f"Your last training was {run.config['model']} ({run.config['train']['task']}); "
        f"press *Train* to train {model} ({task}), or switch back to see and save it."
    )
    run = None
if run is not None:
    st.subheader(f"{run.config['model']} on {run.config['dataset']}")
    chart(cached(learning_curves, run.history), key="final_curves")
    replay_choice(run)
    st.table({split: {k: round(v, 4) for k, v in m.items()} for split, m in run.metrics.items()})
    st.caption(training_line(run.config))
    with st.form("save"):
        st.text_input("Run name (optional)", placeholder="e.g. fm-k16-seed0", key="save_name")
        st.text_input("Your name", value=author() or "", key="save_author", help="Your saved runs are listed under it.")
        st.form_submit_button("Save run", on_click=save_run, args=(run,))
    save_message()
elif selected_run_id() is not None and "train_job" not in st.session_state:
    on_demand(f"Watch a saved run learn: {selected_run_id()}", "watch_saved_run", watch_saved_run)

st.divider()


@st.cache_resource(show_spinner=False)
def ablation_view(path: str, mtime_ns: int):
    """The ablation's findings and figure, read and drawn once per version of its table."""
    ablation = fm_ablation.load(path)
    found = fm_ablation.findings(ablation)
    return found, ablation_figure(ablation, target=found["target"])


@st.cache_data(show_spinner=False)
def bfm_view(path: str, mtime_ns: int):
    """The Bayesian FM's claim (``bfm_experiment.claims``, as the scorecard measures it) and its table's summary."""
    frame = bfm_experiment.load(path)
    return measure_all(*bfm_experiment.claims(frame)), bfm_experiment.summary(frame).set_index("model")


def train_rows() -> pd.DataFrame:
    """The scorecard's rows for this page, with the Bayesian FM's claim when the scorecard does not carry it yet."""
    try:
        rows = scorecard_rows("train")
    except ValueError as err:  # a damaged result table: say which
        st.error(str(err))
        rows = pd.DataFrame(columns=["claim", "measured", "verdict"])
    if bfm is not None:
        rows = pd.concat([bfm[~bfm["claim"].isin(rows["claim"])], rows])
    return rows.reset_index(drop=True)


def target_sentence(rows: pd.DataFrame) -> str:
    """What the scorecard says of the chosen FM against ``fm_ablation.TARGET_RMSE`` (its Threshold claim)."""
    frame, claims = fm_ablation.claims(pd.DataFrame(columns=fm_ablation.COLUMNS))
    texts = [c.text for c in claims if isinstance(c, Threshold)]
    row = rows[rows["claim"].isin(texts)]
    if row.empty:
        return ""
    row = row.iloc[0]
    return (
        f" Against the target {fm_ablation.TARGET_RMSE:.3f} the scorecard says *{row['verdict']}* ({row['measured']})."
    )


def preset_fm_is(label: str) -> bool:
    """Whether preset *fm* holds the ablation's configuration ``label`` (the presets may be re-tuned since)."""
    try:
        preset = presets.load("ml-100k", "fm")
    except ValueError:
        return False
    config, hp = fm_ablation.settings()[label]
    return presets.train_config(preset) == config and presets.hyperparameters(preset) == hp


bfm_path = tables.newest(bfm_experiment.table_name("ml-100k"))
bfm, bfm_summary = None, None
if bfm_path is not None:
    try:
        bfm, bfm_summary = bfm_view(str(bfm_path), bfm_path.stat().st_mtime_ns)
    except (ValueError, KeyError) as err:  # a damaged or older table: say which
        st.error(f"{bfm_path}: {err}")
bfm_row = None if bfm is None or bfm.empty else bfm.iloc[0]
wins = bfm_row is not None and bfm_row["verdict"] == HOLDS


def bfm_section() -> None:
    """The Bayesian FM against the Adam FM, and the ablation of what the Adam FM needs, with the scorecard's claims."""
    st.markdown(
        "A **Bayesian FM** (model `bfm`, trained by Gibbs sampling, [Rendle2012]) has the same formula as the FM "
        "trained here, but two habits Adam lacks. (1) Its L2 strengths are *learned*: every field group "
        "(users, movies, genres, hour, ...) has its own Gaussian prior $\\mathcal N(\\mu_g, 1/\\lambda_g)$ whose precision "
        "$\\lambda_g$ is sampled from the data with the weights, so no weight decay is tuned by hand. (2) Its prediction is "
        "the *average* of the FM over hundreds of posterior samples, not one point estimate: the noise of "
        "single samples cancels. The Adam FM's closest analogue of (2) is **weight averaging**: keep the "
        "mean of the weights after each epoch instead of the last ones (the *Average weights from epoch* "
        "setting above)."
    )
    if bfm_row is None:
        st.info(
            "No measurement of the Bayesian FM yet: `python -m fmlib reproduce bfm --out results` trains it beside the "
            "Adam FM on the same splits."
        )
    else:
        sample = bfm_summary.loc[bfm_experiment.BFM]
        st.markdown(
            f"**Measured** on {bfm_row['seeds']} splits of MovieLens 100K: the Bayesian FM (rank "
            f"{sample['rank_mean']:.0f}, {sample['epochs_mean']:.0f} Gibbs sweeps) has test RMSE "
            f"**{bfm_row['favoured_mean']:.4f}**, the Adam FM with averaging and grouped L2 (below) "
            f"**{bfm_row['other_mean']:.4f}**; paired per split, the Bayesian FM is lower by {bfm_row['difference']:+.4f} "
            f"[{bfm_row['low']:+.4f}, {bfm_row['high']:+.4f}]: *{bfm_row['verdict']}*."
        )
        st.caption(
            f"From `{shown_path(bfm_path)}` · the claim as the scorecard measures it (`fmlib.experiments.bfm.claims`)."
        )

    ablation_path = tables.newest(fm_ablation.table_name("ml-100k"))
    if ablation_path is None:
        st.info("No ablation table yet: run `python -m fmlib reproduce fm-ablation --out results`.")
    else:
        try:
            found, figure = ablation_view(str(ablation_path), ablation_path.stat().st_mtime_ns)
        except (ValueError, KeyError) as err:  # a damaged or older table: say which
            st.error(f"{ablation_path}: {err}")
        else:
            chart(figure, key="fm_ablation")
            rows = train_rows()
            base, averaged, final = found["base"], found["averaged"], found["final"]
            plain, ensemble = found["final_no_averaging"], found["ensemble"]
            scale = {**fm_ablation.GROUPED["field_decay"], "w": fm_ablation.GROUPED["linear_decay"]}
            best = found["best_valid"]
            others = (
                "None of the chart's other single changes (learning rate, k = 16, minibatch size, initialisation) "
                "reached a lower mean validation RMSE."
                if best == fm_ablation.WINNER
                else f"The lowest mean validation RMSE of the chart is that of *{best}*, not this configuration."
            )
            preset = (
                "it is the preset *fm*."
                if preset_fm_is(fm_ablation.WINNER)
                else "the preset *fm* has been re-tuned since (the *Preset* menu fills in its recipe)."
            )
            st.markdown(
                f"On {found['splits']} splits of MovieLens 100K the tuned FM has test RMSE **{base['rmse']:.4f}**. "
                f"Averaging its weights from epoch 3, nothing else changed, gives **{averaged['rmse']:.4f}**. "
                "The Adam FM's analogue of (1) is **grouped L2** (`TrainConfig(field_decay=..., linear_decay=...)`): "
                f"the L2 of the user rows times {scale['user_id']:g}, of the movie rows times {scale['movie_id']:g}, "
                f"of the linear weights times {scale['w']:g}, chosen on validation. With averaging (and early stopping, as every run here) it gives "
                f"**{final['rmse']:.4f} ± {final['rmse_std']:.4f}** in {final['cpu']:.1f} s of CPU per split; {preset}"
                + target_sentence(rows)
                + f" Without averaging the same FM has {plain['rmse']:.4f}. {others}"
                + (
                    ""
                    if ensemble is None
                    else f" The mean prediction of three such FMs (three training seeds: an ensemble, not one FM) has "
                    f"{ensemble['rmse']:.4f} in {ensemble['cpu']:.1f} s of CPU."
                )
            )
            st.caption(
                f"From `{shown_path(ablation_path)}` · validation chose every setting; the test split was read once per model."
            )
            st.markdown("**The scorecard's claims on this page**, from the same result tables:")
            columns = ["claim", *(c for c in ("protocol", "recipes") if c in rows), "measured", "verdict"]
            st.dataframe(rows[columns], hide_index=True)


on_demand(
    "The Bayesian FM wins on MovieLens: why, and what the Adam FM needs"
    if wins
    else "The Bayesian FM against the Adam FM on MovieLens, and what the Adam FM needs",
    "bfm_section",
    bfm_section,
)


def feature_sets() -> None:
    notebook_link("07_feature_sets")
    features_section()


on_demand(SECTION, "feature_sets_section", feature_sets)
