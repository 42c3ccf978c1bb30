// One item in the side panel: its verdicts (one badge per scoring mode, each judge's verdicts
// beside that judge), the target, the prompt and its media, the response, the judges' words
// with their tokens and cost, and the call.
"use strict";

function mediaHtml(media) {
  return media.map((m) => {
    if (m.kind === "image") {
      const src = m.full || m.thumb;
      if (!src) return "";
      const title = m.full ? "open full size" : "a tile: the full image is beyond the report's media budget";
      return `<img class="thumb" src="${src}" data-full="${m.full || ""}" title="${title}" alt="image of the prompt">`;
    }
    return m.full ? `<audio controls src="${m.full}"></audio>` : '<span class="note">audio not embedded (beyond the media budget)</span>';
  }).join("");
}

function promptHtml(prompt, s, media) {
  return (
    `<div class="texts"><div class="target-line"><b>target</b> <pre class="target">${esc(s[2])}</pre></div>` +
    (prompt.choices ? `<div class="choices"><b>choices</b> ${esc(prompt.choices.join(" | "))}</div>` : "") +
    `<pre class="prompt">${esc(prompt.prompt) || '<span class="note">(no text kept)</span>'}</pre></div>` +
    `<div class="media">${mediaHtml(media)}</div>`
  );
}

// The sample's metadata (the dataset's own fields), folded; the fields its benchmark declares
// named on the fold's line, each a link that adds `name=value` to the list's where.
function metadataHtml(pairs, bench) {
  if (!pairs || !pairs.length) return "";
  const declared = new Set(meta.benchmarks[bench].fields || []);
  const term = (name, value) => (/\s/.test(value) || !value ? "" : `${name}=${value}`);
  const link = (name, value) => {
    const t = term(name, value);
    return t ? `<a href="#" class="where-link" data-term="${esc(t)}" title="list the items where ${esc(t)}">${esc(value)}</a>` : esc(value);
  };
  const named = pairs.filter((p) => declared.has(p[0])).map((p) => `${esc(p[0])} ${link(p[0], p[1])}`);
  const rows = pairs.map((p) => `<tr><td>${esc(p[0])}</td><td class="meta-value">${declared.has(p[0]) ? link(p[0], p[1]) : esc(p[1])}</td></tr>`);
  const line = named.length ? `: ${named.join(" · ")}` : "";
  return `<details class="sample-meta"><summary>sample metadata (${pairs.length} fields)${line}</summary><table class="kv">${rows.join("")}</table></details>`;
}

// A click on a declared field's value: the list narrowed to the items where it holds.
function bindWhereLinks(box) {
  for (const a of box.querySelectorAll("a.where-link")) {
    a.onclick = (event) => {
      event.preventDefault();
      const terms = state.where.split(/\s+/).filter(Boolean);
      if (!terms.includes(a.dataset.term)) terms.push(a.dataset.term);
      state.where = terms.join(" ");
      $("f-where").value = state.where;
      refilter();
    };
  }
}

// The verdicts of one item: rules first, each with the answer it read; a judge's verdicts with
// the judge that gave them (a verdict is never shown as an "extracted answer").
function verdictsHtml(it, detail) {
  const names = scoringsOf(it);
  const kinds = kindsOf(it);
  const rows = names.map((name, k) => {
    const letter = it[F.letters][k];
    const judged = letter && letter !== "-" && letter !== letter.toUpperCase();
    const judge = judged ? judgeOf(benchName(it), name) : null;
    const by = judge ? `judge <span class="clip" title="${esc(judge)}">${esc(judge)}</span>` : "rules";
    let answer;
    if (kinds[k] === "judge" && judged) answer = '<span class="note">graded the response</span>';
    else if (detail.answers[k] === null || detail.answers[k] === undefined) answer = '<span class="note">none read</span>';
    else answer = esc(detail.answers[k]);
    const error = detail.score_errors[k] ? `<div class="note">${esc(detail.score_errors[k])}</div>` : "";
    const reason = (detail.why || [])[k];
    const why = reason ? esc(reason) : '<span class="note">no explanation kept</span>';
    return `<tr class="scoring-row"><td class="scoring-name">${esc(name)}</td><td class="by">${by}</td><td class="extracted">${answer}${error}</td><td class="verdict-cell">${badge(it, k, false)}</td></tr>` +
      `<tr class="why-row"><td colspan="4" class="why" title="why this verdict">${why}</td></tr>`;
  });
  return `<table class="scoring"><tr><th>scoring</th><th>by</th><th>answer</th><th>verdict</th></tr>${rows.join("")}</table>`;
}

