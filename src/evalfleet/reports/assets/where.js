// The list's "where" filter and its column chooser, both kept in the address (`where=`,
// `cols=`, and `lines=3` for texts on three lines). A where is terms joined by spaces, all of
// which must hold; `or` between terms starts another such group, any of which may hold:
//   tokens>2000  latency_ms>10000  cost>0.01  tokens_in<=500  epoch=1   (numbers of the item)
//   task_type=speech  capability!=ocr  audio_type~music                 (sample fields)
//   upstream=wrong  robust=right  judge!=error                          (verdicts by scoring)
// A number compares with > >= < <= = !=; a sample field (one its benchmark declares) with
// = (the whole value), != or ~ (a part of it), any case; a scoring mode's verdict with = or !=
// and right (or 1), wrong (or 0), error (the call failed) or unscorable (a score error). An
// item whose benchmark lacks the field or scoring mode does not match.
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
// A verdict word of a scoring term, and the letters (either case: judged or not) it names.
const VERDICTS = { right: "Rr", 1: "Rr", wrong: "Ww", 0: "Ww", error: "E", unscorable: "Ss" };

// Per scoring mode of the run: for each benchmark, where it sits among its letters (-1: none).
function scoringPlaces() {
  const out = new Map();
  for (const b of idx.benchmarks) {
    for (const name of idx.scorings[b] || []) {
      if (!out.has(name)) out.set(name, idx.benchmarks.map((c) => (idx.scorings[c] || []).indexOf(name)));
    }
  }
  return out;
}

// The where as a test of item i, or {error} naming the term that cannot be read: groups of
// terms split at `or`, any group whose terms all hold.
function parseWhere(text) {
  const groups = [[]];
  for (const term of text.trim().split(/\s+/).filter(Boolean)) {
    if (term.toLowerCase() === "or") groups.push([]);
    else groups[groups.length - 1].push(term);
  }
  if (groups.length > 1 && groups.some((g) => !g.length)) return { error: '"or" needs terms on both sides' };
  const tests = [];
  for (const group of groups) {
    const parsed = parseTerms(group);
    if (parsed.error) return parsed;
    if (parsed.test) tests.push(parsed.test);
  }
  if (tests.length < 2) return { test: tests[0] || null };
  return { test: (i) => tests.some((t) => t(i)) };
}

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

// One group's terms as a test of item i (all must hold), or {error}.
function parseTerms(terms) {
  const fields = sampleFields();
  const scorings = scoringPlaces();
  const tests = [];
  for (const term of terms) {
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
    } else if (scorings.has(name)) {
      const letters = VERDICTS[raw.toLowerCase()];
      if ((op !== "=" && op !== "!=") || !letters) return { error: `"${term}": ${name} is a scoring mode: use = or != and right, wrong, error or unscorable` };
      const places = scorings.get(name);
      const codes = new Set([...letters].map((l) => l.charCodeAt(0)));
      const holds = op === "=";
      tests.push((i) => {
        const k = places[C.bench[i]];
        return k >= 0 && codes.has(C.letters[i * W + k]) === holds;
      });
    } else {
      const known = [...Object.keys(NUMBERS), ...fields.keys(), ...scorings.keys()].join(", ");
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
    `<label><input type="checkbox" data-col="${esc(key)}"${shown.has(key) ? " checked" : ""}> ${esc(label)}</label>`).join("") +
    `<label class="lines" title="the prompt, answer, target and fields on up to three lines"><input type="checkbox" id="f-lines"${state.lines ? " checked" : ""}> 3 lines</label>`;
  const fields = [...sampleFields().keys()];
  $("f-where").placeholder = "tokens>2000 latency_ms>10000 cost>0.01" + (fields.length ? ` ${fields[0]}=…` : "");
  $("f-where").title = "numbers: " + Object.keys(NUMBERS).join(", ") + (fields.length ? "; sample fields: " + fields.join(", ") : "");
}

function bindColumns() {
  $("col-list").onchange = () => {
    const keys = [...$("col-list").querySelectorAll("input[data-col]:checked")].map((c) => c.dataset.col);
    state.cols = keys.join(",");
    state.lines = $("f-lines").checked ? "3" : "";
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
