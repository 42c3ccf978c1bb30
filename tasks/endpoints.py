"""Which models' endpoints are down: every call to them failed for good, with an error of the
endpoint's (connection refused, timeouts, 5xx, a bad key, an unknown model), none answered.

A model whose first `DOWN_AFTER` calls all failed that way is not asked again in this run;
one with fewer calls whose every call failed that way is down too once they have landed.
Errors of a prompt's (a content filter, a context too long, a bad request) say nothing about
the endpoint and are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from providers.types import ErrorKind

DOWN_AFTER = 8
PROMPT_ERRORS = frozenset(
    {
        ErrorKind.BAD_REQUEST,
        ErrorKind.CONTENT_FILTERED,
        ErrorKind.CONTEXT_TOO_LONG,
        ErrorKind.EMPTY_ANSWER,
        ErrorKind.OUTPUT_LIMIT,  # the endpoint answered, and billed: the limit was too low
        ErrorKind.BAD_USAGE,  # the endpoint answered; its usage is what failed
    }
)


@dataclass
class _Calls:
    answered: int = 0
    endpoint_failed: int = 0
    prompt_failed: int = 0
    last_error: str = ""
    stopped: bool = False  # not asked again in this run


@dataclass
class Endpoints:
    """Outcomes per caller, as they land."""

    calls: dict[str, _Calls] = field(default_factory=dict)

    def land(self, caller: str, status: str, error_kind: str | None, error: str) -> bool:
        """Count one outcome; True when it makes `caller` down (its first `DOWN_AFTER` calls
        failed, each with an error of the endpoint's)."""
        calls = self.calls.setdefault(caller, _Calls())
        if status == "failed":
            if error_kind in PROMPT_ERRORS:
                calls.prompt_failed += 1
            else:
                calls.endpoint_failed += 1
                calls.last_error = f"{error_kind}: {error}" if error else str(error_kind)
        elif status in ("ok", "exists", "write_failed"):  # the endpoint answered
            calls.answered += 1
        if calls.endpoint_failed >= DOWN_AFTER and not calls.answered and not calls.stopped:
            calls.stopped = True
            return True
        return False

    def down(self) -> dict[str, str]:
        """Each caller every call to which failed with an endpoint's error: its last error."""
        return {
            caller: calls.last_error
            for caller, calls in self.calls.items()
            if calls.stopped
            or (calls.endpoint_failed and not calls.answered and not calls.prompt_failed)
        }
