"""The Ray head watch (`evalfleet.tasks.head`) against real sockets: a port that accepts, one that
refuses, and one that comes back before its time is up."""

from __future__ import annotations

import socket
import time

from evalfleet.tasks.head import HeadWatch, knock

QUICK = {"lost_after_s": 1.0, "every_s": 0.05}


def closed_address() -> str:
    """A loopback port nothing listens on (taken, then let go)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    return f"127.0.0.1:{port}"


def test_a_head_that_answers_is_never_lost():
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        assert knock(address) is True
        with HeadWatch(address, **QUICK) as watch:
            time.sleep(1.5)  # past lost_after_s, answering all along
            assert watch.lost() is None
            assert watch.answers() is True


def test_a_silent_head_is_lost_once_its_time_is_up():
    address = closed_address()
    assert knock(address) is False
    assert knock("not-an-address") is False
    with HeadWatch(address, **QUICK) as watch:
        assert watch.lost() is None  # not yet: the time runs from the watch's start
        started = time.monotonic()
        assert watch.answers() is False  # waits for the verdict
        waited = time.monotonic() - started
        assert 0.8 <= waited < 2.0, waited
        assert watch.lost() == f"the Ray head at {address} has not answered for 1 s"
        assert watch.answers() is False  # a verdict stands


def test_the_thread_alone_reaches_the_verdict():
    address = closed_address()
    with HeadWatch(address, **QUICK) as watch:
        time.sleep(1.5)
        assert watch.lost() == f"the Ray head at {address} has not answered for 1 s"


def test_a_head_back_before_its_time_is_not_lost():
    address = closed_address()
    host, port = address.split(":")
    with HeadWatch(address, **QUICK) as watch:
        time.sleep(0.3)  # refused a few times
        with socket.create_server((host, int(port))):
            assert watch.answers() is True
            time.sleep(1.2)  # past lost_after_s since it was first silent
            assert watch.lost() is None
