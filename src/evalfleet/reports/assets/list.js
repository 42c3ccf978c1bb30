// The item list: the filters over the index's columns, the sort, one page of rows at a time.
"use strict";

const PAGE = 100;
let matches = new Uint32Array(0); // the items shown, in the list's order
let matchBuffer = new Uint32Array(0); // what `matches` views

function scoringIndex(it) {
  if (!state.scoring) return 0;
  return scoringsOf(it).indexOf(state.scoring);
}

function letterOf(it) {
  const at = scoringIndex(it);
  return at < 0 ? null : it[F.letters][at];
}

// The answer the list shows: the chosen scoring's when it read one, else the item's.
function answerOf(it) {
  return shownAnswer(it[F.answer], scoringIndex(it));
}

function shownAnswer(answer, at) {
  if (!Array.isArray(answer)) return answer;
  return (at >= 0 ? answer[at] : null) ?? answer.find((a) => a !== null) ?? null;
}

// Per benchmark, where the scoring shown sits among its letters (-1: it has no such scoring).
function scoringAt() {
  return idx.benchmarks.map((b) => (state.scoring ? (idx.scorings[b] || []).indexOf(state.scoring) : 0));
}

const CODE = { R: 82, r: 114, W: 87, w: 119, E: 69, S: 83, s: 115 };
// The letter code of item i under the scoring shown (`at` from scoringAt), -1 for none.
function letterCode(i, at) {
  const k = at[C.bench[i]];
  return k < 0 ? -1 : C.letters[i * W + k];
}

const LETTER_ORDER = { W: 0, w: 0, S: 1, s: 1, E: 2, R: 3, r: 3, "-": 4 };
// Each sort as a number per item (texts by their rank in the collator's order), computed once
// per column and scoring shown.
const sortCache = new Map();
function sortKeys(name) {
  const cached = sortCache.get(name + "\u0000" + state.scoring);
  if (cached) return cached;
  const keys = new Float64Array(N);
  const ranked = (texts) => {
    const sorted = [...new Set(texts)].sort(collator.compare);
    const rank = new Map();
    sorted.forEach((t, k) => rank.set(t, k && collator.compare(sorted[k - 1], t) === 0 ? rank.get(sorted[k - 1]) : k));
    return texts.map((t) => rank.get(t));
  };
  const at = scoringAt();
  if (name === "model" || name === "benchmark") {
    const [column, names] = name === "model" ? [C.model, idx.models] : [C.bench, idx.benchmarks];
    const rank = ranked(names);
    for (let i = 0; i < N; i++) keys[i] = rank[column[i]];
  } else if (name === "sample" || name === "target" || name === "prompt") {
    const text = { sample: (s) => s[1], target: (s) => s[2] ?? "", prompt: (s) => s[3] ?? "" }[name];
    const rank = ranked(idx.samples.map(text));
    for (let i = 0; i < N; i++) keys[i] = rank[C.sample[i]];
  } else if (name.startsWith("f:")) {
    const field = name.slice(2);
    const first = new Map(); // sample -> an item of it
    for (let i = 0; i < N; i++) if (!first.has(C.sample[i])) first.set(C.sample[i], i);
    const rank = ranked(idx.samples.map((_, k) => (first.has(k) ? fieldValue(first.get(k), field) : "")));
    for (let i = 0; i < N; i++) keys[i] = rank[C.sample[i]];
  } else if (name === "answer") {
    const texts = new Map(); // answer and benchmark -> the text shown
    const B = idx.benchmarks.length;
    for (let i = 0; i < N; i++) {
      const k = C.answer[i] * B + C.bench[i];
      if (!texts.has(k)) texts.set(k, shownAnswer(answers[C.answer[i]], at[C.bench[i]]) ?? "");
    }
    const shown = [...texts.keys()];
    const rank = new Map(ranked(shown.map((k) => texts.get(k))).map((r, n) => [shown[n], r]));
    for (let i = 0; i < N; i++) keys[i] = rank.get(C.answer[i] * B + C.bench[i]);
  } else if (name === "verdict") {
    for (let i = 0; i < N; i++) {
      const code = letterCode(i, at);
      keys[i] = code < 0 ? 4 : LETTER_ORDER[String.fromCharCode(code)] ?? 4;
    }
  } else {
    // a paged report's floats come as codes into their distinct values in order (NaN first)
    const codes = { latency: C["latency.codes"], cost: C["cost.codes"] }[name];
    const column = codes || { epoch: C.epoch, tokens: C.tout, latency: C.latency, cost: C.cost }[name];
    for (let i = 0; i < N; i++) keys[i] = Number.isNaN(column[i]) ? -1 : column[i];
  }
  sortCache.set(name + "\u0000" + state.scoring, keys);
  return keys;
}
// The items in a sort's order, ties in the list's first order, computed once per column,
// scoring shown and direction: a filter then walks it, and never sorts.
const orderCache = new Map();
function sortedOrder(name, desc) {
  const key = (down) => [name, state.scoring, down].join("\u0000");
  if (!orderCache.has(key(false))) orderCache.set(key(false), ascending(sortKeys(name)));
  if (desc && !orderCache.has(key(true))) orderCache.set(key(true), descending(orderCache.get(key(false)), sortKeys(name)));
  return orderCache.get(key(desc));
}

