"""Which models' endpoints are down, or keep asking to wait, so the run stops asking them.

Down: every call to it failed for good, with an error of the endpoint's (connection refused,
timeouts, 5xx, a bad key, an unknown model), none answered. A model whose first `DOWN_AFTER`
calls all failed that way is not asked again in this run; one with fewer calls whose every
call failed that way is down too once they have landed. Errors of a prompt's (a content
filter, a context too long, a bad request) say nothing about the endpoint and are not counted.

Waiting: a call that failed for good on rate limits was told to wait longer than an item may
wait (`--max-rate-limited-seconds`), or than its `Retry-After` allows; the model's other calls
would be told the same, so the model is not asked again in this run, whatever it answered
before, and the run says what the provider asked (`stop_line`), not that the endpoint is down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalfleet.providers.types import ErrorKind

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
RATE_LIMITED = str(ErrorKind.RATE_LIMITED)


@dataclass
class _Calls:
    answered: int = 0
    endpoint_failed: int = 0
    prompt_failed: int = 0
    last_error: str = ""
    stopped: bool = False  # not asked again in this run
    waiting: str = ""  # the rate limit that stopped it


@dataclass
class Endpoints:
    """Outcomes per caller, as they land."""

    calls: dict[str, _Calls] = field(default_factory=dict)

    def land(self, caller: str, status: str, error_kind: str | None, error: str) -> bool:
        """Count one outcome; True when it stops `caller`: its first `DOWN_AFTER` calls
        failed, each with an error of the endpoint's, or a call failed on rate limits."""
        calls = self.calls.setdefault(caller, _Calls())
        if status == "failed" and error_kind == RATE_LIMITED:
            calls.waiting = calls.waiting or (f"{RATE_LIMITED}: {error}" if error else RATE_LIMITED)
        elif status == "failed":
            if error_kind in PROMPT_ERRORS:
                calls.prompt_failed += 1
            else:
                calls.endpoint_failed += 1
                calls.last_error = f"{error_kind}: {error}" if error else str(error_kind)
        elif status in ("ok", "exists", "write_failed"):  # the endpoint answered
            calls.answered += 1
        down = calls.endpoint_failed >= DOWN_AFTER and not calls.answered
        if (down or calls.waiting) and not calls.stopped:
            calls.stopped = True
            return True
        return False

    def down(self) -> dict[str, str]:
        """Each caller stopped, or every call to which failed with an endpoint's error: why
        (`kind: message`, the rate limit first)."""
        return {
            caller: calls.waiting or calls.last_error
            for caller, calls in self.calls.items()
            if calls.stopped
            or (calls.endpoint_failed and not calls.answered and not calls.prompt_failed)
        }


def stop_line(caller: str, why: str) -> str:
    """What a run says of a model it stopped asking; `why` is `ENDPOINT (kind: message)` as
    the run's outcome records it (`RunOutcome.endpoints_down`)."""
    where, _, error = why.partition(f" ({RATE_LIMITED}: ")
    if error:
        return (
            f"{caller} at {where} kept answering 429, rate limited ({error.removesuffix(')')}), "
            "past what a call may wait (--max-rate-limited-seconds): it was not asked again in "
            "this run; wait until its limit resets"
        )
    return (
        f"every call to {caller} at {why} failed: it was not asked again; check that the "
        "endpoint is up and its key is right"
    )
