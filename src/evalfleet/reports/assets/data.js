// The data of the page. A single page embeds it all: `meta` and `index` (JSON), `details-N` and
// `prompts-N` (gzipped JSON, base64, decoded on demand), `media-N` (JSON of data URIs). A paged
// report (above 20,000 items) embeds `meta` alone: its index is `report_items/index.js`
// (compact columns, read before these scripts run, decoded as the page opens), its texts and
// media the files beside it, each a script calling `reportChunk`, loaded as they are shown
// (a page opened from disk may load a script where it may not fetch a file). Nothing is fetched.
"use strict";

const $ = (id) => document.getElementById(id);
const meta = JSON.parse($("meta").textContent);
const PAGED = !$("index");
let idx; // names, samples, and how the texts are cut into chunks
let N = 0; // items
// One typed array per field, one value per item, in the list's first order: model, bench,
// sample, epoch, answer (into `answers`), tin, tout, treason, latency, cost, judge_cost (NaN
// for none), at (where its texts sit in the details chunks), and letters (W per item).
let C = {};
let W = 1;
let answers = [null]; // the distinct answers the list shows
// an item as a row, what the list, the item and the one-sample view draw: [model, benchmark,
// sample, epoch, letters, answer, tokens in, out, reasoning, latency s, cost $, judges' cost $]
const F = { model: 0, bench: 1, sample: 2, epoch: 3, letters: 4, answer: 5, tin: 6, tout: 7, treason: 8, latency: 9, cost: 10, judgeCost: 11 };
const chunkCache = new Map();
const CACHED = 24; // the chunks a paged report keeps decoded (a single page keeps them all)
let modelShort = [];
let scoringCount = []; // per benchmark

async function loadIndex() {
  if (PAGED) {
    if (!self.REPORT_INDEX) throw new Error(`${meta.paged.folder}/index.js was not found beside this page: keep the folder with it`);
    fromColumns(await inflate(self.REPORT_INDEX));
    self.REPORT_INDEX = null;
  } else {
    idx = JSON.parse($("index").textContent);
    fromRows(idx.items);
    delete idx.items;
  }
  scoringCount = idx.benchmarks.map((b) => (idx.scorings[b] || []).length);
  // The list names a model by what follows its provider ("sim-0.7" for "google/sim-0.7") where
  // that still tells the run's models apart; the whole name is its title.
  const tails = idx.models.map((m) => m.slice(m.indexOf("/") + 1));
  modelShort = new Set(tails).size === tails.length ? tails : [...idx.models];
}

// The single page's rows as columns.
function fromRows(rows) {
  N = rows.length;
  W = Math.max(1, ...Object.values(idx.scorings).map((s) => s.length));
  for (const name of ["model", "bench", "sample", "epoch", "answer", "tin", "tout", "treason", "at"]) C[name] = new Uint32Array(N);
  for (const name of ["latency", "cost", "judge_cost"]) C[name] = new Float64Array(N);
  C.letters = new Uint8Array(N * W).fill(45); // "-"
  const codes = new Map([["null", 0]]);
  const number = (value) => (value === null || value === undefined ? NaN : value);
  rows.forEach((it, i) => {
    [C.model[i], C.bench[i], C.sample[i], C.epoch[i]] = [it[F.model], it[F.bench], it[F.sample], it[F.epoch]];
    [C.tin[i], C.tout[i], C.treason[i]] = [it[F.tin], it[F.tout], it[F.treason]];
    [C.latency[i], C.cost[i], C.judge_cost[i]] = [number(it[F.latency]), number(it[F.cost]), number(it[F.judgeCost])];
    C.at[i] = i;
    for (let k = 0; k < it[F.letters].length; k++) C.letters[i * W + k] = it[F.letters].charCodeAt(k);
    const key = JSON.stringify(it[F.answer] ?? null);
    if (!codes.has(key)) { codes.set(key, answers.length); answers.push(it[F.answer]); }
    C.answer[i] = codes.get(key);
  });
}

