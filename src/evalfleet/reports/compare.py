"""`evalfleet compare A B`: did a score move, by how much, and why.

A side is `RUN_ID`, `RUN_ID:MODEL` (so two models of one run compare too) or
`RUN_ID@VERSION[:MODEL]` (a results version other than the latest: two versions of one run
show a scorer change, or a run that grew). First what differs between the two identities,
field by field; then, per benchmark and scoring mode, on the items both sides hold. An item is
(dataset fingerprint, sample id): two sides on different datasets share none, and are shown
side by side, each with its own figures, with no paired statistic.

On shared items, from the headline's per-unit values (`evalfleet.metrics.intervals`, the units the
leaderboard ranks by):
- each side's value and the paired difference with its 95 % interval over the shared units
  (a bootstrap from 30 units, a t interval below, none for one unit);
- the paired test the leaderboard's ranks use (`metrics.paired.paired_test`), its name beside
  its p: exact McNemar for independent binary items, the clustered McNemar for grouped units
  (subquestions of a main question, means over epochs); with the samples that flipped each
  way at epoch 0;
- what it would take to tell the two apart (`evalfleet.reports.power`), against the pool of
  the dataset each side used.

Two sides measure the same thing only under the same protocol and the same number of epochs
per headline unit: otherwise compare does not pair them, and says why in one line beside
each side's own figures, as for sides on different items.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalfleet.benchmarks import registry
from evalfleet.core.record import Record
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.identity import BenchmarkIdentity, Identity
from evalfleet.engine.store.about import ResultsAbout
from evalfleet.engine.store.manifest import check_plans, require_manifest
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.engine.store.results import read_version_table, results_about
from evalfleet.metrics.intervals import UnitValues, paired
from evalfleet.metrics.paired import paired_test
from evalfleet.reports import formatting as fmt
from evalfleet.reports.item_sets import item_set_of
from evalfleet.reports.power import what_it_would_take
from evalfleet.storage import layout
from evalfleet.storage.base import Store

EPOCH = 0  # the epoch whose flips are listed
NOTE = (
    "Values are fractions of 1: each side's headline over the units both hold. The interval "
    "is a paired bootstrap (10,000 draws) of the per-unit differences from 30 shared units, a "
    "t interval below. p is the paired test the leaderboard ranks by, named per row: exact "
    "McNemar on independent binary items, the clustered McNemar (Durkalski 2003) on grouped "
    "units. The flips are the samples right in one side only at epoch 0."
)


@dataclass
class Side:
    run_id: str
    version: str
    model: str | None
    manifest: Manifest
    about: ResultsAbout
    samples: pd.DataFrame
    units: pd.DataFrame
    usage: pd.DataFrame

    @property
    def label(self) -> str:
        text = f"{self.run_id}@{self.version}"
        return f"{text}:{self.model}" if self.model else text

    @property
    def identity(self) -> Identity:
        """The run's identity when this version was scored (the manifest's for versions
        written before it was kept)."""
        return self.about.identity or self.manifest.identity

    def models(self) -> list[str]:
        """The models this version scored, in the order the run asked them."""
        scored = set(self.identity.models)
        asked = [m for m in self.manifest.request.models if m in scored]
        return asked + sorted(scored - set(asked))

    def unit_values(self, model: str, benchmark: str, scoring: str) -> UnitValues | None:
        part = self.units[
            (self.units.model == model)
            & (self.units.benchmark == benchmark)
            & (self.units.scoring == scoring)
        ]
        if part.empty:
            return None
        return UnitValues.of(
            list(part["unit"]),
            list(part["value"]),
            list(part["epochs"]),
            list(part["epoch_var"]),
            bool(part["binary"].all()),
        )

    def cost_per_unit(self, model: str, benchmark: str, units: int) -> float | None:
        spent = self.usage[(self.usage.model == model) & (self.usage.benchmark == benchmark)]
        if spent.empty or not units:
            return None
        row = spent.iloc[0]
        return (float(row.cost_usd) + float(row.judge_cost_usd)) / units


def parse_side(text: str) -> tuple[str, str | None, str | None]:
    """RUN_ID[@VERSION][:MODEL] -> (run_id, version, model)."""
    head, _, model = text.partition(":")
    run_id, _, version = head.partition("@")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run_id or ""):
        raise ConfigError(f"cannot read {text!r}: write RUN_ID, RUN_ID:MODEL or RUN_ID@VERSION")
    return run_id, version or None, model or None


def load_side(store: Store, text: str) -> Side:
    run_id, version, model = parse_side(text)
    manifest = require_manifest(store, run_id)
    check_plans(store, manifest)  # A's report is written with the comparison: its plans
    about = results_about(store, run_id, version)
    version = about.version
    tables = {
        name: read_version_table(store, run_id, version, f"{name}.parquet")
        for name in ("samples", "units", "usage")
    }
    side = Side(run_id, version, model, manifest, about, **tables)
    if model is not None and model not in side.models():
        raise ConfigError(f"run {run_id} has no model {model}: it has {', '.join(side.models())}")
    return side


def pairs(a: Side, b: Side) -> list[tuple[str, str]]:
    """Which model of A is compared with which of B."""
    if a.model and b.model:
        return [(a.model, b.model)]
    if a.model or b.model:
        given, other = (a, b) if a.model else (b, a)
        model = given.model
        assert model is not None  # the side that names a model
        if model in other.models():
            found = [model]
        elif len(other.models()) == 1:
            found = other.models()
        else:
            raise ConfigError(
                f"run {other.run_id} has several models: name one, {other.run_id}:MODEL"
            )
        return [(model, found[0])] if given is a else [(found[0], model)]
    common = [m for m in a.models() if m in b.models()]
    if common:
        return [(m, m) for m in common]
    if len(a.models()) == 1 and len(b.models()) == 1:
        return [(a.models()[0], b.models()[0])]
    raise ConfigError(
        f"runs {a.run_id} and {b.run_id} share no model: name them, RUN_ID:MODEL on each side"
    )


def compare(store: Store, spec_a: str, spec_b: str) -> dict[str, Any]:
    a, b = load_side(store, spec_a), load_side(store, spec_b)
    matched = pairs(a, b)
    rows, apart = [], []
    for model_a, model_b in matched:
        keys = a.units[a.units.model == model_a][["benchmark", "scoring"]].drop_duplicates()
        for benchmark, scoring in keys.itertuples(index=False):
            units_a = a.unit_values(model_a, benchmark, scoring)
            units_b = b.unit_values(model_b, benchmark, scoring)
            if units_a is None or units_b is None:
                continue
            where = (model_a, model_b, benchmark, scoring)
            asked_a, asked_b = a.identity.benchmarks[benchmark], b.identity.benchmarks[benchmark]
            found = None
            if asked_a.data.revision == asked_b.data.revision:
                found = paired(units_a, units_b)
            why = measure_mismatch(benchmark, asked_a, asked_b, units_a, units_b)
            if found is None or why:
                apart.append(_apart(a, b, where, units_a, units_b, why))
                continue
            rows.append(_row(a, b, where, units_a, units_b, found))
    return {
        "a": {"label": a.label, "run_id": a.run_id, "version": a.version, "model": a.model},
        "b": {"label": b.label, "run_id": b.run_id, "version": b.version, "model": b.model},
        "models": [list(p) for p in matched],
        "identity": identity_differences(store, a, b, matched),
        "rows": rows,
        "apart": apart,  # (benchmark, scoring) both sides have, on no shared item
        "note": NOTE,
    }


def _apart(
    a: Side,
    b: Side,
    where: tuple[str, str, str, str],
    ua: UnitValues,
    ub: UnitValues,
    why: str | None = None,
) -> dict[str, Any]:
    """Each side's own figures where the two are not paired: on no shared item, or (`why`)
    measuring different things."""
    model_a, model_b, benchmark, scoring = where
    ia, ib = ua.interval(), ub.interval()
    return {
        "reason": why,
        "model_a": model_a,
        "model_b": model_b,
        "benchmark": benchmark,
        "scoring": scoring,
        "items_a": item_set_of(a.manifest, benchmark).label,
        "items_b": item_set_of(b.manifest, benchmark).label,
        "a": ua.mean(),
        "a_low": ia.low if ia else None,
        "a_high": ia.high if ia else None,
        "b": ub.mean(),
        "b_low": ib.low if ib else None,
        "b_high": ib.high if ib else None,
    }


def _row(a: Side, b: Side, where, units_a: UnitValues, units_b: UnitValues, found) -> dict:
    model_a, model_b, benchmark, scoring = where
    first_a = _at_epoch(a.samples, model_a, benchmark, scoring)
    first_b = _at_epoch(b.samples, model_b, benchmark, scoring)
    both = first_a.merge(first_b, on="sample_id", suffixes=("_a", "_b"))
    flips_a = sorted(both[both.correct_a & ~both.correct_b].sample_id, key=_natural)
    flips_b = sorted(both[~both.correct_a & both.correct_b].sample_id, key=_natural)
    cost_a = a.cost_per_unit(model_a, benchmark, len(units_a))
    cost_b = b.cost_per_unit(model_b, benchmark, len(units_b))
    cost = None if cost_a is None or cost_b is None else cost_a + cost_b
    test = paired_test(units_a, units_b)
    assert test is not None  # `found` has shared units
    pool = min(pool_of(a, benchmark, len(units_a)), pool_of(b, benchmark, len(units_b)), key=_n)
    power = what_it_would_take(units_a, units_b, found, benchmark, cost, test, pool)
    return {
        "model_a": model_a,
        "model_b": model_b,
        "benchmark": benchmark,
        "scoring": scoring,
        "a": found.a,
        "b": found.b,
        "difference": found.difference,
        "low": found.low,
        "high": found.high,
        "no_interval": found.why,
        "p": test.p,
        "test": test.name,
        "epoch": EPOCH,
        "flips_a": flips_a,
        "flips_b": flips_b,
        "units": found.units,
        "only_in_a": len(units_a) - found.units,
        "only_in_b": len(units_b) - found.units,
        "mde": power.mde,
        "what_it_would_take": power.words,
    }


def measure_mismatch(
    benchmark: str,
    asked_a: BenchmarkIdentity,
    asked_b: BenchmarkIdentity,
    units_a: UnitValues,
    units_b: UnitValues,
) -> str | None:
    """Why two sides' headlines on `benchmark` do not measure the same thing, in one line
    (None: they do): a different protocol, or a different number of epochs behind each
    headline unit (a greedy epoch-0 pass@1 against a mean over five sampled epochs). Such
    sides are shown apart, each with its own figures, as sides on different items are."""
    if asked_a.protocol != asked_b.protocol:
        return (
            f"A was run under protocol {asked_a.protocol}, B under {asked_b.protocol}: "
            "they measure different things; compare runs of one protocol"
        )
    epochs_a, epochs_b = _headline_epochs(units_a), _headline_epochs(units_b)
    if epochs_a != epochs_b:
        return (
            f"A's headline is a mean over {epochs_a} epoch(s) a unit, B's over {epochs_b}: "
            "they measure different things; compare runs with the same --epochs"
        )
    return None


def _headline_epochs(units: UnitValues) -> int:
    return int(units.epochs.max()) if len(units) else 0


def pool_of(side: Side, benchmark: str, units: int) -> int | None:
    """The units of the dataset this side's run used: the benchmark's published size for its
    published data (never fewer than measured), the units measured for a whole dataset of the
    caller's own, unknown (None) for part of one."""
    bench = registry.get(benchmark) if benchmark in registry.names() else None
    dataset = side.manifest.datasets.get(benchmark)
    own = dataset is not None and dataset.source.startswith("dataset path ")
    if not own:
        published = bench.pool_units if bench else None
        return None if published is None else max(published, units)
    whole = not side.manifest.limit and not dict(side.identity.benchmarks[benchmark].options).get(
        "subset"
    )
    return units if whole else None


