"""The checkpoint-store interface shared by the local and S3 backends."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


class StoreError(RuntimeError):
    """A store operation failed; the message names the problem and, where known, the fix."""


class Store(ABC):
    """A flat namespace of immutable-ish byte blobs addressed by '/'-separated keys.

    Listing prefixes are directories: ``list("run1")`` equals ``list("run1/")`` and
    never returns keys under ``run10/``. Listed keys are relative to the store root
    and sorted by code point (which equals S3's UTF-8 byte order).

    A process opens a store once (`storage.open_store`) and passes the object down; another
    process (a Ray worker, a flow run elsewhere) gets ``url`` and ``endpoint_url`` and opens
    its own.
    """

    url: str
    endpoint_url: str | None = None  # S3's endpoint, when not botocore's own
    #: What every key is stored under (S3: the URL's prefix), counted in a key's length.
    key_prefix: str = ""
    #: True when a write is a local file operation cheap enough to run on an event loop.
    writes_are_local: bool = False

    @abstractmethod
    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Atomically create ``key``; False (and nothing changed) if it already existed."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Atomically create or replace ``key``."""

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The bytes at ``key``, or None when it does not exist."""

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent). Only for quarantining undecodable records."""

    @abstractmethod
    def list(self, prefix: str) -> list[str]:
        """All keys under ``prefix`` (recursive), relative to the root, sorted."""

    def iter_pages(self, prefix: str) -> Iterator[builtins.list[tuple[str, int | None]]]:
        """``(key, size)`` of ``list(prefix)`` in pages, in its order, so a caller can work
        while the rest arrive. The size is None where the listing does not give it for free.
        A store with folders also lists, with size 0 and its name ending in '/', a folder that
        holds nothing: it may sit where a key belongs (`put_if_absent` could not write there)."""
        yield [(key, None) for key in self.list(prefix)]

    @abstractmethod
    def check_writable(self) -> None:
        """Raise a one-line StoreError unless a record can be written here (writes nothing
        that stays)."""

    def check_folders(self, folders: Iterable[str]) -> None:
        """Raise a one-line StoreError, naming the path and the fix, unless a key can be
        written under each of `folders` (prefixes 'a/b/'). Writes nothing that stays. A store
        without folders (S3) has no folder of the wrong type: `check_writable` is enough."""
        self.check_writable()

    def not_folders(self, folder: str) -> builtins.list[str]:
        """The names of what stands directly in `folder` and is no folder (files, links to
        nothing), sorted: what would be in the way of a writer that needs a folder by one of
        those names. A store without folders (S3) has none."""
        return []

    def set_aside(self, key: str, to: str) -> str:
        """Move what is at `key` to `to`, or to a free name beside it (`to` + ".2", ".3", …)
        when `to` is taken: nothing is overwritten. Returns where it went, "" when `key` held
        nothing. A store with folders also moves a folder or a link that stands at `key`."""
        data = self.get(key)
        if data is None:
            return ""
        where = to
        number = 1
        while self.exists(where):
            number += 1
            where = f"{to}.{number}"
        self.put(where, data)
        self.delete(key)
        return where

    @abstractmethod
    def list_dirs(self, prefix: str) -> builtins.list[str]:
        """Names (one segment, no '/') of the immediate sub-directories of ``prefix``."""

    @abstractmethod
    def describe(self) -> str:
        """Human-readable location; never contains secrets."""

    def get_many(self, keys: Iterable[str], max_workers: int = 32) -> dict[str, bytes | None]:
        """``get`` for many keys on a bounded thread pool; duplicates are fetched once."""
        unique = list(dict.fromkeys(keys))
        return dict(zip(unique, self._map(self.get, unique, max_workers), strict=True))

    def put_many_if_absent(
        self, items: Mapping[str, bytes], max_workers: int = 32
    ) -> dict[str, bool]:
        """``put_if_absent`` for many items on a bounded thread pool."""
        keys = list(items)
        results = self._map(lambda k: self.put_if_absent(k, items[k]), keys, max_workers)
        return dict(zip(keys, results, strict=True))

    def _parallelism(self, requested: int) -> int:
        """Upper bound on concurrent calls (S3 caps it at its connection pool size)."""
        return requested

    def _map(self, fn: Callable[[T], R], args: Sequence[T], max_workers: int) -> builtins.list[R]:
        workers = min(self._parallelism(max_workers), len(args))
        if workers <= 1:
            return [fn(a) for a in args]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="store") as pool:
            return list(pool.map(fn, args))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"
