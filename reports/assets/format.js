// How figures and texts are written on the page: the rules of reports/formatting.py (the
// leaderboard's and compare's), so a share, a token count or a sum of money reads the same
// on every page. The browser test checks these against the Python functions.
"use strict";

const MISSING = "—";

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function isMissing(value) {
  return value === null || value === undefined || (typeof value === "number" && Number.isNaN(value));
}

function grouped(text) {
  const [whole, fraction] = text.split(".");
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return fraction === undefined ? withCommas : withCommas + "." + fraction;
}

function roundHalfEven(value) {
  const floor = Math.floor(value);
  const rest = value - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

const fmt = {
  share: (value) => (isMissing(value) ? MISSING : value.toFixed(3)),
  interval: (low, high) => (isMissing(low) || isMissing(high) ? MISSING : `${low.toFixed(3)}–${high.toFixed(3)}`),
  tokens: (value) => (isMissing(value) ? MISSING : grouped(String(roundHalfEven(value)))),
  money: (value) => {
    if (isMissing(value)) return MISSING;
    if (value === 0) return "$0";
    const digits = Math.max(0, 1 - Math.floor(Math.log10(Math.abs(value))));
    return "$" + grouped(value.toFixed(digits));
  },
  seconds: (value) => (isMissing(value) ? MISSING : value.toFixed(1) + " s"),
};

// One line, cut to `width` characters, the whole text left for the title.
function oneLine(text) {
  return String(text ?? "").replace(/\s+/g, " ").trim();
}

const collator = new Intl.Collator("en", { numeric: true });
