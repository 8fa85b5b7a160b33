"""Task arguments as ``inspect eval -T`` gives them."""

from __future__ import annotations

from collections.abc import Sequence


def names(value: str | Sequence[str] | None) -> list[str] | None:
    """A list from a task argument: a list, or one string of comma-separated items
    (``-T task_ids=cwe_001,cwe_002``)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [item.strip() for item in items if item.strip()]
