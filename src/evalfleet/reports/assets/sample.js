// One sample across models: the prompt, its media and the target once; below them one row per
// model and epoch with the answer, the verdicts, the response, the judges' words, tokens and
// cost. Opened from an item ("all models on this sample", o), from a flipped sample of a
// comparison, and from the list when "models disagree" is on.
"use strict";

function openOne(sample, models) {
  state.one = sample;
  state.models = models.filter((m) => idx.models.includes(m));
  writeHash();
  return renderView();
}

function closeOne() {
  if (state.one === null) return;
  state.one = null;
  state.models = [];
  writeHash();
  renderView().then(() => {
    const row = document.querySelector("tr.item-row.selected");
    if (row) row.scrollIntoView({ block: "nearest" });
  });
}

function oneItems() {
  const chosen = state.models.length ? state.models.map((m) => idx.models.indexOf(m)) : null;
  const epoch = state.epoch === "" ? -1 : Number(state.epoch);
  const found = [];
  for (let i = 0; i < N; i++) {
    if (C.sample[i] !== state.one) continue;
    if (chosen && !chosen.includes(C.model[i])) continue;
    if (epoch >= 0 && C.epoch[i] !== epoch) continue;
    found.push(i);
  }
  // epoch by epoch, the models side by side within each
  const model = (i) => (chosen ? chosen.indexOf(C.model[i]) : C.model[i]);
  return found.sort((a, b) => C.epoch[a] - C.epoch[b] || model(a) - model(b));
}

// The next or previous sample among the list's matches (j / k in this view).
function moveSample(step) {
  const seen = new Uint8Array(idx.samples.length);
  const samples = [];
  for (const i of matches) {
    if (!seen[C.sample[i]]) samples.push(C.sample[i]);
    seen[C.sample[i]] = 1;
  }
  if (!samples.length) return;
  const at = samples.indexOf(state.one);
  const next = at < 0 ? 0 : Math.min(samples.length - 1, Math.max(0, at + step));
  openOne(samples[next], state.models);
}

function oneRowHtml(i, detail) {
  const it = row(i);
  const answer = answerOf(it);
  const judged = it[F.judgeCost] === null ? "" : `<div class="note">judges ${fmt.money(it[F.judgeCost])}</div>`;
  return (
    `<tr class="one-row" data-item="${i}"><td class="model"><span class="clip" title="${esc(idx.models[it[F.model]])}">${esc(idx.models[it[F.model]])}</span></td>` +
    `<td class="num">${it[F.epoch]}</td>` +
    `<td class="answer">${answer === null ? '<span class="note">none read</span>' : esc(answer)}</td>` +
    `<td class="verdicts">${badges(it, detail.why)}</td>` +
    `<td class="num" title="in ${fmt.tokens(it[F.tin])} / reasoning ${fmt.tokens(it[F.treason])}">${fmt.tokens(it[F.tout])}</td>` +
    `<td class="num">${fmt.seconds(it[F.latency])}</td>` +
    `<td class="num">${fmt.money(it[F.cost])}${judged}</td>` +
    `<td class="words">${responseHtml(detail, it)}${judgesHtml(detail)}</td></tr>`
  );
}

async function renderOne() {
  const box = $("one");
  const shown = state.one;
  const s = Object.assign([...idx.samples[shown]], { index: shown });
  const found = oneItems();
  let prompt, details, media;
  try {
    [prompt, details, media] = await Promise.all([promptOf(shown), Promise.all(found.map(detailOf)), mediaOf(shown)]);
  } catch (error) { // a paged report's file missing beside it
    box.innerHTML = `<p class="error">${esc(error.message)}</p>`;
    return;
  }
  if (state.one !== shown) return;
  const bench = idx.benchmarks[s[0]];
  const answered = new Set();
  for (let i = 0; i < N; i++) if (C.sample[i] === shown) answered.add(C.model[i]);
  const choose = idx.models.filter((m, k) => answered.has(k)).map((m) => {
    const on = !state.models.length || state.models.includes(m);
    return `<label class="pick"><input type="checkbox" data-model="${esc(m)}"${on ? " checked" : ""}> ${esc(m)}</label>`;
  });
  const epochs = state.epoch === "" ? "every epoch" : `epoch ${esc(state.epoch)} (the epoch filter)`;
  box.innerHTML =
    `<div class="one-head"><button id="one-back" title="Esc">← the list</button>` +
    `<h2>${esc(bench)} · sample ${esc(s[1])}</h2><span class="note">${epochs}; k / j: the previous or next sample of the list</span>` +
    '<button class="md-toggle" type="button">markdown</button></div>' +
    `<div class="pickers">${choose.join("")}</div>` +
    `<div class="one-sample">${promptHtml(prompt, s, media)}</div>` +
    `<div class="legend-line note">${esc(bench)} verdicts: ${meta.benchmarks[bench].scorings.map((n) => { const j = judgeOf(bench, n); return esc(n) + (j ? ` (judge ${esc(j)})` : ""); }).join(" · ")}</div>` +
    `<table class="one-rows"><thead><tr><th>model</th><th>ep</th><th>answer</th><th>verdicts</th><th>tokens</th><th>latency</th><th>cost</th><th>response and judges' words</th></tr></thead>` +
    `<tbody>${found.map((i, k) => oneRowHtml(i, details[k])).join("")}</tbody></table>` +
    (found.length ? "" : '<p class="note">No answer of these models at this epoch.</p>');
  $("one-back").onclick = closeOne;
  for (const box_ of box.querySelectorAll(".pickers input")) {
    box_.onchange = () => {
      const picked = [...box.querySelectorAll(".pickers input:checked")].map((x) => x.dataset.model);
      openOne(shown, picked.length === choose.length ? [] : picked);
    };
  }
  bindImages(box);
  applyMarkdown(box);
}