function judgesHtml(detail) {
  return detail.judges.map((j) => {
    const spent = j.error ? "" : ` · tokens ${fmt.tokens(j.tokens[0])} in / ${fmt.tokens(j.tokens[1])} out · ${fmt.money(j.cost_usd)} · ${fmt.seconds(j.latency_s)}`;
    const words = j.error ? `<p class="note">the judge call failed: ${esc(j.error)}</p>` : `<pre class="judge-words">${esc(j.reply)}</pre>`;
    return `<div class="judge"><div class="judge-head">judge <b>${esc(j.judge)}</b>${spent}</div>${words}</div>`;
  }).join("");
}

function responseHtml(detail, it) {
  const reasoning = detail.reasoning ? `<details><summary>reasoning (${fmt.tokens(it[F.treason])} tokens)</summary><pre class="reasoning">${esc(detail.reasoning)}</pre></details>` : "";
  const error = detail.error ? `<p class="error"><b>error</b> ${esc(detail.error.type)} ${esc(detail.error.status ?? "")}: ${esc(detail.error.message)}</p>` : "";
  return `${reasoning}<pre class="response">${esc(detail.response ?? "(no response)")}</pre>${error}`;
}

// The raw call: each attempt from the record's ledger, the decoding, the request body (as
// built: the record keeps none) and the response as stored; copied or downloaded as JSON.
function rawResponse(detail) {
  return { text: detail.response, reasoning: detail.reasoning, ...detail.raw.response };
}

function rawJson(it, detail) {
  const item = { model: idx.models[it[F.model]], benchmark: benchName(it), sample: idx.samples[it[F.sample]][1], epoch: it[F.epoch] };
  return JSON.stringify({ item, ...detail.raw, response: rawResponse(detail) }, null, 2);
}

function attemptsHtml(attempts) {
  if (!attempts.length) return '<p class="note">no per-attempt ledger: this record was written before it was kept (record version 3)</p>';
  const rows = attempts.map((a) => {
    const used = a.usage ? `${fmt.tokens(a.usage.input_tokens)} / ${fmt.tokens(a.usage.output_tokens)}` : "not billed";
    const cost = a.cost_usd === null ? "" : fmt.money(a.cost_usd) + (a.estimated ? " (estimated)" : "");
    return `<tr class="attempt"><td class="num">${a.number}</td><td title="${esc(a.at ?? "")}">${esc((a.at ?? "").slice(11, 23))}</td><td class="num">${esc(a.status ?? "—")}</td><td>${esc(a.outcome)}</td>` +
      `<td class="rid">${esc(a.request_id ?? "")}</td><td class="num">${fmt.seconds(a.latency_s)}</td><td class="num">${used}</td><td class="num">${cost}</td><td>${esc(a.error ?? "")}</td></tr>`;
  });
  return `<div class="attempts-box"><table class="attempts"><tr><th>#</th><th title="UTC; the whole time on hover">at</th><th>status</th><th>outcome</th><th>request id</th><th>latency</th><th>tokens in / out</th><th>cost</th><th>error</th></tr>${rows.join("")}</table></div>`;
}

function rawHtml(detail, media) {
  const raw = detail.raw;
  if (!raw) return '<p class="note">no raw call: the record is not in the store now</p>';
  const d = raw.decoding;
  const request = raw.request === null ? `<p class="note">${esc(raw.request_note)}</p>` :
    `<div class="note">${esc(raw.request_note)}</div><div class="media">${mediaHtml(media)}</div><pre class="raw-request">${esc(JSON.stringify(raw.request, null, 2))}</pre>`;
  return (
    '<details class="raw" id="raw"><summary>raw call: attempts, request and response</summary>' +
    '<div class="raw-actions"><button id="raw-copy" type="button">copy as JSON</button> <a id="raw-download" href="#">download JSON</a> <span id="raw-copied" class="note"></span></div>' +
    `<h5>attempts</h5>${attemptsHtml(raw.attempts)}` +
    `<h5>decoding</h5>${kv([["temperature", d.temperature], ["top_p", d.top_p], ["max_tokens", d.max_tokens], ["seed", d.seed], ["reasoning effort", d.reasoning_effort]])}` +
    `<h5>request body</h5>${request}` +
    `<h5>response</h5><div class="note">${esc(raw.response_note)}</div><pre class="raw-response">${esc(JSON.stringify(rawResponse(detail), null, 2))}</pre>` +
    `<h5>call</h5>${kv(Object.entries(raw.call).map(([k, v]) => [k.replace("_", " "), v && typeof v === "object" ? JSON.stringify(v) : v]))}` +
    "</details>"
  );
}

