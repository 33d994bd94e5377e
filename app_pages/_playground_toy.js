// The Playground's toy FM in the browser (app_pages/_playground.py mounts it with st.components.v2).
// The same formulas as fmlib/toy.py, computed here on every movement so that a drag never waits
// for the server: ŷ(u, m) = w0 + w_u + w_m + mean_g w_g + Σ_{f<g} R_fg ⟨e_f, e_g⟩ ([FwFM] eq. 3;
// the FM of [Rendle2010] eq. 1 is R = 11ᵀ − I; DPLR's R = Uᵀ diag(ω) U + diag(d), [DPLR] eq. 10, whose ω
// the state calls e, as fmlib.models.dplr does).
// The state goes to Python only when a move ends (pointer released, typing done, keys paused).

const PAIRS = [[0, 1], [0, 2], [1, 2]];
const FIELDS = ["user", "movie", "genre"];
const SVG = "http://www.w3.org/2000/svg";
const NUMBER = /^\s*[-+\u2212]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i;

const dot = (a, b) => a[0] * b[0] + a[1] * b[1];
const clone = (x) => JSON.parse(JSON.stringify(x));
const fixed = (x, d = 2) => (Math.abs(x) < 0.5 * 10 ** -d ? 0 : x).toFixed(d);
const signed = (x) => (x >= -0.005 ? "+" : "\u2212") + Math.abs(x).toFixed(2);

function el(tag, attrs = {}, text) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---- the model -------------------------------------------------------------------------------
function fieldR(t) {
  if (t.model === "fm") return [[0, 1, 1], [1, 0, 1], [1, 1, 0]];
  if (t.model === "fwfm") return t.state.R;
  const { U, e } = t.state;
  const R = [[0, 0, 0], [0, 0, 0], [0, 0, 0]];
  for (let f = 0; f < 3; f++)
    for (let g = 0; g < 3; g++) if (f !== g) for (let r = 0; r < e.length; r++) R[f][g] += e[r] * U[r][f] * U[r][g];
  return R;
}

function fieldEmbeddings(t, state, user, movie) {
  const V = state.V, row = t.row;
  const genres = t.D.movie_genres[movie].map((g) => V[row[g]]);
  const mean = [0, 1].map((c) => genres.reduce((a, v) => a + v[c], 0) / genres.length);
  return [V[row[user]], V[row[movie]], mean];
}

function firstOrder(t, user, movie) {
  const { w0, bias, movie_genres } = t.D;
  const genres = movie_genres[movie];
  return w0 + bias[user] + bias[movie] + genres.reduce((a, g) => a + bias[g], 0) / genres.length;
}

function terms(t, state, R, user, movie) {
  const E = fieldEmbeddings(t, state, user, movie);
  return PAIRS.map(([f, g]) => ({ R: R[f][g], dot: dot(E[f], E[g]), value: R[f][g] * dot(E[f], E[g]) }));
}

function allScores(t, state, R) {
  const out = {};
  for (const u of t.D.users)
    for (const m of t.D.movies) out[u + "|" + m] = firstOrder(t, u, m) + terms(t, state, R, u, m).reduce((a, x) => a + x.value, 0);
  return out;
}

// [DPLR] Proposition 1 (eq. 9): the pairwise part without visiting a pair, ½(Σ_i d_i ‖e_i‖² + Σ_r e_r ‖P_r‖²), P = UE.
function proposition1(t, user, movie) {
  const { U, e } = t.state;
  const E = fieldEmbeddings(t, t.state, user, movie);
  let total = 0;
  for (let i = 0; i < 3; i++) {
    let d = 0;
    for (let r = 0; r < e.length; r++) d -= e[r] * U[r][i] ** 2;
    total += d * dot(E[i], E[i]);
  }
  for (let r = 0; r < e.length; r++) {
    const P = [0, 1].map((c) => U[r].reduce((a, u, i) => a + u * E[i][c], 0));
    total += e[r] * dot(P, P);
  }
  return total / 2;
}

