"""`tasks.job_env`: the digest a warm worker and a run compare (tests/tasks/test_warm_workers.py
checks the comparison on a real cluster)."""

from __future__ import annotations

import hashlib

from evalfleet.tasks.job_env import runtime_env_digest


def test_a_process_without_a_runtime_env_has_the_digest_of_an_empty_one():
    # this process has no Ray job's runtime env (none, or the session's Ray without one)
    assert (
        hashlib.sha256(b"{}").hexdigest()
        == runtime_env_digest()
        == ("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")
    )