// The items by key, ties in the list's first order: a counting sort, over the keys themselves
// where they are whole numbers in a span of a few times the items (ranks, codes, tokens), else
// over the distinct keys (a comparator over a million items takes seconds).
function ascending(keys) {
  let [low, high, whole] = [0, 0, true];
  for (let i = 0; i < N; i++) {
    const key = keys[i];
    if (i === 0 || key < low) low = key;
    if (i === 0 || key > high) high = key;
    whole &&= Number.isInteger(key);
  }
  let distinct = null;
  if (!whole || high - low > 4 * N) {
    const sorted = new Float64Array(keys).sort();
    let count = 0;
    for (let n = 0; n < N; n++) if (n === 0 || sorted[n] !== sorted[n - 1]) sorted[count++] = sorted[n];
    distinct = sorted.subarray(0, count);
  }
  const ranks = new Uint32Array(N);
  const starts = new Uint32Array((distinct ? distinct.length : high - low + 1) + 1);
  for (let i = 0; i < N; i++) {
    let rank = keys[i] - low;
    if (distinct) {
      let first = 0;
      let last = distinct.length - 1;
      while (first < last) {
        const middle = (first + last) >> 1;
        if (distinct[middle] < keys[i]) first = middle + 1;
        else last = middle;
      }
      rank = first;
    }
    ranks[i] = rank;
    starts[rank + 1] += 1;
  }
  for (let r = 1; r < starts.length; r++) starts[r] += starts[r - 1];
  const order = new Uint32Array(N);
  for (let i = 0; i < N; i++) order[starts[ranks[i]]++] = i;
  return order;
}

// The descending order: the groups of equal keys from the last, each in the list's first order.
function descending(asc, keys) {
  const out = new Uint32Array(N);
  let [n, end] = [0, N];
  while (end > 0) {
    let start = end - 1;
    while (start > 0 && keys[asc[start - 1]] === keys[asc[end - 1]]) start--;
    for (let k = start; k < end; k++) out[n++] = asc[k];
    end = start;
  }
  return out;
}

const SORTS = { model: 1, benchmark: 1, sample: 1, prompt: 1, epoch: 1, answer: 1, verdict: 1, target: 1, tokens: 1, latency: 1, cost: 1 };
function sortable(key) {
  return Boolean(key && (SORTS[key] || (key.startsWith("f:") && sampleFields().has(key.slice(2)))));
}
const COLUMNS = [
  ["model", "model"], ["benchmark", "benchmark"], ["sample", "sample"], ["epoch", "ep"],
  ["answer", "answer"], ["verdict", "verdicts"], ["target", "target"], ["tokens", "tokens"],
  ["latency", "latency"], ["cost", "cost"],
];

// Per (sample, epoch): 1 if a model is right under the scoring shown, 2 if one is wrong, 3 both.
function disagreeing() {
  const epochs = 1 + C.epoch.reduce((a, b) => Math.max(a, b), 0);
  const seen = new Uint8Array(idx.samples.length * epochs);
  const at = scoringAt();
  for (let i = 0; i < N; i++) {
    const code = letterCode(i, at);
    const bit = code === CODE.R || code === CODE.r ? 1 : code === CODE.W || code === CODE.w ? 2 : 0;
    if (bit) seen[C.sample[i] * epochs + C.epoch[i]] |= bit;
  }
  return (i) => seen[C.sample[i] * epochs + C.epoch[i]] === 3;
}

function isJudged(i, code) {
  // under a scoring chosen: its verdict came from a judge; else any judge's verdict
  if (state.scoring) return code >= 97 && code <= 122;
  for (let k = 0; k < scoringCount[C.bench[i]]; k++) {
    const c = C.letters[i * W + k];
    if (c >= 97 && c <= 122) return true;
  }
  return false;
}