// ---- building the view -----------------------------------------------------------------------
function build(host, D) {
  const root = el("div", { class: "toy", "data-model": D.model });
  const top = el("div", { class: "top" });
  const b = D.ranges.coordinate;
  const svg = el("svg:svg", {
    class: "plane",
    viewBox: `${-b - 0.2} ${-b - 0.2} ${2 * b + 0.4} ${2 * b + 0.4}`,
    role: "group",
    "aria-label": "Embeddings as points: drag one, or focus it with Tab and move it with the arrow keys",
  });
  const grid = el("svg:g", { class: "grid" });
  for (let k = -2 * b; k <= 2 * b; k += 1) {  // a line every 0.5
    const v = k / 2;
    const cls = v === 0 ? "axis" : "";
    grid.append(el("svg:line", { x1: v, y1: -b, x2: v, y2: b, class: cls }), el("svg:line", { x1: -b, y1: v, x2: b, y2: v, class: cls }));
    if (v !== 0) grid.append(el("svg:text", { x: v, y: b + 0.14, class: "tick" }, String(v)), el("svg:text", { x: -b - 0.12, y: -v + 0.03, class: "tick" }, String(v)));
  }
  svg.append(grid, el("svg:g", { class: "vectors" }), el("svg:g", { class: "mean" }), el("svg:g", { class: "points" }));
  const side = el("div", { class: "side" });
  side.append(
    el("div", { class: "live", "aria-live": "polite" }),
    el("table", { class: "scores" }),
    el("div", { class: "breakdown" }),
  );
  top.append(svg, side);
  const editors = el("div", { class: "editors" });
  root.append(top, editors, el("div", { class: "refused", role: "alert" }));
  host.append(root);
  return root;
}

function hint(t, symbol) {  // the glossary's definition of a symbol (a title attribute: shown on hover)
  return (t.D.hints && t.D.hints[symbol]) || "";
}

function quoted(text) {  // text inside an attribute of HTML written as a string
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

function drawPoints(t) {
  const layer = t.root.querySelector(".points");
  layer.replaceChildren();
  t.D.features.forEach((name, i) => {
    const g = el("svg:g", {
      class: "pt " + t.D.field_of[name],
      tabindex: "0",
      role: "button",
      "data-name": name,
      "aria-label": `${name} (${t.D.field_of[name]}): arrow keys move it, Shift for larger steps`,
    });
    g.append(el("svg:circle", { r: 0.06 }), el("svg:text", { class: "label", x: 0.08, y: -0.07 }, name));
    g.addEventListener("pointerdown", (ev) => startDrag(t, name, ev));
    g.addEventListener("keydown", (ev) => keyMove(t, name, ev));
    g.addEventListener("focus", () => focusOn(t, name));
    layer.append(g);
  });
}

function drawScores(t) {
  const table = t.root.querySelector(".scores");
  table.replaceChildren();
  const head = el("tr");
  head.append(el("th", { title: hint(t, "ŷ") }, "ŷ"));
  for (const m of t.D.movies) head.append(el("th", {}, m));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const u of t.D.users) {
    const row = el("tr");
    row.append(el("th", {}, u));
    for (const m of t.D.movies) {
      const cell = el("td", { class: "score", "data-pair": `${u}|${m}`, tabindex: "0", title: `Show the terms of ${u} × ${m}` });
      cell.append(el("span", { class: "value" }), el("span", { class: "delta" }));
      cell.addEventListener("click", () => { t.focus = [u, m]; render(t); });
      cell.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); t.focus = [u, m]; render(t); } });
      row.append(cell);
    }
    body.append(row);
  }
  table.append(body);
}

function numberInput(t, label, get, set, bound, extra = {}) {
  const input = el("input", { type: "text", inputmode: "decimal", size: "5", "aria-label": label, "data-entry": label, ...extra });
  input.addEventListener("change", () => {
    const text = input.value.replace("\u2212", "-");
    const value = NUMBER.test(text) ? Number(text) : NaN;
    if (!Number.isFinite(value) || value < -bound || value > bound) {
      input.classList.add("bad");
      input.setAttribute("aria-invalid", "true");
      const why = Number.isFinite(value) ? "is out of range" : "is not a finite number";
      t.root.querySelector(".refused").textContent =
        `Refused: ${label} = "${input.value}" ${why}; use a number in [${-bound}, ${bound}]. Kept ${fixed(get())}.`;
      return;  // the last valid state stays
    }
    input.classList.remove("bad");
    input.removeAttribute("aria-invalid");
    t.root.querySelector(".refused").textContent = "";
    t.base = allScores(t, t.state, fieldR(t));
    t.baseTerms = focusTerms(t);
    set(value);
    render(t);
    send(t);
  });
  input.addEventListener("keydown", (ev) => ev.stopPropagation());
  return input;
}

