"""Sliding-window (60 s) requests-per-minute and tokens-per-minute limits, one window per model."""

from __future__ import annotations

from collections import deque

from evalfleet.simulator.protocol import LimitState


class _Window:
    __slots__ = ("requests", "tokens", "token_sum")

    def __init__(self) -> None:
        self.requests: deque[float] = deque()
        self.tokens: deque[tuple[float, int]] = deque()
        self.token_sum = 0

    def prune(self, horizon: float) -> None:
        while self.requests and self.requests[0] <= horizon:
            self.requests.popleft()
        while self.tokens and self.tokens[0][0] <= horizon:
            self.token_sum -= self.tokens.popleft()[1]


class RateLimiter:
    """Admits a request if both its model's request and token windows have room.

    Tokens are the request's input plus output tokens, counted when it is admitted.
    """

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._windows: dict[str, _Window] = {}

    def reset(self) -> None:
        self._windows.clear()

    def check(
        self, model: str, rpm: int | None, tpm: int | None, tokens: int, now: float
    ) -> tuple[bool, LimitState]:
        win = self._windows.get(model)
        if win is None:
            win = self._windows[model] = _Window()
        win.prune(now - self.window_s)
        limited_by = ""
        retry_after = 0.0
        if rpm is not None and len(win.requests) + 1 > rpm:
            limited_by = "requests"
            retry_after = win.requests[0] + self.window_s - now
        elif tpm is not None and win.token_sum + tokens > tpm:
            limited_by = "tokens"
            retry_after = self._tokens_free_after(win, tpm, tokens, now)
        else:
            win.requests.append(now)
            win.tokens.append((now, tokens))
            win.token_sum += tokens
        reset_s = (win.requests[-1] + self.window_s - now) if win.requests else 0.0
        state = LimitState(
            requests_limit=rpm,
            requests_remaining=max(0, (rpm or 0) - len(win.requests)),
            requests_reset_s=reset_s,
            tokens_limit=tpm,
            tokens_remaining=max(0, (tpm or 0) - win.token_sum),
            tokens_reset_s=reset_s,
            retry_after_s=max(0.0, retry_after),
            limited_by=limited_by,  # type: ignore[arg-type]
        )
        return not limited_by, state

    def _tokens_free_after(self, win: _Window, tpm: int, tokens: int, now: float) -> float:
        used = win.token_sum
        for t, n in win.tokens:
            used -= n
            if used + tokens <= tpm:
                return t + self.window_s - now
        # Larger than the whole limit: it will never fit; report a full window.
        return self.window_s
