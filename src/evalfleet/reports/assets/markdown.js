// Texts rendered as Markdown, as inspect view renders a message, on the reader's choice (the
// `md=1` of the address; the exact text, as sent and as stored, is the default). A small subset,
// written here: headings, paragraphs, lists, quotes, fenced code, inline code, bold, italics
// and http(s) links, and math (`$...$`, `\(...\)`, `$$...$$`, `\[...\]` and a bare `\boxed{}`),
// drawn by MathJax when the page embeds it (`reports.mathjax`: a run whose texts hold math).
// Each line is escaped first, so nothing in a response becomes markup but these; math in code
// stays as written.
"use strict";

// Math outside code (fenced blocks and `spans` are matched first, and kept), `$` not after a
// letter or digit nor before one, with no space inside either `$` (so "$5 and $10" stays);
// a display formula at most 4,000 characters long, so an unclosed `\(` costs a bounded scan.
const MATH_SPAN = new RegExp(
  [
    "^[ \\t]*```[\\s\\S]*?(?:\\n[ \\t]*```|(?![\\s\\S]))", // a fenced block
    "`[^`\\n]+`", // inline code
    "(?<!\\\\)\\$\\$([\\s\\S]{1,4000}?)\\$\\$",
    "\\\\\\[([\\s\\S]{1,4000}?)\\\\\\]",
    "\\\\\\(([\\s\\S]{1,4000}?)\\\\\\)",
    "(?<![\\\\$\\w])\\$(?=[^\\s$])([^$\\n]*?[^\\s$\\\\])\\$(?![\\w$])",
    "\\\\boxed(?=\\{)",
  ].join("|"),
  "gm",
);

// `text` with each formula replaced by \u0002n\u0003, and formula n as written, escaped, in a
// span holding its TeX for MathJax (`typesetMath`): kept away from the Markdown rules.
function extractMath(text) {
  const found = [];
  let out = "";
  let last = 0;
  MATH_SPAN.lastIndex = 0;
  for (let m; (m = MATH_SPAN.exec(text)); ) {
    let [whole, display, bracket, paren, inline] = m;
    let end = m.index + whole.length;
    if (whole === "\\boxed") { // a bare \boxed{...}: up to its closing brace, 4,000 at most
      let depth = 0;
      const stop = Math.min(text.length, m.index + 4000);
      for (end = m.index + 6; end < stop; end++) {
        if (text[end] === "\\") end++;
        else if (text[end] === "{") depth++;
        else if (text[end] === "}" && --depth === 0) break;
      }
      if (end >= stop) continue;
      whole = text.slice(m.index, ++end);
      if (/^\\boxed\{\s*\}$/.test(whole)) continue; // "answer in \boxed{}": an instruction
      inline = whole;
      MATH_SPAN.lastIndex = end;
    }
    const tex = display ?? bracket ?? paren ?? inline;
    if (tex === undefined) continue; // code, kept as written
    const block = display !== undefined || bracket !== undefined ? "1" : "";
    const span = `<span class="tex" data-display="${block}" data-tex="${esc(tex)}">${esc(whole)}</span>`;
    out += text.slice(last, m.index) + `\u0002${found.push(span) - 1}\u0003`;
    last = end;
  }
  return [out + text.slice(last), found];
}

