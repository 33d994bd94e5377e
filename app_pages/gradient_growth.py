"""Gradient growth: a product term, the FM and rotations as the number of fields grows (RFM appendix §1.1–1.2)."""

import math

import streamlit as st

from app_pages._intuition import block, vector
from app_pages._measured import drawn_once, measured_table, source_caption
from app_pages._ui import bounded_number, notebook_link
from app_pages._view import (
    ON_DEMAND,
    Bound,
    UrlState,
    chart,
    copy_link_and_reset,
    error,
    in_range,
    main_figure,
    on_demand,
    title_bar,
)
from fmapp.worked import gradient_example
from fmlib.analysis.gradient_growth import (
    D_RANGE,
    M_RANGE,
    ProductBounds,
    RotationBounds,
    gradient_growth,
    growth_notice,
)
from fmlib.analysis.rotation_construction import (
    construct,
    construction_error,
    predicted_error,
    random_truth_table,
    relation_frame,
)
from fmlib.arguments import int_list
from fmlib.experiments import rfm as rfm_experiment
from fmlib.plots.rfm import construction_error_figure, gradient_growth_figure, truth_table_figure
from fmlib.plots.verdicts import verdict_figure

bar = title_bar("Gradient growth")
notebook_link("04_rotations_and_gradients")
st.markdown(
    "**Question.** A single m-way product term multiplies the embeddings of all m fields together; "
    "an FM adds up products of *pairs* of fields; RFM treats embeddings as angles and *rotates* them. "
    "How large does ‖∂y/∂X‖∞ get as m grows?"
)

TRACED = 4  # fields in the traced example


@st.cache_data(show_spinner=False)
def traced_example(M: float, eps: float) -> dict:
    return gradient_example(m_values=(2, TRACED, 8, 16, 32), d=2, M=M, eps=eps)


def worked_example() -> None:
    """One draw of field embeddings, ∂y/∂X₁ traced for the FM and the product term, before the measured chart."""
    bounds = ProductBounds()  # the page's default product inputs
    example = traced_example(bounds.M, bounds.eps)
    X, table = example["X"], example["table"]
    others = range(2, TRACED + 1)
    with block("gradient_growth", "One example, traced: ∂y/∂X₁ as fields are added", ["m", "X [RFM]", "M", "ε"]):
        st.markdown(
            f"Field embeddings $X_j \\in \\mathbb R^2$, entries drawn from $[M - \\varepsilon, M + \\varepsilon] = "
            f"[{bounds.M - bounds.eps:g}, {bounds.M + bounds.eps:g}]$. With m = {TRACED} fields:\n"
            f"* FM, $y = \\sum_{{i<j}} \\langle X_i, X_j\\rangle$: $\\partial y / \\partial X_1 = "
            + " + ".join(f"X_{j}" for j in others)
            + " = "
            + " + ".join(vector(X[j - 1]) for j in others)
            + f" = {vector(example['fm'][TRACED])}$, a **sum** of the other fields.\n"
            f"* one {TRACED}-way product term, $y = \\sum_c "
            + " ".join(f"X_{{{j}c}}" for j in range(1, TRACED + 1))
            + "$: $\\partial y / \\partial X_1 = "
            + " \\odot ".join(f"X_{j}" for j in others)
            + f" = {vector(example['product'][TRACED])}$, a **product** of them."
        )
        shown = table.set_index("m").T.rename(
            index={"fm": "FM: a sum of m − 1 fields", "product": "product: m − 1 factors"}
        )
        shown.columns = [f"m = {m}" for m in shown.columns]
        shown.index.name = "largest entry of ∂y/∂X₁"
        st.table(shown.style.format("{:,.3g}"))
        first, last = table.iloc[0], table.iloc[-1]
        fields = last.m - first.m
        st.markdown(
            f"Each added field adds about {(last.fm - first.fm) / fields:.2g} to the FM's gradient and multiplies "
            f"the product's by about {(last['product'] / first['product']) ** (1 / fields):.2g}: a line against an "
            "exponential. The chart below measures the whole ‖∂y/∂X‖∞ (the largest row sum of |∂y/∂X|) by "
            "autograd, with §1.2's bounds and the rotation layer beside them."
        )


