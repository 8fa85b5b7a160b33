"""The one ordered parallel loop: results in the items' order whatever finishes first, never
on the caller's thread, and nothing new started after an error."""

from __future__ import annotations

import threading
import time

import pytest

from sgrgym.runs.parallel import ordered_map


def test_results_come_in_order_whatever_finishes_first() -> None:
    def slow_first(n: int) -> tuple[int, str]:
        time.sleep(0.05 * (5 - n))  # the first item finishes last
        return n, threading.current_thread().name

    for jobs in (1, 3):
        results = list(ordered_map(slow_first, range(5), jobs))
        assert [n for n, _ in results] == list(range(5))
        assert all(name != threading.current_thread().name for _, name in results)


def test_after_an_error_no_unstarted_item_starts() -> None:
    started: list[int] = []

    def work(n: int) -> int:
        started.append(n)
        if n == 1:
            raise ValueError("boom")
        time.sleep(0.05)
        return n

    with pytest.raises(ValueError, match="boom"):
        list(ordered_map(work, range(40), 2))
    assert len(started) < 40
