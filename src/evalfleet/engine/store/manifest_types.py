"""A run's manifest (`{run}/manifest.json`) as one frozen, versioned type: the only module that
knows its JSON. Readers take a `Manifest` and read attributes; writers build one and store
`to_bytes()`.

`Manifest.from_bytes` checks every field it reads: bytes that are not a manifest (cut short,
garbage, a field of the wrong type) raise `UnreadableManifest` naming the file and what is
wrong, and a manifest of another version raises `OtherManifestVersion`. A field that manifests
written before it existed lack reads as its default.

The request inside is kept as it was stored and read as an `EvalRequest` when first asked
for (`Manifest.request`): a run whose benchmark is no longer installed is still listed, shown
and named, and only the commands that need its request refuse it (pydantic's one line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evalfleet.benchmarks.interface import Exclusion
from evalfleet.core.json_fields import BadField, Fields
from evalfleet.engine.run.identity import Identity
from evalfleet.engine.store.damage import problem_of

if TYPE_CHECKING:
    from evalfleet.engine.run.request import EvalRequest

MANIFEST_VERSION = 2


class UnreadableManifest(ValueError):
    """Bytes that are not a manifest: `source` names the file, `problem` what is wrong."""

    def __init__(self, source: str, problem: str) -> None:
        self.source, self.problem = source, problem
        super().__init__(f"{source} is not a manifest ({problem})")


class OtherManifestVersion(UnreadableManifest):
    """A manifest of a version this evalfleet does not read (1: before version 2)."""

    def __init__(self, source: str, version: int) -> None:
        self.version = version
        self.newer = version > MANIFEST_VERSION
        super().__init__(source, f"manifest version {version}, not {MANIFEST_VERSION}")


@dataclass(frozen=True)
class DatasetInfo:
    """Where one benchmark's data came from, and the rows left out of it."""

    source: str = ""
    revision: str = ""
    samples: int = 0
    excluded: tuple[Exclusion, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "revision": self.revision,
            "samples": self.samples,
            "excluded": [{"id": e.id, "reason": e.reason} for e in self.excluded],
        }

    @classmethod
    def of(cls, f: Fields) -> DatasetInfo:
        return cls(
            source=f.text("source", ""),
            revision=f.text("revision", ""),
            samples=f.count("samples", 0),
            excluded=f.items("excluded", lambda e: Exclusion(e.text("id"), e.text("reason", ""))),
        )


@dataclass(frozen=True)
class ModelInfo:
    """A model as the run resolved it: its provider, the name its API knows, where."""

    api_model: str
    provider: str = ""
    base_url: str | None = None
    simulated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "api_model": self.api_model,
            "base_url": self.base_url,
            "simulated": self.simulated,
        }

    @classmethod
    def of(cls, f: Fields) -> ModelInfo:
        return cls(
            api_model=f.text("api_model"),
            provider=f.text("provider", ""),
            base_url=f.text("base_url", None),
            simulated=f.flag("simulated", False),
        )


@dataclass(frozen=True)
class Event:
    """One entry of the run's history: "created", "resumed" or "extended"."""

    event: str
    at: str
    code_version: str = ""
    reused: int = 0  # answers `--reuse-from` copied in from `reused_from` (0 before it was kept)
    reused_from: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": self.event,
            "at": self.at,
            "code_version": self.code_version,
        }
        if self.reused or self.reused_from:  # only then: other manifests stay as they were
            out.update(reused=self.reused, reused_from=list(self.reused_from))
        return out

    @classmethod
    def of(cls, f: Fields) -> Event:
        return cls(
            f.text("event"),
            f.text("at", ""),
            f.text("code_version", ""),
            f.count("reused", 0),
            f.texts("reused_from"),
        )


@dataclass(frozen=True)
class Beat:
    """The last heartbeat of the process working on the run (`engine.store.heartbeat`)."""

    state: str  # "running", or the final state its command wrote
    at: str  # ISO time with its zone
    interval_s: float = 10.0
    started_at: str | None = None  # when its command began: which command it is
    host: str | None = None
    pid: int | None = None
    flow_run_id: str | None = None

    @property
    def at_time(self) -> datetime:
        return datetime.fromisoformat(self.at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "at": self.at,
            "interval_s": self.interval_s,
            "started_at": self.started_at,
            "host": self.host,
            "pid": self.pid,
            "flow_run_id": self.flow_run_id,
        }

    @classmethod
    def of(cls, f: Fields) -> Beat:
        at = f.text("at")
        try:
            zone = datetime.fromisoformat(at).tzinfo
        except ValueError:
            raise BadField(f"{f.where('at')} is {at[:40]!r}, not an ISO time") from None
        if zone is None:
            raise BadField(f"{f.where('at')} is {at[:40]!r}, a time without its zone")
        return cls(
            state=f.text("state"),
            at=at,
            interval_s=f.number("interval_s", 10.0),
            started_at=f.text("started_at", None),
            host=f.text("host", None),
            pid=f.integer("pid", None),
            flow_run_id=f.text("flow_run_id", None),
        )


