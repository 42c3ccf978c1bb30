// What the page shows, kept in the address so that any view can be linked: the filters, the
// sort, the item open, and the one-sample view (`one=benchmark/sample`, `models=a,b`).
"use strict";

const FILTER_KEYS = ["model", "benchmark", "scoring", "epoch", "status", "q"];
const state = {
  model: "", benchmark: "", scoring: "", epoch: "", status: "", q: "", disagree: false,
  sort: "", desc: false, page: 0, item: null, one: null, models: [],
};

function itemPath(i) {
  const it = items[i];
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
  state.sort = SORTS[params.get("sort")] ? params.get("sort") : "";
  state.desc = params.get("desc") === "1";
  state.item = null;
  const wanted = params.get("sample");
  if (wanted) {
    // benchmark/sample/epoch/model, where the model holds a "/" of its own
    const p = wanted.split("/");
    const [bench, sample, epoch, model] = [p[0], p[1], p[2], p.slice(3).join("/")];
    const found = items.findIndex((it) => benchName(it) === bench && idx.samples[it[F.sample]][1] === sample && String(it[F.epoch]) === epoch && (!model || idx.models[it[F.model]] === model));
    state.item = found < 0 ? null : found;
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
    state.one = items[state.item][F.sample];
    state.models = [idx.models[items[state.item][F.model]], side].filter((m) => idx.models.includes(m));
  }
}
