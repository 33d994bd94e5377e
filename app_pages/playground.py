"""Playground: a toy FM moved by hand (then as an FwFM and a DPLR), and what a trained model learned about movies."""

import streamlit as st

from app_pages._playground import movie_map_figure, reset_toy, session_keys, symbols_row, toy_view
from app_pages._queue import submit_in_session, wait_in_session
from app_pages._ui import dataset_name, fail, load_run, load_split, run_store, saved_or_quick_run, selected_run_id
from app_pages._view import (
    chart,
    copy_link_and_reset,
    error,
    link_check,
    on_demand,
    one_of,
    secondary,
    title_bar,
    unless_set,
)
from fmlib.analysis.movie_map import has_movie_embeddings, movie_map, same_recipe, seed_agreement
from fmlib.data import movielens
from fmlib.runs import RunError
from fmlib.train import TrainConfig, quick_settings, train_model

MIN_RATINGS = [5, 10, 20, 50, 100]
QUICK = "playground_quick_fm"

bar = title_bar("Playground")
st.markdown(
    "**Question.** A factorization machine gives every feature — a user, a movie, a genre — a vector, and "
    "scores a (user, movie) pair by adding the inner products of their vectors. Move one vector: which "
    "predictions change, by how much, and through which pairs? Here is an FM of seven features with vectors "
    "of two numbers, drawn as points: **drag a point** (or Tab to it and use the arrow keys), and every "
    "score, every pairwise term and its share of the score change as you move."
)
st.latex(  # two lines: on one, the formula ran past the page's right edge at 1280 px
    r"\begin{gathered}\hat y(u, m) = w_0 + w_u + w_m + \bar w_{G(m)} + \sum_{f<g} R_{fg}\,\langle e_f, e_g\rangle,"
    r"\\ e_{user} = v_u,\; e_{movie} = v_m,\; e_{genre} = \tfrac{1}{|G(m)|}\textstyle\sum_{g \in G(m)} v_g"
    r"\end{gathered}"
)
secondary(
    "[Rendle2010] eq. 1 with R = 11ᵀ − I (every R_fg = 1); the field-weighted FM ([FwFM] eq. 3) learns R; "
    "DPLR ([DPLR] eq. 10) writes it as Uᵀ diag(ω) U + diag(d). A movie's genres are averaged ([DPLR] §3.2): "
    "Star Wars is Sci-Fi and Romance. In the toy, pointing at a symbol's header shows its definition too."
)
symbols_row()


@st.fragment
def toy_section(model: str) -> None:
    """One toy in a fragment: a move that ends reruns this section only, not the page."""
    toy_view(model)
    st.button("Start this toy again", key=f"toy_{model}_reset", on_click=reset_toy, args=(model,))


st.subheader("An FM you can move")
st.markdown(
    "**Predict first.** Ann's point lies beyond Alien's, in about the same direction. Drag Ann's point halfway "
    "toward Alien's: does Ann's predicted score for Alien go **up** or **down**? Then drag it and check."
)
toy_section("fm")
st.markdown(
    "**What to notice.** A score is a sum of inner products ⟨v_i, v_j⟩ = ‖v_i‖‖v_j‖cos θ, not of distances: "
    "moving Ann toward Alien *shortens* her vector along Alien's direction, and her score for Alien drops. "
    "Moving a user changes only that user's row; moving a genre changes every movie of that genre, for both users."
)

st.subheader("The same toy as an FwFM: one weight per pair of fields")
st.markdown(
    "A field-weighted FM multiplies each pair of *fields* by a learned weight R_fg: R[user, movie] scales every "
    "user·movie term at once. It starts at the FM (every weight 1). **Click a cell of R** and type a weight — "
    "0 switches that pair off, a negative weight turns it around — and watch all six scores."
)
toy_section("fwfm")

st.subheader("…and as a DPLR: R = Uᵀ diag(ω) U + diag(d)")
st.markdown(
    "Diagonal-plus-low-rank keeps only U (ρ × m) and ω (ρ) — ρ(m + 1) numbers — and builds every R_fg = "
    "Σ_r ω_r U_rf U_rg from them; d only cancels R's diagonal. Edit U and ω (or switch ρ): each pair of fields "
    "keeps a weight, and [DPLR] Proposition 1 computes the pairwise part without visiting a single pair."
)
toy_section("dplr")


# ---- what a trained model learned about movies ------------------------------------------------------------
def quick_fm(name, data, progress):
    config, hp = quick_settings(name)
    return train_model("fm", data, config, progress, **hp)


def run_data(run):
    """The split the run was trained on (cached), or None with a note when it cannot be rebuilt here."""
    split = run.config.get("split", {})
    try:
        data = load_split(run.config["dataset"], split.get("seed", 0), split.get("min_count", 1))
    except Exception as err:  # no data source: say why, no traceback
        fail(err)
    if data.schema.names != run.model.schema.names or data.train.movies is None:
        st.info(
            f"This run was trained on the fields {', '.join(run.model.schema.names)}; the map reads the movies and "
            "their training counts from the data set's default fields. Pick a run of the default features."
        )
        return None
    return data


@st.cache_data(show_spinner="Mapping the movies ...", max_entries=64)
def mapped(run_key: str, _run, _data, min_ratings: int):
    """The movie map of one run (cached per run and minimum)."""
    return movie_map(_run.model, _data.train.feature_counts(), _data.train.movies, min_ratings)


