"""A shard of a run: a deterministic slice of its episodes (``--shard I/N``).

With the episodes in the order a single run takes them, episode ``k`` (0-based) belongs to
shard ``(k mod N) + 1``: shards interleave, so each gets a share of every part of the run
(every task file, every seed) and their sizes differ by one at most. The finished shard
folders of one run are joined by ``sgrgym merge`` into the folder the single run writes.
No import beyond the standard library (the command line parses ``--shard`` at start-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

MAX_SHARDS = 10_000
FORM = f"I/N, whole numbers with 1 ≤ I ≤ N ≤ {MAX_SHARDS:,}"

Item = TypeVar("Item")


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count <= MAX_SHARDS:
            raise ValueError(f"{self.index}/{self.count} is not a shard ({FORM})")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` as a shard; anything else is a ValueError saying the accepted form."""
        index, slash, count = text.partition("/")
        if not (
            slash
            and all(p.isascii() and p.isdigit() and len(p) <= 6 for p in (index, count))
            and 1 <= int(index) <= int(count) <= MAX_SHARDS
        ):
            raise ValueError(f"{text[:20]!r} is not a shard ({FORM})")
        return cls(int(index), int(count))

    @classmethod
    def of_card(cls, value: object) -> Shard:
        """The shard a run card records (:meth:`card`); ValueError if it is not one."""
        if not isinstance(value, dict) or set(value) != {"index", "count"}:
            raise ValueError("not a shard record")
        index, count = value["index"], value["count"]
        if not (type(index) is int and type(count) is int):
            raise ValueError("not a shard record")
        return cls(index, count)

    def card(self) -> dict[str, int]:
        """What the run card records: ``{"index": I, "count": N}``."""
        return {"index": self.index, "count": self.count}

    def select(self, items: Sequence[Item]) -> list[Item]:
        """This shard's items of ``items`` (the episodes in the single run's order)."""
        return list(items[self.index - 1 :: self.count])
