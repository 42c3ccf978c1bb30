"""Store keys: the quick check of a key refuses exactly what the check of each of its
segments refuses (it only decides which keys need that check)."""

from __future__ import annotations

import pytest

from evalfleet.storage.base import StoreError
from evalfleet.storage.keys import _plain, check_key

REFUSED = ["", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "../x", "a/..", "./a"]
REFUSED += [".tmp-x", "a/.tmp-1/b", "a\\b", "a\x00b"]
ACCEPTED = ["a", "a/b.json", "a/..b", "a/.hidden", ".hidden", "a/x.tmp-", "é/☃ 1", "r/m%2F/0.json"]


@pytest.mark.parametrize("key", REFUSED)
def test_a_refused_key_is_refused(key):
    assert not _plain(key)
    with pytest.raises(StoreError, match="invalid store key"):
        check_key(key)


def test_accepted_keys_come_back_unchanged_most_without_the_segment_check():
    assert [check_key(key) for key in ACCEPTED] == ACCEPTED
    assert [_plain(key) for key in ACCEPTED] == [True, True, False, False, False, True, True, True]
