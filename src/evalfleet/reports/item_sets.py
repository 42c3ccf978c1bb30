"""Which items a result was measured on: two results are comparable only on the same items.

An item set is one benchmark's dataset fingerprint (the Hub revision, or the sha256 of a local
copy's files), the exact sample ids, and what changes what is asked of them (the protocol and
the benchmark's options, DatBench's subset file among them). Its `key` is a digest of those;
its `label` says the same in words, e.g. `first 10 samples of sha256:c2211ff4…`.

An item is (dataset fingerprint, sample id): two runs on different fingerprints share no item,
whatever their ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalfleet.benchmarks import registry
from evalfleet.engine.store.manifest_types import Manifest


@dataclass(frozen=True)
class ItemSet:
    key: str  # "is-" + 12 hex digits
    label: str
    revision: str  # the dataset fingerprint
    full: bool  # every sample of the dataset at its source: no --limit, no subset
    samples: int


def item_set_of(manifest: Manifest, benchmark: str) -> ItemSet:
    """The item set one benchmark of a run asked (from its manifest)."""
    asked = manifest.identity.benchmarks[benchmark]
    data, options = asked.data, dict(asked.options)
    what = {
        "revision": data.revision,
        "sample_ids_sha256": data.sample_ids_sha256,
        "protocol": asked.protocol,
        "options": options,
    }
    key = "is-" + hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]
    limit = manifest.limit
    subset = options.get("subset")
    revision = data.revision
    short = short_revision(revision)
    samples = data.samples
    dataset = manifest.datasets.get(benchmark)
    source = dataset.source if dataset is not None else ""
    if limit:
        label = f"first {samples} samples of {short}"
    elif subset:
        label = f"subset {subset} ({samples} samples) of {short}"
    elif source.startswith("dataset path "):
        label = f"{samples} samples, dataset at {source.removeprefix('dataset path ')} ({short})"
    else:
        label = f"{samples} samples at {short}"
    extra = _asked_differently(benchmark, asked.protocol, options)
    if extra:
        label += f"; {extra}"
    return ItemSet(key, label, revision, not limit and not subset, samples)


def short_revision(revision: str) -> str:
    """`sha256:c2211ff4…` or the first 12 characters of a Hub commit."""
    kind, _, digest = revision.partition(":")
    if digest:
        return f"{kind}:{digest[:8]}…"
    return revision[:12] + ("…" if len(revision) > 12 else "")


def _asked_differently(benchmark: str, protocol: str | None, options: Mapping[str, Any]) -> str:
    """The protocol and options that differ from the benchmark's defaults, in words."""
    if benchmark not in registry.names():
        return ""
    bench = registry.get(benchmark)
    defaults = bench.options().model_dump(mode="json")
    words = [
        f"{name}={_word(value)}"
        for name, value in sorted(options.items())
        if name != "subset" and defaults.get(name) != value
    ]
    if protocol and protocol != bench.protocol:
        words.insert(0, f"protocol {protocol}")
    return ", ".join(words)


def _word(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
