"""The checkpoint store: a local directory (default) or S3, behind one interface.

``S3Store`` is imported on first access so that local-only processes never pay for
importing boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalfleet.storage.base import Store, StoreError
from evalfleet.storage.keys import join_key, safe_segment, unsafe_segment
from evalfleet.storage.local import LocalStore
from evalfleet.storage.open import DEFAULT_STORE_URL, STORE_ENV, open_store, store_url

if TYPE_CHECKING:
    from evalfleet.storage.s3 import S3Store

__all__ = [
    "DEFAULT_STORE_URL",
    "STORE_ENV",
    "LocalStore",
    "S3Store",
    "Store",
    "StoreError",
    "join_key",
    "open_store",
    "safe_segment",
    "store_url",
    "unsafe_segment",
]


def __getattr__(name: str) -> Any:
    if name == "S3Store":
        from evalfleet.storage.s3 import S3Store

        return S3Store
    raise AttributeError(f"module 'evalfleet.storage' has no attribute {name!r}")
