"""Attention inversion: can an attacker who knows W, V and the output B recover the input X?"""

import threading
from pathlib import Path

import pandas as pd
import streamlit as st
import torch

from app_pages._intuition import block, short, vector
from app_pages._measured import inversion_rates, inversion_table, inversion_verdicts
from app_pages._queue import job_queue, show_job
from app_pages._ui import bounded_number, fail, load_data, notebook_link
from app_pages._view import (
    ON_DEMAND,
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    in_range,
    on_demand,
    one_of,
    title_bar,
    without_paths,
)
from fmapp.worked import attention_row
from fmlib.inversion import attack, gamma_bound, invert, planted_instance
from fmlib.inversion.lemmas import SLIPS, lemma_gradient
from fmlib.inversion.outcome import describe
from fmlib.plots import inversion as plots

bar = title_bar("Attention inversion")
notebook_link("06_attention_inversion")
st.markdown(
    r"**Question.** A softmax-attention layer maps its input $X \in \mathbb R^{d\times n}$ (n tokens of length d) "
    r"to $B = D(X)^{-1} \exp(X^\top W X)\, X^\top V$. Someone who knows the weights W, V and sees B minimises "
    r"$L(X) = \|f(W; X) - B\|_F^2 + \gamma \|X\|_F^2$ (Def. 3.1 of *Unmasking Transformers*). "
    "Do they get X back?"
)

GAMMAS = [0.0, 1e-4, 1e-2, 1.0, 100.0]
TRACED = {"n": 3, "d": 2, "seed": 0}  # the traced row's layer: three tokens of length two


@st.cache_data(show_spinner=False)
def traced_row() -> dict:
    return attention_row(**TRACED)


def worked_example() -> None:
    """One output row of a tiny layer traced, and its weights read back from it, before any attack."""
    row = traced_row()
    n, d = TRACED["n"], TRACED["d"]
    keys = ["X [AttnInv]", "n", "d [AttnInv]", "W", "V [AttnInv]", "D(X)", "B"]
    with block("inversion", f"One output row, traced: n = {n} tokens of length d = {d}", keys):
        st.markdown(
            "Token 1 scores every token, $s_{1j} = x_1^\\top W x_j$; the softmax (the row of $D(X)^{-1}\\exp(X^\\top W X)$) "
            f"turns the scores into weights $\\alpha_{{1j}}$; the output row is $b_1 = \\alpha_1 X^\\top V = {vector(row['b'])}$."
        )
        st.table(
            pd.DataFrame(
                {
                    "token xⱼ": [short(x) for x in row["X"].T],
                    "score s₁ⱼ": row["scores"],
                    "weight α₁ⱼ": row["weights"],
                    "α₁ⱼ read back from b₁": row["recovered"],
                },
                index=pd.Index(range(1, n + 1), name="j"),
            ).style.format(precision=3)
        )
        st.markdown(
            f"Undo $V$ and $b_1 V^{{-1}} = \\sum_j \\alpha_{{1j}} x_j^\\top = {vector(row['average'])}$ is a weighted "
            "average of the tokens: knowing them, the weights come back from $b_1$ alone (the last column). The "
            f"attacker does not know $X$: $B$ gives {row['equations']} numbers for the {row['unknowns']} unknowns of "
            "$X$ — as many equations as unknowns, but each weight depends on $X$ through the softmax, so the "
            "equations are not linear and $L(X)$ may have minima other than $X_\\text{true}$. Below: one attack, "
            "then how often it works."
        )


@st.cache_data(show_spinner=False)
def run_pair(n, d, R, gamma, start, seed, steps, lr):
    inst = planted_instance(n, d, R, seed)
    X0 = attack.near_start(inst.X_true, 0.3, seed) if start == "near" else None
    gd = invert(inst.W, inst.V, inst.B, "gd", gamma, steps=steps, seed=seed, lr=lr, X_true=inst.X_true, X0=X0)
    newton = invert(
        inst.W, inst.V, inst.B, "newton", gamma, steps=min(steps, 100), seed=seed, X_true=inst.X_true, X0=X0
    )
    return inst, gd, newton


@st.cache_data(show_spinner=False)
def run_trials(n, d, R, count, start_noise):
    table = attack.trials(n, d, R, GAMMAS, count=count, start_noise=start_noise)
    return table, attack.success_rates(table)


@st.cache_resource(show_spinner=False, max_entries=64)
def pair_figure(n, d, R, gamma, start, seed, steps, lr):
    """The convergence figure of these settings, drawn once per server (every student asks for the same few)."""
    _, gd, newton = run_pair(n, d, R, gamma, start, seed, steps, lr)
    return plots.convergence_figure({"gd": gd, "newton": newton})


