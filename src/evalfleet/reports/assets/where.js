// The list's "where" filter and its column chooser, both kept in the address (`where=`,
// `cols=`). A where is terms joined by spaces, all of which must hold:
//   tokens>2000  latency_ms>10000  cost>0.01  tokens_in<=500  epoch=1   (numbers of the item)
//   task_type=speech  capability!=ocr  audio_type~music                 (sample fields)
// A number compares with > >= < <= = !=; a sample field (one its benchmark declares) with
// = (the whole value), != or ~ (a part of it), any case. An item whose benchmark lacks the
// field does not match.
"use strict";

// The item's numbers a where can name, each from the index's columns (NaN where unknown).
const NUMBERS = {
  tokens: (i) => C.tout[i],
  tokens_out: (i) => C.tout[i],
  tokens_in: (i) => C.tin[i],
  reasoning: (i) => C.treason[i],
  latency_ms: (i) => C.latency[i] * 1000,
  latency_s: (i) => C.latency[i],
  cost: (i) => C.cost[i],
  judge_cost: (i) => C.judge_cost[i],
  epoch: (i) => C.epoch[i],
};
const TERM = /^([A-Za-z_][\w.]*)\s*(>=|<=|!=|>|<|=|~)\s*(.+)$/;

// The declared sample fields of the run, each with the benchmarks that declare it.
function sampleFields() {
  const out = new Map();
  for (const b of idx.benchmarks) {
    (meta.benchmarks[b].fields || []).forEach((name, at) => {
      if (!out.has(name)) out.set(name, new Map());
      out.get(name).set(idx.benchmarks.indexOf(b), at);
    });
  }
  return out;
}

// The where as a test of item i, or {error} naming the term that cannot be read.
function parseWhere(text) {
  const fields = sampleFields();
  const tests = [];
  for (const term of text.trim().split(/\s+/).filter(Boolean)) {
    const m = TERM.exec(term);
    if (!m) return { error: `"${term}" is not name, operator, value (e.g. tokens>2000)` };
    const [, name, op, raw] = m;
    if (NUMBERS[name]) {
      const value = Number(raw);
      if (op === "~" || !Number.isFinite(value)) return { error: `"${term}": ${name} takes a number and > >= < <= = !=` };
      const get = NUMBERS[name];
      const cmp = { ">": (a) => a > value, ">=": (a) => a >= value, "<": (a) => a < value, "<=": (a) => a <= value, "=": (a) => a === value, "!=": (a) => a !== value }[op];
      tests.push((i) => { const a = get(i); return !Number.isNaN(a) && cmp(a); });
    } else if (fields.has(name)) {
      if (op !== "=" && op !== "!=" && op !== "~") return { error: `"${term}": ${name} is a sample field: use = != or ~` };
      const at = fields.get(name);
      const want = raw.toLowerCase();
      const ok = new Uint8Array(idx.samples.length); // per sample: 1 if it matches
      idx.samples.forEach((s, k) => {
        if (!at.has(s[0])) return;
        const value = String((s[4] || [])[at.get(s[0])] ?? "").toLowerCase();
        ok[k] = op === "=" ? value === want : op === "!=" ? value !== want : value.includes(want);
      });
      tests.push((i) => ok[C.sample[i]] === 1);
    } else {
      const known = [...Object.keys(NUMBERS), ...fields.keys()].join(", ");
      return { error: `"${term}": no such number or field (known: ${known})` };
    }
  }
  return { test: tests.length ? (i) => tests.every((t) => t(i)) : null };
}

// The columns the list can show: the fixed ones, the prompt, then each declared sample field.
function allColumns() {
  const fields = [...sampleFields().keys()].map((name) => ["f:" + name, name]);
  return [...COLUMNS.slice(0, 3), ["prompt", "prompt"], ...COLUMNS.slice(3), ...fields];
}
const DEFAULT_HIDDEN = new Set(); // every fixed column and the prompt shows at first

function shownColumns() {
  const all = allColumns();
  if (!state.cols) return all.filter(([key]) => !key.startsWith("f:") && !DEFAULT_HIDDEN.has(key));
  const wanted = new Set(state.cols.split(","));
  const shown = all.filter(([key]) => wanted.has(key));
  return shown.length ? shown : all.slice(0, 1);
}

// The value a sample-field column shows for item i ("" where its benchmark lacks the field).
function fieldValue(i, name) {
  const s = idx.samples[C.sample[i]];
  const at = (meta.benchmarks[idx.benchmarks[s[0]]].fields || []).indexOf(name);
  return at < 0 ? "" : String((s[4] || [])[at] ?? "");
}

function fillColumns() {
  const shown = new Set(shownColumns().map(([key]) => key));
  $("col-list").innerHTML = allColumns().map(([key, label]) =>
    `<label><input type="checkbox" data-col="${esc(key)}"${shown.has(key) ? " checked" : ""}> ${esc(label)}</label>`).join("");
  const fields = [...sampleFields().keys()];
  $("f-where").placeholder = "tokens>2000 latency_ms>10000 cost>0.01" + (fields.length ? ` ${fields[0]}=…` : "");
  $("f-where").title = "numbers: " + Object.keys(NUMBERS).join(", ") + (fields.length ? "; sample fields: " + fields.join(", ") : "");
}

function bindColumns() {
  $("col-list").onchange = () => {
    const keys = [...$("col-list").querySelectorAll("input:checked")].map((c) => c.dataset.col);
    state.cols = keys.join(",");
    renderList();
  };
}

// The where of the address, read once per text: its test, or null; its error shown beside it.
let whereCache = { text: null, parsed: { test: null } };
function whereTest() {
  if (whereCache.text !== state.where) whereCache = { text: state.where, parsed: parseWhere(state.where) };
  const { error, test } = whereCache.parsed;
  $("where-error").textContent = error || "";
  return error ? null : test;
}