const STATUS = {
  correct: (code) => code === CODE.R || code === CODE.r,
  incorrect: (code) => code === CODE.W || code === CODE.w,
  error: (code) => code === CODE.E,
  "score-error": (code) => code === CODE.S || code === CODE.s,
};

function applyFilters() {
  const started = performance.now();
  const model = state.model === "" ? -1 : idx.models.indexOf(state.model);
  const bench = state.benchmark === "" ? -1 : idx.benchmarks.indexOf(state.benchmark);
  const epoch = state.epoch === "" ? -1 : Number(state.epoch);
  const q = state.q.trim().toLowerCase();
  const split = state.disagree ? disagreeing() : null;
  const text = q ? textMatch(q) : null;
  const at = scoringAt();
  const status = STATUS[state.status] || null;
  const where = whereTest();
  const order = state.sort ? sortedOrder(state.sort, state.desc) : null;
  if (matchBuffer.length !== N) matchBuffer = new Uint32Array(N);
  let count = 0;
  for (let n = 0; n < N; n++) {
    const i = order ? order[n] : n;
    if (model >= 0 && C.model[i] !== model) continue;
    if (bench >= 0 && C.bench[i] !== bench) continue;
    if (epoch >= 0 && C.epoch[i] !== epoch) continue;
    const code = letterCode(i, at);
    if (state.scoring && code < 0) continue;
    if (status && !status(code)) continue;
    if (state.status === "judged" && !isJudged(i, code)) continue;
    if (split && !split(i)) continue;
    if (text && !text(i)) continue;
    if (where && !where(i)) continue;
    matchBuffer[count++] = i;
  }
  matches = matchBuffer.subarray(0, count);
  renderList();
  renderHeadline();
  window.__lastFilterMs = performance.now() - started; // the filter and the list drawn
}

function badge(it, k, chosen, why = null) {
  const letter = it[F.letters][k] ?? "-";
  const scoring = scoringsOf(it)[k];
  if (letter === "-") return `<span class="verdict" data-letter="-" title="${esc(scoring)}: not scored">–</span>`;
  const upper = letter.toUpperCase();
  const judge = letter !== upper ? judgeOf(benchName(it), scoring) : null;
  const title = `${scoring}: ${VERDICT[upper]}` + (judge ? ` (judge ${judge})` : "") + (why ? ` — why: ${why}` : "");
  const css = `verdict v-${upper}` + (judge ? " v-judged" : "") + (chosen ? " chosen" : "");
  return `<span class="${css}" data-letter="${letter}" title="${esc(title)}">${SYMBOL[upper]}</span>`;
}

// `why`: each verdict's explanation, where the item's detail is at hand (its badges' titles).
function badges(it, why = null) {
  const at = state.scoring ? scoringIndex(it) : -1;
  return scoringsOf(it).map((_, k) => badge(it, k, k === at, why ? why[k] : null)).join("");
}

function cell(text, css = "", title = text) {
  const shown = oneLine(text);
  return `<td class="${css}" title="${esc(oneLine(title))}"><span class="t">${esc(shown)}</span></td>`;
}

function rowHtml(i) {
  const it = row(i);
  const s = idx.samples[it[F.sample]];
  const answer = answerOf(it);
  const tokensTitle = `in ${fmt.tokens(it[F.tin])} / out ${fmt.tokens(it[F.tout])} / reasoning ${fmt.tokens(it[F.treason])}`;
  const judged = it[F.judgeCost] === null ? "" : ` + judges ${fmt.money(it[F.judgeCost])}`;
  const cells = {
    model: () => cell(modelShort[it[F.model]], "model", idx.models[it[F.model]]),
    benchmark: () => cell(benchName(it)),
    sample: () => cell(s[1]),
    prompt: () => cell(s[3] ?? "", "prompt-cell"),
    epoch: () => `<td class="num">${it[F.epoch]}</td>`,
    answer: () => (answer === null ? '<td class="answer none" title="no answer read">—</td>' : cell(answer, "answer")),
    verdict: () => `<td class="verdicts">${badges(it)}</td>`,
    target: () => cell(s[2], "tgt"),
    tokens: () => `<td class="num" title="${tokensTitle}">${fmt.tokens(it[F.tout])}</td>`,
    latency: () => `<td class="num">${fmt.seconds(it[F.latency])}</td>`,
    cost: () => `<td class="num" title="answer ${fmt.money(it[F.cost])}${judged}">${fmt.money(it[F.cost])}</td>`,
  };
  const html = shownColumns().map(([key]) => (cells[key] ? cells[key]() : cell(fieldValue(i, key.slice(2)), "field")));
  return `<tr class="item-row${state.item === i ? " selected" : ""}" data-item="${i}">${html.join("")}</tr>`;
}