def _n(pool: int | None) -> float:
    return float("inf") if pool is None else pool


def _at_epoch(samples: pd.DataFrame, model: str, benchmark: str, scoring: str) -> pd.DataFrame:
    part = samples[
        (samples.model == model)
        & (samples.benchmark == benchmark)
        & (samples.scoring == scoring)
        & (samples.epoch == EPOCH)
    ]
    return part[["sample_id", "correct"]].astype({"correct": bool})


def _natural(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def identity_differences(
    store: Store, a: Side, b: Side, matched: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The fields of the two identities that differ ("why did my score move")."""
    fields: list[tuple[str, Any, Any]] = []
    ia, ib = a.identity, b.identity
    if sorted(ia.models) != sorted(ib.models):
        fields.append(("models", _words(list(ia.models)), _words(list(ib.models))))
    for model_a, model_b in matched:
        if model_a != model_b:
            fields.append(("model", model_a, model_b))
        fields.append(
            (
                _reported_label(model_a, model_b),
                _reported(store, a, model_a),
                _reported(store, b, model_b),
            )
        )
    fields.append(("judges", _words(ia.judges), _words(ib.judges)))
    fields.append(("max image side", ia.max_image_side, ib.max_image_side))
    for name in sorted(set(ia.benchmarks) | set(ib.benchmarks)):
        fa = _benchmark_fields(ia.benchmarks.get(name))
        fb = _benchmark_fields(ib.benchmarks.get(name))
        for what in _FIELDS:
            if what != "decodings" or fa["epochs"] == fb["epochs"]:
                fields.append((f"{name} {what}", fa[what], fb[what]))
    fields.append(("run code version", a.manifest.code_version, b.manifest.code_version))
    fields.append(("scored by code", a.about.code_version, b.about.code_version))
    fields.append(("scorer", _short(a.about.scorer_sha256), _short(b.about.scorer_sha256)))
    fields.append(
        (
            "records scored",
            _short(a.about.records_scored_sha256),
            _short(b.about.records_scored_sha256),
        )
    )
    return [
        {"field": name, "a": _show(x), "b": _show(y), "differs": x != y}
        for name, x, y in fields
        if x != y
    ]


def _reported(store: Store, side: Side, model: str) -> str:
    """The model names the provider reported in this side's answers of `model`."""
    prefix = f"{side.run_id}/completions/{layout.segment(model)}/"
    names: set[str] = set()
    for key in store.list(prefix)[:200]:  # a sample of the answers is enough to tell
        record = Record.read(store.get(key))
        if record is not None and record.model_reported:
            names.add(record.model_reported)
    return ", ".join(sorted(names)) or "?"


def _benchmark_fields(asked: BenchmarkIdentity | None) -> dict[str, Any]:
    """One benchmark's identity as `identity_differences` compares it (a side without the
    benchmark: nothing in each field)."""
    if asked is None:
        return dict(zip(_FIELDS, (None, "-", None, None, 0, None), strict=True))
    data = asked.data
    values = (
        data.revision,
        f"{data.samples} ({data.sample_ids_sha256[:12]})",
        dict(asked.options),
        asked.protocol,
        asked.epochs,
        [d.to_dict() for d in asked.decodings],
    )
    return dict(zip(_FIELDS, values, strict=True))


_FIELDS = ("dataset revision", "sample ids", "options", "protocol", "epochs", "decodings")


def _words(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values if v) or "none"


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else None


def _show(value: Any) -> Any:
    return value if isinstance(value, str | int | float | type(None)) else json.dumps(value)


WIDTH = 120  # a terminal's columns: every line of the printed comparison fits


def to_markdown(result: dict[str, Any], width: int = WIDTH) -> str:
    """The comparison as a person reads it, every line within `width` columns: A and B named
    once in a legend; models named once more in a legend (M1, M2, ...) where their names
    would widen the table past it; a missing interval a dash, its reason in the notes."""
    a, b = result["a"]["label"], result["b"]["label"]
    lines = ["# A vs B", ""]
    lines += _wrapped(f"- A: {fmt.md_text(a)}", width) + _wrapped(f"- B: {fmt.md_text(b)}", width)
    lines += ["", "## What differs", ""]
    if result["identity"]:
        lines += _identity_table(result["identity"], width)
    else:
        lines.append("Nothing: the same identity, models, scorer and records.")
    lines += ["", "## On the items both hold", ""]
    if result["rows"]:
        lines += _figures_table(result["rows"], width)
    else:
        lines.append("No shared items.")
    for u in result.get("apart", []):
        if u.get("reason"):
            lines += _wrapped(
                f"Not paired on {u['benchmark']} ({u['scoring']}): {u['reason']}. A: "
                f"{fmt.share(u['a'])} ({fmt.interval(u['a_low'], u['a_high'])}); B: "
                f"{fmt.share(u['b'])} ({fmt.interval(u['b_low'], u['b_high'])}).",
                width,
            )
            continue
        lines += _wrapped(
            f"No shared items on {u['benchmark']} ({u['scoring']}): A on {u['items_a']}, "
            f"{fmt.share(u['a'])} ({fmt.interval(u['a_low'], u['a_high'])}); B on "
            f"{u['items_b']}, {fmt.share(u['b'])} ({fmt.interval(u['b_low'], u['b_high'])}).",
            width,
        )
    lines += ["", *_wrapped(result["note"], width), ""]
    several = len({(r["model_a"], r["model_b"]) for r in result["rows"]}) > 1
    for r in result["rows"]:
        why = f"no interval: {r['no_interval']}; " if r["no_interval"] else ""
        model = f", {_models(r)}" if several else ""
        test = f"p by {r.get('test', 'exact McNemar')}; "
        lines += _wrapped(
            f"- {r['benchmark']} ({r['scoring']}{model}): {test}{why}{r['what_it_would_take']}.",
            width,
        )
        if r["only_in_a"] or r["only_in_b"]:
            lines += _wrapped(f"  Units only in A / B: {r['only_in_a']} / {r['only_in_b']}.", width)
        if r["flips_a"] or r["flips_b"]:
            lines += _wrapped(f"  {flips_line(r)}", width)
    return "\n".join(lines) + "\n"


def flips_line(row: dict[str, Any]) -> str:
    """The samples that flipped between A and B, counted and named as sample ids."""

    def told(ids: list[str], where: str) -> str:
        items = "item" if len(ids) == 1 else "items"
        named = f" (sample ids {', '.join(ids)})" if ids else ""
        return f"{len(ids)} {items} right {where}{named}"

    return (
        f"Epoch {row['epoch']}: {told(row['flips_a'], 'in A, wrong in B')}; "
        f"{told(row['flips_b'], 'in B, wrong in A')}"
    )


def _reported_label(model_a: str, model_b: str) -> str:
    """The row of the model version the provider reported in its responses (it may differ
    from the name asked: a dated snapshot behind an alias)."""
    if model_a == model_b:
        return f"{model_a}: model version its provider reported"
    return f"model version each provider reported (A: {model_a}; B: {model_b})"


def _wrapped(text: str, width: int) -> list[str]:
    import textwrap

    indent = " " * (len(text) - len(text.lstrip(" -")))
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=True
    ) or [""]


def _identity_table(identity: list[dict[str, Any]], width: int) -> list[str]:
    fields = [fmt.md_text(d["field"]) for d in identity]
    room = max(16, (width - max(len(f) for f in fields) - 10) // 2)
    lines = ["| field | A | B |", "|:---|:---|:---|"]
    for field, d in zip(fields, identity, strict=True):
        cells = [fmt.md_text(_cut(d["a"], room)), fmt.md_text(_cut(d["b"], room))]
        lines.append(f"| {field} | {cells[0]} | {cells[1]} |")
    return lines


def _figures_table(rows: list[dict[str, Any]], width: int) -> list[str]:
    pairs = [(r["model_a"], r["model_b"]) for r in rows]
    # A and B name their models where each side is one model: then no column repeats them
    named = all(a != b for a, b in pairs) and len(set(pairs)) == 1
    models = list(dict.fromkeys(m for pair in pairs for m in pair))
    columns = ["benchmark", "scoring", *([] if named else ["model"])]
    columns += ["A", "B", "A − B", "95% interval", "p", "units"]
    left = {"benchmark", "scoring", "model", "95% interval"}
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join(":---" if c in left else "---:" for c in columns) + "|"

    def render(name: dict[str, str]) -> list[str]:
        out = [head, rule]
        for r in rows:
            model = (
                name[r["model_a"]]
                if r["model_a"] == r["model_b"]
                else (f"{name[r['model_a']]} / {name[r['model_b']]}")
            )
            interval = (
                "—" if r["no_interval"] else f"{fmt.signed(r['low'])} to {fmt.signed(r['high'])}"
            )
            cells = [fmt.md_text(r["benchmark"]), fmt.md_text(r["scoring"])]
            cells += [] if named else [fmt.md_text(model)]
            cells += [fmt.share(r["a"]), fmt.share(r["b"]), fmt.signed(r["difference"])]
            cells += [interval, fmt.p_value(r["p"]), str(r["units"])]
            out.append("| " + " | ".join(cells) + " |")
        return out

    lines = render({m: m for m in models})
    if max(len(line) for line in lines) > width and not named:
        short = {m: f"M{i + 1}" for i, m in enumerate(models)}
        lines = render(short)
        lines += ["", *(f"{short[m]}: {fmt.md_text(m)}" for m in models)]
    return lines


def _models(row: dict[str, Any]) -> str:
    same = row["model_a"] == row["model_b"]
    return row["model_a"] if same else f"{row['model_a']} / {row['model_b']}"


def _cut(value: Any, width: int = 48) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def save(store: Store, result: dict[str, Any]) -> str:
    """Keep the comparison beside A's results version (`compare/…`, JSON and Markdown), where
    A's report shows it; returns the key of the JSON."""
    a = result["a"]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", result["b"]["label"])
    base = layout.results_key(a["run_id"], a["version"], f"compare/{slug}")
    if a["model"]:
        base += "--" + re.sub(r"[^A-Za-z0-9._-]+", "_", a["model"])
    store.put(base + ".json", json.dumps(result, indent=1).encode())
    store.put(base + ".md", to_markdown(result).encode())
    return base + ".json"
