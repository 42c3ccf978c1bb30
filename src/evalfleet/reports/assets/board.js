// The leaderboard page: a click on a column's name sorts its table (numbers as numbers, blank
// cells last), the search box keeps the rows whose model or run id hold every word, and both
// live in the URL's hash (`#q=sim&t0=3:desc`), so a link or a reload opens the same view.
(() => {
  const KEYS = ["model", "run", "run_before", "run_after"];  // what the search reads
  const q = document.getElementById("q"), count = document.getElementById("count");
  const tables = [...document.querySelectorAll("table.board")];
  const order = tables.map(t => [...t.tBodies[0].rows]);  // each table's first order
  const heads = tables.map(t => [...t.tHead.rows[0].cells]);
  const keyCols = heads.map(hs => hs.flatMap((h, i) => KEYS.includes(h.textContent) ? [i] : []));
  const notes = tables.map(t => {  // said under a table the search leaves empty
    const row = t.createTFoot().insertRow(), cell = row.insertCell();
    cell.colSpan = t.tHead.rows[0].cells.length;
    cell.className = "none";
    cell.textContent = "no row of this table matches the search";
    return row;
  });
  const blank = text => text === "" || text === "—";
  const number = td => {
    const m = (td.dataset.v ?? td.textContent.trim()).replace(/[$,]/g, "")
      .match(/^-?(\d+\.?\d*|\.\d+)(e-?\d+)?/);
    return m ? parseFloat(m[0]) : null;
  };

  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1)), sort = {};
    tables.forEach((_, t) => {
      const [col, dir] = (p.get("t" + t) || "").split(":");
      if (col !== "" && heads[t][+col]) sort[t] = [+col, dir === "desc" ? "desc" : "asc"];
    });
    return {q: p.get("q") || "", sort};
  }
  function writeHash(s) {
    const p = new URLSearchParams();
    if (s.q) p.set("q", s.q);
    for (const [t, [col, dir]] of Object.entries(s.sort)) p.set("t" + t, col + ":" + dir);
    history.replaceState(null, "", p.toString() ? "#" + p.toString() : location.pathname);
  }
  function sortRows(t, col, dir) {
    const rows = [...order[t]], cells = rows.map(r => r.cells[col]);
    const numeric = cells.every(td => blank(td.textContent.trim()) || number(td) !== null);
    const sign = dir === "desc" ? -1 : 1;
    const key = td => numeric ? number(td) : td.textContent.trim();
    rows.sort((a, b) => {
      const x = a.cells[col], y = b.cells[col];
      const bx = blank(x.textContent.trim()), by = blank(y.textContent.trim());
      if (bx || by) return bx - by;
      const kx = key(x), ky = key(y);
      const c = numeric ? kx - ky : kx.localeCompare(ky, undefined, {numeric: true});
      return sign * c;  // Array.sort is stable: ties keep the page's order
    });
    return rows;
  }
  function apply(s) {
    const words = s.q.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0, total = 0;
    tables.forEach((table, t) => {
      heads[t].forEach(h => h.removeAttribute("aria-sort"));
      let rows = order[t];
      if (s.sort[t]) {
        const [col, dir] = s.sort[t];
        rows = sortRows(t, col, dir);
        heads[t][col].setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
      }
      rows.forEach(r => table.tBodies[0].appendChild(r));
      let here = 0;
      for (const r of rows) {
        const text = keyCols[t].map(i => r.cells[i].textContent).join(" ").toLowerCase();
        r.hidden = !words.every(w => text.includes(w));
        here += !r.hidden; total += 1;
      }
      notes[t].hidden = here > 0;
      shown += here;
    });
    count.textContent = `${shown} of ${total} rows`;
    if (q.value !== s.q) q.value = s.q;
  }

  let state = readHash();
  apply(state);
  q.addEventListener("input", () => { state.q = q.value; writeHash(state); apply(state); });
  heads.forEach((hs, t) => hs.forEach((h, col) => {
    const click = () => {
      const [was, dir] = state.sort[t] || [];
      state.sort[t] = [col, was === col && dir === "asc" ? "desc" : "asc"];
      writeHash(state); apply(state);
    };
    h.addEventListener("click", click);
    h.addEventListener("keydown", e => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); click(); }
    });
  }));
  // the contents links scroll to their section and leave the state in the hash as it is
  document.querySelectorAll("#contents a").forEach(a => a.addEventListener("click", e => {
    e.preventDefault();
    document.getElementById(a.getAttribute("href").slice(1)).scrollIntoView();
  }));
  window.addEventListener("hashchange", () => { state = readHash(); apply(state); });
})();