function mdInline(safe) {
  const codes = [];
  let out = safe.replace(/`([^`]+)`/g, (_, code) => `\u0000${codes.push(code) - 1}\u0000`);
  out = out
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s](?:[^*]*[^*\s])?)\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>');
  return out.replace(/\u0000(\d+)\u0000/g, (_, k) => `<code>${codes[Number(k)]}</code>`);
}

function renderMarkdown(text) {
  const clean = String(text ?? "").replace(/\r\n?/g, "\n").replace(/[\u0002\u0003]/g, "\ufffd");
  const [source, formulas] = extractMath(clean);
  const lines = source.split("\n");
  const out = [];
  let para = [];
  let list = null; // {tag, items}
  let quote = [];
  const flush = () => {
    if (para.length) out.push(`<p>${mdInline(para.join(" "))}</p>`);
    if (list) out.push(`<${list.tag}>${list.items.map((item) => `<li>${mdInline(item)}</li>`).join("")}</${list.tag}>`);
    if (quote.length) out.push(`<blockquote>${mdInline(quote.join(" "))}</blockquote>`);
    [para, list, quote] = [[], null, []];
  };
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n];
    if (/^\s*```/.test(line)) {
      flush();
      const body = [];
      for (n++; n < lines.length && !/^\s*```/.test(lines[n]); n++) body.push(lines[n]);
      out.push(`<pre class="md-code">${esc(body.join("\n"))}</pre>`);
      continue;
    }
    const safe = esc(line);
    let m;
    if (!line.trim()) flush();
    else if ((m = /^\s{0,3}(#{1,6})\s+(.*)$/.exec(safe))) {
      flush();
      out.push(`<p class="md-h md-h${m[1].length}">${mdInline(m[2])}</p>`);
    } else if ((m = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(safe))) {
      const tag = m[1] === undefined ? "ul" : "ol";
      if (para.length || quote.length || (list && list.tag !== tag)) flush();
      list ||= { tag, items: [] };
      list.items.push(m[2]);
    } else if ((m = /^\s*&gt;\s?(.*)$/.exec(safe))) {
      if (para.length || list) flush();
      quote.push(m[1]);
    } else if (list && /^\s+\S/.test(line)) {
      list.items[list.items.length - 1] += " " + safe.trim(); // a list item's next line
    } else {
      if (list || quote.length) flush();
      para.push(safe);
    }
  }
  flush();
  return out.join("").replace(/\u0002(\d+)\u0003/g, (_, k) => formulas[Number(k)]);
}

// MathJax draws one formula at a time, in order: a box's formulas after the ones before.
let mathQueue = Promise.resolve();

// Each formula of `box` drawn by MathJax (SVG), its equation numbers from (1) in each box. A
// formula MathJax cannot read shows as written in its error box (`noerrors`), an unknown
// command as written in red (`noundefined`); one too long for it (over 4,000 characters), or
// a page without MathJax (a run whose texts held no math), leaves the text as written.
function typesetMath(box) {
  const spans = [...box.querySelectorAll("span.tex:not(.tex-done)")];
  if (!spans.length || !window.MathJax?.startup?.promise) {
    for (const span of spans) span.classList.add("tex-done");
    return mathQueue;
  }
  mathQueue = mathQueue
    .then(() => MathJax.startup.promise)
    .then(() => {
      MathJax.texReset();
      for (const span of spans) {
        const tex = span.dataset.tex;
        if (span.isConnected && tex.length <= 4000) {
          try {
            span.replaceChildren(MathJax.tex2svg(tex, { display: span.dataset.display === "1" }));
          } catch (error) {
            span.title = `not drawn: ${error}`;
          }
        }
        span.classList.add("tex-done");
      }
      MathJax.startup.document.updateDocument(); // its styles: the copy for screen readers hidden
    })
    .catch((error) => console.error("MathJax:", error)); // the texts stay as written
  return mathQueue;
}

// In `box`: each prompt, response and judge's words shown rendered beside its exact text
// (hidden, kept for copying and the tests), when the reader chose Markdown.
function applyMarkdown(box) {
  for (const old of box.querySelectorAll("div.md")) old.remove();
  for (const pre of box.querySelectorAll("pre.prompt, pre.response, pre.judge-words")) {
    pre.hidden = state.md === "1";
    if (!pre.hidden) continue;
    const div = document.createElement("div");
    div.className = "md";
    div.innerHTML = renderMarkdown(pre.textContent);
    pre.after(div);
  }
  typesetMath(box);
  for (const button of box.querySelectorAll(".md-toggle")) {
    button.textContent = state.md === "1" ? "as sent" : "markdown";
    button.title = state.md === "1" ? "the exact texts, as sent and stored" : "render the texts as Markdown, with math ($…$, \\(…\\), $$…$$, \\[…\\], \\boxed{}) as formulas";
    button.onclick = () => {
      state.md = state.md === "1" ? "" : "1";
      writeHash();
      applyMarkdown(box);
    };
  }
}
