// The tag editor of `evalfleet view` (reports/view_server.py), which adds this script and a
// <meta name="evalfleet-view"> to the pages it serves; a page opened from disk has neither.
// The store index's tags cells and the report's About table then show each run's CURRENT tags,
// metadata and note (read from /api/runs/<run>/tags, so a report written before a tag shows
// it), and an editor: add a tag, remove one with ×, add a key=value pair, change a value,
// remove a pair with ×, edit the note, save. A save sends the token of the URL
// the command printed (kept in this origin's localStorage, so the report a link opens has it).
(() => {
  const marker = document.querySelector("meta[name='evalfleet-view']");
  if (!marker) return;
  const KEY = "evalfleet-view-token";
  const given = new URLSearchParams(location.search).get("token");
  if (given) {  // kept, and out of the address bar, so a link copied from it carries none
    localStorage.setItem(KEY, given);
    const rest = new URLSearchParams(location.search);
    rest.delete("token");
    const query = rest.toString() ? `?${rest}` : "";
    history.replaceState(history.state, "", location.pathname + query + location.hash);
  }

  const style = document.createElement("style");
  style.textContent = `
.ev-tag { white-space: nowrap; background: rgba(90, 90, 230, .15); border-radius: 3px;
  padding: 0 4px; margin-right: 4px; }
.ev-note { opacity: .75; font-size: 12px; max-width: 24em; white-space: pre-wrap; }
.ev-editor .ev-note { width: 20em; height: 4em; display: block; margin: 4px 0;
  font: inherit; font-size: 12px; }
.ev-x, .ev-edit { border: none; background: none; cursor: pointer; padding: 0 2px;
  color: inherit; font: inherit; }
.ev-x:hover, .ev-edit:hover { color: #a11; }
.ev-add, .ev-new-key, .ev-value, .ev-new-value { width: 9em; font: inherit; font-size: 12px; }
.ev-meta { white-space: nowrap; background: rgba(60, 160, 60, .15); border-radius: 3px;
  padding: 0 4px; margin-right: 4px; font-size: 12px; }
.ev-metas { display: block; }
.ev-pair { display: block; font-size: 12px; margin: 2px 0; }
.ev-msg { color: #a11; font-size: 12px; display: block; max-width: 24em; }`;
  document.head.appendChild(style);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  async function call(run, change) {
    const init = change === undefined ? {} : {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-Evalfleet-Token": localStorage.getItem(KEY) || "",
      },
      body: JSON.stringify(change),
    };
    const response = await fetch(`/api/runs/${encodeURIComponent(run)}/tags`, init);
    const doc = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(doc.error || `${response.status} ${response.statusText}`);
    return doc;
  }

  // The tags and the note as the page shows them, with a button that opens the editor.
  function show(box, run, labels) {
    box.replaceChildren();
    for (const tag of labels.tags) box.appendChild(el("span", "ev-tag", tag));
    const edit = el("button", "ev-edit", "✎");
    edit.title = "edit the tags, the metadata and the note";
    edit.setAttribute("aria-label", `edit the tags of ${run}`);
    edit.addEventListener("click", () => editor(box, run, labels));
    box.appendChild(edit);
    const pairs = Object.entries(labels.metadata || {});
    if (pairs.length) {
      const metas = el("span", "ev-metas");
      for (const [key, value] of pairs) metas.appendChild(el("span", "ev-meta", `${key}=${value}`));
      box.appendChild(metas);
    }
    if (labels.note) box.appendChild(el("div", "ev-note", labels.note));
  }

  function editor(box, run, labels) {
    const added = [], removed = new Set();
    const form = el("div", "ev-editor");
    const chips = el("span", "ev-chips");
    const input = el("input", "ev-add");
    input.placeholder = "add a tag, Enter";
    input.setAttribute("aria-label", "add a tag");
    const note = el("textarea", "ev-note");
    note.value = labels.note;
    note.setAttribute("aria-label", "the run's note");
    const old = labels.metadata || {}, values = new Map(Object.entries(old));
    const pairs = el("div", "ev-pairs");
    const newKey = el("input", "ev-new-key"), newValue = el("input", "ev-new-value");
    newKey.placeholder = "key";
    newKey.setAttribute("aria-label", "a metadata key");
    newValue.placeholder = "value, Enter";
    newValue.setAttribute("aria-label", "its value");
    const save = el("button", "ev-save", "save"), cancel = el("button", "ev-cancel", "cancel");
    const message = el("span", "ev-msg");
    function drawChips() {
      chips.replaceChildren();
      for (const tag of [...labels.tags.filter(t => !removed.has(t)), ...added]) {
        const chip = el("span", "ev-tag", tag);
        const x = el("button", "ev-x", "×");
        x.setAttribute("aria-label", `remove ${tag}`);
        x.addEventListener("click", () => {
          const at = added.indexOf(tag);
          if (at >= 0) added.splice(at, 1); else removed.add(tag);
          drawChips();
        });
        chip.appendChild(x);
        chips.appendChild(chip);
      }
    }
    function drawPairs() {
      pairs.replaceChildren();
      for (const [key, value] of values) {
        const line = el("span", "ev-pair");
        const input = el("input", "ev-value");
        input.value = value;
        input.setAttribute("aria-label", `the value of ${key}`);
        input.addEventListener("input", () => values.set(key, input.value));
        const x = el("button", "ev-x", "×");
        x.setAttribute("aria-label", `remove ${key}`);
        x.addEventListener("click", () => { values.delete(key); drawPairs(); });
        line.append(el("span", "ev-key", `${key}=`), input, x);
        pairs.appendChild(line);
      }
    }
    function addPair() {
      if (newKey.value === "") return;
      values.set(newKey.value, newValue.value);
      newKey.value = newValue.value = "";
      drawPairs();
    }
    newValue.addEventListener("keydown", event => {
      if (event.key === "Enter") { event.preventDefault(); addPair(); }
    });
    function addTyped() {
      const tag = input.value;
      if (tag === "") return;
      removed.delete(tag);
      if (!labels.tags.includes(tag) && !added.includes(tag)) added.push(tag);
      input.value = "";
      drawChips();
    }
    input.addEventListener("keydown", event => {
      if (event.key === "Enter") { event.preventDefault(); addTyped(); }
    });
    save.addEventListener("click", async () => {
      addTyped();
      addPair();
      save.disabled = true;
      const set = Object.fromEntries([...values].filter(([key, value]) => old[key] !== value));
      const unset = Object.keys(old).filter(key => !values.has(key));
      try {
        const change = { add: added, remove: [...removed], note: note.value, set, unset };
        const doc = await call(run, change);
        show(box, run, doc);
      } catch (error) {
        message.textContent = error.message;
        save.disabled = false;
      }
    });
    cancel.addEventListener("click", () => show(box, run, labels));
    drawChips();
    drawPairs();
    form.append(chips, input, pairs, newKey, "=", newValue, note, save, " ", cancel, message);
    box.replaceChildren(form);
    input.focus();
  }

  async function attach(box, run) {
    try {
      show(box, run, await call(run));
    } catch (error) {
      box.title = `tags not read: ${error.message}`;
    }
  }

  const run = marker.dataset.run;
  if (run) {  // a run's report: a "tags" row in its About table, after the run's id
    const table = document.querySelector("table.identity");
    if (!table) return;
    const rows = [...table.rows];
    for (const row of rows) {
      const name = row.cells[0] && row.cells[0].textContent;
      if (name === "tags" || name === "note" || name === "metadata") row.remove();
    }
    const first = rows.find(row => row.cells[0] && row.cells[0].textContent === "run");
    const row = el("tr");
    row.append(el("td", "", "tags"), el("td", "ev-tags"));
    (first || table.rows[0]).after(row);
    attach(row.cells[1], run);
  } else {  // the store index: each run's tags cell
    for (const row of document.querySelectorAll("#runs tbody tr")) {
      const id = row.querySelector("td.run"), cell = row.querySelector("td.tags");
      if (id && cell) attach(cell, id.textContent);
    }
  }
})();