function bindRaw(box, it, detail) {
  const copy = box.querySelector("#raw-copy");
  if (!copy) return;
  const text = rawJson(it, detail);
  const link = box.querySelector("#raw-download");
  link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  link.download = [benchName(it), idx.samples[it[F.sample]][1], it[F.epoch], idx.models[it[F.model]]].join("-").replace(/[^\w.-]+/g, "_") + ".json";
  copy.onclick = async () => {
    let done = false;
    try {
      await navigator.clipboard.writeText(text);
      done = true;
    } catch (error) { // a page opened from disk may not write the clipboard: select it instead
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      done = document.execCommand("copy");
      area.remove();
    }
    box.querySelector("#raw-copied").textContent = done ? `copied (${text.length} characters)` : "the browser refused the clipboard: use download";
  };
}

function kv(pairs) {
  const shown = pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "");
  return '<table class="kv">' + shown.map((p) => `<tr><td>${esc(p[0])}</td><td>${esc(p[1])}</td></tr>`).join("") + "</table>";
}

// Another model answered this item's sample.
function answeredByOthers(i) {
  for (let j = 0; j < N; j++) if (C.sample[j] === C.sample[i] && C.model[j] !== C.model[i]) return true;
  return false;
}

async function itemHtml(i) {
  const it = row(i);
  const s = Object.assign([...idx.samples[it[F.sample]]], { index: it[F.sample] });
  const [detail, prompt, media] = await Promise.all([detailOf(i), promptOf(it[F.sample]), mediaOf(it[F.sample])]);
  const others = answeredByOthers(i);
  const across = '<span class="item-actions">' +
    (others ? '<button id="open-one" title="o">all models on this sample</button> ' : "") +
    '<button class="md-toggle" type="button">markdown</button> ' +
    '<button id="print-item" type="button" title="print this item alone">print</button></span>';
  return (
    `<div class="item-head"><h3><span class="clip" title="${esc(idx.models[it[F.model]])}">${esc(idx.models[it[F.model]])}</span> · ${esc(benchName(it))} · sample ${esc(s[1])} · epoch ${it[F.epoch]}</h3>${across}</div>` +
    verdictsHtml(it, detail) +
    promptHtml(prompt, s, media) +
    metadataHtml(prompt.metadata, benchName(it)) +
    `<h4>response</h4>${responseHtml(detail, it)}` +
    (detail.judges.length ? `<h4>judges</h4>${judgesHtml(detail)}` : "") +
    `<h4>call</h4>` +
    kv([
      ["tokens in / out / reasoning", [it[F.tin], it[F.tout], it[F.treason]].map(fmt.tokens).join(" / ")],
      ["latency", fmt.seconds(it[F.latency])],
      ["cost of the answer", fmt.money(it[F.cost])],
      ["cost of the judgements", it[F.judgeCost] === null ? "" : fmt.money(it[F.judgeCost])],
      ["attempts", detail.attempts],
      ["finish reason", detail.finish_reason],
      ["model reported", detail.model_reported],
      ["batch job", detail.batch ? "yes" : ""],
      ["request id", detail.raw ? detail.raw.call.request_id : ""],
      ["decoding", detail.raw ? decodingText(detail.raw.decoding) : ""],
    ]) +
    rawHtml(detail, media)
  );
}

function decodingText(d) {
  return [["temperature", d.temperature], ["seed", d.seed], ["max_tokens", d.max_tokens], ["top_p", d.top_p], ["effort", d.reasoning_effort]]
    .filter((p) => p[1] !== null && p[1] !== undefined).map((p) => `${p[0]} ${p[1]}`).join(" · ");
}

async function renderDetail() {
  const box = $("detail");
  if (state.item === null || state.item >= N) {
    box.innerHTML = '<p class="note">Choose an item to see its verdicts, prompt, response and judges (j / k or ↓ / ↑ move through the list).</p>';
    return;
  }
  const shown = state.item;
  let html;
  let detail = null;
  try {
    detail = await detailOf(shown);
    html = await itemHtml(shown);
  } catch (error) { // a paged report's file missing beside it
    html = `<p class="error">${esc(error.message)}</p>`;
  }
  if (state.item !== shown) return; // another item was chosen meanwhile
  box.innerHTML = html;
  box.scrollTop = 0;
  const across = $("open-one");
  if (across) across.onclick = () => openOne(C.sample[shown], []);
  const print = $("print-item");
  if (print) print.onclick = () => window.print();
  bindImages(box);
  bindWhereLinks(box);
  applyMarkdown(box);
  if (detail) bindRaw(box, row(shown), detail);
}

function bindImages(box) {
  for (const img of box.querySelectorAll("img.thumb")) {
    if (!img.dataset.full) continue;
    img.onclick = () => { $("overlay-img").src = img.dataset.full; $("overlay").style.display = "flex"; };
  }
}
