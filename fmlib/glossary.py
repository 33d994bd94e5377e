"""One glossary for the project: every symbol the notebooks and the app's pages use, defined once.

Each ``Term`` gives a symbol (plain text and LaTeX), its name, a one-sentence definition and where it
comes from: a paper by its reference key and equation (``fmlib.references``), or ``fmlib`` for a
quantity the project itself defines. ``GLOSSARY`` maps a key to its term; ``define("ρ")`` gives one
line to print, ``markdown_table(["R", "ρ"])`` a table for a notebook or page.

One notation across the project. The FM core (FM, FwFM, DPLR, RaFM) uses each letter once. Where a
paper's letter would clash with it, the project renames it and says so in the definition: DPLR's
weight vector ``e`` is ``ω`` here (``e_f`` is a field's embedding), RaFM's number of ranks ``m`` is
``h`` (``m`` is the number of fields), RFM's bounds α, β, γ, ζ, θ, η are ``β_Q``, ``β_K``, ``β_V``,
``β_w``… (γ is the inversion's regulariser) and Theorem 1.1's ``M`` and ``ε`` are ``Π`` and ``τ``
(``M`` and ``ε`` describe product inputs). A letter that keeps a second meaning inside one paper's
own derivation (``X`` is a feature vector in [FMGrad], the secret input in [AttnInv]) is keyed with
that paper, ``"X [AttnInv]"``: ``define("X")`` then names every meaning.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .references import TITLES

FMLIB = "fmlib"  # the source of a quantity the project defines itself (no paper)


@dataclass(frozen=True)
class Term:
    """One symbol: ``symbol`` as plain text, ``latex`` for math mode, its ``name``, a one-sentence
    ``definition`` (may hold inline ``$…$`` math) and its ``source`` ("[DPLR] eq. 10", or "fmlib: …")."""

    symbol: str
    latex: str
    name: str
    definition: str
    source: str

    @property
    def papers(self) -> list[str]:
        """The reference keys the source cites (empty for a quantity fmlib defines)."""
        return re.findall(r"\[(\w+)\]", self.source)


def _terms(*rows: tuple[str, str, str, str, str]) -> dict[str, Term]:
    out: dict[str, Term] = {}
    for key, latex, name, definition, source in rows:
        if key in out:
            raise ValueError(f"glossary key {key!r} is defined twice")
        out[key] = Term(key.split(" [")[0], latex, name, definition, source)
    return out


# (key, LaTeX, name, definition, source). A key is the symbol, or "symbol [Paper]" for a paper-local
# second meaning of a letter.
GLOSSARY: dict[str, Term] = _terms(
    # --- the FM ([Rendle2010]) and what every model shares
    (
        "y",
        "y",
        "target",
        "The value a model predicts for one sample: a rating from 1 to 5 on MovieLens.",
        "[Rendle2010] eq. 1",
    ),
    (
        "ŷ",
        r"\hat y",
        "prediction",
        "The model's output for one sample, compared with $y$ by the loss.",
        "[Rendle2010] eq. 1",
    ),
    (
        "x_i",
        "x_i",
        "feature value",
        "The value of feature $i$ in a sample: 1 for the active value of a single-valued field, $1/(\\text{number of the movie's genres})$ for each of its genres, 0 otherwise.",
        "[Rendle2010] eq. 1",
    ),
    ("w_0", "w_0", "global bias", "The one number every prediction starts from.", "[Rendle2010] eq. 1"),
    ("w_i", "w_i", "feature weight", "The linear weight of feature $i$, added as $w_i x_i$.", "[Rendle2010] eq. 1"),
    (
        "v_i",
        "v_i",
        "feature embedding",
        "The learned vector in $\\mathbb R^k$ of feature $i$; two features interact through the inner product $\\langle v_i, v_j\\rangle$.",
        "[Rendle2010] eq. 1",
    ),
    (
        "k",
        "k",
        "embedding size",
        "The length of every embedding $v_i$ (the FM's rank); in [RFM] the number of angles per field.",
        "[Rendle2010] eq. 1",
    ),
    (
        "m",
        "m",
        "number of fields",
        "How many fields a sample has (12 on MovieLens 100K: user, age, …, genres, hour).",
        "[DPLR] eq. 3",
    ),
    (
        "e_f",
        "e_f",
        "field embedding",
        "The embedding of field $f$ in one sample, $e_f = \\sum_{i\\in f} x_i v_i$: one $v_i$ for a single-valued field, the average of the genres' vectors for genres.",
        "[DPLR] eq. 3",
    ),
    (
        "N",
        "N",
        "number of samples",
        "How many samples a loss or an error averages over, as in $\\mathrm{RMSE} = \\sqrt{\\tfrac1N\\sum(\\hat y - y)^2}$.",
        "[RaFM] eq. 12a",
    ),
    (
        "θ",
        r"\theta",
        "parameters",
        "All learned numbers of a model together ($w_0$, the $w_i$, the $v_i$, …); $\\theta_t$ are their values after epoch $t$.",
        "[Rendle2012]",
    ),
    (
        "κ",
        r"\kappa",
        "L2 strength",
        "The weight of an L2 penalty $\\tfrac{\\kappa}{2}\\lVert\\theta\\rVert^2$ (one per field group with grouped L2), the precision of a Gaussian prior in the Bayesian FM.",
        "[Rendle2012]",
    ),
    (
        "t",
        "t",
        "step or epoch index",
        "Counts training epochs ($\\theta_t$) or the iterations of an optimiser ($X_t$).",
        FMLIB + ": fmlib.train, fmlib.inversion",
    ),
    (
        "t_0",
        "t_0",
        "first averaged epoch",
        "Weight averaging keeps $\\bar\\theta$, the mean of $\\theta_t$ over the epochs $t \\ge t_0$ (TrainConfig(average_from=t_0)).",
        FMLIB + ": fmlib.train.TrainConfig",
    ),
    # --- field-weighted FM and DPLR ([FwFM], [DPLR])
    (
        "R",
        "R",
        "field interaction matrix",
        "The symmetric $m\\times m$ matrix with zero diagonal whose entry $R_{fg}$ weighs the interaction of fields $f$ and $g$.",
        "[DPLR] eq. 3; [FwFM]",
    ),
    (
        "R_fg",
        "R_{fg}",
        "interaction weight",
        "The weight of the pair of fields $f<g$ in the FwFM's pair sum $\\sum_{f<g} R_{fg}\\langle e_f, e_g\\rangle$.",
        "[DPLR] eq. 3",
    ),
    (
        "R_FM",
        r"R_{\mathrm{FM}}",
        "the FM's interaction matrix",
        "$\\mathbf 1\\mathbf 1^\\top - I$: every pair of fields weighted 1, so an FM is the FwFM with $R = R_{\\mathrm{FM}}$.",
        "[DPLR] eq. 7",
    ),
    ("1", r"\mathbf 1", "all-ones vector", "The column vector whose entries are all 1.", "[DPLR] eq. 7"),
    ("I", "I", "identity matrix", "The square matrix with ones on the diagonal and zeros elsewhere.", "[DPLR] eq. 7"),
    (
        "ρ",
        r"\rho",
        "DPLR rank",
        "The rank of DPLR's low-rank part; a DPLR $R$ has $\\rho(m+1)$ parameters, the budget a pruned $R$ gets too.",
        "[DPLR] eq. 10",
    ),
    (
        "U",
        "U",
        "DPLR factor",
        "The learned $\\rho\\times m$ matrix of DPLR's low-rank part $U^\\top\\operatorname{diag}(\\omega)U$.",
        "[DPLR] eq. 10",
    ),
    (
        "ω",
        r"\omega",
        "DPLR weights",
        "The learned vector in $\\mathbb R^\\rho$ that weighs the rows of $U$ (signed, like eigenvalues); [DPLR] and fmlib's code call it e.",
        "[DPLR] eq. 10",
    ),
    (
        "d",
        "d",
        "DPLR diagonal",
        "The vector in $\\mathbb R^m$ with $d_f = -\\sum_r \\omega_r U_{rf}^2$, which makes the diagonal of $R = U^\\top\\operatorname{diag}(\\omega)U + \\operatorname{diag}(d)$ zero.",
        "[DPLR] eq. 10",
    ),
    ("V", "V", "field embeddings stacked", "The $m\\times k$ matrix whose row $f$ is $e_f$.", "[DPLR] eq. 4"),
    (
        "P",
        "P",
        "projected embeddings",
        "$P = UV$, the $\\rho\\times k$ matrix that Proposition 1 computes once to get the pair sum in $O(\\rho mk)$.",
        "[DPLR] eq. 9",
    ),
    (
        "𝒞",
        r"\mathcal C",
        "context fields",
        "The fields of the user and the time of a rating, computed once per ranking query.",
        "[DPLR] Algorithm 1",
    ),
    (
        "ℐ",
        r"\mathcal I",
        "item fields",
        "The fields of the movie (movie, release year, genres), computed once per item.",
        "[DPLR] Algorithm 1",
    ),
    (
        "c_f",
        "c_f",
        "field scale",
        "A learned $R$ is fixed only up to one scale and sign $c_f$ per field ($e_f/c_f$ with $R_{fg}c_fc_g$ predicts the same), so matrices are compared after choosing the $c_f$.",
        FMLIB + ": fmlib.analysis.interactions.align_field_scales",
    ),
    (
        "R̃",
        r"\tilde R",
        "post-hoc DPLR",
        "The rank-$\\rho$ DPLR matrix fitted to a trained FwFM's $R$ after training.",
        "[DPLR] App. C",
    ),
    (
        "E",
        "E",
        "approximation error",
        "$E = \\tilde R - R$, the error of a post-hoc or pruned approximation of $R$.",
        "[DPLR] App. C",
    ),
    (
        "λ_i",
        r"\lambda_i",
        "eigenvalue",
        "The $i$-th eigenvalue of a symmetric matrix in decreasing order; $\\lambda_{\\min}$ the smallest.",
        "[DPLR] §4.1; [AttnInv] Thm. 4.2",
    ),
    (
        "s_i",
        "s_i",
        "singular value",
        "The $i$-th singular value of a matrix in decreasing order; their sum is the nuclear norm.",
        "[DPLR] App. C",
    ),
    # --- RaFM ([RaFM])
    ("n_i", "n_i", "occurrences", "How many training samples feature $i$ occurs in.", "[RaFM] eq. 17"),
    (
        "N(u)",
        "N(u)",
        "implicit feedback of user u",
        "The movies user $u$ rated in the training split; the block `rated` puts $1/\\sqrt{|N(u)|}$ on each of them.",
        "[Koren2008] eq. 15",
    ),
    (
        "D_p",
        "D_p",
        "rank of level p",
        "The embedding size of RaFM's level $p$, with $D_1 < \\dots < D_h$.",
        "[RaFM] eq. 3",
    ),
    (
        "h",
        "h",
        "number of levels",
        "How many ranks RaFM has ([RaFM] writes m; here $m$ is the number of fields).",
        "[RaFM] eq. 3",
    ),
    (
        "k_i",
        "k_i",
        "feature's level",
        "The highest level feature $i$ owns an embedding at, $k_i = \\arg\\min_p |\\log n_i - \\log D_p|$.",
        "[RaFM] eq. 17",
    ),
    (
        "k_ij",
        "k_{ij}",
        "pair's level",
        "$\\min(k_i, k_j)$: a pair of features interacts at the smaller of their two levels.",
        "[RaFM] eq. 5",
    ),
    (
        "v_i^(p)",
        "v_i^{(p)}",
        "level-p embedding",
        "Feature $i$'s embedding in $\\mathbb R^{D_p}$, kept for $p = 1, \\dots, k_i$.",
        "[RaFM] eq. 3",
    ),
    (
        "𝓕_p",
        r"\mathcal F_p",
        "features of level p",
        "$\\{i : k_i \\ge p\\}$, the features that own a rank-$D_p$ embedding; RaFM stores $\\sum_p D_p|\\mathcal F_p|$ numbers.",
        "[RaFM] eq. 6",
    ),
    (
        "n̄_p",
        r"\bar n_p",
        "rank threshold",
        "$\\sqrt{D_pD_{p+1}}$: eq. 17 gives a feature seen more than $\\bar n_p$ times a level above $p$ (or a count cut-point chosen instead, as the paper allows).",
        "[RaFM] eq. 17",
    ),
    (
        "𝓐_lp",
        r"\mathcal A_{l,p}",
        "level sum",
        "The FM pair sum at rank $D_l$ over the features in $\\mathcal F_p$, computed with Rendle's identity.",
        "[RaFM] eq. 7",
    ),
    (
        "𝓑_lp",
        r"\mathcal B_{l,p}",
        "RaFM pair sum",
        "The pair sum where pairs inside $\\mathcal F_p$ use rank $D_p$; the model's pair sum is $\\mathcal B_{1,h}$, and $\\mathcal B_{1,1}$ is RaFM-low.",
        "[RaFM] Theorem 3",
    ),
    (
        "free variables",
        r"\text{free}",
        "free variables",
        "Each feature's highest-level embedding $v_i^{(k_i)}$, trained on the loss of the prediction $\\mathcal B_{1,h}$.",
        "[RaFM] eq. 12, Algorithm 1",
    ),
    (
        "dependent variables",
        r"\text{dependent}",
        "dependent variables",
        "The lower-level copies $v_i^{(p)}$, $p < k_i$, trained to make $\\mathcal B_{1,p}$ agree with $\\mathcal B_{1,p+1}$ (eq. 12b).",
        "[RaFM] eq. 12b, Algorithm 1",
    ),
    (
        "L",
        "L",
        "loss",
        "The function training minimises: squared error for ratings ($L(\\hat y, y) = (\\hat y-y)^2$), log loss for clicks, $L(X)$ for the inversion.",
        "[RaFM] eq. 12; [AttnInv] Def. 3.1",
    ),
    # --- RaFM Proposition S3 (notebook 05)
    (
        "δ",
        r"\delta",
        "margin parameter",
        "Any number $\\delta > 1$ in Proposition S3; the inequality's margin is $\\log\\delta$.",
        "[RaFM] eq. S6",
    ),
    (
        "θ [RaFM]",
        r"\theta",
        "S3 probability floor",
        "In Proposition S3, a lower bound $0 < \\theta \\le y\\hat y_1 + (1-y)(1-\\hat y_1)$ on the probability the first model gives the true label.",
        "[RaFM] eq. S6",
    ),
    (
        "C_θδ",
        r"C_{\theta,\delta}",
        "S3 constant",
        "The factor on $\\mathcal D_{KL}(\\hat y_1\\|\\hat y_2)$ that makes log loss a quasi-triangle inequality.",
        "[RaFM] eq. S7",
    ),
    (
        "D_KL",
        r"\mathcal D_{KL}",
        "KL divergence",
        "$\\mathcal D_{KL}(\\hat y_1\\|\\hat y_2)$, the Kullback–Leibler divergence between two Bernoulli predictions.",
        "[RaFM] eq. S6",
    ),
    # --- RFM ([RFM], theory appendix)
    (
        "Q",
        "Q",
        "query angles",
        "The $m\\times k$ matrix of query angles of a rotation layer, one row per field.",
        "[RFM] §1.2",
    ),
    (
        "K",
        "K",
        "key angles",
        "The $m\\times k$ matrix of key angles of a rotation layer, one row per field.",
        "[RFM] §1.2",
    ),
    (
        "w [RFM]",
        "w",
        "angle weights",
        "The vector in $\\mathbb R^k$ that weighs a rotation layer's angle dimensions in $\\text{\\textcircled{1}}_{il} = \\sum_c w_c\\cos(Q_{ic} - K_{lc})$.",
        "[RFM] §1.2",
    ),
    (
        "①",
        "\\text{\\textcircled{1}}",
        "rotation scores",
        "The $m\\times m$ matrix $\\mathrm{Re}[(e^{iQ}\\operatorname{diag}(w))(e^{-iK})^\\top]$: how well field $i$'s query rotation agrees with field $l$'s key rotation.",
        "[RFM] §1.2",
    ),
    (
        "σ",
        r"\sigma",
        "logistic sigmoid",
        "$\\sigma(z) = 1/(1 + e^{-z})$, which turns a score into an attention weight in $(0, 1)$.",
        "[RFM] §1.2",
    ),
    (
        "X [RFM]",
        "X",
        "field embeddings of a layer",
        "The $m\\times k$ input of a rotation layer (row $j$ is field $j$'s embedding $X_j$); in a product interaction its entries are multiplied.",
        "[RFM] §1.2",
    ),
    (
        "V [RFM]",
        "V",
        "values",
        "The $m\\times k$ values of a rotation layer, mixed by the attention weights into $G = \\sigma(\\text{\\textcircled{1}})V$.",
        "[RFM] §1.2",
    ),
    (
        "G",
        "G",
        "rotation layer output",
        "$G = \\sigma(\\text{\\textcircled{1}})V$, read out as $y = f(\\cos G) + f(\\sin G)$.",
        "[RFM] §1.2",
    ),
    (
        "a",
        "a",
        "product exponent",
        "The power each field's embedding is raised to in the product interaction $X_1^{a}\\odot\\cdots\\odot X_m^{a}$.",
        "[RFM] §1.2",
    ),
    (
        "M",
        "M",
        "product input magnitude",
        "Product inputs satisfy $M - \\varepsilon \\le |X_{jc}| \\le M + \\varepsilon$; the gradient grows like $(M-\\varepsilon)^{am-1}$, exponentially in $m$ when $M - \\varepsilon > 1$.",
        "[RFM] §1.2",
    ),
    (
        "ε",
        r"\varepsilon",
        "product input spread",
        "How far a product input's magnitude may lie from $M$: $|X_{jc}| \\ge M - \\varepsilon$.",
        "[RFM] §1.2",
    ),
    (
        "β_Q",
        r"\beta_Q",
        "query-weight bound",
        "A bound on the max-row-sum norm of the query weights ([RFM] writes α; RotationBounds.alpha).",
        "[RFM] §1.2",
    ),
    (
        "β_K",
        r"\beta_K",
        "key-weight bound",
        "A bound on the max-row-sum norm of the key weights ([RFM] writes β; RotationBounds.beta).",
        "[RFM] §1.2",
    ),
    (
        "β_V",
        r"\beta_V",
        "value-weight bound",
        "A bound on the max-row-sum norm of the value weights ([RFM] writes γ; RotationBounds.gamma).",
        "[RFM] §1.2",
    ),
    (
        "β_w",
        r"\beta_w",
        "angle-weight bound",
        "A bound on $\\lVert\\operatorname{diag}(w)\\rVert_\\infty$ ([RFM] writes ζ; RotationBounds.zeta).",
        "[RFM] §1.2",
    ),
    (
        "β_G",
        r"\beta_G",
        "read-out gradient bound",
        "A bound on $\\lVert\\partial y/\\partial G\\rVert_\\infty$ ([RFM] writes θ; RotationBounds.theta).",
        "[RFM] §1.2",
    ),
    (
        "β_X",
        r"\beta_X",
        "input bound",
        "A bound on every entry of the layer's input, $|X| < \\beta_X$ ([RFM] writes η; RotationBounds.eta).",
        "[RFM] §1.2",
    ),
    (
        "C_1",
        "C_1",
        "rotation gradient constant",
        "$C_1 = \\beta_V\\beta_G + \\tfrac12\\beta_Q\\beta_w\\beta_X\\beta_V\\beta_G k + \\tfrac12\\beta_K\\beta_w\\beta_V\\beta_X\\beta_G$, so that $\\lVert\\partial y/\\partial X\\rVert_\\infty \\le C_1 m$.",
        "[RFM] §1.2",
    ),
    (
        "‖A‖∞",
        r"\lVert A\rVert_\infty",
        "max-row-sum norm",
        "$\\max_i\\sum_j |a_{ij}|$, the norm the gradient bounds are stated in.",
        "[RFM] §1.2",
    ),
    (
        "T",
        "T",
        "truth table",
        "A 0/1 matrix over all features; $T_{kl} = 1$ when feature $k$'s field should attend to feature $l$.",
        "[RFM] Theorem 1.1",
    ),
    (
        "r_j",
        "r_j",
        "relation vector",
        "Field $j$'s row of relations to every feature, built from $T$ (½ on its own field, 1 at itself).",
        "[RFM] Theorem 1.1",
    ),
    (
        "τ",
        r"\tau",
        "construction scale",
        "The small number that scales $r_j$ inside the construction's input ([RFM] writes ε; the code's eps).",
        "[RFM] Theorem 1.1",
    ),
    (
        "Π",
        r"\Pi",
        "construction matrix",
        "$[\\,0 \\mid (\\pi/\\tau) I\\,]$, which maps the construction's input to the angles $\\pi r_j$ ([RFM] writes M).",
        "[RFM] Theorem 1.1",
    ),
    (
        "S",
        "S",
        "construction sharpness",
        "The angle weights of the construction are $w = S\\cdot\\mathbf 1$; the attention's error is $\\sigma(-S)$.",
        "[RFM] Theorem 1.1",
    ),
    (
        "α_jl",
        r"\alpha_{jl}",
        "attention score",
        "The weight with which field $j$ attends to field $l$ in the construction, $\\sigma(S\\cos(\\pi - \\pi T))$.",
        "[RFM] Theorem 1.1",
    ),
    # --- FMGrad ([FMGrad], notebook 05)
    (
        "φ",
        r"\varphi",
        "FM pair term",
        "The FM's pairwise term as a function of the feature vector, $\\varphi(X) = \\tfrac12(\\lVert PX\\rVert^2 - \\sum_i \\lVert P_{i,:}\\circ X\\rVert^2)$.",
        "[FMGrad] eq. 1",
    ),
    (
        "X [FMGrad]",
        "X",
        "feature vector",
        "The sample's features as one vector in $\\mathbb R^d$ (the $x_i$ of [Rendle2010]).",
        "[FMGrad] eq. 1",
    ),
    (
        "P [FMGrad]",
        "P",
        "embedding matrix",
        "The $k\\times d$ matrix with the features' embeddings $v_i$ as columns.",
        "[FMGrad] eq. 1",
    ),
    (
        "d [FMGrad]",
        "d",
        "number of features",
        "The length of $X$ in [FMGrad]: one entry per feature.",
        "[FMGrad] eq. 1",
    ),
    ("Z", "Z", "memoised product", "$Z = PX$, computed once so the whole gradient costs $O(dk)$.", "[FMGrad] eq. 8"),
    # --- attention inversion ([AttnInv])
    (
        "X [AttnInv]",
        "X",
        "attention input",
        "The $d\\times n$ input of a softmax-attention layer ($n$ tokens as columns), the secret $X_{\\text{true}}$ the attacker recovers.",
        "[AttnInv] Def. 3.1",
    ),
    ("n", "n", "number of tokens", "How many tokens (columns of $X$) the attention layer reads.", "[AttnInv] Def. 3.1"),
    ("d [AttnInv]", "d", "token length", "The length of one token (a column of $X$).", "[AttnInv] Def. 3.1"),
    (
        "Q [AttnInv]",
        "Q",
        "query weights",
        "The $d\\times d$ query weight matrix; only $W = KQ^\\top$ enters the layer.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "K [AttnInv]",
        "K",
        "key weights",
        "The $d\\times d$ key weight matrix; only $W = KQ^\\top$ enters the layer.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "W",
        "W",
        "attention weights",
        "$W = KQ^\\top \\in \\mathbb R^{d\\times d}$, known to the attacker.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "V [AttnInv]",
        "V",
        "value weights",
        "The $d\\times d$ value weight matrix, known to the attacker.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "D(X)",
        "D(X)",
        "softmax normaliser",
        "$\\operatorname{diag}(\\exp(X^\\top WX)\\mathbf 1_n)$, the row sums that make $D(X)^{-1}\\exp(X^\\top WX)$ a row-wise softmax.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "B",
        "B",
        "observed output",
        "$B = f(W; X_{\\text{true}}) \\in \\mathbb R^{n\\times d}$, the layer's output the attacker sees.",
        "[AttnInv] Def. 3.1",
    ),
    (
        "γ",
        r"\gamma",
        "regulariser",
        "The weight of $\\gamma\\lVert\\operatorname{vec}X\\rVert_2^2$ in $L(X)$: large enough, it makes $L$ convex, and pulls its minimiser towards 0.",
        "[AttnInv] Def. 3.1, Thm. 4.2",
    ),
    (
        "R [AttnInv]",
        "R",
        "norm bound",
        "Assumption 4.1: $\\lVert W\\rVert, \\lVert V\\rVert, \\lVert X\\rVert \\le R$ and $b_{ij} \\le R^2$; the convexity bound on $\\gamma$ grows like $R^8$.",
        "[AttnInv] Assumption 4.1",
    ),
    (
        "η",
        r"\eta",
        "step size",
        "The step of gradient descent $X \\leftarrow X - \\eta\\nabla L$.",
        "[AttnInv] Algorithm 1",
    ),
    (
        "ν",
        r"\nu",
        "damping",
        "The Levenberg–Marquardt damping of a Newton step $X \\leftarrow X - (\\nabla^2 L + \\nu I)^{-1}\\nabla L$, adjusted as the loss falls or rises.",
        FMLIB + ": fmlib.inversion.attack",
    ),
    (
        "Z [AttnInv]",
        "Z",
        "relaxed tokens",
        "Free logits whose row-wise softmax stands in for the hidden movies' one-hot tokens in the MovieLens attack.",
        "[AttnInv] §5",
    ),
)


def lookup(key: str) -> Term:
    """The term under ``key``; a symbol with several paper-local meanings names them all."""
    if key in GLOSSARY:
        return GLOSSARY[key]
    scoped = [k for k in GLOSSARY if k.startswith(key + " [")]
    if scoped:
        raise KeyError(f"{key!r} has one meaning per paper: use one of {scoped}")
    near = difflib.get_close_matches(key, list(GLOSSARY), n=3)
    raise KeyError(f"{key!r} is not in the glossary" + (f"; did you mean {near}?" if near else ""))


def define(key: str) -> str:
    """One line: "ρ — DPLR rank: The rank of … ([DPLR] eq. 10)"."""
    term = lookup(key)
    return f"{term.symbol} — {term.name}: {term.definition} ({term.source})"


def markdown_table(keys) -> str:
    """A markdown table of the given terms (symbol as math, name, definition, source), in order."""
    lines = ["| symbol | name | definition | source |", "|---|---|---|---|"]
    for key in keys:
        term = lookup(key)
        symbol = f"${term.latex}$"
        lines.append(f"| {symbol} | {term.name} | {term.definition} | {term.source} |")
    return "\n".join(lines)


def cited(keys) -> list[str]:
    """The reference keys the given terms cite, in order of first appearance."""
    out: list[str] = []
    for key in keys:
        for paper in lookup(key).papers:
            if paper not in out:
                out.append(paper)
    return out


def unknown_papers() -> list[str]:
    """Keys a term cites that ``fmlib.references`` does not know (empty when the glossary is sound)."""
    return sorted({p for term in GLOSSARY.values() for p in term.papers if p not in TITLES})
