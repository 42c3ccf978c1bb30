"""A run's identity: everything that changes what is asked.

A run id is a contract. Its identity (models, judge, benchmarks with their options, each
dataset's revision or fingerprint and sample ids, protocols and decodings) is fixed when the
run is created; a later request under the same id must ask the same thing, or grow it on
purpose with `extend` (more models, more epochs). Anything else is refused before a byte is
written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalfleet.core.types import ConfigError

if TYPE_CHECKING:
    from evalfleet.engine.run.items import BenchmarkData
    from evalfleet.engine.run.request import EvalRequest


class RunError(ConfigError):
    """A run id that cannot be used with this request (one line, naming the way out)."""


def run_identity(request: EvalRequest, data: dict[str, BenchmarkData]) -> dict[str, Any]:
    """Everything that changes what is asked: equal identities mean one and the same run.
    Extra judges (`extra_judges`, in the order they were added) appear only when there are
    some, so the identity of a run with one judge reads as it always did."""
    extra = {"extra_judges": list(request.extra_judges)} if request.extra_judges else {}
    return {
        "models": sorted(request.models),
        "judge_model": request.judge_model,
        **extra,
        "max_image_side": request.max_image_side,
        "benchmarks": {
            name: {
                "options": d.options.model_dump(mode="json"),
                "protocol": d.protocol,
                "decodings": [dec.to_dict() for dec in d.decodings],
                "data": d.identity(),
            }
            for name, d in sorted(data.items())
        },
    }


def identity_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two identities, in words."""
    changes = []
    for field_name in ("models", "judge_model", "extra_judges", "max_image_side"):
        before, after = old.get(field_name), new.get(field_name)
        if field_name == "extra_judges":
            before, after = before or [], after or []
        if before != after:
            changes.append(f"{field_name}: {before} -> {after}")
    old_b, new_b = old.get("benchmarks", {}), new.get("benchmarks", {})
    if sorted(old_b) != sorted(new_b):
        changes.append(f"benchmarks: {sorted(old_b)} -> {sorted(new_b)}")
    for name in sorted(set(old_b) & set(new_b)):
        a, b = old_b[name], new_b[name]
        if a.get("data") != b.get("data"):
            changes.append(f"{name} data: {_data_words(a.get('data'))} -> {_data_words(b['data'])}")
        if a.get("options") != b.get("options"):
            changes.append(f"{name} options: {a.get('options')} -> {b.get('options')}")
        if a.get("protocol") != b.get("protocol"):
            changes.append(f"{name} protocol: {a.get('protocol')} -> {b.get('protocol')}")
        elif a.get("decodings") != b.get("decodings"):
            old_n, new_n = len(a.get("decodings", [])), len(b.get("decodings", []))
            what = f"{old_n} -> {new_n} epochs" if old_n != new_n else "sampling settings"
            changes.append(f"{name} decodings: {what}")
    return changes


def _data_words(data: dict[str, Any] | None) -> str:
    if not data:
        return "?"
    revision = str(data.get("revision", "?"))
    short = revision[:19] + "…" if len(revision) > 20 else revision
    ids = str(data.get("sample_ids_sha256"))[:8]
    return f"{data.get('samples')} samples at {short} (ids {ids})"


def is_extension(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """New asks everything old asked, plus more models, more epochs and/or more judges (a
    first one, or more after it)."""
    if not set(old.get("models", [])) <= set(new.get("models", [])):
        return False
    old_judges, new_judges = old.get("extra_judges") or [], new.get("extra_judges") or []
    if new_judges[: len(old_judges)] != old_judges:
        return False
    if old.get("max_image_side") != new.get("max_image_side"):
        return False
    if old.get("judge_model") not in (None, new.get("judge_model")):  # a first judge may come
        return False
    old_b, new_b = old.get("benchmarks", {}), new.get("benchmarks", {})
    if sorted(old_b) != sorted(new_b):
        return False
    for name, a in old_b.items():
        b = new_b[name]
        if any(a.get(k) != b.get(k) for k in ("data", "options", "protocol")):
            return False
        old_dec, new_dec = a.get("decodings", []), b.get("decodings", [])
        if new_dec[: len(old_dec)] != old_dec:
            return False
    return True


def check_identity(run_id: str, old: dict[str, Any], new: dict[str, Any], extend: bool) -> bool:
    """True if `new` extends the run, False if it is the same; else a one-line RunError."""
    if old == new:
        return False
    if extend and is_extension(old, new):
        return True
    detail = "; ".join(identity_changes(old, new)) or "the identity format changed"
    if is_extension(old, new):
        fix = "pass --extend to grow the run, or choose a new --run-id"
    else:
        fix = "resume it with the same settings, or choose a new --run-id"
    raise RunError(f"run id {run_id} already exists with a different request ({detail}): {fix}")