worked_example()


@st.cache_data(show_spinner=False)
def growth_table(m_max, d, rotation, product, trials):
    return gradient_growth(m_max, d, RotationBounds(*rotation), ProductBounds(*product), trials=trials)


@st.cache_data(show_spinner=False)
def construction(sizes, density, seed, S):
    T = random_truth_table(sizes, density, seed)
    return T, construct(sizes, T, S=S), construction_error(sizes, T, [1, 2, 4, 6, 8, 10, 14, 20, 30])


@st.cache_resource(show_spinner=False)
def growth_figure(m_max, d, rotation, product, log_y):
    """The figure of these settings, drawn once per server (every student asks for the same few)."""
    return gradient_growth_figure(growth_table(m_max, d, rotation, product, trials=3), log_y=log_y)


@st.cache_resource(show_spinner=False)
def construction_figures(sizes, density, seed, S):
    T, c, errors = construction(sizes, density, seed, S)
    return truth_table_figure(T, c.T_hat, sizes), construction_error_figure(errors)


M_LINK_MAX = 10.0  # a linked M: with ε < M, (M + ε)^(a·m) < 20^(3·64) ≈ 1e250 stays inside float64


def positive(high: float = math.inf):
    """A link check: the text is a finite number in (0, high]."""
    check = in_range(0, high)
    return lambda text: check(text) and math.isfinite(float(text)) and float(text) > 0


def valid_layout(text: str) -> bool:
    try:
        return all(n >= 1 for n in int_list(text))
    except ValueError:
        return False


ROTATION_BOUNDS = {"eta": "η", "alpha": "α", "beta": "β", "gamma": "γ", "zeta": "ζ", "theta": "θ"}
VIEW = UrlState(
    m_max=Bound(32, in_range(*M_RANGE, integer=True), f"{M_RANGE[0]} to {M_RANGE[1]}"),
    d=Bound(8),  # bounded_number checks its range
    log_y=Bound(True, lambda text: text.lower() in ("true", "false"), "true or false"),
    **dict.fromkeys(ROTATION_BOUNDS, Bound(1.0, positive(), "a positive number", fallback=True)),
    M=Bound(1.5, positive(M_LINK_MAX), f"a positive number up to {M_LINK_MAX:g}", fallback=True),
    eps=Bound(0.25, fallback=True),  # in [0, M): checked once M is read
    exponent=Bound(1),
    layout=Bound("2, 3, 2", valid_layout, "positive integers, comma-separated", fallback=True),
    density=Bound(0.4, in_range(0.0, 1.0), "0 to 1"),
    truth_seed=Bound(0),
    S=Bound(20.0, in_range(1.0, 30.0), "1 to 30"),
    sample=Bound(0),  # a sample of the construction: checked where it is built
    explain_lines=ON_DEMAND,
    theorem_section=ON_DEMAND,
    rfm_section=ON_DEMAND,
)


