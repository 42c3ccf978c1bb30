"""`tasks.job_env`: the digest a warm worker and a run compare (tests/tasks/test_warm_workers.py
checks the comparison on a real cluster)."""

from __future__ import annotations

import hashlib

from evalfleet.tasks.job_env import UNKNOWN, digest_of, runtime_env_digest, same_env

EMPTY = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"  # sha256 of "{}"


def test_a_process_without_a_runtime_env_has_the_digest_of_an_empty_one():
    # this process has no Ray job's runtime env (none, or the session's Ray without one)
    assert hashlib.sha256(b"{}").hexdigest() == runtime_env_digest() == EMPTY


def test_what_ray_keeps_beside_the_env_does_not_count_and_the_env_does():
    submitted = {  # `ray job submit --entrypoint-num-cpus 1`, its log streamed to the driver
        "config": {"setup_timeout_seconds": 600, "log_files": ["/tmp/ray/job-1.log"]},
        "env_vars": {"RAY_WORKER_NICENESS": "0"},
    }
    assert digest_of(submitted) == digest_of({}) == EMPTY
    credentials = {"env_vars": {"AWS_ACCESS_KEY_ID": "AKIA", "RAY_WORKER_NICENESS": "0"}}
    assert digest_of(credentials) == digest_of({"env_vars": {"AWS_ACCESS_KEY_ID": "AKIA"}})
    assert digest_of(credentials) != EMPTY
    assert digest_of({"working_dir": "gcs://_ray_pkg_1.zip"}) != EMPTY


def test_unknown_matches_nothing_not_even_itself():
    assert same_env(EMPTY, EMPTY)
    assert not same_env(EMPTY, digest_of({"env_vars": {"X": "1"}}))
    assert not same_env(UNKNOWN, UNKNOWN)
    assert not same_env(UNKNOWN, EMPTY)