STARTS = ["random N(0, 1)", r"near the secret ($X_\text{true}$ + 0.3·noise)"]
CHOICES = {  # the page's select sliders: key -> (options, default)
    "inv_R": ([0.3, 0.5, 1.0, 2.0, 3.0], 1.0),
    "inv_gamma": (GAMMAS, 0.0),
    "inv_steps": ([200, 500, 1000, 2000, 5000], 500),
    "inv_lr": ([0.01, 0.05, 0.1, 0.2, 0.5], 0.05),
    "inv_count": ([10, 20, 50, 100], 20),
    "inv_users": ([50, 100, 200, 400], 200),
    "inv_attack_steps": ([100, 200, 300], 300),
}


TRIAL_STARTS = ["random N(0, 1)", "near the secret"]
VIEW = UrlState(
    **{
        key: Bound(default, one_of(options), "one of " + ", ".join(map(str, options)))
        for key, (options, default) in CHOICES.items()
    },
    inv_n=Bound(4, in_range(2, 8, integer=True), "2 to 8"),
    inv_d=Bound(3, in_range(2, 6, integer=True), "2 to 6"),
    inv_start=Bound(STARTS[0], one_of(STARTS), "one of " + ", ".join(STARTS)),
    inv_seed=Bound(0),  # bounded_number checks its range
    trial_start=Bound(TRIAL_STARTS[0], one_of(TRIAL_STARTS), " or ".join(TRIAL_STARTS)),
    inversion_measured=ON_DEMAND,
    inversion_trials_section=ON_DEMAND,
    inversion_gradient=ON_DEMAND,
    inversion_twist=ON_DEMAND,
)


def choice(container, label: str, key: str):
    """A select slider of ``CHOICES`` bound to the URL; a linked value it does not offer falls back with a note."""
    return VIEW.widget(key, container.select_slider, label, CHOICES[key][0])


worked_example()
left, right = st.columns(2)
n = VIEW.widget("inv_n", left.slider, "tokens n", 2, 8)
d = VIEW.widget("inv_d", left.slider, "token length d", 2, 6)
R = choice(left, "weight scale R = ‖W‖ = ‖V‖ (Assumption 4.1)", "inv_R")
gamma = choice(right, "regulariser γ", "inv_gamma")
start_label = VIEW.widget("inv_start", right.radio, "attacker's start", STARTS, horizontal=True)
seed = VIEW.widget("inv_seed", bounded_number, "seed (instance and start)", 0, 10_000, container=right)
steps = choice(right, "gradient-descent steps", "inv_steps")
lr = choice(right, "gradient-descent step size", "inv_lr")
start = "near" if start_label.startswith("near") else "random"

try:
    inst, gd, newton = run_pair(n, d, R, float(gamma), start, int(seed), steps, lr)
except ValueError as err:
    fail(err)

for note in gd.notes + newton.notes:
    st.warning(note)
chart(pair_figure(n, d, R, float(gamma), start, int(seed), steps, lr))
norm = inst.X_true.norm().item()
DISTANCE_HELP = (
    r"$\|X - X_\text{true}\|_F$ in units of $\|X_\text{true}\|_F$: 0 is the secret itself; 1 is as far from it as "
    "X = 0 is (nothing recovered — large γ pulls the end point there); above 1, farther still."
)
metrics = st.container(horizontal=True, gap="large")  # each metric as wide as its label: wrapped, never cut
for label, value, hint in [
    ("GD: distance to the secret", f"{gd.trajectory['dist'].iloc[-1] / norm:.3g} × ‖X_true‖", DISTANCE_HELP),
    ("Newton: distance to the secret", f"{newton.trajectory['dist'].iloc[-1] / norm:.3g} × ‖X_true‖", DISTANCE_HELP),
    ("Newton: final loss", f"{newton.trajectory['loss'].iloc[-1]:.2g}", None),
    (r"Newton: $\lambda_{\min}(\nabla^2 L)$ at the end", f"{newton.trajectory['min_eig'].iloc[-1]:.2g}", None),
]:
    metrics.metric(label, value, help=hint, width="content")
st.markdown(
    f"**Notice** (this instance, from the runs above): {describe(newton, inst.X_true)} {describe(gd, inst.X_true)}"
)


def committed_recovery(gamma: float) -> str:
    """Newton's success rate at ``gamma`` from both kinds of start in the committed result table, as a sentence."""
    try:
        found = inversion_table()
    except ValueError as err:
        return f"The result table cannot be read: {without_paths(str(err))}"
    if found is None:
        return "`python -m fmlib reproduce inversion` measures how often this happens over many instances."
    frame, header, _ = found
    path = Path(header["path"])
    rates = inversion_rates(frame)
    at = rates[rates["gamma"] == gamma].set_index("start_kind")
    if at.empty:
        return f"`{path.name}` has no rows at γ = {gamma:g}."
    parts = [
        f"from a {kind} start in {r.success_rate:.0%} [{r.success_rate_low:.0%}, {r.success_rate_high:.0%}] of "
        f"{int(r.runs)} instances (median relative error {r.median_rel_error:.2g})"
        for kind, r in at.iterrows()
    ]
    sizes = f"n = {int(frame['n'].iloc[0])}, d = {int(frame['d'].iloc[0])}, R = 1"
    return (
        f"Over many planted instances ({sizes}; `{path.name}`, made by `{header['command']}`), Newton at "
        f"γ = {gamma:g} recovers the secret " + "; ".join(parts) + " — 95 % Wilson intervals."
    )