function drawEditors(t) {
  const box = t.root.querySelector(".editors");
  box.replaceChildren();
  const R = t.D.ranges;
  // coordinates of every point
  const coords = el("details", { class: "coords" });
  coords.append(el("summary", {}, "Type a point's coordinates"));
  const table = el("table");
  table.append(el("tr"));
  table.rows[0].append(el("th", {}, "feature"), el("th", {}, "x"), el("th", {}, "y"));
  t.D.features.forEach((name, i) => {
    const row = el("tr");
    row.append(el("th", { class: t.D.field_of[name] }, name));
    for (const c of [0, 1]) {
      const cell = el("td");
      cell.append(numberInput(t, `${name} ${"xy"[c]}`, () => t.state.V[i][c], (v) => { t.state.V[i][c] = v; }, R.coordinate));
      row.append(cell);
    }
    table.append(row);
  });
  coords.append(table);
  box.append(coords);
  if (t.model === "fwfm") box.append(rEditor(t));
  if (t.model === "dplr") box.append(dplrEditor(t));
}

function rGrid(t, editable) {
  const table = el("table", { class: "rgrid" });
  const head = el("tr");
  head.append(el("th", { title: hint(t, "R") }, "R"));
  for (const f of FIELDS) head.append(el("th", {}, f));
  table.append(head);
  FIELDS.forEach((f, i) => {
    const row = el("tr");
    row.append(el("th", {}, f));
    FIELDS.forEach((g, j) => {
      const cell = el("td", { class: "rcell", "data-r": `${i}${j}` });
      if (i === j) {
        cell.append(el("span", { class: "diag", title: "R's diagonal is not a weight: a field does not interact with itself" }, "0"));
      } else if (editable) {
        cell.append(
          numberInput(t, `R[${f}, ${g}]`, () => t.state.R[i][j], (v) => { t.state.R[i][j] = v; t.state.R[j][i] = v; }, t.D.ranges.R),
        );
      } else {
        cell.append(el("span", { class: "rvalue" }));
      }
      row.append(cell);
    });
    table.append(row);
  });
  return table;
}

function rEditor(t) {
  const box = el("div", { class: "rpanel" });
  box.append(el("p", {}, "Click a cell of R, type a weight in [\u22123, 3] and press Enter: R[f, g] multiplies every ⟨e_f, e_g⟩ of that pair of fields (R is symmetric, so R[g, f] follows)."));
  box.append(rGrid(t, true));
  return box;
}

function dplrEditor(t) {
  const box = el("div", { class: "rpanel" });
  const ranks = el("div", { class: "ranks", role: "group", "aria-label": "rank ρ" });
  ranks.append(el("span", { title: hint(t, "ρ") }, "rank ρ: "));
  for (const rho of [1, 2]) {
    const b = el("button", { type: "button", "data-rank": rho, "aria-pressed": String(t.state.e.length === rho) }, `ρ = ${rho}`);
    b.addEventListener("click", () => setRank(t, rho));
    ranks.append(b);
  }
  box.append(ranks);
  const U = el("table", { class: "ugrid" });
  const head = el("tr");
  head.append(el("th", { title: hint(t, "U") }, "U"));
  for (const f of FIELDS) head.append(el("th", {}, f));
  head.append(el("th", { title: hint(t, "ω") }, "ω"));
  U.append(head);
  t.state.e.forEach((_, r) => {
    const row = el("tr");
    row.append(el("th", {}, `row ${r + 1}`));
    FIELDS.forEach((f, i) => {
      const cell = el("td");
      cell.append(numberInput(t, `U[${r + 1}, ${f}]`, () => t.state.U[r][i], (v) => { t.state.U[r][i] = v; }, t.D.ranges.U));
      row.append(cell);
    });
    const ecell = el("td");
    ecell.append(numberInput(t, `ω[${r + 1}]`, () => t.state.e[r], (v) => { t.state.e[r] = v; }, t.D.ranges.e));
    row.append(ecell);
    U.append(row);
  });
  box.append(U);
  box.append(el("p", { class: "formula", title: hint(t, "d") }, "R = Uᵀ diag(ω) U + diag(d), d = −diag(Uᵀ diag(ω) U): the R these numbers make, every pair of fields in it:"));
  box.append(rGrid(t, false));
  box.append(el("ul", { class: "served" }));
  return box;
}

