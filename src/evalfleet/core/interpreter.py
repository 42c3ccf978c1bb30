"""How evalfleet starts a Python child: this interpreter, with the current folder left off the
module path (`-P`), so that a user's `evalfleet.py`, or any folder they run a command from,
cannot shadow evalfleet's modules in the processes it starts."""

from __future__ import annotations

import sys


def module_command(module: str, *args: str) -> list[str]:
    """The command that runs `module` (`python -m`) with these arguments."""
    return [sys.executable, "-P", "-m", module, *args]
