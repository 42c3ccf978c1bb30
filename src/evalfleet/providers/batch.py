"""The providers' batch APIs behind one interface: many requests in one job, at half price,
answered within 24 hours (OpenAI Files + Batches, Anthropic Message Batches, Gemini inline
batchGenerateContent).

A job is made of `BatchLine`s, each a neutral request (parts + decoding) with a caller-made
`custom_id`. Each line's request body is exactly what the online client sends for the same
parts and decoding (`request_body` of the client modules), so a model answers a line as it
would answer online, and the simulator gives the same answer in both.

The life of a job, as the caller drives it (nothing here waits or retries: the SDKs' retries
are off, as for the online clients, and failures raise `ProviderError` in the same taxonomy):

1. `payload(lines, tag)`: the exact bytes `submit` will upload or send (the OpenAI JSONL file,
   the Anthropic or Gemini create body), to digest and record before submitting.
2. `submit(lines, tag) -> provider_id`. `tag` is the caller's job id: OpenAI keeps it in the
   batch metadata (`{"evalfleet_job": tag}`), Gemini in the display name; Anthropic batches
   carry no metadata, so it lives in the custom ids, which the caller makes with
   `custom_id(tag, index)`.
3. If the submission's answer was lost (a crash, a timeout), `find(tag, created_after)` looks
   for the job among the provider's recent batches (see each client for what it can promise).
4. `status(provider_id)` until its state is "ended", then `results(provider_id)`: one
   `LineResult` per line the provider reports, in no particular order.
5. `cancel(provider_id)` stops a job; its results then hold the lines done before the cancel
   and a retryable error for the rest.

Custom ids are the caller's: unique within a job (else `BatchInputError`), 1-64 characters of
`[A-Za-z0-9_-]` (Anthropic's rule, applied to every provider so a job can move between them).
`custom_id(tag, index)` makes such ids and embeds the tag, which `find` needs for Anthropic.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalfleet.core.types import ConfigError, Decoding, Part
from evalfleet.providers import plugins
from evalfleet.providers.clients import load_class
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse

CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Provider batch states, normalised: the four ways a job ends.
END_DETAILS = ("completed", "failed", "expired", "cancelled")
COUNT_KEYS = ("total", "processing", "succeeded", "errored", "cancelled", "expired")
EXPIRED_MESSAGE = "batch expired"
CANCELLED_MESSAGE = "batch cancelled"

# evalfleet's own batch APIs (each provider names its batch clients in `providers.plugins`)
BATCH_CLIENTS: dict[str, str] = {
    api: cls for p in plugins.BUILTIN for api, cls in p.batch_clients.items()
}


class BatchInputError(ValueError):
    """Lines that cannot make one job: duplicate or malformed custom ids, no lines, more lines
    or bytes than the provider takes (split the job), lines a model cannot take."""


class BatchNotEnded(RuntimeError):
    """`results` of a job that has not ended."""


@dataclass(frozen=True)
class BatchLine:
    """One request of a job: the caller's id for it, and the neutral request."""

    custom_id: str
    parts: Sequence[Part]
    decoding: Decoding


@dataclass(frozen=True)
class LineResult:
    """What became of one line: exactly one of `response` and `error` is set.

    Errors use the online taxonomy: a line the provider answered with an HTTP error gets the
    kind the online call would get for it (400 -> bad_request, 500 -> server_error, ...); a
    200 whose answer is filtered or empty gets content_filtered / empty_answer as online; a
    line never run because the job expired or was cancelled gets the retryable
    `ErrorKind.TIMEOUT` with the message "batch expired" or "batch cancelled".
    """

    custom_id: str
    response: ProviderResponse | None = None
    error: ProviderError | None = None

    def __post_init__(self) -> None:
        if (self.response is None) == (self.error is None):
            raise ValueError("a LineResult has exactly one of response and error")

    @property
    def ok(self) -> bool:
        return self.response is not None


@dataclass(frozen=True)
class BatchStatus:
    """Where a job is.

    `state` is "ended" once the provider will do nothing more with it (results can be read),
    else "in_progress". `detail` says more: once ended, one of "completed" (every line was
    answered, some possibly with errors), "failed" (the provider refused the job as a whole:
    `message` says why), "expired" (its 24-hour window passed first) or "cancelled"; while in
    progress, the provider's own word, lower case ("validating", "in_progress", "finalizing",
    "cancelling", "pending", "running"). `counts` has every key of `COUNT_KEYS`: total,
    processing (not answered yet), succeeded, errored, cancelled, expired (the last two are
    known only once ended, and only as the provider reports them).
    """

    provider_id: str
    state: Literal["in_progress", "ended"]
    detail: str
    counts: dict[str, int] = field(default_factory=dict)
    message: str = ""

    @property
    def ended(self) -> bool:
        return self.state == "ended"


def counts(**given: int) -> dict[str, int]:
    """Every COUNT_KEYS key, zero unless given."""
    out = dict.fromkeys(COUNT_KEYS, 0)
    out.update(given)
    return out