@dataclass(frozen=True)
class Manifest:
    """What a run is: its id, identity and request, its data and models, its history and
    its last heartbeat. `stored_request` is the request as stored (JSON); read `request`."""

    run_id: str
    identity: Identity
    stored_request: Mapping[str, Any]
    datasets: Mapping[str, DatasetInfo] = field(default_factory=dict)
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    history: tuple[Event, ...] = ()
    created_at: str | None = None
    code_version: str | None = None
    heartbeat: Beat | None = None
    manifest_version: int = MANIFEST_VERSION

    @cached_property
    def request(self) -> EvalRequest:
        """The request, validated now (pydantic's ValidationError if it does not read)."""
        from evalfleet.engine.run.request import EvalRequest

        return EvalRequest(**self.stored_request)

    @classmethod
    def of_request(cls, request: EvalRequest, **fields: Any) -> Manifest:
        """A new manifest of `request` (the other fields as given)."""
        manifest = cls(stored_request=request.model_dump(mode="json"), **fields)
        manifest.__dict__["request"] = request  # `request`'s cache: it is valid already
        return manifest

    @property
    def limit(self) -> int | None:
        """The request's sample limit, read without validating the whole request (which needs
        every benchmark it names installed): what the leaderboard labels its rows with."""
        return self.stored_request.get("limit")  # checked on read

    @property
    def api_models(self) -> dict[str, str]:
        """Model id -> the name its API knows."""
        return {model: info.api_model for model, info in self.models.items()}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manifest_version": self.manifest_version,
            "run_id": self.run_id,
            "created_at": self.created_at,
            "identity": self.identity.to_dict(),
            "request": dict(self.stored_request),
            "code_version": self.code_version,
            "datasets": {name: d.to_dict() for name, d in self.datasets.items()},
            "models": {name: m.to_dict() for name, m in self.models.items()},
            "history": [e.to_dict() for e in self.history],
        }
        if self.heartbeat is not None:  # none until its first command beats
            out["heartbeat"] = self.heartbeat.to_dict()
        return out

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "manifest.json") -> Manifest:
        """The manifest, or UnreadableManifest naming `source` and what is wrong with it."""
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UnreadableManifest(source, f"not JSON: {problem_of(exc)}") from None
        if not isinstance(raw, dict):
            raise UnreadableManifest(source, "not a JSON object")
        if "manifest_version" not in raw and "run_id" not in raw:  # `{}`: no run's at all
            raise UnreadableManifest(source, "neither manifest_version nor run_id")
        version = raw.get("manifest_version", 1)  # the first manifests had none: version 1
        if isinstance(version, bool) or not isinstance(version, int):
            raise UnreadableManifest(source, "manifest_version is not an integer")
        if version != MANIFEST_VERSION:
            raise OtherManifestVersion(source, version)
        missing = [
            k for k in ("identity", "request", "datasets") if not isinstance(raw.get(k), dict)
        ]
        if missing:
            raise UnreadableManifest(source, f"no {', '.join(missing)}")
        try:
            return cls._of(Fields(raw))
        except BadField as exc:
            raise UnreadableManifest(source, str(exc)) from None

    @classmethod
    def _of(cls, f: Fields) -> Manifest:
        beat = f.optional_fields("heartbeat")
        f.fields("request").count("limit", None)  # read by `limit`
        return cls(
            run_id=f.text("run_id", ""),
            identity=Identity.of(f.fields("identity")),
            stored_request=f.json_object("request"),
            datasets=f.each("datasets", DatasetInfo.of),
            models=f.each("models", ModelInfo.of),
            history=f.items("history", Event.of),
            created_at=f.text("created_at", None),
            code_version=f.text("code_version", None),
            heartbeat=Beat.of(beat) if beat is not None else None,
        )
