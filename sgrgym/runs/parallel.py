"""Episodes in parallel, results in order: the one loop every benchmark runner uses.

:func:`ordered_map` runs ``work(item)`` for every item on ``jobs`` threads and yields the
results in the items' order, so what a runner writes from them (one record per finished
episode) does not depend on ``jobs``. After an error, or when the consumer stops early, no
item that has not started is started.

:func:`remote_map` is the same loop on a Ray cluster (``--executor ray``,
:mod:`sgrgym.runs.ray_executor`, imported only then): each item is a Ray task running
``work(state, item)`` on a worker process, whose ``state`` (the environment and agent) that
process builds once with ``setup()``; results come back to the caller in the items' order.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sgrgym.runs.executor import RayExecutor

Item = TypeVar("Item")
Result = TypeVar("Result")
State = TypeVar("State")

__all__ = ["RayExecutor", "ordered_map", "remote_map"]


def ordered_map(
    work: Callable[[Item], Result], items: Sequence[Item], jobs: int, *, name: str = "episode"
) -> Generator[Result, None, None]:
    """``work(item)`` for each item, ``jobs`` at a time (at least one worker thread: an
    episode never runs on the caller's thread), yielded in the order of ``items``."""
    pool = ThreadPoolExecutor(max_workers=max(jobs, 1), thread_name_prefix=name)
    try:
        yield from pool.map(work, items)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def remote_map(
    executor: RayExecutor,
    setup: Callable[[], State],
    work: Callable[[State, Item], Result],
    items: Sequence[Item],
) -> Generator[Result, None, None]:
    """``work(setup(), item)`` for each item as Ray tasks (``setup`` once per worker process;
    both picklable), yielded in the order of ``items``."""
    from sgrgym.runs.ray_executor import ray_ordered_map

    return ray_ordered_map(executor, setup, work, items)