def tag_token(tag: str) -> str:
    """The tag as it appears in custom ids: its characters outside `[A-Za-z0-9_]` made `_`,
    cut to 32, then `_` and 12 hex digits of its SHA-256 (so two tags never share a token);
    no `-`, at most 45 characters."""
    if not tag:
        raise BatchInputError("a batch tag must not be empty")
    safe = re.sub(r"[^A-Za-z0-9_]", "_", tag)[:32]
    return f"{safe}_{hashlib.sha256(tag.encode()).hexdigest()[:12]}"


def custom_id(tag: str, index: int) -> str:
    """The custom id of line `index` of the job tagged `tag`: `{tag_token(tag)}-{index}`,
    valid for every provider (at most 64 characters of `[A-Za-z0-9_-]` for an index below
    10**18), unique within the job, and recognisable by `custom_id_matches`."""
    if index < 0:
        raise BatchInputError(f"a line index must not be negative, not {index}")
    return f"{tag_token(tag)}-{index}"


def custom_id_matches(tag: str, value: str) -> bool:
    """Whether `value` was made by `custom_id(tag, ...)`."""
    token, sep, index = value.rpartition("-")
    return bool(sep) and index.isdigit() and token == tag_token(tag)


def check_lines(lines: Sequence[BatchLine], max_lines: int) -> None:
    """Refuse, before anything is built, lines that cannot make one job."""
    if not lines:
        raise BatchInputError("a batch needs at least one line")
    if len(lines) > max_lines:
        raise BatchInputError(
            f"{len(lines)} lines: this provider takes at most {max_lines} in one batch; "
            "split the job"
        )
    seen: set[str] = set()
    for line in lines:
        if not CUSTOM_ID.fullmatch(line.custom_id):
            raise BatchInputError(
                f"custom id {line.custom_id!r}: use 1-64 characters of [A-Za-z0-9_-] "
                "(custom_id(tag, index) makes such ids)"
            )
        if line.custom_id in seen:
            raise BatchInputError(f"custom id {line.custom_id!r} is used twice in one batch")
        seen.add(line.custom_id)


def check_size(data: bytes, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise BatchInputError(
            f"the batch is {len(data)} bytes: this provider takes at most {max_bytes}; "
            "split the job"
        )
    return data


def never_run(custom_id: str, fate: str, request_id: str | None = None) -> LineResult:
    """The result of a line the provider never ran because the job expired or was cancelled:
    retryable (`ErrorKind.TIMEOUT`)."""
    message = EXPIRED_MESSAGE if fate == "expired" else CANCELLED_MESSAGE
    error = ProviderError(ErrorKind.TIMEOUT, message, request_id=request_id)
    return LineResult(custom_id, error=error)


class BatchClient(ABC):
    """One model's batch jobs through its provider's official SDK (retries off)."""

    #: the most lines one job may have
    max_lines: int
    #: the most bytes `payload` may be (the provider's file or request size limit)
    max_bytes: int

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        self.config = config
        self._api_key = api_key

    @abstractmethod
    def payload(self, lines: Sequence[BatchLine], tag: str) -> bytes:
        """The exact bytes `submit(lines, tag)` uploads or sends; deterministic. Raises
        `BatchInputError` for lines that cannot make one job and `ProviderError`
        (bad_request) for a part the model cannot take, as the online client would."""

    @abstractmethod
    async def submit(self, lines: Sequence[BatchLine], tag: str) -> str:
        """Create the job; returns the provider's id of it."""

    @abstractmethod
    async def status(self, provider_id: str) -> BatchStatus: ...

    @abstractmethod
    async def results(self, provider_id: str) -> list[LineResult]:
        """One result per line the provider reports, once the job has ended (else
        `BatchNotEnded`)."""

    @abstractmethod
    async def find(
        self, tag: str, created_after: float, expected_lines: int | None = None
    ) -> str | None:
        """The provider id of the newest job submitted with `tag` at or after `created_after`
        (unix seconds; give the time taken just before the submission, less a margin for
        clock skew), or None. For a submission whose answer was lost."""

    @abstractmethod
    async def cancel(self, provider_id: str) -> None:
        """Ask the provider to stop the job; a job that has ended is left as it is."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP connections."""

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}({self.config.id!r})"


def batch_client_class(api: str) -> type[BatchClient] | None:
    return load_class(BATCH_CLIENTS.get(api))


def check_batch_support(config: ModelConfig) -> None:
    """A one-line ConfigError if the model's provider has no batch API (checked when a run is
    planned, before anything is sent)."""
    if config.provider == "openai-compatible":
        raise ConfigError(
            f"model {config.id}: batch mode is not available for openai-compatible servers "
            "(vLLM, SGLang, gateways have no batch API); run it without batch mode"
        )
    if not config.batch_client:
        raise ConfigError(
            f"model {config.id} has api '{config.api}', which has no batch API; run it "
            "without batch mode"
        )


def make_batch_client(config: ModelConfig, api_key: str) -> BatchClient:
    """The batch client of a model's wire API: chat and responses -> OpenAI Files + Batches
    (endpoint /v1/chat/completions or /v1/responses), messages -> Anthropic Message Batches,
    generate_content -> Gemini inline batches."""
    check_batch_support(config)
    cls = load_class(config.batch_client)
    assert cls is not None  # checked above
    return cls(config, api_key)
