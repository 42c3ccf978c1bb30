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
  if (deep.q !== q) readTexts(q);
  return (i) => deep.items[i] === 1 || deep.samples[C.sample[i]] === 1;
}

function searchNote() {
  if (!state.q) return "";
  if (!PAGED) return fullText ? "" : " (searching ids, targets and answers; texts are still loading)";
  return deep.done ? "" : ` (searching the texts: ${deep.read} of ${deep.files} files read)`;
}

function longTexts(d) {
  return [d.response, ...(d.answers || []), ...d.judges.map((j) => j.reply)].join(" ").toLowerCase();
}

// A paged report's search for `q`: the model, sample ids, targets and answers of every item at
// once, then each file's texts, three files in flight; a newer search stops this one.
function readTexts(q) {
  const token = ++deep.token;
  const has = (text) => String(text ?? "").toLowerCase().indexOf(q) >= 0;
  const models = idx.models.map(has);
  const shown = answers.map((a) => has(Array.isArray(a) ? a.join(" ") : a));
  const samples = Uint8Array.from(idx.samples, (s) => has(s[1] + " " + (s[2] || "")));
  const items = new Uint8Array(N);
  for (let i = 0; i < N; i++) if (models[C.model[i]] || shown[C.answer[i]]) items[i] = 1;
  const files = [];
  for (let f = 0; f * idx.chunk < N; f++) files.push(["details", f]);
  for (let f = 0; f * idx.sample_chunk < idx.samples.length; f++) files.push(["prompts", f]);
  Object.assign(deep, { q, items, samples, read: 0, files: files.length, done: false });
  const place = new Uint32Array(N); // an item's place in the list from where its texts sit
  for (let i = 0; i < N; i++) place[C.at[i]] = i;
  const stale = () => {
    if (token !== deep.token) return true;
    if (state.q.trim().toLowerCase() === q) return false;
    deep.q = null; // the search changed: this one is dropped
    return true;
  };
  let [found, shownFound, shownAt] = [0, 0, performance.now()];
  const scan = (kind, f, rows) => {
    rows.forEach((row, k) => {
      if (kind === "details" && longTexts(row).indexOf(q) >= 0) { items[place[f * idx.chunk + k]] = 1; found++; }
      if (kind === "prompts" && (row.prompt || "").toLowerCase().indexOf(q) >= 0) { samples[f * idx.sample_chunk + k] = 1; found++; }
    });
    deep.read += 1;
    if (found === shownFound || performance.now() - shownAt < 1500) return;
    [shownFound, shownAt] = [found, performance.now()];
    applyFilters(); // the list grows (its page kept)
  };
  let next = 0;
  const reader = async () => {
    while (next < files.length && !stale()) {
      const [kind, f] = files[next++];
      try {
        scan(kind, f, await readChunk(`${kind}-${String(f).padStart(6, "0")}`));
      } catch (error) { // a file missing: the search covers what could be read
        deep.read += 1;
        $("count").title = error.message;
      }
    }
  };
  Promise.all([reader(), reader(), reader()]).then(() => {
    if (stale()) return;
    deep.done = true;
    window.__searchDone = performance.now();
    applyFilters();
  });
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
