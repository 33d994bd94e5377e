"""Home: what the explainer covers, with a link to every page."""

import streamlit as st

from app_pages._intuition import block
from app_pages._measured import scorecard_card
from app_pages._ui import PAGES
from app_pages._view import ON_DEMAND, UrlState, copy_link_and_reset, error, on_demand, title_bar
from fmlib import toy
from fmlib.experiments import scorecard
from fmlib.experiments.verdict import OUTCOMES, outcome

VIEW = UrlState(home_claims=ON_DEMAND)

bar = title_bar("fmlib explainer")
st.markdown(
    "Factorization machines predict from **pairs of features**: every feature gets a vector, and "
    "two features interact through the dot product of their vectors. This explainer trains real "
    "models on MovieLens and lets you *see* why FMs and their recent variants work — field-weighted "
    "FMs with pruned or diagonal-plus-low-rank interaction matrices, rank-aware FMs, rotative FMs — "
    "with every formula checked against a naive computation or sympy, and every claim of the papers "
    "reproduced on MovieLens or honestly shown not to hold."
)
st.latex(r"\hat y(x) = w_0 + \sum_i w_i x_i + \sum_{i<j} \langle v_i, v_j\rangle x_i x_j")


def one_prediction(user: str = toy.USERS[0], movie: str = toy.MOVIES[0]) -> None:
    """One score of the Playground's toy FM, term by term (fmlib.toy), before the scorecard's evidence."""
    V = toy.default_state()["V"]
    [genre] = toy.MOVIE_GENRES[movie]  # a movie of one genre: every term is one named pair
    names = {"user": user, "movie": movie, "genre": genre}
    biases = " + ".join(f"{toy.BIAS[name]:g}" for name in (user, movie, genre)).replace("+ -", "- ")
    pairs = " + ".join(
        f"\\langle v_{{\\text{{{names[toy.FIELDS[f]]}}}}}, v_{{\\text{{{names[toy.FIELDS[g]]}}}}}\\rangle"
        for f, g in toy.PAIRS
    )
    terms = " + ".join(f"{t:.2f}" for t in toy.pair_terms(V, user, movie)).replace("+ -", "- ")
    with block("home", f"One prediction, traced: {user} rates {movie}", ["ŷ", "w_0", "w_i", "v_i"]):
        st.markdown(
            f"The Playground's toy FM (2-D embeddings): {user}, {movie} and its genre {genre} are the active features, "
            f"so $\\hat y = w_0 + w_{{\\text{{{user}}}}} + w_{{\\text{{{movie}}}}} + w_{{\\text{{{genre}}}}} + {pairs}$ "
            f"$= {toy.W0:g} + {biases} + {terms} = {toy.score(V, user, movie):.2f}$: "
            "one inner product per pair of features. Move the points on the [Playground](playground) and watch "
            "each term change."
        )


one_prediction()
st.subheader("Scorecard: the papers' claims on MovieLens 100K")
st.markdown(
    "Each model with its own tuned preset, 5 seeds; the paired per-seed difference (> 0 favours the claim) "
    "with its 95 % interval, and the verdict it earns: *holds*, *does not hold*, or *undecided* — and then "
    "the verdict says which side the interval left open. Rating task (predict the stars) and, where its "
    "table exists, click task (predict a rating ≥ 4). Computed from the result tables in `results/` "
    "(or a newer recomputation in `artifacts/`)."
)


def verdict_counts(card) -> None:
    """One line a paper: how many of its claims earned each outcome (holds, does not hold, undecided), and
    the page that shows them."""
    pages = {}
    for paper, _name, _claims, page, title, _protocol in scorecard.SOURCES:
        pages.setdefault(paper, (page, title))
    lines = []
    for paper, rows in card.groupby("paper", sort=False):
        counts = rows["verdict"].map(outcome).value_counts()
        shown = ", ".join(f"{decided} {counts[decided]}×" for decided in OUTCOMES if decided in counts)
        protocols, tasks = rows["protocol"].nunique(), rows.loc[rows["task"] != "", "task"].nunique()
        page, title = pages[paper]
        lines.append(
            f"- **{paper}**: {len(rows)} claim{'s' * (len(rows) > 1)} under {protocols} "
            f"protocol{'s' * (protocols > 1)}{f' and {tasks} tasks' if tasks > 1 else ''}: {shown} ([{title}]({page}))"
        )
    st.markdown("\n".join(lines))


def every_claim(card) -> None:
    st.dataframe(
        card[["paper", "claim", "protocol", "task", "measured", "verdict", "recipes", "table"]], hide_index=True
    )


try:
    card = scorecard_card()
except ValueError as err:  # a damaged result table: say which
    error(err)
else:
    if card.empty:
        st.info("No result tables yet: run `python -m fmlib reproduce dplr` (it needs the tuned presets).")
    else:
        verdict_counts(card)
        on_demand(
            f"Every claim ({len(card)}): what was measured, under which protocol, and how",
            "home_claims",
            lambda: every_claim(card),
        )
st.subheader("Pages")
for path, title, icon, blurb in PAGES[1:]:
    st.page_link(path, label=title, icon=icon)
    st.caption(blurb)
st.info(
    "The sidebar picks the dataset (and says which source served it) and a saved run, "
    "which the analysis pages read. Notebooks in `notebooks/` tell the same stories with the same API."
)
copy_link_and_reset(VIEW, container=bar)  # and the sidebar's settings
