"""Collections held back around bulk work: rare inside, and the thresholds as they were once
the last step holding them back ends, nested or in other threads."""

from __future__ import annotations

import gc
import threading

from evalfleet.core import collector


def test_held_back_sets_the_thresholds_back_after_the_last_holder(monkeypatch):
    monkeypatch.setattr(collector, "_holding", 0)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with collector.held_back():
            assert gc.get_threshold() == collector.WHILE_IMPORTING
            with collector.held_back():
                assert gc.get_threshold() == collector.WHILE_IMPORTING
            assert gc.get_threshold() == collector.WHILE_IMPORTING
            inside, leave = threading.Event(), threading.Event()

            def other() -> None:
                with collector.held_back():
                    inside.set()
                    leave.wait(10)

            thread = threading.Thread(target=other)
            thread.start()
            assert inside.wait(10)
        assert gc.get_threshold() == collector.WHILE_IMPORTING  # the other thread holds on
        leave.set()
        thread.join(10)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_a_decorated_function_holds_collections_back_while_it_runs():
    @collector.held_back()
    def thresholds() -> tuple[int, ...]:
        return gc.get_threshold()

    outside = gc.get_threshold()
    assert thresholds() == collector.WHILE_IMPORTING
    assert thresholds() == collector.WHILE_IMPORTING
    assert gc.get_threshold() == outside
