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

// `value` with `digits` decimals as Python's format writes it: from the exact binary value,
// an exact tie (0.0625 to 3 decimals, 1234.5 to none) to the even digit, where toFixed would
// round it up. 25 more decimals tell a tie: a double is never that close to one otherwise.
function fixed(value, digits) {
  const rounded = value.toFixed(digits);
  const places = Math.min(100, digits + 25);
  const exact = Math.abs(value).toFixed(places);
  const cut = exact.length - (places - digits);
  if (exact.slice(cut) !== "5".padEnd(places - digits, "0")) return rounded;
  const kept = exact.slice(0, cut).replace(/\.$/, "");
  if (Number(kept.slice(-1)) % 2 === 1) return rounded; // up to the even digit
  return (value < 0 ? "-" : "") + kept;
}

const fmt = {
  share: (value) => (isMissing(value) ? MISSING : fixed(value, 3)),
  interval: (low, high) => (isMissing(low) || isMissing(high) ? MISSING : `${fixed(low, 3)}–${fixed(high, 3)}`),
  tokens: (value) => (isMissing(value) ? MISSING : grouped(String(roundHalfEven(value)))),
  money: (value) => {
    if (isMissing(value)) return MISSING;
    if (value === 0) return "$0";
    const digits = Math.max(0, 1 - Math.floor(Math.log10(Math.abs(value))));
    return "$" + grouped(fixed(value, digits));
  },
  seconds: (value) => (isMissing(value) ? MISSING : value.toFixed(1) + " s"),
};

// A text on one line (the list's cells end in an ellipsis; their title holds it whole).
function oneLine(text) {
  return String(text ?? "").replace(/\s+/g, " ").trim();
}

const collator = new Intl.Collator("en", { numeric: true });