@st.cache_data(show_spinner="Comparing the two seeds ...", max_entries=64)
def agreed(run_key: str, other_key: str, _run, _other, _data, min_ratings: int):
    """Two seeds' agreement (cached per pair of runs and minimum)."""
    return seed_agreement(_run.model, _other.model, _data.train.feature_counts(), min_ratings)


def twin_of(run_id: str | None, run):
    """(key, run) of a saved run of the same recipe with another seed, or of one trained here; None if neither."""
    store = run_store()
    for other in store.ids():
        try:
            if other != run_id and same_recipe(run.config, store.info(other)["config"]):
                return other, load_run(other)
        except RunError:
            continue
    trained = st.session_state.get("playground_seeds", {}).get(run_id)
    return (f"{run_id}-seed", trained) if trained is not None else None


def movie_map_section() -> None:
    """A trained model's movies on a map, their biases, and a second seed's agreement."""
    st.markdown(
        "**Question.** After training on MovieLens, which movies does a model put near each other, which does it "
        "rate up or down whoever watches — and would a second training from another seed say the same?"
    )
    if dataset_name() == "synthetic":
        st.info(
            "The synthetic data set has no movies: pick a MovieLens data set in the sidebar to map a model's movies."
        )
    else:
        run, source = saved_or_quick_run(
            lambda r: has_movie_embeddings(r.model) and r.config.get("dataset") in movielens.SPECS,
            "it has no movie embeddings to map. Pick an FM, FwFM, DPLR, RaFM, RFM or Bayesian FM run on MovieLens, "
            "or train a quick FM here.",
            "quick FM",
            QUICK,
            quick_fm,
        )
        run_key = f"quick-{id(run)}" if run is st.session_state.get(QUICK) else selected_run_id()
        secondary(f"Mapping {source}.")
        data = run_data(run)
        if data is not None:
            link_check("map_min_ratings", one_of(MIN_RATINGS), "one of " + ", ".join(map(str, MIN_RATINGS)))
            min_ratings = st.select_slider(
                "Map the movies rated at least this many times in training",
                MIN_RATINGS,
                **unless_set("map_min_ratings", value=20),
                key="map_min_ratings",
                bind="query-params",
                help="A rarely rated movie's vector is mostly its random start: few ratings moved it.",
            )
            try:
                mm = mapped(run_key, run, data, min_ratings)
            except ValueError as err:
                error(err)
            else:
                title = f"{len(mm.frame)} movies of {run.config['model']} on {run.config['dataset']}: their embeddings' first two principal components"
                chart(movie_map_figure(mm.frame, mm.explained, title), key="movie_map")
                st.markdown(
                    f"**What to notice.** The two axes hold {100 * sum(mm.explained):.0f} % of the embeddings' variance: "
                    "a flat shadow of a higher-dimensional cloud, where nearby points are movies the same users tend to "
                    "rate alike. Hover for titles; click a genre in the legend to hide it."
                )
                top, bottom = mm.extremes(10)
                left, right = st.columns(2)
                biases = {"bias": st.column_config.NumberColumn("bias w", format="%+.3f")}
                left.markdown("**Highest bias w_m**: rated up whoever the user")
                left.dataframe(top, hide_index=True, column_config=biases)
                right.markdown("**Lowest bias w_m**: rated down whoever the user")
                right.dataframe(bottom, hide_index=True, column_config=biases)

                st.markdown(
                    "**Two seeds.** Does a second training of the same recipe, from another seed, learn the same?"
                )
                twin = twin_of(run_key, run)
                if twin is None:
                    seed = int(run.config.get("train", {}).get("seed", 0))
                    job = wait_in_session("playground_seed_job", f"Seed {seed + 1}")  # its place in line or progress
                    if job is not None and job.state == "done":
                        st.session_state.setdefault("playground_seeds", {})[run_key] = job.result
                        st.rerun()
                    if job is not None and job.state != "cancelled":
                        st.error(job.error)
                    if "playground_seed_job" not in st.session_state:  # (queued or training: shown above)
                        st.info(
                            f"No saved run has this recipe with another seed: train seed {seed + 1} here to compare."
                        )
                    if "playground_seed_job" not in st.session_state and st.button(
                        f"Train seed {seed + 1} of the same recipe (not saved)", key="playground_seed_train"
                    ):
                        config = run.config
                        train = TrainConfig(**{**config["train"], "seed": seed + 1})
                        submit_in_session(
                            "playground_seed_job",
                            lambda job: train_model(config["model"], data, train, job.report, **config["hp"]),
                        )
                        st.rerun()
                else:
                    other_key, other = twin
                    try:
                        agreement = agreed(run_key, other_key, run, other, data, min_ratings)
                    except ValueError as err:
                        error(err)
                    else:
                        seeds = [r.config.get("train", {}).get("seed") for r in (run, other)]
                        a, b, c = st.columns(3)
                        a.metric("Spearman ρ of the movie biases", f"{agreement.bias_rho:.2f}")
                        b.metric("Spearman ρ of the pairwise distances", f"{agreement.distance_rho:.2f}")
                        c.metric("movies compared", f"{agreement.movies:,}")
                        st.markdown(f"Seeds {seeds[0]} and {seeds[1]}: {agreement.sentence}")
                        secondary(
                            "Distances, not coordinates: the scores see vectors only through inner products, which a "
                            "rotation of every vector leaves unchanged, so another seed may learn the same map turned."
                        )


on_demand("What a trained model learned about movies", "movie_map_section", movie_map_section)

copy_link_and_reset({"map_min_ratings": 20, "movie_map_section": False}, clear=session_keys(), container=bar)