function legendHtml() {
  const shown = state.benchmark ? [state.benchmark] : [...new Set(Array.from(matches.subarray(0, 2000), (i) => idx.benchmarks[C.bench[i]]))];
  return shown.map((b) => {
    const names = meta.benchmarks[b].scorings.map((s) => {
      const judge = judgeOf(b, s);
      return esc(s) + (judge ? ` <span class="note">(judge ${esc(judge)})</span>` : "");
    });
    return `<span class="legend-line">${esc(b)} verdicts: ${names.join(" · ")}</span>`;
  }).join(" ");
}

function renderList() {
  const pages = Math.max(1, Math.ceil(matches.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const first = state.page * PAGE;
  const head = shownColumns().map(([key, label]) => {
    const mark = state.sort === key ? (state.desc ? " ▼" : " ▲") : "";
    const grip = '<span class="col-grip" title="drag: this column\'s width · double click: as fitted"></span>';
    return `<th class="c-${key.replace(":", "-")}${state.sort === key ? " sorted" : ""}" data-sort="${key}" title="sort by ${label}">${label}${mark}${grip}</th>`;
  });
  const shown = Array.from(matches.subarray(first, first + PAGE));
  $("items").classList.toggle("lines", state.lines === "3");
  $("items").tBodies[0].innerHTML = shown.map(rowHtml).join("");
  $("items").tHead.innerHTML = `<tr>${head.join("")}</tr>`;
  fitColumns(shown);
  $("count").textContent = `${matches.length} of ${N} items` + searchNote();
  $("page").textContent = `page ${state.page + 1} of ${pages}`;
  $("legend").innerHTML = legendHtml();
  writeHash();
}

// The columns read whole, never clipped: their texts measured in the page's own fonts (the
// header's label with its sort mark too). A sample id longer than `WHOLE_SAMPLE` characters
// shares the rest instead.
const WHOLE = ["model", "sample", "epoch", "verdict", "tokens", "latency", "cost"];
const WHOLE_SAMPLE = 14;
const PAD = 12; // a cell's padding and border, in pixels
let measurer = null;
function textPx(texts, font) {
  measurer ||= document.createElement("canvas").getContext("2d");
  measurer.font = font;
  return Math.max(0, ...texts.map((t) => measurer.measureText(String(t ?? "")).width));
}

// The whole columns as wide as their texts; the others share the rest of the list's width by
// the length of their longest text on this page, within bounds: ids and answers get the room
// that short benchmark names leave.
function fitColumns(shown) {
  const longest = (texts, least, most) => Math.min(most, Math.max(least, ...texts.map((t) => String(t ?? "").length)));
  const its = shown.map(row);
  const chars = {
    prompt: longest(its.map((it) => idx.samples[it[F.sample]][3]), 8, 20),
    benchmark: longest(its.map(benchName), 9, 22),
    sample: longest(its.map((it) => idx.samples[it[F.sample]][1]), 6, 20),
    answer: longest(its.map(answerOf), 7, 24),
    target: longest(its.map((it) => idx.samples[it[F.sample]][2]), 6, 22),
  };
  const keys = shownColumns().map(([key]) => key);
  for (const key of keys) {
    if (key.startsWith("f:")) chars[key] = longest(shown.map((i) => fieldValue(i, key.slice(2))), Math.max(5, key.length - 2), 16);
  }
  const head = $("items").tHead.rows[0].cells;
  const body = $("items").tBodies[0].rows[0];
  // the font's parts: the shorthand reads "" where a part (tabular digits) has no place in it
  const fontOf = (e, or) => {
    if (!e) return or;
    const c = getComputedStyle(e);
    return `${c.fontStyle} ${c.fontWeight} ${c.fontSize} ${c.fontFamily}`;
  };
  const cellFont = fontOf(body && body.cells[0], "13px sans-serif");
  const headFont = fontOf(head[0], "600 12px sans-serif");
  // figures are set in tabular digits, each as wide as a 0 (the canvas knows no such setting)
  const tabular = (values) => values.map((v) => String(v).replace(/\d/g, "0"));
  const texts = {
    model: its.map((it) => modelShort[it[F.model]]),
    sample: its.map((it) => idx.samples[it[F.sample]][1]),
    epoch: tabular(its.map((it) => it[F.epoch])),
    tokens: tabular(its.map((it) => fmt.tokens(it[F.tout]))),
    latency: tabular(its.map((it) => fmt.seconds(it[F.latency]))),
    cost: tabular(its.map((it) => fmt.money(it[F.cost]))),
  };
  const badgesWide = Math.max(1, ...its.map((it) => it[F.letters].length));
  const px = {};
  const dragged = draggedWidths();
  for (const th of head) {
    const key = th.dataset.sort;
    if (dragged[key]) {
      px[key] = dragged[key];
      delete chars[key];
      continue;
    }
    if (!WHOLE.includes(key) || (key === "sample" && chars.sample > WHOLE_SAMPLE)) continue;
    // a badge is 1.45em of 11.5px plus its margin: about 19 px
    const need = key === "verdict" ? badgesWide * 20 : textPx(texts[key], cellFont);
    px[key] = Math.ceil(Math.max(need, textPx([th.textContent + " ▼"], headFont))) + PAD;
    delete chars[key];
  }
  for (const key of Object.keys(chars)) if (!keys.includes(key)) delete chars[key];
  const wide = $("items").clientWidth || 800;
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  const held = sum(Object.keys(px).filter((k) => dragged[k]).map((k) => px[k]));
  const fixed = sum(Object.keys(px).filter((k) => !dragged[k]).map((k) => px[k]));
  const rest = sum(Object.values(chars));
  // the shared columns keep at least 24 px each: past that, the whole ones give way alike (a
  // dragged width is the reader's: it stays)
  const room = rest ? Math.max(wide - held - fixed, 24 * Object.keys(chars).length) : 0;
  const scale = fixed ? Math.min(1, Math.max(0, wide - held - room) / fixed) : 1;
  for (const th of head) {
    const key = th.dataset.sort;
    const width = dragged[key] ? px[key] : key in px ? px[key] * scale : (room * chars[key]) / rest;
    th.style.width = ((100 * width) / wide).toFixed(2) + "%";
  }
}

// The widths a reader dragged, by column: {key: pixels}, from the address's `widths`.
function draggedWidths() {
  const out = {};
  for (const part of state.widths.split(",")) {
    const cut = part.lastIndexOf(":");
    const width = Number(part.slice(cut + 1));
    if (cut > 0 && Number.isInteger(width) && width >= MIN_WIDTH) out[part.slice(0, cut)] = width;
  }
  return out;
}

// A column's grip dragged sideways sets its width (kept in the address); a double click gives
// the column back to the fitting. A header's click right after a drag does not sort.
const MIN_WIDTH = 30;
let resizedAt = -Infinity;
function bindGrips() {
  $("items").addEventListener("mousedown", (event) => {
    const grip = event.target.closest(".col-grip");
    if (!grip) return;
    event.preventDefault();
    const th = grip.closest("th");
    const [startX, startWidth] = [event.clientX, th.offsetWidth];
    let width = startWidth;
    const move = (e) => {
      width = Math.max(MIN_WIDTH, Math.round(startWidth + e.clientX - startX));
      th.style.width = width + "px";
    };
    const up = () => {
      document.removeEventListener("mousemove", move);
      document.removeEventListener("mouseup", up);
      if (width === startWidth) return; // a click, or the first of a double click
      resizedAt = performance.now();
      setWidth(th.dataset.sort, width);
    };
    document.addEventListener("mousemove", move);
    document.addEventListener("mouseup", up);
  });
  $("items").addEventListener("dblclick", (event) => {
    const grip = event.target.closest(".col-grip");
    if (grip) setWidth(grip.closest("th").dataset.sort, null);
  });
}

function setWidth(key, width) {
  const widths = draggedWidths();
  if (width === null) delete widths[key];
  else widths[key] = width;
  state.widths = Object.entries(widths).map(([k, w]) => `${k}:${w}`).join(",");
  renderList();
}

function justResized() {
  return performance.now() - resizedAt < 400;
}

// Move the selection by `step` items in the list's order, turning pages as needed.
function moveSelection(step) {
  if (!matches.length) return;
  const at = state.item === null ? -1 : matches.indexOf(state.item);
  const next = at < 0 ? (step > 0 ? 0 : matches.length - 1) : Math.min(matches.length - 1, Math.max(0, at + step));
  selectItem(matches[next]);
}

function selectItem(i) {
  state.item = i;
  const at = matches.indexOf(i);
  if (at >= 0) state.page = Math.floor(at / PAGE);
  renderList();
  const row = document.querySelector(`tr.item-row[data-item="${i}"]`);
  if (row) row.scrollIntoView({ block: "nearest" });
  renderDetail();
}