st.caption(committed_recovery(float(gamma)))


@st.cache_resource
def trained_twist() -> dict:
    """The server's tiny transformer: trained once, by the first attack job that needs it."""
    return {"lock": threading.Lock(), "experiment": None}


def twist_attack(ds, trained: dict, users: int, attack_steps: int, job):
    """As a job: train the tiny transformer (the first time on this server), then attack ``users`` users."""
    from fmlib.inversion import movielens as twist

    with trained["lock"]:
        if trained["experiment"] is None:
            trained["experiment"] = twist.prepare(
                ds.frame,
                ds.movies,
                epochs=60,
                seed=0,
                progress=lambda epoch, epochs, _: job.report({"epoch": epoch, "epochs": epochs, "label": "training"}),
            )
    exp = trained["experiment"]
    job.report({"step": 1, "steps": 1, "text": f"attacking {users} users"})
    results = {
        label: (done.summary, twist.trajectory_table(done.recovery, done.tokens, 0, exp.titles))
        for label, done in twist.attack_users(exp, users, attack_steps).items()
    }
    return exp, results


@st.cache_resource(show_spinner=False)
def twist_job(users: int, attack_steps: int, _ds):
    """One job of the server's queue per setting, shared by every session that asks for it."""
    trained = trained_twist()
    return job_queue().submit(lambda job: twist_attack(_ds, trained, users, attack_steps, job))


def show_twist(exp, results) -> None:
    from fmlib.inversion.movielens import baseline_verdict, training_gap

    st.caption(
        f"{sum(p.numel() for p in exp.model.parameters())} parameters; "
        f"{len(exp.train_rows)} training users, {len(exp.heldout_rows)} held out. The popularity guess needs no "
        "model: at each hidden position it guesses the movies training users most often rated there."
    )
    chart(plots.training_figure(exp.losses))
    for label, (summary, table) in results.items():
        st.markdown(f"**{label}** ({int(summary['hidden_movies'].iloc[0])} hidden movies)")
        chart(plots.recovery_figure(summary))
        st.markdown(f"**Notice** ({label}): {baseline_verdict(summary)}")
        st.dataframe(table, hide_index=True, height="content")
        st.caption(
            "The attack on the first of these users, step by step: ✔ marks a recovered movie; "
            "the last row is the truth."
        )
    (_, (trained, _)), (_, (heldout, _)) = results.items()
    st.info(
        f"{training_gap(trained, heldout)} Recovering a hidden movie says something about a person only where the "
        "attack beats guessing popular movies, which needs no model."
    )


