"""What scored a results version (`{run}/results/{version}/version.json`, copied to
`{run}/results/latest.json`) as one frozen, versioned type: the only module that knows its
JSON. `evalfleet.engine.scoring.tables` writes it; `evalfleet.engine.store.results` reads it.

`ResultsAbout.from_bytes` checks every field: bytes that are not one (cut short, garbage, a
field of the wrong type, no results version named) raise `UnreadableAbout` naming the file and
what is wrong. Versions written before a field was kept read with its default (before
`version.json` itself was kept, a version says only its name: `ResultsAbout(version)`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalfleet.core.json_fields import BadField, Fields
from evalfleet.engine.run.identity import Identity
from evalfleet.engine.store.damage import problem_of
from evalfleet.storage import layout

ABOUT_VERSION = 1  # absent from the files written before it was kept: 1 too


class UnreadableAbout(ValueError):
    """Bytes that are not a results version's about: `source` names the file, `problem`
    what is wrong."""

    def __init__(self, source: str, problem: str) -> None:
        self.source, self.problem = source, problem
        super().__init__(f"{source} is not a results version's about ({problem})")


@dataclass(frozen=True)
class ResultsAbout:
    """A results version: its name, when and by what code it was scored, from which records,
    its files, and the run's identity then (so two versions of a grown run compare)."""

    version: str  # the results version's name, "v-" and 12 hex digits
    written_at: str | None = None
    records_scored_sha256: str | None = None
    scorer_sha256: str | None = None
    code_version: str | None = None
    files: tuple[str, ...] = ()  # every file of the version, version.json among them
    identity: Identity | None = None  # None in versions written before it was kept
    about_version: int = ABOUT_VERSION

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "about_version": self.about_version,
            "version": self.version,
            "written_at": self.written_at,
            "records_scored_sha256": self.records_scored_sha256,
            "scorer_sha256": self.scorer_sha256,
            "code_version": self.code_version,
            "files": list(self.files),
        }
        if self.identity is not None:
            out["identity"] = self.identity.to_dict()
        return out

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), indent=2).encode()

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "version.json") -> ResultsAbout:
        """The about, or UnreadableAbout naming `source` and what is wrong with it."""
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UnreadableAbout(source, f"not JSON: {problem_of(exc)}") from None
        version = raw.get("version") if isinstance(raw, dict) else None
        if not isinstance(version, str) or not layout.is_results_version(version):
            raise UnreadableAbout(source, "no results version named in it")
        try:
            return cls._of(Fields(raw))
        except BadField as exc:
            raise UnreadableAbout(source, str(exc)) from None

    @classmethod
    def _of(cls, f: Fields) -> ResultsAbout:
        about_version = f.integer("about_version", 1)
        if about_version > ABOUT_VERSION:
            raise BadField(f"about_version {about_version}: written by a newer evalfleet")
        if about_version < 1:
            raise BadField(f"about_version is {about_version}, not 1 to {ABOUT_VERSION}")
        identity = f.optional_fields("identity")
        return cls(
            version=f.text("version"),
            written_at=f.text("written_at", None),
            records_scored_sha256=f.text("records_scored_sha256", None),
            scorer_sha256=f.text("scorer_sha256", None),
            code_version=f.text("code_version", None),
            files=f.texts("files"),
            identity=Identity.of(identity) if identity is not None else None,
            about_version=about_version,
        )