function setRank(t, rho) {
  const { U, e } = t.state;
  if (e.length === rho) return;
  t.base = allScores(t, t.state, fieldR(t));
  t.baseTerms = focusTerms(t);
  if (rho > e.length) { U.push([0, 0, 0]); e.push(0); } else { U.length = rho; e.length = rho; }
  drawEditors(t);
  render(t);
  send(t);
}

// ---- moving ----------------------------------------------------------------------------------
function focusOn(t, name) {
  const field = t.D.field_of[name];
  if (field === "user") t.focus = [name, t.focus[1]];
  if (field === "movie") t.focus = [t.focus[0], name];
}

function focusTerms(t) {
  return terms(t, t.state, fieldR(t), t.focus[0], t.focus[1]);
}

function startDrag(t, name, ev) {
  ev.preventDefault();
  focusOn(t, name);
  t.drag = name;
  t.base = allScores(t, t.state, fieldR(t));
  t.baseTerms = focusTerms(t);
  t.svg.setPointerCapture(ev.pointerId);
  render(t);
}

function toPlane(t, ev) {
  const box = t.svg.getBoundingClientRect();
  const b = t.D.ranges.coordinate, span = 2 * b + 0.4;
  const x = ((ev.clientX - box.left) / box.width) * span - span / 2;
  const y = -(((ev.clientY - box.top) / box.height) * span - span / 2);
  const clamp = (v) => Math.round(Math.min(b, Math.max(-b, v)) * 100) / 100;
  return [clamp(x), clamp(y)];
}

function timed(t, started, work) {
  work();
  const handled = performance.now() - started;
  t.latency.handled.push(handled);
  requestAnimationFrame(() => t.latency.frame.push(performance.now() - started));
  t.root.dataset.latencyMs = handled.toFixed(2);
}

function dragMove(t, ev) {
  if (!t.drag) return;
  timed(t, ev.timeStamp, () => {
    t.state.V[t.row[t.drag]] = toPlane(t, ev);
    render(t);
  });
}

function endDrag(t) {
  if (!t.drag) return;
  t.drag = null;
  render(t);
  send(t);
}

function keyMove(t, name, ev) {
  const step = ev.shiftKey ? 0.2 : 0.05;
  const move = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] }[ev.key];
  if (!move) return;
  ev.preventDefault();
  if (t.keyTimer === null) {
    t.base = allScores(t, t.state, fieldR(t));
    t.baseTerms = focusTerms(t);
  }
  timed(t, ev.timeStamp, () => {
    const b = t.D.ranges.coordinate;
    const p = t.state.V[t.row[name]];
    t.state.V[t.row[name]] = p.map((v, c) => Math.round(Math.min(b, Math.max(-b, v + move[c])) * 100) / 100);
    render(t);
  });
  clearTimeout(t.keyTimer);
  t.keyTimer = setTimeout(() => { t.keyTimer = null; send(t); }, 400);
}

function send(t) {
  t.sent += 1;
  t.send("moved", { state: clone(t.state), focus: t.focus, n: t.sent });
}

