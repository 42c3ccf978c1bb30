// The run report: filters over the item index, one item's details on demand.
// Data lives in <script> blocks of this page: `meta` and `index` (JSON), `details-N` and
// `prompts-N` (gzipped JSON, base64), `media-N` (JSON of data URIs). Nothing is fetched.
"use strict";

const PAGE = 100;
const $ = (id) => document.getElementById(id);
const meta = JSON.parse($("meta").textContent);
const idx = JSON.parse($("index").textContent);
const items = idx.items; // [model, benchmark, sample, epoch, letters]
const chunkCache = {};
const haystacks = items.map((it) => {
  const s = idx.samples[it[2]];
  return (idx.models[it[0]] + " " + s[1] + " " + (s[2] || "")).toLowerCase();
});
let fullText = false;
const state = { model: "", benchmark: "", scoring: "", epoch: "", status: "", disagree: false, q: "", page: 0, item: null, side: "" };
let matches = [];

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function gunzip(id) {
  if (id in chunkCache) return chunkCache[id];
  const block = $(id);
  const bytes = Uint8Array.from(atob(block.textContent.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const parsed = JSON.parse(await new Response(stream).text());
  chunkCache[id] = parsed;
  return parsed;
}

async function detailOf(i) {
  const rows = await gunzip("details-" + Math.floor(i / idx.chunk));
  return rows[i % idx.chunk];
}

async function promptOf(sample) {
  const rows = await gunzip("prompts-" + Math.floor(sample / idx.chunk));
  return rows[sample % idx.chunk];
}

function mediaOf(sample) {
  const block = $("media-" + sample);
  return block ? JSON.parse(block.textContent) : [];
}

function scoringIndex(benchmark) {
  const names = idx.scorings[idx.benchmarks[benchmark]] || [];
  if (!state.scoring) return 0;
  return names.indexOf(state.scoring);
}

function letterOf(it) {
  const at = scoringIndex(it[1]);
  return at < 0 ? null : it[4][at];
}

function disagreeing() {
  // (benchmark, sample, epoch) where, under the scoring shown, one model is right and another wrong
  const seen = {};
  for (const it of items) {
    const letter = letterOf(it);
    if (!letter || "RrWw".indexOf(letter) < 0) continue;
    const key = it[1] + "|" + it[2] + "|" + it[3];
    const right = letter === "R" || letter === "r";
    seen[key] = (seen[key] || 0) | (right ? 1 : 2);
  }
  return seen;
}

function applyFilters() {
  const started = performance.now();
  const model = state.model === "" ? -1 : idx.models.indexOf(state.model);
  const bench = state.benchmark === "" ? -1 : idx.benchmarks.indexOf(state.benchmark);
  const epoch = state.epoch === "" ? -1 : Number(state.epoch);
  const q = state.q.trim().toLowerCase();
  const split = state.disagree ? disagreeing() : null;
  matches = [];
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    if (model >= 0 && it[0] !== model) continue;
    if (bench >= 0 && it[1] !== bench) continue;
    if (epoch >= 0 && it[3] !== epoch) continue;
    const letter = letterOf(it);
    if (state.scoring && letter === null) continue;
    if (state.status) {
      if (state.status === "correct" && letter !== "R" && letter !== "r") continue;
      if (state.status === "incorrect" && letter !== "W" && letter !== "w") continue;
      if (state.status === "error" && letter !== "E") continue;
      if (state.status === "judged") {
        // under a scoring chosen: its verdict came from a judge; else any judge's verdict
        const judged = state.scoring ? letter && letter !== letter.toUpperCase() : /[a-z]/.test(it[4]);
        if (!judged) continue;
      }
      if (state.status === "score-error" && letter !== "S" && letter !== "s") continue;
    }
    if (split && split[it[1] + "|" + it[2] + "|" + it[3]] !== 3) continue;
    if (q && haystacks[i].indexOf(q) < 0) continue;
    matches.push(i);
  }
  renderList();
  window.__lastFilterMs = performance.now() - started; // the filter and the list drawn
}

function verdictBadge(letter) {
  if (!letter || letter === "-") return '<span class="verdict">–</span>';
  const judged = letter !== letter.toUpperCase() ? " v-judged" : "";
  const word = { R: "right", W: "wrong", E: "error", S: "score error" }[letter.toUpperCase()];
  return `<span class="verdict v-${letter}${judged}" title="${word}${judged ? " (judge)" : ""}">${letter}</span>`;
}

function renderList() {
  const pages = Math.max(1, Math.ceil(matches.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const first = state.page * PAGE;
  const rows = [];
  for (const i of matches.slice(first, first + PAGE)) {
    const it = items[i];
    const s = idx.samples[it[2]];
    const selected = state.item === i ? " selected" : "";
    rows.push(
      `<tr class="item-row${selected}" data-item="${i}"><td>${esc(idx.models[it[0]])}</td>` +
        `<td>${esc(idx.benchmarks[it[1]])}</td><td>${esc(s[1])}</td><td class="num">${it[3]}</td>` +
        `<td>${verdictBadge(letterOf(it) ?? "-")}</td><td>${esc(s[2])}</td></tr>`,
    );
  }
  $("items").innerHTML =
    "<tr><th>model</th><th>benchmark</th><th>sample</th><th>epoch</th><th>verdict</th><th>target</th></tr>" +
    rows.join("");
  $("count").textContent = `${matches.length} of ${items.length} items` + (fullText || !state.q ? "" : " (searching ids and targets; texts are still loading)");
  $("page").textContent = `page ${state.page + 1} of ${pages}`;
  writeHash();
}

function kv(pairs) {
  return '<table class="kv">' + pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map((p) => `<tr><td>${esc(p[0])}</td><td>${p[2] ? p[1] : esc(p[1])}</td></tr>`).join("") + "</table>";
}

async function itemHtml(i) {
  const it = items[i];
  const s = idx.samples[it[2]];
  const bench = idx.benchmarks[it[1]];
  const [detail, prompt] = await Promise.all([detailOf(i), promptOf(it[2])]);
  const names = idx.scorings[bench] || [];
  const media = mediaOf(it[2]).map((m) => {
    if (m.kind === "image") {
      const src = m.thumb || m.full || "";
      return src ? `<img class="thumb" src="${src}" data-full="${m.full || m.thumb}" alt="image of the prompt">` : "";
    }
    return m.full ? `<audio controls src="${m.full}"></audio>` : '<span class="note">audio not embedded (over the media budget)</span>';
  });
  const scoring = names.map((name, k) => `<tr><td>${esc(name)}</td><td class="extracted">${esc(detail.answers[k])}</td><td class="verdict-cell">${verdictBadge(it[4][k])}</td><td>${esc(detail.score_errors[k])}</td></tr>`);
  const judged = meta.benchmarks[bench].judge_scorings || {};
  const judges = detail.judges.map((j) => {
    const badge = (judged[j.judge] || []).map((name) => names.indexOf(name)).filter((at) => at >= 0).map((at) => verdictBadge(it[4][at])).join(" ");
    return `<h4>judge ${esc(j.judge)} ${badge}</h4>` + (j.error ? `<p class="note">the judge call failed: ${esc(j.error)}</p>` : `<pre class="judge-words">${esc(j.reply)}</pre>`);
  });
  const reasoning = detail.reasoning ? `<details><summary>reasoning (${detail.tokens[2]} tokens)</summary><pre class="reasoning">${esc(detail.reasoning)}</pre></details>` : "";
  const error = detail.error ? `<p class="error"><b>error</b> ${esc(detail.error.type)} ${esc(detail.error.status ?? "")}: ${esc(detail.error.message)}</p>` : "";
  return (
    `<h3>${esc(idx.models[it[0]])} · ${esc(bench)} · sample ${esc(s[1])} · epoch ${it[3]}</h3>` +
    `<h4>prompt</h4><pre class="prompt">${esc(prompt.prompt) || '<span class="note">(no text kept)</span>'}</pre>` +
    `<div class="media">${media.join("")}</div>` +
    (prompt.choices ? `<p class="choices">choices: ${esc(prompt.choices.join(" | "))}</p>` : "") +
    `<h4>target</h4><pre class="target">${esc(s[2])}</pre>` +
    `<h4>response</h4>${reasoning}<pre class="response">${esc(detail.response ?? "(no response)")}</pre>${error}` +
    `<h4>verdicts</h4><table class="scoring"><tr><th>scoring</th><th>extracted answer</th><th>verdict</th><th>score error</th></tr>${scoring.join("")}</table>` +
    judges.join("") +
    `<h4>call</h4>` +
    kv([
      ["tokens in / out / reasoning", detail.tokens.join(" / ")],
      ["latency", detail.latency_s == null ? "" : detail.latency_s.toFixed(2) + " s"],
      ["cost", detail.cost_usd == null ? "" : "$" + detail.cost_usd.toFixed(6)],
      ["attempts", detail.attempts],
      ["finish reason", detail.finish_reason],
      ["model reported", detail.model_reported],
      ["batch job", detail.batch ? "yes" : ""],
    ])
  );
}

async function renderDetail() {
  const box = $("detail");
  if (state.item === null || state.item >= items.length) {
    box.innerHTML = '<p class="note">Choose an item on the left to see its prompt, response and verdicts.</p>';
    return;
  }
  const it = items[state.item];
  const others = idx.models.map((m, k) => [m, k]).filter(([, k]) => k !== it[0]);
  const choose = others.length
    ? `<label>side by side with <select id="side"><option value="">—</option>${others.map(([m]) => `<option${m === state.side ? " selected" : ""}>${esc(m)}</option>`).join("")}</select></label>`
    : "";
  let body = await itemHtml(state.item);
  if (state.side) {
    const k = idx.models.indexOf(state.side);
    const twin = items.findIndex((o) => o[0] === k && o[1] === it[1] && o[2] === it[2] && o[3] === it[3]);
    const other = twin >= 0 ? await itemHtml(twin) : `<p class="note">${esc(state.side)} has no answer to this sample and epoch.</p>`;
    body = `<div class="side"><div>${body}</div><div class="twin">${other}</div></div>`;
  }
  box.innerHTML = choose + body;
  const side = $("side");
  if (side) side.onchange = () => { state.side = side.value; writeHash(); renderDetail(); };
  for (const img of box.querySelectorAll("img.thumb")) {
    img.onclick = () => { $("overlay-img").src = img.dataset.full; $("overlay").style.display = "flex"; };
  }
}

function writeHash() {
  const parts = [];
  for (const key of ["model", "benchmark", "scoring", "epoch", "status", "q", "side"]) {
    if (state[key]) parts.push(key + "=" + encodeURIComponent(state[key]));
  }
  if (state.disagree) parts.push("disagree=1");
  if (state.item !== null) {
    const it = items[state.item];
    parts.push("sample=" + encodeURIComponent(idx.benchmarks[it[1]] + "/" + idx.samples[it[2]][1] + "/" + it[3] + "/" + idx.models[it[0]]));
  }
  history.replaceState(null, "", "#" + parts.join("&"));
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const key of ["model", "benchmark", "scoring", "epoch", "status", "q", "side"]) state[key] = params.get(key) || "";
  state.disagree = params.get("disagree") === "1";
  const wanted = params.get("sample");
  state.item = null;
  if (wanted) {
    const [bench, sample, epoch, model] = wanted.split("/").length >= 4 ? splitSample(wanted) : [null];
    state.item = items.findIndex((it) => idx.benchmarks[it[1]] === bench && idx.samples[it[2]][1] === sample && String(it[3]) === epoch && (!model || idx.models[it[0]] === model));
    if (state.item < 0) state.item = null;
  }
}

function splitSample(text) {
  // benchmark/sample/epoch/model, where the model holds a "/" of its own
  const parts = text.split("/");
  return [parts[0], parts[1], parts[2], parts.slice(3).join("/")];
}

function fillFilters() {
  const option = (value, label) => `<option value="${esc(value)}">${esc(label ?? value)}</option>`;
  $("f-model").innerHTML = option("", "all models") + idx.models.map((m) => option(m)).join("");
  $("f-benchmark").innerHTML = option("", "all benchmarks") + idx.benchmarks.map((b) => option(b)).join("");
  const scorings = [...new Set(Object.values(idx.scorings).flat())];
  $("f-scoring").innerHTML = option("", "each benchmark's first") + scorings.map((s) => option(s)).join("");
  const epochs = [...new Set(items.map((it) => it[3]))].sort((a, b) => a - b);
  $("f-epoch").innerHTML = option("", "all epochs") + epochs.map((e) => option(String(e))).join("");
  for (const key of ["model", "benchmark", "scoring", "epoch", "status"]) $("f-" + key).value = state[key];
  $("f-disagree").checked = state.disagree;
  $("f-q").value = state.q;
}

function bindFilters() {
  for (const key of ["model", "benchmark", "scoring", "epoch", "status"]) {
    $("f-" + key).onchange = () => { state[key] = $("f-" + key).value; state.page = 0; applyFilters(); };
  }
  $("f-disagree").onchange = () => { state.disagree = $("f-disagree").checked; state.page = 0; applyFilters(); };
  let typing = null;
  $("f-q").oninput = () => { clearTimeout(typing); typing = setTimeout(() => { state.q = $("f-q").value; state.page = 0; applyFilters(); }, 150); };
  $("prev").onclick = () => { state.page = Math.max(0, state.page - 1); renderList(); };
  $("next").onclick = () => { state.page += 1; renderList(); };
  $("items").onclick = (event) => {
    const row = event.target.closest("tr.item-row");
    if (!row) return;
    state.item = Number(row.dataset.item);
    renderList();
    renderDetail();
  };
  $("overlay").onclick = () => { $("overlay").style.display = "none"; };
  window.onhashchange = () => { readHash(); fillFilters(); applyFilters(); renderDetail(); };
}

async function loadTexts() {
  // the long texts join the free-text search once decoded, a chunk at a time
  const chunks = Math.ceil(items.length / idx.chunk);
  for (let c = 0; c < chunks; c++) {
    const rows = await gunzip("details-" + c);
    for (let k = 0; k < rows.length; k++) {
      const i = c * idx.chunk + k;
      const d = rows[k];
      haystacks[i] += " " + [d.response, ...(d.answers || []), ...d.judges.map((j) => j.reply)].join(" ").toLowerCase();
    }
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  const samples = Math.ceil(idx.samples.length / idx.chunk);
  const prompts = [];
  for (let c = 0; c < samples; c++) prompts.push(...(await gunzip("prompts-" + c)));
  for (let i = 0; i < items.length; i++) haystacks[i] += " " + (prompts[items[i][2]].prompt || "").toLowerCase();
  fullText = true;
  window.__textsLoaded = performance.now();
  if (state.q) applyFilters();
}

readHash();
fillFilters();
bindFilters();
applyFilters();
renderDetail().then(() => { window.__reportReady = performance.now(); });
setTimeout(loadTexts, 50);