def explain_lines(bounds: RotationBounds) -> None:
    """Which inequality each line of the growth chart draws, with the bound constant C₁ of these settings."""
    st.markdown(f"""
* **red, solid** — ‖∂y/∂X‖∞ of one m-way product term g = X₁ᵃ ⊙ … ⊙ Xₘᵃ, y = Σⱼ gⱼ, by autograd
  (smallest of 3 random draws with |Xᵢⱼ| ∈ [M − ε, M + ε]; the signs do not change its size).
* **red, dashed** — the appendix's lower bound $|\\partial y/\\partial X_{{ij}}| \\ge \\alpha_i (M - \\varepsilon)^{{\\sum\\alpha - 1}}$, here
  $a(M - \\varepsilon)^{{am - 1}}$ (§1.2, last part). It holds for every entry, so for the norm too.
* **green, solid** — ‖∂y/∂X‖∞ of the second-order FM $y = \\sum_{{i<j}} \\langle X_i, X_j\\rangle$ ([Rendle2010] eq. 1, one-hot fields)
  by autograd, on the same draws with every entry positive (the FM's worst case: nothing cancels).
* **green, dashed / dotted** — its gradient is ∂y/∂Xᵢ = Z − Xᵢ with Z = Σⱼ Xⱼ ([FMGrad] eq. 8, coefficient 1):
  a sum of m − 1 embeddings, so d(m − 1)(M − ε) ≤ ‖∂y/∂X‖∞ ≤ d(m − 1)(M + ε) — linear in m. The upper line
  holds for any signs; with mixed signs the sum partly cancels and stays lower.
* **blue, solid** — ‖∂y/∂X‖∞ of one self-attentive rotation layer G = σ(Re[exp(iQ) diag(w) exp(−iK)ᵀ])·V,
  y = f(cos G) + f(sin G) with linear f, by autograd on the dm×m block matrix X (largest of 3 draws,
  every norm at 99% of its bound).
* **blue, dashed** — the upper bound ‖∂y/∂X‖∞ ≤ C₁·m with
  C₁ = γθ + αζηγθd/2 + βζγηθ/2 = **{bounds.C1(d):.4g}** (§1.2): PART I ≤ γθm, PARTs II, IV ≤ αζηγθdm/4,
  PARTs III, V ≤ βζγηθm/4.

The printed appendix has slips (a d too many in PART III's bound, "‖B̃‖∞" for ‖D̃‖∞, a transposed
(∂y/∂G)ᵀVᵀ); the code uses the corrected lines and the tests check each one against autograd.
""")


m_max = VIEW.widget("m_max", st.slider, "number of fields m (up to)", *M_RANGE)
left, right = st.columns(2)
d = int(VIEW.widget("d", bounded_number, "embedding size d", *D_RANGE, container=left, step=1))
log_y = VIEW.widget("log_y", right.toggle, "log scale")
with st.expander("Bounds (the appendix's assumptions)"):
    st.markdown(
        "Rotation layer: |X| < η, ‖B̃ᵀ‖∞ < α, ‖C̃ᵀ‖∞ < β, ‖D̃ᵀ‖∞, ‖D̃‖∞ < γ, ‖diag(w)‖∞ < ζ, "
        "‖∂y/∂G‖∞ < θ. Product term and FM: |Xᵢⱼ| ∈ [M − ε, M + ε]; the product with exponent a on every field."
    )
    cols = st.columns(6)
    rotation = tuple(
        float(VIEW.widget(key, c.number_input, label, step=0.1, format="%.3f"))
        for c, (key, label) in zip(cols, ROTATION_BOUNDS.items())
    )
    cols = st.columns(3)
    M = float(VIEW.widget("M", cols[0].number_input, "M", step=0.1))
    below_M = in_range(0, M)
    eps_check = (lambda text: below_M(text) and float(text) < M), f"0 ≤ ε < M = {M:g}"
    eps = float(VIEW.widget("eps", cols[1].number_input, "ε", step=0.05, check=eps_check))
    exponent = int(VIEW.widget("exponent", bounded_number, "exponent a", 1, 3, container=cols[2], step=1))
    product = (M, eps, exponent)

try:
    with st.spinner("Measuring gradients by autograd …"):
        df = growth_table(m_max, d, rotation, product, trials=3)
except ValueError as err:
    st.error(str(err))
else:
    bounds, prod = RotationBounds(*rotation), ProductBounds(*product)
    main_figure(growth_figure(m_max, d, rotation, product, log_y))
    last = df.iloc[-1]
    st.markdown(
        f"At m = {int(last.m)}: product term **{last['product']:.3g}** (lower bound "
        f"{last.product_lower_bound:.3g}), FM **{last.fm:.3g}** (between {last.fm_lower_bound:.3g} and "
        f"{last.fm_upper_bound:.3g}), rotation layer **{last.rotation:.3g}** "
        f"(upper bound C₁·m = {last.rotation_upper_bound:.3g})."
    )
    if not prod.grows:
        st.warning(
            f"M − ε = {prod.M - prod.eps:g} ≤ 1: the product's lower bound does not grow with m; "
            "the exponential blow-up of §1.2 needs M − ε > 1."
        )
    st.markdown(f"**Notice:** {growth_notice(df)}")
    st.caption(
        "The red curve is one term that multiplies all m fields, the interaction of §1.2's last part — not "
        "an FM: an FM's terms each multiply two fields, so m enters its gradient through a sum, as it enters "
        "the rotation layer's. The blow-up is a property of high-order product terms, not of FMs."
    )
    on_demand("Explain: which inequality is each line?", "explain_lines", lambda: explain_lines(bounds))