def trials_section() -> None:
    """Fresh instances of these sizes attacked from two starts each, for several γ (run on a press)."""
    bound_R = attack.assumption_R(inst.W, inst.V, inst.X_true, inst.B)
    st.markdown(
        "Theorem 4.2 (Lemma H.2) prints ∇²L ⪰ −72·n·d·R⁸·I; its proof, corrected (Lemma H.1 loses a "
        "factor n, Lemma E.2 a factor 2), gives ∇²L ⪰ −144·n²·d·R⁸·I, so L + γ‖X‖² is convex for "
        "γ > 72·n²·d·R⁸; for this instance R = "
        f"{bound_R:.2f} (the largest of ‖W‖, ‖V‖, $\\|X_\\text{{true}}\\|$, √max|b|), so γ > **{gamma_bound(n, d, bound_R):.3g}**. "
        "The trials below attack fresh random instances from two starts each, for several γ."
    )
    c1, c2 = st.columns(2)
    count = choice(c1, "instances per γ", "inv_count")
    trial_start = VIEW.widget("trial_start", c2.radio, "trial starts", TRIAL_STARTS, horizontal=True)
    if st.button(
        "Run trials", key="inv_run_trials", type="primary"
    ):  # what a button made is kept in the session: it survives reruns
        st.session_state["inversion_trials"] = dict(n=n, d=d, R=R, count=count, near=trial_start.startswith("near"))
    trials = st.session_state.get("inversion_trials")
    if trials is not None:
        n_t, d_t, R_t, count = trials["n"], trials["d"], trials["R"], trials["count"]
        noise = 0.3 if trials["near"] else None
        if (n_t, d_t, R_t) != (n, d, R):
            st.caption(
                f"These trials were made with n = {n_t}, d = {d_t}, R = {R_t}: press *Run trials* for the settings above."
            )
        with st.status(f"{2 * count} Newton runs × {len(GAMMAS)} values of γ …") as status:
            table, rates = run_trials(n_t, d_t, R_t, count, noise)
            status.update(label="trials done", state="complete")
        chart(plots.success_figure({f"n={n_t}, d={d_t}, R={R_t}": rates}))
        st.dataframe(rates, hide_index=True)
        low, high = rates.iloc[0], rates.iloc[-1]
        st.caption(
            f"Notice: from γ = {low.gamma:g} to γ = {high.gamma:g} the success rate goes from {low.success_rate:.0%} to "
            f"{high.success_rate:.0%} and the share of instances whose two starts agree from {low.agree_rate:.0%} to "
            f"{high.agree_rate:.0%}; the median relative error at γ = {high.gamma:g} is {high.median_rel_error:.2g} "
            "(1 is X = 0). The point every start reaches is the minimiser of the *regularised* loss, pulled towards 0: "
            "Theorem 4.3's X* is not the secret."
        )
        at0 = table[table["gamma"] == 0.0]
        win, lose = at0[at0["success"]], at0[~at0["success"]]
        if len(win) and len(lose):
            st.markdown(
                "**Both outcomes at γ = 0**: one instance where Newton recovered the secret, "
                "one where it stopped elsewhere (same method, same settings)."
            )
            shown = {
                f"{label} (instance {int(row['trial'])})": attack.replay_trial(
                    n_t, d_t, R_t, int(row["trial"]), int(row["start"]), count, start_noise=noise
                )
                for label, row in (("recovered", win.iloc[0]), ("stalled", lose.iloc[0]))
            }
            chart(plots.convergence_figure(shown))


def gradient_section() -> None:
    """Lemmas A.10–A.17 assembled by hand, printed and corrected, against autograd at a random X."""
    X = torch.randn(d, n, generator=torch.Generator().manual_seed(int(seed)), dtype=torch.float64)
    auto = attack.gradient(X, inst.W, inst.V, inst.B, float(gamma))
    printed = lemma_gradient(X, inst.W, inst.V, inst.B, float(gamma), printed=True)
    corrected = lemma_gradient(X, inst.W, inst.V, inst.B, float(gamma))
    st.markdown(
        f"Lemmas A.10–A.17 assembled by hand at a random X: as printed, max |difference to autograd| = "
        f"**{(printed - auto).abs().max().item():.2g}**; corrected, **{(corrected - auto).abs().max().item():.1g}**. "
        "The two slips:"
    )
    st.table(pd.DataFrame(SLIPS).set_index("where"))


def twist_section() -> None:
    """§5 on MovieLens: a tiny transformer trained, then its users' first movies attacked (run on a press)."""
    st.markdown(
        "A tiny causal transformer learns to predict a user's next movie (MovieLens 100K, the 200 "
        "most-rated movies, each user's first 12 in rating-time order). The attacker hides a user's "
        "first two movies, keeps the rest, and optimises a relaxed one-hot input (softmax of free "
        "logits, Adam, cross-entropy of the model's next-movie predictions, §5.1)."
    )
    m1, m2 = st.columns(2)
    users = choice(m1, "users attacked (from the training set)", "inv_users")
    attack_steps = choice(m2, "attack steps", "inv_attack_steps")
    if st.button("Train the tiny transformer and attack", key="inv_movielens"):
        st.session_state["inversion_movielens"] = (users, attack_steps)
    if "inversion_movielens" in st.session_state:
        if st.session_state["inversion_movielens"] != (users, attack_steps):
            users, attack_steps = st.session_state["inversion_movielens"]
            st.caption(
                f"Made with {users} users and {attack_steps} attack steps: press the button for the settings above."
            )
        try:
            job = twist_job(users, attack_steps, load_data("ml-100k"))  # shared with the other pages
        except Exception as err:  # no data source reachable: say so, no traceback
            fail(f"MovieLens 100K could not be loaded: {err}")
        if not job.done:  # shared by every session with these settings: no one cancels it for the others
            show_job(job, "The tiny transformer and its attack", None)
        elif job.state == "done":
            show_twist(*job.result)
        else:
            twist_job.clear(users, attack_steps, None)  # the next press tries again
            st.error(f"The MovieLens experiment failed: {job.error or job.state}")


on_demand("The paper's promise, measured: 200 planted instances per γ", "inversion_measured", inversion_verdicts)
on_demand("How often does the attack work? Run your own trials", "inversion_trials_section", trials_section)
on_demand("The paper's gradient, checked", "inversion_gradient", gradient_section)
on_demand("The MovieLens twist (§5): recovering the first movies a user rated", "inversion_twist", twist_section)

copy_link_and_reset(VIEW, container=bar)
