// The item list: the filters over the index, the sort, one page of rows at a time.
"use strict";

const PAGE = 100;
let matches = [];
const haystacks = items.map((it) => {
  const s = idx.samples[it[F.sample]];
  const answer = Array.isArray(it[F.answer]) ? it[F.answer].join(" ") : it[F.answer] || "";
  return (idx.models[it[F.model]] + " " + s[1] + " " + (s[2] || "") + " " + answer).toLowerCase();
});
let fullText = false;

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
  const answer = it[F.answer];
  if (!Array.isArray(answer)) return answer;
  const at = scoringIndex(it);
  return (at >= 0 ? answer[at] : null) ?? answer.find((a) => a !== null) ?? null;
}

const LETTER_ORDER = { W: 0, w: 0, S: 1, s: 1, E: 2, R: 3, r: 3, "-": 4 };
const SORTS = {
  model: (a, b) => collator.compare(idx.models[a[F.model]], idx.models[b[F.model]]),
  benchmark: (a, b) => collator.compare(benchName(a), benchName(b)),
  sample: (a, b) => collator.compare(idx.samples[a[F.sample]][1], idx.samples[b[F.sample]][1]),
  epoch: (a, b) => a[F.epoch] - b[F.epoch],
  answer: (a, b) => collator.compare(answerOf(a) ?? "", answerOf(b) ?? ""),
  verdict: (a, b) => (LETTER_ORDER[letterOf(a) ?? "-"] ?? 4) - (LETTER_ORDER[letterOf(b) ?? "-"] ?? 4),
  target: (a, b) => collator.compare(idx.samples[a[F.sample]][2] ?? "", idx.samples[b[F.sample]][2] ?? ""),
  tokens: (a, b) => a[F.tout] - b[F.tout],
  latency: (a, b) => (a[F.latency] ?? -1) - (b[F.latency] ?? -1),
  cost: (a, b) => (a[F.cost] ?? -1) - (b[F.cost] ?? -1),
};
const COLUMNS = [
  ["model", "model"], ["benchmark", "benchmark"], ["sample", "sample"], ["epoch", "ep"],
  ["answer", "answer"], ["verdict", "verdicts"], ["target", "target"], ["tokens", "tokens"],
  ["latency", "latency"], ["cost", "cost"],
];

function disagreeing() {
  // (benchmark, sample, epoch) where, under the scoring shown, one model is right and another wrong
  const seen = {};
  for (const it of items) {
    const letter = letterOf(it);
    if (!letter || "RrWw".indexOf(letter) < 0) continue;
    const key = it[F.bench] + "|" + it[F.sample] + "|" + it[F.epoch];
    seen[key] = (seen[key] || 0) | (letter === "R" || letter === "r" ? 1 : 2);
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
    if (model >= 0 && it[F.model] !== model) continue;
    if (bench >= 0 && it[F.bench] !== bench) continue;
    if (epoch >= 0 && it[F.epoch] !== epoch) continue;
    const letter = letterOf(it);
    if (state.scoring && letter === null) continue;
    if (state.status) {
      if (state.status === "correct" && letter !== "R" && letter !== "r") continue;
      if (state.status === "incorrect" && letter !== "W" && letter !== "w") continue;
      if (state.status === "error" && letter !== "E") continue;
      if (state.status === "judged") {
        // under a scoring chosen: its verdict came from a judge; else any judge's verdict
        const judged = state.scoring ? letter && letter !== letter.toUpperCase() : /[a-z]/.test(it[F.letters]);
        if (!judged) continue;
      }
      if (state.status === "score-error" && letter !== "S" && letter !== "s") continue;
    }
    if (split && split[it[F.bench] + "|" + it[F.sample] + "|" + it[F.epoch]] !== 3) continue;
    if (q && haystacks[i].indexOf(q) < 0) continue;
    matches.push(i);
  }
  if (state.sort) {
    const compare = SORTS[state.sort];
    const sign = state.desc ? -1 : 1;
    matches.sort((a, b) => sign * compare(items[a], items[b]) || a - b);
  }
  renderList();
  renderHeadline();
  window.__lastFilterMs = performance.now() - started; // the filter and the list drawn
}

function badge(it, k, chosen) {
  const letter = it[F.letters][k] ?? "-";
  const scoring = scoringsOf(it)[k];
  if (letter === "-") return `<span class="verdict" data-letter="-" title="${esc(scoring)}: not scored">–</span>`;
  const upper = letter.toUpperCase();
  const judge = letter !== upper ? judgeOf(benchName(it), scoring) : null;
  const title = `${scoring}: ${VERDICT[upper]}` + (judge ? ` (judge ${judge})` : "");
  const css = `verdict v-${upper}` + (judge ? " v-judged" : "") + (chosen ? " chosen" : "");
  return `<span class="${css}" data-letter="${letter}" title="${esc(title)}">${SYMBOL[upper]}</span>`;
}

