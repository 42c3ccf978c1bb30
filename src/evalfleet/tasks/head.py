"""Whether the Ray head still answers.

A driver whose head (its GCS) is gone is not told: its calls wait, and after a minute Ray ends
the process with a line of its own and exit code 1, without the run saying what it stored or
how to resume. `HeadWatch` knocks on the GCS port once a second (a TCP connect: refused at
once when the head's processes are gone, timed out when its machine is), and gives its verdict
once the head has not answered for `LOST_AFTER_S`: the dispatcher then ends the run itself.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType

log = logging.getLogger("evalfleet.head")
LOST_AFTER_S = 8.0  # a head silent this long is lost (a run must end within 30 s of it)
EVERY_S = 1.0
KNOCK_S = 1.0


def knock(address: str, timeout_s: float = KNOCK_S) -> bool:
    """Whether something accepts a connection at `address` ("host:port", "[v6]:port")."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


class HeadWatch:
    """Knocks on the head at `address` from a thread while entered (`with HeadWatch(a) as w`)."""

    def __init__(
        self, address: str, lost_after_s: float = LOST_AFTER_S, every_s: float = EVERY_S
    ) -> None:
        self.address, self.lost_after_s, self.every_s = address, lost_after_s, every_s
        self._answered = time.monotonic()  # when the head last answered
        self._lost: str | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ray-head-watch", daemon=True)

    def __enter__(self) -> HeadWatch:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join(timeout=KNOCK_S + 1)

    def lost(self) -> str | None:
        """The verdict, once the head has not answered for `lost_after_s`: what happened."""
        return self._lost

    def answers(self) -> bool:
        """Whether the head answers now; when it does not, wait for the verdict: True once it
        answers again, False once it is lost (at most `lost_after_s`)."""
        while self._lost is None:
            if self._knocked(knock(self.address)):
                return True
            if self._done.wait(self.every_s):
                break
        return False

    def _watch(self) -> None:
        while not self._done.wait(self.every_s):
            self._knocked(knock(self.address))

    def _knocked(self, answered: bool) -> bool:
        now = time.monotonic()
        with self._lock:
            if answered and self._lost is None:
                self._answered = now
            elif self._lost is None and now - self._answered >= self.lost_after_s:
                self._lost = (
                    f"the Ray head at {self.address} has not answered for "
                    f"{now - self._answered:.0f} s"
                )
                log.error("%s: the run ends", self._lost)
        return answered and self._lost is None
