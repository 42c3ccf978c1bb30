// The data embedded in the page: `meta` and `index` (JSON), `details-N` and `prompts-N`
// (gzipped JSON, base64, decoded on demand), `media-N` (JSON of data URIs). Nothing is fetched.
"use strict";

const $ = (id) => document.getElementById(id);
const meta = JSON.parse($("meta").textContent);
const idx = JSON.parse($("index").textContent);
const items = idx.items;
// an item: [model, benchmark, sample, epoch, letters, answer, tokens in, out, reasoning,
//           latency s, cost $, judges' cost $]
const F = { model: 0, bench: 1, sample: 2, epoch: 3, letters: 4, answer: 5, tin: 6, tout: 7, treason: 8, latency: 9, cost: 10, judgeCost: 11 };
const chunkCache = {};
// The list names a model by what follows its provider ("sim-0.7" for "google/sim-0.7") where
// that still tells the run's models apart; the whole name is its title.
const modelShort = (() => {
  const tails = idx.models.map((m) => m.slice(m.indexOf("/") + 1));
  return new Set(tails).size === tails.length ? tails : [...idx.models];
})();

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
