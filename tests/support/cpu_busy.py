"""How busy the machine's cores were between two moments, from /proc/stat: `make test` prints
it beside pytest's time, so a slow suite shows whether it waited (idle cores) or was bound by
the CPU (busy cores), the question every attempt to make the suite quicker starts from.

    python tests/support/cpu_busy.py start FILE   # remember the counters in FILE
    python tests/support/cpu_busy.py end FILE     # print the busy share since then
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def counters() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot; idle and iowait count as not busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def process_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (the state first: utime and
    stime are [11] and [12], cutime and cstime [13] and [14], in clock ticks); None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("start", "end") or not Path("/proc/stat").exists():
        return 0  # not Linux, or called wrongly: the figure is a help, never a failure
    where = Path(argv[2])
    if argv[1] == "start":
        busy, total = counters()
        where.write_text(f"{busy} {total}")
        return 0
    busy0, total0 = (int(x) for x in where.read_text().split())
    busy1, total1 = counters()
    share = (busy1 - busy0) / max(1, total1 - total0)
    cores = os.cpu_count() or 1
    print(f"cores busy: {share:.0%} of {cores} over the run ({share * cores:.2f} cores on average)")
    where.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
