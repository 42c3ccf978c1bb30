// The headline at the top: one row per model, one column per benchmark, each cell the
// benchmark's headline under the scoring mode chosen (each benchmark's first by default), with
// the 95 % interval the aggregation computed (metrics/intervals.py, never computed here).
// Each column names the item set it was measured on. A cell filters the list to its model
// and benchmark.
"use strict";

function renderHeadline() {
  const shownScoring = (bench) => {
    const names = meta.benchmarks[bench].scorings;
    return state.scoring && names.includes(state.scoring) ? state.scoring : names[0];
  };
  const cells = {};
  for (const h of meta.headline) cells[h.model + "\u0000" + h.benchmark + "\u0000" + h.scoring] = h;
  const benches = idx.benchmarks.filter((b) => meta.benchmarks[b].scorings.length);
  const head = benches.map((b) => {
    const scoring = shownScoring(b);
    const items = meta.benchmarks[b].item_set;
    return `<th title="${esc(b)}: ${esc(meta.benchmarks[b].headline)} under ${esc(scoring)}, with its 95 % interval, on ${esc(items)}">${esc(b)}<span class="sub">${esc(meta.benchmarks[b].headline)} · ${esc(scoring)}</span><span class="sub items clip" title="${esc(items)}">${esc(items)}</span></th>`;
  });
  const rows = idx.models.map((model) => {
    const tds = benches.map((b) => {
      const h = cells[model + "\u0000" + b + "\u0000" + shownScoring(b)];
      if (!h) return "<td class='num'>—</td>";
      return `<td class="num cell" data-model="${esc(model)}" data-benchmark="${esc(b)}" title="n = ${h.n}"><b>${fmt.share(h.value)}</b> <span class="ci">${fmt.interval(h.low, h.high)}</span></td>`;
    });
    return `<tr><th class="model"><span class="clip" title="${esc(model)}">${esc(model)}</span></th>${tds.join("")}</tr>`;
  });
  $("headline").innerHTML = `<table><tr><th></th>${head.join("")}</tr>${rows.join("")}</table>`;
  for (const cell of $("headline").querySelectorAll("td.cell")) {
    cell.onclick = () => {
      Object.assign(state, { model: cell.dataset.model, benchmark: cell.dataset.benchmark, page: 0, one: null });
      fillFilters();
      applyFilters();
    };
  }
}
