// Texts rendered as Markdown, as inspect view renders a message, on the reader's choice (the
// `md=1` of the address; the exact text, as sent and as stored, is the default). A small subset,
// written here: headings, paragraphs, lists, quotes, fenced code, inline code, bold, italics
// and http(s) links. Each line is escaped first, so nothing in a response becomes markup but
// these; LaTeX stays as written.
"use strict";

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
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
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
  return out.join("");
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
  for (const button of box.querySelectorAll(".md-toggle")) {
    button.textContent = state.md === "1" ? "as sent" : "markdown";
    button.title = state.md === "1" ? "the exact texts, as sent and stored" : "render the texts as Markdown";
    button.onclick = () => {
      state.md = state.md === "1" ? "" : "1";
      writeHash();
      applyMarkdown(box);
    };
  }
}
