"""Named things of one kind: SGR and SeekerGym agents, belief renderers, completeness
estimators, replica sites. One type serves them all, so each is looked up, listed and extended
the same way: built-in entries are registered exactly as a user's own would be, and an unknown
name is a :class:`UserError` that suggests the closest names and lists them all.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from sgrgym.core.errors import UnknownName

Entry = TypeVar("Entry")


@dataclass(frozen=True)
class Registered(Generic[Entry]):
    name: str
    entry: Entry
    help: str  # one clause for --help ("follows the reference path")


class Registry(Generic[Entry]):
    """Entries by name; ``kind`` names them in messages ("SGR agent", "belief")."""

    def __init__(self, kind: str, plural: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[str, Registered[Entry]] = {}

    def register(self, name: str, entry: Entry, help_text: str = "") -> None:
        """Add ``name`` (a later registration of a name replaces the earlier one)."""
        if not name or name != name.strip():
            raise ValueError(f"a {self.kind} name must be a non-empty word, got {name!r}")
        self._entries[name] = Registered(name, entry, help_text)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a missing name is the usual UnknownName error)."""
        if name not in self._entries:
            raise self.unknown(name)
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return sorted(self._entries)

    def help(self) -> str:
        """One ``name (what it does)`` clause per entry, for ``--help``."""
        return ", ".join(
            f"{r.name} ({r.help})" if r.help else r.name
            for r in map(self._entries.get, self)
            if r is not None
        )

    def unknown(self, name: str, extra: tuple[str, ...] = ()) -> UnknownName:
        """The error for a name that is not registered: the closest names, then all of them
        (``extra``: names served elsewhere, listed too)."""
        known = [*self.names(), *extra]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        return UnknownName(f"no {self.kind} {name!r}{hint}; {self.plural}: {', '.join(known)}")

    def get(self, name: str) -> Entry:
        """The entry ``name``; an unknown name is an UnknownName error (:meth:`unknown`)."""
        found = self._entries.get(name)
        if found is None:
            raise self.unknown(name)
        return found.entry
