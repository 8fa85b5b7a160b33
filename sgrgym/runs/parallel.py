"""Episodes in parallel, results in order: the one loop every benchmark runner uses.

:func:`ordered_map` runs ``work(item)`` for every item on ``jobs`` threads and yields the
results in the items' order, so what a runner writes from them (one record per finished
episode) does not depend on ``jobs``. After an error, or when the consumer stops early, no
item that has not started is started.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


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