// ---- drawing the state -----------------------------------------------------------------------
function render(t) {
  const R = fieldR(t);
  const scores = allScores(t, t.state, R);
  const [fu, fm] = t.focus;
  const E = fieldEmbeddings(t, t.state, fu, fm);
  // points and their vectors from the origin
  const vectors = t.root.querySelector(".vectors");
  vectors.replaceChildren();
  t.D.features.forEach((name, i) => {
    const [x, y] = t.state.V[i];
    const inFocus = name === fu || name === fm || t.D.movie_genres[fm].includes(name);
    vectors.append(el("svg:line", { x1: 0, y1: 0, x2: x, y2: -y, class: `vec ${t.D.field_of[name]}${inFocus ? " on" : ""}` }));
  });
  for (const g of t.root.querySelectorAll(".pt")) {
    const name = g.dataset.name;
    const [x, y] = t.state.V[t.row[name]];
    g.setAttribute("transform", `translate(${x} ${-y})`);
    g.setAttribute("data-x", x);
    g.setAttribute("data-y", y);
    g.classList.toggle("dragging", t.drag === name);
  }
  const mean = t.root.querySelector(".mean");
  mean.replaceChildren();
  if (t.D.movie_genres[fm].length > 1) {  // a movie of several genres: e_genre is their mean
    const [x, y] = E[2];
    const m = el("svg:g", { transform: `translate(${x} ${-y})`, class: "genre-mean" });
    m.append(el("svg:rect", { x: -0.045, y: -0.045, width: 0.09, height: 0.09, transform: "rotate(45)" }));
    m.append(el("svg:text", { class: "label", x: 0.07, y: 0.14 }, `e_genre of ${fm} (mean)`));
    mean.append(m);
  }
  // every score, with its change since the move began
  for (const cell of t.root.querySelectorAll(".score")) {
    const pair = cell.dataset.pair;
    cell.querySelector(".value").textContent = fixed(scores[pair]);
    const change = t.base ? scores[pair] - t.base[pair] : 0;
    cell.querySelector(".delta").textContent = t.base && Math.abs(change) >= 0.005 ? signed(change) : "";
    cell.classList.toggle("focus", pair === `${fu}|${fm}`);
    cell.classList.toggle("up", change >= 0.005);
    cell.classList.toggle("down", change <= -0.005);
  }
  // the focused pair: each pairwise term and its share of the score and of the change
  const now = terms(t, t.state, R, fu, fm);
  const first = firstOrder(t, fu, fm);
  const total = scores[`${fu}|${fm}`];
  const live = t.root.querySelector(".live");
  if (t.base) {
    const before = t.base[`${fu}|${fm}`];
    live.textContent = `${fu} × ${fm}: ${fixed(before)} → ${fixed(total)} (${signed(total - before)})`;
  } else {
    live.textContent = `Drag a point (or Tab to it and use the arrow keys): ${fu} × ${fm} is ${fixed(total)}.`;
  }
  const genres = t.D.movie_genres[fm];
  const genre = genres.length === 1 ? `v_${genres[0]}` : `e_genre = mean(${genres.map((g) => "v_" + g).join(", ")})`;
  const names = [[`v_${fu}`, `v_${fm}`], [`v_${fu}`, genre], [`v_${fm}`, genre]];
  const change = t.base ? total - t.base[`${fu}|${fm}`] : 0;
  const rows = [`<tr><th>term</th><th>value</th><th>share of ŷ</th><th>change in this move</th></tr>`];
  rows.push(`<tr><td title="${quoted(hint(t, "w"))}">w₀ + biases</td><td>${fixed(first)}</td><td>${fixed((100 * first) / total, 0)} %</td><td>—</td></tr>`);
  now.forEach((term, k) => {
    const [a, b] = names[k];
    const label = t.model === "fm" ? `⟨${a}, ${b}⟩` : `R[${FIELDS[PAIRS[k][0]]}, ${FIELDS[PAIRS[k][1]]}] · ⟨${a}, ${b}⟩ = ${fixed(term.R)} × ${fixed(term.dot)}`;
    const moved = t.baseTerms ? term.value - t.baseTerms[k].value : 0;
    const share = Math.abs(change) >= 0.005 ? ` (${fixed((100 * moved) / change, 0)} % of it)` : "";
    const width = Math.min(100, 40 * Math.abs(term.value));
    rows.push(
      `<tr data-term="${k}"><td title="${quoted(hint(t, "⟨v_i, v_j⟩"))}">${label}</td>` +
        `<td><span class="bar ${term.value < 0 ? "neg" : "pos"}" style="width:${width}px"></span>${fixed(term.value)}</td>` +
        `<td>${fixed((100 * term.value) / total, 0)} %</td><td>${t.baseTerms ? signed(moved) + share : "—"}</td></tr>`,
    );
  });
  let note = "";
  if (t.model === "dplr") {
    const p1 = proposition1(t, fu, fm);
    const sum = now.reduce((a, x) => a + x.value, 0);
    note = `<p class="prop1">[DPLR] Proposition 1, ½(Σ_f d_f‖e_f‖² + Σ_r ω_r‖P_r‖²), without visiting a pair: <b>${fixed(p1, 3)}</b>; the sum over the three pairs: <b>${fixed(sum, 3)}</b>.</p>`;
  }
  t.root.querySelector(".breakdown").innerHTML =
    `<p class="bd-title">${fu} × ${fm}: ŷ = <b>${fixed(total)}</b></p><table class="terms">${rows.join("")}</table>${note}`;
  // R's cells, and in DPLR the pairs it serves
  for (const cell of t.root.querySelectorAll(".rcell")) {
    const [i, j] = [Number(cell.dataset.r[0]), Number(cell.dataset.r[1])];
    if (i === j) continue;
    const v = R[i][j];
    cell.style.background = v >= 0 ? `rgba(31, 119, 180, ${Math.min(1, Math.abs(v) / 3) * 0.6})` : `rgba(214, 39, 40, ${Math.min(1, Math.abs(v) / 3) * 0.6})`;
    const span = cell.querySelector(".rvalue");
    if (span) span.textContent = fixed(v);
    const input = cell.querySelector("input");
    if (input && input !== active(t) && !input.classList.contains("bad")) input.value = fixed(v);
  }
  for (const input of t.root.querySelectorAll(".coords input, .ugrid input")) {
    if (input === active(t) || input.classList.contains("bad")) continue;
    const entry = input.dataset.entry;
    input.value = fixed(valueOf(t, entry));
  }
  const served = t.root.querySelector(".served");
  if (served) {
    const rho = t.state.e.length;
    served.innerHTML =
      PAIRS.map(([f, g]) => {
        const v = R[f][g];
        return Math.abs(v) < 1e-9
          ? `<li class="off">${FIELDS[f]} · ${FIELDS[g]}: R = 0, this pair is switched off</li>`
          : `<li>${FIELDS[f]} · ${FIELDS[g]}: R = ${fixed(v)}, served</li>`;
      }).join("") +
      `<li class="budget">ρ(m+1) = ${rho * 4} numbers (U: ${rho}×3, ω: ${rho}) for the 3 pairs; on MovieLens's 12 fields ρ = 2 gives 26 numbers for 66 pairs, and DPLR still serves every pair.</li>`;
  }
  for (const b of t.root.querySelectorAll("[data-rank]")) b.setAttribute("aria-pressed", String(Number(b.dataset.rank) === t.state.e.length));
}