// The paged index (reports/report_index.py): a uint32 header length, the header, the columns.
function fromColumns(buffer) {
  const length = new DataView(buffer).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
  const start = Math.ceil((4 + length) / 8) * 8;
  const TYPES = { u1: Uint8Array, u2: Uint16Array, u4: Uint32Array, f8: Float64Array };
  for (const [name, [type, offset, count]] of Object.entries(head.columns)) C[name] = new TYPES[type](buffer, start + offset, count);
  for (const name of ["latency", "cost", "judge_cost"]) {
    const [values, codes] = [C[name + ".values"], C[name]]; // a code per item into the values
    const column = new Float64Array(codes.length);
    for (let i = 0; i < codes.length; i++) column[i] = values[codes[i]];
    [C[name], C[name + ".codes"]] = [column, codes]; // the values sorted: a code sorts as its value
  }
  [N, W, answers] = [head.items, head.width, head.answers];
  idx = head;
}

function lettersOf(i) {
  return String.fromCharCode(...C.letters.subarray(i * W, i * W + scoringCount[C.bench[i]]));
}

function row(i) {
  const value = (v) => (Number.isNaN(v) ? null : v);
  return [C.model[i], C.bench[i], C.sample[i], C.epoch[i], lettersOf(i), answers[C.answer[i]], C.tin[i], C.tout[i], C.treason[i], value(C.latency[i]), value(C.cost[i]), value(C.judge_cost[i])];
}

async function inflate(base64) {
  const bytes = Uint8Array.fromBase64 ? Uint8Array.fromBase64(base64) : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

// A paged report's file, `name.js` in its folder: the base64 it passes to `reportChunk`. One
// script element per file at a time: a second reader of it waits on the first.
const waiting = {};
const loadingFiles = {};
function reportChunk(name, text) {
  if (waiting[name]) waiting[name](text);
}

function fileText(name) {
  loadingFiles[name] ||= new Promise((resolve, reject) => {
    const tag = document.createElement("script");
    const end = () => { tag.remove(); delete waiting[name]; delete loadingFiles[name]; };
    waiting[name] = (text) => { end(); resolve(text); };
    tag.src = `${idx.folder}/${name}.js`;
    tag.onload = () => { if (waiting[name]) { end(); reject(new Error(`${idx.folder}/${name}.js did not load`)); } };
    tag.onerror = () => { end(); reject(new Error(`${idx.folder}/${name}.js was not found beside this page`)); };
    document.head.appendChild(tag);
  });
  return loadingFiles[name];
}

// A chunk of texts, decoded: a block of the page, or a file of the folder beside it.
async function readChunk(name) {
  const text = PAGED ? await fileText(name) : $(name).textContent.trim();
  return JSON.parse(new TextDecoder().decode(await inflate(text)));
}

// The same, kept: all of a single page's, the last few of a paged report's.
async function chunk(kind, number) {
  const name = PAGED ? `${kind}-${String(number).padStart(6, "0")}` : `${kind}-${number}`;
  let found = chunkCache.get(name);
  if (found) {
    chunkCache.delete(name); // the most recently used last
  } else {
    found = readChunk(name);
    found.catch(() => chunkCache.delete(name));
  }
  chunkCache.set(name, found);
  while (PAGED && chunkCache.size > CACHED) chunkCache.delete(chunkCache.keys().next().value);
  return found;
}

async function detailOf(i) {
  const rows = await chunk("details", Math.floor(C.at[i] / idx.chunk));
  return rows[C.at[i] % idx.chunk];
}

async function promptOf(sample) {
  const per = idx.sample_chunk || idx.chunk;
  const rows = await chunk("prompts", Math.floor(sample / per));
  return rows[sample % per];
}

async function mediaOf(sample) {
  if (!PAGED) {
    const block = $("media-" + sample);
    return block ? JSON.parse(block.textContent) : [];
  }
  const number = Math.floor(sample / idx.media_chunk);
  if (!idx.media_files.includes(number)) return [];
  return (await chunk("media", number))[String(sample)] || [];
}

function benchName(it) {
  return idx.benchmarks[it[F.bench]];
}

function scoringsOf(it) {
  return idx.scorings[benchName(it)] || [];
}

function kindsOf(it) {
  return meta.benchmarks[benchName(it)].kinds || [];
}

// Which judge gave a scoring's verdict (null for a rule's).
function judgeOf(bench, scoring) {
  const judged = meta.benchmarks[bench].judge_scorings || {};
  for (const [judge, names] of Object.entries(judged)) if (names.includes(scoring)) return judge;
  return null;
}

const VERDICT = { R: "right", W: "wrong", E: "call failed", S: "score error" };
const SYMBOL = { R: "✓", W: "✗", E: "!", S: "?" };