function badges(it) {
  const at = state.scoring ? scoringIndex(it) : -1;
  return scoringsOf(it).map((_, k) => badge(it, k, k === at)).join("");
}

function cell(text, css = "", title = text) {
  const shown = oneLine(text);
  return `<td class="${css}" title="${esc(oneLine(title))}">${esc(shown)}</td>`;
}

function rowHtml(i) {
  const it = items[i];
  const s = idx.samples[it[F.sample]];
  const answer = answerOf(it);
  const tokensTitle = `in ${fmt.tokens(it[F.tin])} / out ${fmt.tokens(it[F.tout])} / reasoning ${fmt.tokens(it[F.treason])}`;
  const judged = it[F.judgeCost] === null ? "" : ` + judges ${fmt.money(it[F.judgeCost])}`;
  return (
    `<tr class="item-row${state.item === i ? " selected" : ""}" data-item="${i}">` +
    cell(modelShort[it[F.model]], "model", idx.models[it[F.model]]) + cell(benchName(it)) + cell(s[1]) +
    `<td class="num">${it[F.epoch]}</td>` +
    (answer === null ? '<td class="answer none" title="no answer read">—</td>' : cell(answer, "answer")) +
    `<td class="verdicts">${badges(it)}</td>` + cell(s[2], "tgt") +
    `<td class="num" title="${tokensTitle}">${fmt.tokens(it[F.tout])}</td>` +
    `<td class="num">${fmt.seconds(it[F.latency])}</td>` +
    `<td class="num" title="answer ${fmt.money(it[F.cost])}${judged}">${fmt.money(it[F.cost])}</td></tr>`
  );
}

function legendHtml() {
  const shown = state.benchmark ? [state.benchmark] : [...new Set(matches.slice(0, 2000).map((i) => benchName(items[i])))];
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
  const head = COLUMNS.map(([key, label]) => {
    const mark = state.sort === key ? (state.desc ? " ▼" : " ▲") : "";
    return `<th class="c-${key}${state.sort === key ? " sorted" : ""}" data-sort="${key}" title="sort by ${label}">${label}${mark}</th>`;
  });
  const shown = matches.slice(first, first + PAGE);
  $("items").tBodies[0].innerHTML = shown.map(rowHtml).join("");
  $("items").tHead.innerHTML = `<tr>${head.join("")}</tr>`;
  fitColumns(shown);
  $("count").textContent = `${matches.length} of ${items.length} items` + (fullText || !state.q ? "" : " (searching ids, targets and answers; texts are still loading)");
  $("page").textContent = `page ${state.page + 1} of ${pages}`;
  $("legend").innerHTML = legendHtml();
  writeHash();
}

// Each column as wide as the longest of its texts on this page needs, within bounds, as a share
// of the list's width: ids and answers get the room that short benchmark names leave.
function fitColumns(shown) {
  const longest = (texts, least, most) => Math.min(most, Math.max(least, ...texts.map((t) => String(t ?? "").length)));
  const its = shown.map((i) => items[i]);
  const badgesWide = Math.max(1, ...its.map((it) => it[F.letters].length));
  const chars = {
    model: longest(its.map((it) => modelShort[it[F.model]]), 6, 24),
    benchmark: longest(its.map(benchName), 9, 22),
    sample: longest(its.map((it) => idx.samples[it[F.sample]][1]), 6, 20),
    epoch: 3,
    answer: longest(its.map(answerOf), 7, 24),
    verdict: 0, // below: the badges' own width in pixels, never clipped
    target: longest(its.map((it) => idx.samples[it[F.sample]][2]), 6, 22),
    tokens: 6.5,
    latency: 7,
    cost: 8.5,
  };
  // A badge is 1.45em of 11.5px plus its margin (about 19 px); the cell's padding 10 px. The
  // verdicts' share of the list's width is what gives them that many pixels.
  const need = badgesWide * 20 + 12;
  const rest = Object.values(chars).reduce((a, b) => a + b, 0);
  const wide = $("items").clientWidth || 800;
  chars.verdict = Math.max(8, (need * rest) / Math.max(need + 1, wide - need));
  const total = rest + chars.verdict;
  for (const th of $("items").tHead.rows[0].cells) {
    th.style.width = ((100 * chars[th.dataset.sort]) / total).toFixed(2) + "%";
  }
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
