// The page's wiring: the filters, the column headers, the keys, the address; and its start,
// once the index is read.
"use strict";

async function renderView() {
  const one = state.one !== null;
  $("main").hidden = one;
  $("one").hidden = !one;
  if (one) await renderOne();
  else await renderDetail();
}

function fillFilters() {
  const option = (value, label) => `<option value="${esc(value)}">${esc(label ?? value)}</option>`;
  $("f-model").innerHTML = option("", "all models") + idx.models.map((m) => option(m)).join("");
  $("f-benchmark").innerHTML = option("", "all benchmarks") + idx.benchmarks.map((b) => option(b)).join("");
  const scorings = [...new Set(Object.values(idx.scorings).flat())];
  $("f-scoring").innerHTML = option("", "each benchmark's first") + scorings.map((s) => option(s)).join("");
  const seen = new Uint8Array(65536);
  for (let i = 0; i < N; i++) seen[C.epoch[i]] = 1;
  const epochs = [...seen.keys()].filter((e) => seen[e]);
  $("f-epoch").innerHTML = option("", "all epochs") + epochs.map((e) => option(String(e))).join("");
  for (const key of ["model", "benchmark", "scoring", "epoch", "status"]) $("f-" + key).value = state[key];
  $("f-disagree").checked = state.disagree;
  $("f-q").value = state.q;
  $("f-where").value = state.where;
  fillColumns();
}

function refilter() {
  state.page = 0;
  applyFilters();
  if (state.one !== null) renderOne();
}

function typing(event) {
  const target = event.target;
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  return tag === "input" || tag === "select" || tag === "textarea" || target.isContentEditable;
}

function onKey(event) {
  if (event.key === "Escape") {
    if ($("overlay").style.display === "flex") $("overlay").style.display = "none";
    else closeOne();
    return;
  }
  if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
  const step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[event.key];
  if (step) {
    event.preventDefault();
    if (state.one !== null) moveSample(step);
    else moveSelection(step);
  } else if ((event.key === "o" || event.key === "Enter") && state.one === null && state.item !== null) {
    event.preventDefault();
    openOne(C.sample[state.item], []);
  } else if (event.key === "/") {
    event.preventDefault();
    $("f-q").focus();
  }
}

function bindPage() {
  for (const key of ["model", "benchmark", "scoring", "epoch", "status"]) {
    $("f-" + key).onchange = () => { state[key] = $("f-" + key).value; refilter(); };
  }
  $("f-disagree").onchange = () => { state.disagree = $("f-disagree").checked; refilter(); };
  let pause = null;
  $("f-q").oninput = () => { clearTimeout(pause); pause = setTimeout(() => { state.q = $("f-q").value; refilter(); }, 150); };
  $("f-where").oninput = () => { clearTimeout(pause); pause = setTimeout(() => { state.where = $("f-where").value.trim(); refilter(); }, 250); };
  bindColumns();
  bindGrips();
  $("prev").onclick = () => { state.page = Math.max(0, state.page - 1); renderList(); };
  $("next").onclick = () => { state.page += 1; renderList(); };
  $("items").onclick = (event) => {
    const head = event.target.closest("th[data-sort]");
    if (head && (event.target.closest(".col-grip") || justResized())) return; // a drag, not a sort
    if (head) {
      const key = head.dataset.sort;
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      applyFilters();
      return;
    }
    const row = event.target.closest("tr.item-row");
    if (!row) return;
    const i = Number(row.dataset.item);
    if (state.disagree) {
      // the models that disagree, side by side on this sample at this epoch
      state.item = i;
      state.epoch = String(C.epoch[i]);
      fillFilters();
      openOne(C.sample[i], []);
      return;
    }
    selectItem(i);
  };
  $("overlay").onclick = () => { $("overlay").style.display = "none"; };
  document.addEventListener("keydown", onKey);
  window.onhashchange = () => { readHash(); fillFilters(); applyFilters(); renderView(); };
}

// Dark or light: the browser's own choice at first, then the reader's, kept in this browser
// (a page opened from disk may not keep it: then each opening follows the browser again).
const THEME_KEY = "evalfleet-report-theme";
function applyTheme(dark) {
  document.documentElement.classList.toggle("dark", dark);
  $("theme").textContent = dark ? "light" : "dark";
}

function startTheme() {
  let saved = null;
  try { saved = localStorage.getItem(THEME_KEY); } catch (error) { /* storage refused */ }
  applyTheme(saved ? saved === "dark" : matchMedia("(prefers-color-scheme: dark)").matches);
  $("theme").onclick = () => {
    const dark = !document.documentElement.classList.contains("dark");
    applyTheme(dark);
    try { localStorage.setItem(THEME_KEY, dark ? "dark" : "light"); } catch (error) { /* storage refused */ }
  };
}

// The item panel stays in view under the filters, however many lines they wrap to.
function fitDetail() {
  const high = $("filters").offsetHeight;
  $("detail").style.top = `${high + 4}px`;
  $("detail").style.maxHeight = `calc(100vh - ${high + 16}px)`;
}

async function boot() {
  try {
    await loadIndex();
  } catch (error) { // a paged report without its folder
    $("count").textContent = error.message;
    return;
  }
  startTheme();
  buildSearch();
  readHash();
  fillFilters();
  bindPage();
  fitDetail();
  window.addEventListener("resize", fitDetail);
  applyFilters();
  if (!PAGED) setTimeout(loadTexts, 50);
  await renderView();
  window.__reportReady = performance.now();
}

boot();
