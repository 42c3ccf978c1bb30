"""`evalfleet compare A B`: did a score move, by how much, and why.

A side is `RUN_ID`, `RUN_ID:MODEL` (so two models of one run compare too) or
`RUN_ID@VERSION[:MODEL]` (a results version other than the latest: two versions of one run
show a scorer change). First what differs between the two identities, field by field; then,
per benchmark and scoring mode, on the items both sides hold:

- each side's accuracy (the mean score over the items, failed calls counting 0, as in the
  tables) and the difference, with a paired bootstrap 95 % interval that resamples groups
  (`metrics.paired`: ZeroBench's main questions for its subquestions; a sample's epochs stay
  together);
- an exact McNemar p-value on per-sample correctness at epoch 0 (the greedy epoch under the
  zerobench-paper protocol), with the samples that flipped each way;
- how many items only one side has.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.types import ConfigError
from engine.identity import RunError
from engine.manifest import read_manifest
from engine.results import read_version_table, results_about
from metrics.paired import mcnemar_exact, paired_difference
from storage import layout
from storage.base import Store

EPOCH = 0  # McNemar's epoch
NOTE = (
    "Accuracy is the mean score over the items both sides hold (failed calls count 0); the "
    "interval is a paired bootstrap (2,000 draws) resampling groups; McNemar's exact test uses "
    "per-sample correctness at epoch 0, and the flips are its discordant samples."
)


@dataclass
class Side:
    run_id: str
    version: str
    model: str | None
    manifest: dict[str, Any]
    about: dict[str, Any]
    samples: pd.DataFrame

    @property
    def label(self) -> str:
        text = f"{self.run_id}@{self.version}"
        return f"{text}:{self.model}" if self.model else text

    def models(self) -> list[str]:
        return list(self.manifest["request"]["models"])


def parse_side(text: str) -> tuple[str, str | None, str | None]:
    """RUN_ID[@VERSION][:MODEL] -> (run_id, version, model)."""
    head, _, model = text.partition(":")
    run_id, _, version = head.partition("@")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run_id or ""):
        raise ConfigError(f"cannot read {text!r}: write RUN_ID, RUN_ID:MODEL or RUN_ID@VERSION")
    return run_id, version or None, model or None


def load_side(store: Store, text: str) -> Side:
    run_id, version, model = parse_side(text)
    manifest = read_manifest(store, run_id)
    if manifest is None:
        raise RunError(
            f"no run '{run_id}' in {store.describe()}: `evalfleet runs --store {store.url}` "
            "lists the runs there"
        )
    about = results_about(store, run_id, version)
    version = about["version"]
    samples = read_version_table(store, run_id, version, "samples.parquet")
    if model is not None and model not in manifest["request"]["models"]:
        models = ", ".join(manifest["request"]["models"])
        raise ConfigError(f"run {run_id} has no model {model}: it has {models}")
    return Side(run_id, version, model, manifest, about, samples)


def pairs(a: Side, b: Side) -> list[tuple[str, str]]:
    """Which model of A is compared with which of B."""
    if a.model and b.model:
        return [(a.model, b.model)]
    if a.model or b.model:
        given, other = (a, b) if a.model else (b, a)
        if given.model in other.models():
            found = [given.model]
        elif len(other.models()) == 1:
            found = other.models()
        else:
            raise ConfigError(
                f"run {other.run_id} has several models: name one, {other.run_id}:MODEL"
            )
        return [(given.model, found[0])] if given is a else [(found[0], given.model)]
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
    rows, unpaired = [], []
    for model_a, model_b in matched:
        for (benchmark, scoring), part_a in a.samples[a.samples.model == model_a].groupby(
            ["benchmark", "scoring"], sort=False
        ):
            part_b = b.samples[
                (b.samples.model == model_b)
                & (b.samples.benchmark == benchmark)
                & (b.samples.scoring == scoring)
            ]
            if part_b.empty:
                continue
            common = part_a.merge(part_b, on=["sample_id", "epoch"])
            if common.empty:
                unpaired.append(
                    {
                        "model_a": model_a,
                        "model_b": model_b,
                        "benchmark": benchmark,
                        "scoring": scoring,
                        "only_in_a": len(part_a),
                        "only_in_b": len(part_b),
                    }
                )
                continue
            rows.append(_row(model_a, model_b, benchmark, scoring, part_a, part_b))
    return {
        "a": {"label": a.label, "run_id": a.run_id, "version": a.version, "model": a.model},
        "b": {"label": b.label, "run_id": b.run_id, "version": b.version, "model": b.model},
        "models": [list(p) for p in matched],
        "identity": identity_differences(store, a, b, matched),
        "rows": rows,
        "unpaired": unpaired,  # (benchmark, scoring) both sides have, on no common item
        "note": NOTE,
    }


def _row(
    model_a: str, model_b: str, benchmark: str, scoring: str, a: pd.DataFrame, b: pd.DataFrame
) -> dict[str, Any]:
    keys = ["sample_id", "epoch"]
    both = a.merge(b, on=keys, suffixes=("_a", "_b"))
    only_in_a = len(a) - len(both)
    only_in_b = len(b) - len(both)
    clusters = both.cluster_a if "cluster_a" in both else both.sample_id  # older tables
    difference = paired_difference(
        list(clusters), list(both.value_a.astype(float)), list(both.value_b.astype(float))
    )
    first = both[both.epoch == EPOCH]
    flips_a = sorted(first[first.correct_a & ~first.correct_b].sample_id, key=_natural)
    flips_b = sorted(first[~first.correct_a & first.correct_b].sample_id, key=_natural)
    return {
        "model_a": model_a,
        "model_b": model_b,
        "benchmark": benchmark,
        "scoring": scoring,
        "a": difference.a,
        "b": difference.b,
        "difference": difference.difference,
        "low": difference.low,
        "high": difference.high,
        "p": mcnemar_exact(len(flips_a), len(flips_b)),
        "epoch": EPOCH,
        "flips_a": flips_a,
        "flips_b": flips_b,
        "items": difference.items,
        "groups": difference.groups,
        "only_in_a": only_in_a,
        "only_in_b": only_in_b,
    }


def _natural(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def identity_differences(
    store: Store, a: Side, b: Side, matched: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The fields of the two identities that differ ("why did my score move")."""
    fields: list[tuple[str, Any, Any]] = []
    ia, ib = a.manifest["identity"], b.manifest["identity"]
    for model_a, model_b in matched:
        if model_a != model_b:
            fields.append(("model", model_a, model_b))
        fields.append(
            (
                f"{model_a} version reported",
                _reported(store, a, model_a),
                _reported(store, b, model_b),
            )
        )
    judges_a = [ia.get("judge_model"), *(ia.get("extra_judges") or [])]
    judges_b = [ib.get("judge_model"), *(ib.get("extra_judges") or [])]
    fields.append(("judges", _words(judges_a), _words(judges_b)))
    fields.append(("max image side", ia.get("max_image_side"), ib.get("max_image_side")))
    for name in sorted(set(ia["benchmarks"]) | set(ib["benchmarks"])):
        ba, bb = ia["benchmarks"].get(name, {}), ib["benchmarks"].get(name, {})
        da, db = ba.get("data") or {}, bb.get("data") or {}
        fields.append((f"{name} dataset revision", da.get("revision"), db.get("revision")))
        fields.append(
            (
                f"{name} sample ids",
                _ids(da),
                _ids(db),
            )
        )
        fields.append((f"{name} options", ba.get("options"), bb.get("options")))
        fields.append((f"{name} protocol", ba.get("protocol"), bb.get("protocol")))
        fields.append((f"{name} decodings", ba.get("decodings"), bb.get("decodings")))
    fields.append(
        ("run code version", a.manifest.get("code_version"), b.manifest.get("code_version"))
    )
    fields.append(("scored by code", a.about.get("code_version"), b.about.get("code_version")))
    fields.append(
        ("scorer", _short(a.about.get("scorer_sha256")), _short(b.about.get("scorer_sha256")))
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
        try:
            record = json.loads(store.get(key) or b"{}")
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("model_reported"):
            names.add(record["model_reported"])
    return ", ".join(sorted(names)) or "?"


def _ids(data: dict[str, Any]) -> str:
    if not data:
        return "-"
    return f"{data.get('samples')} ({str(data.get('sample_ids_sha256'))[:12]})"


def _words(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values if v) or "none"


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else None


def _show(value: Any) -> Any:
    return value if isinstance(value, str | int | float | type(None)) else json.dumps(value)


def to_markdown(result: dict[str, Any]) -> str:
    a, b = result["a"]["label"], result["b"]["label"]
    lines = [f"# {a} vs {b}", "", "## What differs", ""]
    if result["identity"]:
        frame = pd.DataFrame(result["identity"])[["field", "a", "b"]]
        lines.append(frame.rename(columns={"a": a, "b": b}).to_markdown(index=False))
    else:
        lines.append("Nothing: the same identity, models and scorer.")
    lines += ["", "## Per benchmark and scoring mode, on the items both hold", ""]
    table = [
        {
            "model": r["model_a"]
            if r["model_a"] == r["model_b"]
            else f"{r['model_a']} / {r['model_b']}",
            "benchmark": r["benchmark"],
            "scoring": r["scoring"],
            "A": round(r["a"], 4),
            "B": round(r["b"], 4),
            "A - B": round(r["difference"], 4),
            "95% interval": f"{r['low']:+.4f} to {r['high']:+.4f}",
            "McNemar p": f"{r['p']:.4g}",
            "right only in A": len(r["flips_a"]),
            "right only in B": len(r["flips_b"]),
            "items": r["items"],
            "only in A / B": f"{r['only_in_a']} / {r['only_in_b']}",
        }
        for r in result["rows"]
    ]
    lines.append(pd.DataFrame(table).to_markdown(index=False) if table else "No common items.")
    for u in result.get("unpaired", []):
        lines.append(
            f"No common items on {u['benchmark']} ({u['scoring']}): {u['only_in_a']} only in A, "
            f"{u['only_in_b']} only in B (another dataset or sample set?)."
        )
    lines += ["", result["note"], ""]
    for r in result["rows"]:
        if r["flips_a"] or r["flips_b"]:
            only_a, only_b = ", ".join(r["flips_a"]) or "-", ", ".join(r["flips_b"]) or "-"
            lines.append(
                f"- {r['benchmark']} ({r['scoring']}), epoch {r['epoch']}: right only in A: "
                f"{only_a}; right only in B: {only_b}"
            )
    return "\n".join(lines) + "\n"


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
