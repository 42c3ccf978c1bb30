"""A perf script's work folder: made in the temp dir and removed when the script exits,
however it exits short of SIGKILL. `keep(path)` (or EVALFLEET_KEEP_WORK=1) keeps it and says
where, for a run worth looking into.

Work folders live in `<tmp>/evalfleet-perf/`, a folder marked as the top of directory
hierarchies (FS_TOPDIR_FL, `chattr +T`), so that ext4 places each work folder in a block
group of its own choosing rather than beside the last one. Why it matters: a perf run writes
and then deletes thousands of records, and ext4 will not reuse a deleted inode for 60 s (360 s
while its block is dirty): every file created in that group in the meantime first scans past
the graveyard (`recently_deleted` in ext4's inode allocator). On this machine that put about
1 ms of kernel CPU on every record the *next* run wrote under /tmp (0.05 ms otherwise), in the
pipeline's pass and the bare client's alike: one run's clean-up charged to the next run's
figures. A run's real store (`./runs`) keeps its records, so it does not pay that.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path

_kept: set[Path] = set()
_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_TOPDIR_FL = 0x00020000


def work_folder(name: str) -> Path:
    parent = Path(tempfile.gettempdir()) / "evalfleet-perf"
    parent.mkdir(exist_ok=True)
    mark_top_directory(parent)
    path = Path(tempfile.mkdtemp(prefix=f"evalfleet-{name}-", dir=parent))
    atexit.register(_remove, path)
    return path


def mark_top_directory(path: Path) -> bool:
    """Set FS_TOPDIR_FL on a directory (ext4's Orlov allocator then spreads its
    subdirectories over the disk); False where the file system does not take it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        (flags,) = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 4))
        if not flags & _FS_TOPDIR_FL:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags | _FS_TOPDIR_FL))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def keep(path: Path) -> None:
    _kept.add(path)


def _remove(path: Path) -> None:
    from evalfleet.core import settings

    if path in _kept or settings.KEEP_WORK.get():
        print(f"work folder kept: {path}", file=sys.stderr)
        return
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):  # another perf script's folder may still be in it
        path.parent.rmdir()
