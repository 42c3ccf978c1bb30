// The text search. A single page: one text per item (model, sample id, target, answer), to which
// the long texts (response, answers, judges' words, prompt) are added once decoded. A paged
// report: the model, sample ids, targets and answers of every item at once, from the index;
// then the long texts, read file by file for each search, the list growing as they are read
// (the count says how far it is).
"use strict";

let haystacks = null;
let fullText = false;
const deep = { q: null, token: 0, items: null, samples: null, read: 0, files: 0, done: false };

function buildSearch() {
  if (PAGED) return;
  haystacks = Array.from({ length: N }, (_, i) => {
    const it = row(i);
    const s = idx.samples[it[F.sample]];
    const answer = Array.isArray(it[F.answer]) ? it[F.answer].join(" ") : it[F.answer] || "";
    return (idx.models[it[F.model]] + " " + s[1] + " " + (s[2] || "") + " " + answer).toLowerCase();
  });
}

// Whether item i matches the search `q` (lowercase), as far as the texts are read.
function textMatch(q) {
  if (!PAGED) return (i) => haystacks[i].indexOf(q) >= 0;
  const has = (text) => String(text ?? "").toLowerCase().indexOf(q) >= 0;
  const models = idx.models.map(has);
  const samples = Uint8Array.from(idx.samples, (s) => has(s[1] + " " + (s[2] || "")));
  const shown = answers.map((a) => has(Array.isArray(a) ? a.join(" ") : a));
  if (deep.q !== q) readTexts(q);
  return (i) => models[C.model[i]] || samples[C.sample[i]] === 1 || shown[C.answer[i]] || deep.items[i] === 1 || deep.samples[C.sample[i]] === 1;
}

function searchNote() {
  if (!state.q) return "";
  if (!PAGED) return fullText ? "" : " (searching ids, targets and answers; texts are still loading)";
  return deep.done ? "" : ` (searching the texts: ${deep.read} of ${deep.files} files read)`;
}

function longTexts(d) {
  return [d.response, ...(d.answers || []), ...d.judges.map((j) => j.reply)].join(" ").toLowerCase();
}

// A paged report's texts searched for `q`, file by file; a newer search stops this one.
async function readTexts(q) {
  const token = ++deep.token;
  const details = Math.ceil(N / idx.chunk);
  const prompts = Math.ceil(idx.samples.length / idx.sample_chunk);
  Object.assign(deep, { q, items: new Uint8Array(N), samples: new Uint8Array(idx.samples.length), read: 0, files: details + prompts, done: false });
  const place = new Uint32Array(N); // an item's place in the list from where its texts sit
  for (let i = 0; i < N; i++) place[C.at[i]] = i;
  let shown = performance.now();
  const stale = () => {
    if (token !== deep.token) return true;
    if (state.q.trim().toLowerCase() === q) return false;
    deep.q = null; // the search changed: this one is dropped
    return true;
  };
  const progress = () => {
    deep.read += 1;
    if (performance.now() - shown < 300) return;
    shown = performance.now();
    applyFilters();
  };
  try {
    for (let f = 0; f < details; f++) {
      const rows = await chunk("details", f);
      if (stale()) return;
      rows.forEach((d, k) => { if (longTexts(d).indexOf(q) >= 0) deep.items[place[f * idx.chunk + k]] = 1; });
      progress();
    }
    for (let f = 0; f < prompts; f++) {
      const rows = await chunk("prompts", f);
      if (stale()) return;
      rows.forEach((p, k) => { if ((p.prompt || "").toLowerCase().indexOf(q) >= 0) deep.samples[f * idx.sample_chunk + k] = 1; });
      progress();
    }
  } catch (error) { // a file missing: the search covers what could be read
    $("count").title = error.message;
  }
  if (stale()) return;
  deep.done = true;
  window.__searchDone = performance.now();
  applyFilters();
}

// A single page's long texts join its search once decoded, a chunk at a time.
async function loadTexts() {
  const chunks = Math.ceil(N / idx.chunk);
  for (let c = 0; c < chunks; c++) {
    const rows = await chunk("details", c);
    for (let k = 0; k < rows.length; k++) haystacks[c * idx.chunk + k] += " " + longTexts(rows[k]);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  const samples = Math.ceil(idx.samples.length / idx.chunk);
  const prompts = [];
  for (let c = 0; c < samples; c++) prompts.push(...(await chunk("prompts", c)));
  for (let i = 0; i < N; i++) haystacks[i] += " " + (prompts[C.sample[i]].prompt || "").toLowerCase();
  fullText = true;
  window.__textsLoaded = performance.now();
  if (state.q) applyFilters();
}
