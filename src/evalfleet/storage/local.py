"""Checkpoint store in a local directory (the default, ``./runs``)."""

from __future__ import annotations

import builtins
import contextlib
import errno
import itertools
import os
import secrets
import shlex
import stat
from collections.abc import Iterable, Iterator

from evalfleet.storage.base import Store, StoreError
from evalfleet.storage.keys import TMP_PREFIX, check_key, norm_prefix

_TMPFILE = getattr(os, "O_TMPFILE", None)  # Linux
# Temp names unique within a process without a syscall each (uuid4 reads /dev/urandom).
_names = (f"{secrets.token_hex(4)}-{n}" for n in itertools.count())


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)  # all of it, but for huge writes or a full disk
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]


_FIRST_READ = 1 << 16  # larger than any record: one read, no stat


def _read_all(fd: int) -> bytes:
    """An open file's bytes. A short first read is the whole of a regular file (a read stops
    short of what was asked only at its end), so a record costs one read and no stat."""
    data = os.read(fd, _FIRST_READ)
    if len(data) < _FIRST_READ:
        return data
    parts = [data]
    while more := os.read(fd, 1 << 20):
        parts.append(more)
    return b"".join(parts)


def _in_order(files: list[str], directories: list[str]) -> list[str | list[str]]:
    """A directory's entries in sorted order: its subdirectories (ending in '/') between runs
    of its files (sorted)."""
    out: list[str | list[str]] = []
    run: list[str] = []
    for entry in sorted(files + directories):
        if entry.endswith("/"):
            if run:
                out.append(run)
                run = []
            out.append(entry)
        else:
            run.append(entry)
    if run:
        out.append(run)
    return out


