"""A work item's request hash: the fast per-(model, epoch) hasher gives exactly the hash of
`request_hash`, which names every stored record (a different hash would ask everything again)."""

from __future__ import annotations

import pytest

from evalfleet.core.types import Decoding
from evalfleet.tasks.work import answer_hasher, request_hash

DECODINGS = [
    Decoding(),
    Decoding(temperature=0.7, top_p=0.95, max_tokens=16000, seed=42),
    Decoding(temperature=0.0, max_tokens=512, seed=None, reasoning_effort="high"),
]


@pytest.mark.parametrize("decoding", DECODINGS)
@pytest.mark.parametrize(
    ("model", "api_model", "revision"),
    [
        ("openai/gpt-4o", "gpt-4o-2024-08-06", "e9c1f5a"),
        ('anthropic/claude "q"', "claude-x", "local:sha256:ab\u00e9"),
    ],
)
def test_the_hasher_gives_request_hash(decoding, model, api_model, revision):
    hashed = answer_hasher(
        model=model,
        api_model=api_model,
        benchmark="zerobench",
        dataset_revision=revision,
        decoding=decoding,
    )
    for digest in ("0" * 64, "ab" * 32, '\u00e9"\\'):
        assert hashed(digest) == request_hash(
            model=model,
            api_model=api_model,
            benchmark="zerobench",
            dataset_revision=revision,
            prompt_digest=digest,
            decoding=decoding,
        )


def test_a_known_hash_is_unchanged():
    """A hash computed by hand from the payload (keys sorted, no spaces)."""
    import hashlib

    blob = (
        '{"api_model":"m","benchmark":"b","dataset_revision":"r","decoding":'
        '{"max_tokens":16000,"reasoning_effort":null,"seed":null,"temperature":null,'
        '"top_p":null},"model":"p/m","prompt":"d"}'
    )
    expected = hashlib.sha256(blob.encode()).hexdigest()
    hashed = answer_hasher(
        model="p/m", api_model="m", benchmark="b", dataset_revision="r", decoding=Decoding()
    )
    assert hashed("d") == expected
