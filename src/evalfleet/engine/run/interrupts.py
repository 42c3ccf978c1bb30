"""Ctrl-C and SIGTERM: the first one stops a run gracefully, a second one stops it now.

The first signal only sets a flag. The dispatcher sees it, submits nothing more, gives the
calls in flight a bounded time to land (the workers checkpoint them), and the run ends with
exit code 130 (SIGINT) or 143 (SIGTERM) and a line saying how to resume. A second signal
runs the force hook (which kills what this process started) and exits at once.

Prefect's flow engine installs its own SIGTERM handler while a flow runs, so the flows call
`handling()` inside their body to put this one back for the time the work takes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    def __init__(self) -> None:
        self.signal: int | None = None
        self._force_hooks: list[Callable[[], None]] = []

    def requested(self) -> bool:
        return self.signal is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signal or signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.signal or signal.SIGINT).name

    def on_force(self, hook: Callable[[], None]) -> None:
        """Run `hook` (best effort) before a forced exit: kill child processes, say so."""
        self._force_hooks.append(hook)

    def reset(self) -> None:
        self.signal = None

    def _handle(self, signum: int, frame: object) -> None:
        if self.signal is None:
            self.signal = signum
            name = signal.Signals(signum).name
            print(
                f"\n{name}: stopping — no new requests; waiting briefly for the ones in "
                "flight (send it again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            return
        print(f"\n{signal.Signals(signum).name} again: stopping now", file=sys.stderr, flush=True)
        for hook in self._force_hooks:
            with contextlib.suppress(Exception):
                hook()
        os._exit(self.exit_code)

    @contextlib.contextmanager
    def handling(self) -> Iterator[Interrupts]:
        """Install the handlers for the duration (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        for sig in SIGNALS:
            signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


STOP = Interrupts()