def theorem_section() -> None:
    """Theorem 1.1's construction for a layout, a random dependency f and S, with its error."""
    st.markdown(
        "Pick a field layout and a random dependency function f (its truth table T). The "
        "construction feeds the angles π·rⱼ (relation vectors, via M = [0 | (π/ε)I]) to m heads "
        "with w = S·1, so the attention score is Sigmoid(S·cos(π − π·T)) → T as S grows."
    )
    c1, c2, c3, c4 = st.columns(4)
    layout_text = VIEW.widget("layout", c1.text_input, "features per field")
    density = VIEW.widget("density", c2.slider, "density of f", 0.0, 1.0, step=0.05)
    seed = int(VIEW.widget("truth_seed", bounded_number, "seed", 0, 10_000, container=c3, step=1))
    S = VIEW.widget("S", c4.slider, "S", 1.0, 30.0, step=0.5)
    try:
        sizes = int_list(layout_text)
    except ValueError as err:
        st.error(f"features per field: {err}")
    else:
        try:
            T, c, _ = construction(sizes, density, seed, S)
        except ValueError as err:
            st.error(str(err))
        else:
            truth_figure, error_figure = construction_figures(sizes, density, seed, S)
            chart(truth_figure)
            k1, k2, k3 = st.columns(3)
            k1.metric("max |α − T| (l ≠ j)", f"{c.error:.2e}")
            k2.metric("Sigmoid(−S)", f"{predicted_error(S):.2e}")
            k3.metric("min self-score αⱼⱼ", f"{c.self_score_min:.6f}")
            chart(error_figure)
            st.markdown(
                "**Notice:** the error is exactly Sigmoid(−S): below 10⁻⁶ once S ≳ 14. "
                "Each field also attends to itself with score Sigmoid(S·nⱼ) → 1 — the printed proof "
                "claims T(s, s) = 0 there; corrected, $\\hat\\theta_j = \\theta_j + \\sum_{l \\ne j} f(e_j, e_l)\\,\\theta_l$."
            )
            with st.expander("The relation vectors rⱼ of one sample"):
                last = len(c.ids) - 1
                check = in_range(0, last, integer=True), f"0 to {last}"
                b = int(VIEW.widget("sample", st.number_input, "sample #", 0, last, step=1, check=check))
                st.dataframe(relation_frame(sizes, T, c.ids[b].tolist()))
                st.caption("rⱼ[k] = T(k, ID(xⱼ)) outside field j; ½ inside field j, 1 at the active feature.")


def rfm_section() -> None:
    """The tuned RFM against the tuned FM on MovieLens 100K: the committed verdicts."""
    st.markdown(
        "The tuned RFM against the tuned FM on MovieLens 100K: the same splits, the same epoch budget, the same "
        "training tools (L2, grouped L2 by field, weight averaging) and the same number of Optuna trials, five seeds. "
        "A bar right of zero means RFM's test MSE is lower."
    )
    try:
        found = measured_table(
            rfm_experiment.table_name("ml-100k"), rfm_experiment.COLUMNS, "gradient_growth", "ml-100k", "rating"
        )
    except ValueError as err:
        error(err)
    else:
        if found is None:
            st.info(
                "No comparison saved yet: run `python -m fmlib reproduce rfm` (it uses the tuned presets fm and rfm)."
            )
        else:
            frame, header, verdicts = found
            title = "RFM vs FM: paired per-seed difference of test MSE, 95 % interval"
            chart(drawn_once(header, "verdicts", lambda: verdict_figure(verdicts, title)))
            st.dataframe(verdicts[["claim", "measured", "verdict", "recipes"]], hide_index=True)
            st.code(rfm_experiment.format_table(frame), language=None)
            source_caption(header)


on_demand("Theorem 1.1: a rotation layer can express any dependency", "theorem_section", theorem_section)
on_demand("Does RFM predict ratings better than FM?", "rfm_section", rfm_section)

copy_link_and_reset(VIEW, container=bar)