function active(t) {  // the element with the keyboard focus, inside the shadow root when there is one
  return t.host.activeElement ?? document.activeElement;
}

function valueOf(t, entry) {
  let m = entry.match(/^(.*) ([xy])$/);
  if (m) return t.state.V[t.row[m[1]]]["xy".indexOf(m[2])];
  m = entry.match(/^U\[(\d), (\w+)\]$/);
  if (m) return t.state.U[Number(m[1]) - 1][FIELDS.indexOf(m[2])];
  m = entry.match(/^ω\[(\d)\]$/);
  return t.state.e[Number(m[1]) - 1];
}

// The formulas alone, for tests/test_toy.py, which runs them in Node against fmlib.toy.
export const math = { fieldR, allScores, proposition1 };

// ---- the component ---------------------------------------------------------------------------
export default function ({ data, parentElement, setStateValue }) {
  let t = parentElement.__fmlibToy;
  if (!t) {
    const root = build(parentElement, data);
    t = parentElement.__fmlibToy = {
      host: parentElement, root, svg: root.querySelector(".plane"), model: data.model, version: null,
      focus: data.focus, drag: null, base: null, baseTerms: null, keyTimer: null, sent: 0,
      latency: { handled: [], frame: [] },
    };
    t.svg.addEventListener("pointermove", (ev) => dragMove(t, ev));
    t.svg.addEventListener("pointerup", () => endDrag(t));
    t.svg.addEventListener("pointercancel", () => endDrag(t));
    (window.__fmlibToyLatency ??= {})[data.model] = t.latency;
  }
  t.D = data;
  t.send = setStateValue;
  t.row = Object.fromEntries(data.features.map((name, i) => [name, i]));
  if (t.version !== data.version) {  // the page's state (first mount, Reset, a refused state): adopt it
    t.version = data.version;
    t.state = clone(data.state);
    t.base = t.baseTerms = null;
    t.root.querySelector(".refused").textContent = "";
    drawPoints(t);
    drawScores(t);
    drawEditors(t);
  }
  render(t);
}
