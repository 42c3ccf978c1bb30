"""What happened to a call that got no HTTP answer: it timed out, or its connection was refused,
reset or closed. The SDKs' own exception types mislead here: over aiohttp, the openai SDK
raises `APITimeoutError` for a reset or a refused connection (its transport wraps every aiohttp
error as `ConnectTimeout`), and the anthropic SDK says only "Connection error.". So the error's
chain of causes is read, and its deepest telling link decides."""

from __future__ import annotations

import os

from evalfleet.providers.types import ErrorKind, ProviderError

_CLOSED = ("ServerDisconnectedError", "RemoteProtocolError")  # aiohttp's, httpx's


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes, outermost first: its `__cause__`, else the exception it was raised
    while handling, else one it wraps as its argument (httpcore's `ReadError(error)`)."""
    links: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and not any(link is seen for seen in links):
        links.append(link)
        wrapped = link.args[0] if link.args and isinstance(link.args[0], BaseException) else None
        context = None if link.__suppress_context__ else link.__context__
        link = link.__cause__ or context or wrapped
    return links


def _told(link: BaseException) -> ProviderError | None:
    """The error one link tells of, if it tells."""
    name = type(link).__name__
    timed_out = name.endswith(("Timeout", "TimeoutError")) and not isinstance(link, OSError)
    if isinstance(link, TimeoutError) or timed_out:
        return ProviderError(ErrorKind.TIMEOUT, "request timed out")
    if isinstance(link, OSError):  # by its errno: asyncio's strerror is "Connect call failed"
        errno = link.errno
        known = isinstance(errno, int) and errno > 0
        reason = os.strerror(errno) if errno and known else (link.strerror or str(link) or name)
        return ProviderError(ErrorKind.CONNECTION, f"connection error: {reason.lower()}")
    if name in _CLOSED:
        return ProviderError(
            ErrorKind.CONNECTION, "connection error: the server closed the connection unanswered"
        )
    return None


def transport_error(exc: BaseException) -> ProviderError | None:
    """The timeout or connection error `exc` stands for, named by its deepest telling cause
    (a reset is a reset, whatever the SDK called it); None if no link tells."""
    for link in reversed(_chain(exc)):
        told = _told(link)
        if told is not None:
            return told
    return None