class LocalStore(Store):
    """Keys are files under ``root``; every write goes through a temp file in the
    target directory, so readers never see partial content.

    ``fsync=True`` flushes file data and the directory entry to disk before a write
    returns (survives power loss, costs a few ms per write); the default only
    guarantees atomicity, which is what crash-resume needs on a healthy machine.
    """

    writes_are_local = True

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise StoreError(
                f"store root {self.root} exists and is not a directory: "
                "pick another store URL or move the file away"
            )
        self.url = self.root
        self.fsync = fsync
        self._made: set[str] = set()  # directories known to exist
        self._fd: int | None = None
        self.writes_are_local = not fsync  # an fsync costs milliseconds: keep it off the loop

    def describe(self) -> str:
        return f"local directory {self.root}"

    # -- writes ---------------------------------------------------------------

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Write `data` under `key` unless it exists, atomically: readers never see part of
        it, and of two writers one wins and the other is told. An unnamed file (O_TMPFILE)
        written and then linked under its name: open, write, link, close, nothing to clean
        up; where the filesystem has no O_TMPFILE, a named temp file linked and removed.
        Something at `key` that is not a file (a folder, a link to nothing) is no record: a
        StoreError names it, never "it exists"."""
        path = self._path(key)
        directory = self._directory(path, key)
        if _TMPFILE is not None and not self.fsync:
            try:
                fd = os.open(directory, os.O_WRONLY | _TMPFILE, 0o666)
            except OSError:
                pass  # no O_TMPFILE here: the named temp file below
            else:
                try:
                    _write_all(fd, data)
                    # linkat(AT_SYMLINK_FOLLOW): a dir fd makes os.link call linkat, which
                    # follows /proc's link to the open file (link() would not)
                    os.link(
                        f"/proc/self/fd/{fd}",
                        path,
                        src_dir_fd=self._root_fd(),
                        follow_symlinks=True,
                    )
                    return True
                except FileExistsError:
                    return self._taken(path, key)
                except OSError as exc:
                    raise StoreError(f"cannot create {key!r} in {self.root}: {exc}") from exc
                finally:
                    os.close(fd)
        tmp = self._write_temp(path, data, key)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return self._taken(path, key)
        except OSError as exc:
            raise StoreError(
                f"cannot create {key!r} in {self.root}: {exc} "
                "(the store needs a filesystem with hard links)"
            ) from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._sync_dir(path)
        return True

    def _taken(self, path: str, key: str) -> bool:
        """False when `key` holds a file (a record written before); else a StoreError."""
        if os.path.isfile(path):
            return False
        raise StoreError(f"{_not_a_file(path)} where the record {key!r} belongs: {_fix(path)}")

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp = self._write_temp(path, data, key)
        try:
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if os.path.isdir(path):
                raise StoreError(f"{path} is a folder where a file belongs: {_fix(path)}") from None
            raise StoreError(f"cannot write {key!r} in {self.root}: {exc}") from exc
        self._sync_dir(path)

    def set_aside(self, key: str, to: str) -> str:
        """Renamed, whatever it is (a file, a folder, a link): nothing read or copied."""
        path = self._path(key)
        if not os.path.lexists(path):
            return ""
        where = to
        number = 1
        while os.path.lexists(self._path(where)):
            number += 1
            where = f"{to}.{number}"
        target = self._path(where)
        self._directory(target, where)
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return ""  # moved by another process meanwhile
        except OSError as exc:
            raise StoreError(
                f"cannot move {key!r} aside to {where!r} in {self.root}: {exc}"
            ) from exc
        self._sync_dir(target)
        return where

    def check_folders(self, folders: Iterable[str]) -> None:
        """Each folder, and every folder above it, is a folder (or missing: it will be made),
        and the deepest of them that exists takes a new file (a probe made and removed)."""
        if not os.path.isdir(self.root):
            self.check_writable()  # a store made by the first write: its nearest ancestor
            return
        probed: set[str] = set()
        for folder in sorted(set(folders)):
            deepest = self._deepest_folder(norm_prefix(folder))
            if deepest not in probed:
                probed.add(deepest)
                self._probe(deepest)

    def not_folders(self, folder: str) -> list[str]:
        """One read of `folder` (a link to a folder is a folder; temp files are left out)."""
        base = norm_prefix(folder)
        try:
            with os.scandir(os.path.join(self.root, base)) as entries:
                return sorted(
                    e.name
                    for e in entries
                    if not _is_folder(e) and not e.name.startswith(TMP_PREFIX)
                )
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise StoreError(f"cannot read the folder {base!r} in {self.root}: {exc}") from exc

    def check_writable(self) -> None:
        """Probe the root, or the nearest ancestor that exists, without creating the root."""
        existing = self.root
        while not os.path.lexists(existing):
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            raise StoreError(
                f"cannot write to the store {self.root} ({existing} is a file): pick a "
                "writable directory with --store"
            )
        try:
            self._try_probe(existing)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise StoreError(
                f"cannot write to the store {self.root} ({reason}): pick a writable directory "
                "with --store"
            ) from None

    def _deepest_folder(self, base: str) -> str:
        """The deepest folder of root/`base` ('a/b/') that exists; a StoreError naming the
        first path on the way that is not a folder."""
        path = self.root
        for name in base.split("/")[:-1]:
            below = os.path.join(path, name)
            try:
                is_folder = stat.S_ISDIR(os.stat(below).st_mode)
            except FileNotFoundError:
                if os.path.islink(below):  # a link to nothing
                    raise StoreError(f"{_not_a_file(below)}: {_fix(below)}") from None
                return path
            except OSError as exc:  # a link that loops, a folder that cannot be entered
                raise StoreError(
                    f"cannot use the folder {below} ({exc.strerror}): {_fix(below)}"
                ) from None
            if not is_folder:
                raise StoreError(f"{below} is a file where the store keeps a folder: {_fix(below)}")
            path = below
        return path

    def _probe(self, folder: str) -> None:
        try:
            self._try_probe(folder)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise StoreError(
                f"cannot write into {folder} ({reason}): make it writable (`chmod u+w "
                f"{shlex.quote(folder)}`, or `chattr -i` where it is immutable) and run again"
            ) from None

    @staticmethod
    def _try_probe(folder: str) -> None:
        probe = os.path.join(folder, f"{TMP_PREFIX}probe-{os.getpid()}-{next(_names)}")
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(fd)
        os.unlink(probe)

    # -- reads ----------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        """Read with the system calls themselves: a Python file object costs more than the read
        of a small record, and a resume reads back every stored one."""
        try:
            fd = os.open(self._path(key), os.O_RDONLY | os.O_CLOEXEC)
            try:
                return _read_all(fd)
            finally:
                os.close(fd)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link that loops: no bytes, as a folder has none
                return None
            raise StoreError(f"cannot read {key!r} in {self.root}: {exc}") from exc

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def delete(self, key: str) -> None:
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot delete {key!r} in {self.root}: {exc}") from exc

    def list(self, prefix: str) -> list[str]:
        return [key for run in self._walk(norm_prefix(prefix)) for key in run]

    def iter_pages(
        self, prefix: str, page_size: int = 10_000
    ) -> Iterator[builtins.list[tuple[str, int | None]]]:
        """The keys of `list` in pages, without sizes (a stat each would cost a system call),
        as the walk finds them: a caller works on the first page before the walk is done. An
        empty folder below `prefix` comes too, as 'a/b/' with size 0 (`Store.iter_pages`)."""
        page: list[tuple[str, int | None]] = []
        for run in self._walk(norm_prefix(prefix), folders=True):
            if isinstance(run, str):  # an empty folder
                page.append((run, 0))
            else:
                page.extend(zip(run, itertools.repeat(None)))
            while len(page) >= page_size:
                yield page[:page_size]
                page = page[page_size:]
        if page:
            yield page

    def _walk(self, base: str, folders: bool = False) -> Iterator[builtins.list[str] | str]:
        """The keys under `base` ('' or 'a/b/') in sorted order, in runs of a directory's
        files, one directory read at a time. Depth first with each directory's entries sorted,
        a directory's name counted with its '/', so the keys come out in the order a sort of
        all of them gives, without that sort (500,000 keys: about a second). With `folders`,
        an empty directory below `base` comes in its place as its name with its '/'."""
        stack: list[str | list[str]] = [base]
        root = os.path.join(self.root, "")
        while stack:
            top = stack.pop()
            if isinstance(top, list):
                yield top
                continue
            try:
                with os.scandir(root + top) as entries:
                    listed = [e for e in entries if not e.name.startswith(TMP_PREFIX)]
            except (FileNotFoundError, NotADirectoryError):
                continue
            if not listed:
                if folders and top != base:
                    yield top
                continue
            files = [top + e.name for e in listed if not e.is_dir(follow_symlinks=False)]
            if len(files) < len(listed):
                directories = [f"{top}{e.name}/" for e in listed if e.is_dir(follow_symlinks=False)]
                stack.extend(reversed(_in_order(files, directories)))
            elif files:
                files.sort()
                stack.append(files)

    def list_dirs(self, prefix: str) -> builtins.list[str]:
        try:
            with os.scandir(os.path.join(self.root, norm_prefix(prefix))) as entries:
                return sorted(
                    e.name
                    for e in entries
                    if e.is_dir(follow_symlinks=False) and not e.name.startswith(TMP_PREFIX)
                )
        except (FileNotFoundError, NotADirectoryError):
            return []

    def get_many(self, keys: Iterable[str], max_workers: int = 32) -> dict[str, bytes | None]:
        """Sequential: reading small local files in threads was 7x slower here (GIL and
        scheduling cost more than the reads; 10,000 records: 1.2 s with 8 threads, 0.16 s
        in one)."""
        return {key: self.get(key) for key in dict.fromkeys(keys)}

    def _parallelism(self, requested: int) -> int:
        # Local file I/O gains little from threads: writing 100,000 keys here took
        # 2-4x longer with 32 threads than with 8 (GIL and directory contention).
        return min(requested, 8)

    # -- helpers --------------------------------------------------------------

    def _path(self, key: str) -> str:
        return os.path.join(self.root, check_key(key))  # a valid key: no '', '.' or '..' segment

    def _root_fd(self) -> int:
        """An fd of the root, kept open (it only lets os.link call linkat)."""
        if self._fd is None:
            self._fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        return self._fd

    def _directory(self, path: str, key: str) -> str:
        """The directory of `path`, made if this store has not seen it yet."""
        directory = os.path.dirname(path)
        if directory not in self._made:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as exc:
                raise self._write_error(directory, key, exc) from None
            if len(self._made) > 100_000:
                self._made.clear()
            self._made.add(directory)
        return directory

    def _write_temp(self, path: str, data: bytes, key: str) -> str:
        """Write ``data`` to a fresh temp file beside ``path``; return the temp path."""
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, f"{TMP_PREFIX}{os.getpid()}-{next(_names)}")
        try:
            os.makedirs(directory, exist_ok=True)
            # os.open instead of mkstemp: mkstemp forces mode 0600, we want the umask.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if self.fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise self._write_error(directory, key, exc) from None
        return tmp

    def _write_error(self, directory: str, key: str, exc: OSError) -> StoreError:
        """Why `key` cannot be written in `directory`, in one line: a file (or a link to
        nothing) where the store keeps a folder is named, with the fix."""
        if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.ELOOP, errno.ENOENT):
            path = directory
            blocking = None
            while len(path) > len(self.root):
                if os.path.lexists(path) and not os.path.isdir(path):
                    blocking = path
                path = os.path.dirname(path)
            if blocking is not None:
                return StoreError(
                    f"cannot write {key!r}: {_not_a_file(blocking)} where the store keeps a "
                    f"folder: {_fix(blocking)}"
                )
        return StoreError(f"cannot write {key!r} in {self.root}: {exc}")

    def _sync_dir(self, path: str) -> None:
        if not self.fsync:
            return
        fd = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """A folder, or a link to one (a link that loops is neither)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _not_a_file(path: str) -> str:
    """What stands at `path`, as a message's subject: "PATH is a folder", "… a file", …"""
    if os.path.islink(path):
        return f"{path} is a link that leads to {'a folder' if os.path.isdir(path) else 'nothing'}"
    if os.path.isdir(path):
        return f"{path} is a folder"
    return f"{path} is a file"


def _fix(path: str) -> str:
    """The repair of a path of the wrong type: moved aside by hand, nothing deleted."""
    quoted = shlex.quote(path)
    return f"move it aside (`mv {quoted} {shlex.quote(path + '.moved')}`) and run again"
