// What the page shows, kept in the address so that any view can be linked: the filters, the
// sort, the item open, the columns' widths a reader dragged (`widths=prompt:320,answer:200`),
// and the one-sample view (`one=benchmark/sample`, `models=a,b`).
"use strict";

const FILTER_KEYS = ["model", "benchmark", "scoring", "epoch", "status", "q", "where", "cols", "widths", "lines", "md"];
const state = {
  model: "", benchmark: "", scoring: "", epoch: "", status: "", q: "", where: "", cols: "", widths: "", lines: "", md: "", disagree: false,
  sort: "", desc: false, page: 0, item: null, one: null, models: [],
};

function itemPath(i) {
  const it = row(i);
  return [benchName(it), idx.samples[it[F.sample]][1], it[F.epoch], idx.models[it[F.model]]].join("/");
}

function writeHash() {
  const parts = [];
  for (const key of FILTER_KEYS) if (state[key]) parts.push(key + "=" + encodeURIComponent(state[key]));
  if (state.disagree) parts.push("disagree=1");
  if (state.sort) parts.push("sort=" + state.sort + (state.desc ? "&desc=1" : ""));
  if (state.item !== null) parts.push("sample=" + encodeURIComponent(itemPath(state.item)));
  if (state.one !== null) {
    const s = idx.samples[state.one];
    parts.push("one=" + encodeURIComponent(idx.benchmarks[s[0]] + "/" + s[1]));
    if (state.models.length) parts.push("models=" + state.models.map(encodeURIComponent).join(","));
  }
  history.replaceState(null, "", "#" + parts.join("&"));
}

function sampleIndex(bench, id) {
  const b = idx.benchmarks.indexOf(bench);
  return idx.samples.findIndex((s) => s[0] === b && s[1] === id);
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const key of FILTER_KEYS) state[key] = params.get(key) || "";
  state.disagree = params.get("disagree") === "1";
  state.sort = sortable(params.get("sort")) ? params.get("sort") : "";
  state.desc = params.get("desc") === "1";
  state.item = null;
  const wanted = params.get("sample");
  if (wanted) {
    // benchmark/sample/epoch/model, where the model holds a "/" of its own
    const p = wanted.split("/");
    const [bench, sample, epoch, model] = [p[0], p[1], p[2], p.slice(3).join("/")];
    state.item = findItem(bench, sample, epoch, model);
  }
  state.one = null;
  state.models = (params.get("models") || "").split(",").filter((m) => idx.models.includes(m));
  const one = params.get("one");
  if (one) {
    const cut = one.indexOf("/");
    const found = sampleIndex(one.slice(0, cut), one.slice(cut + 1));
    state.one = found < 0 ? null : found;
  }
  const side = params.get("side"); // an older link's "side by side": the same sample across models
  if (side && state.item !== null && state.one === null) {
    state.one = C.sample[state.item];
    state.models = [idx.models[C.model[state.item]], side].filter((m) => idx.models.includes(m));
  }
}

// The first item of this benchmark, sample and epoch (and model, if named), or null.
function findItem(bench, sample, epoch, model) {
  const s = sampleIndex(bench, sample);
  const m = model ? idx.models.indexOf(model) : -1;
  if (s < 0 || (model && m < 0)) return null;
  for (let i = 0; i < N; i++) {
    if (C.sample[i] === s && String(C.epoch[i]) === epoch && (m < 0 || C.model[i] === m)) return i;
  }
  return null;
}
