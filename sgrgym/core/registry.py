"""Named things of one kind: SGR and SeekerGym agents, belief renderers, completeness
estimators, replica sites. One type serves them all, so each is looked up, listed and extended
the same way: built-in entries are registered exactly as a user's own would be, and an unknown
name is a :class:`UserError` that suggests the closest names and lists them all.

An entry registered with ``argument="NAME"`` is a family: ``cli:claude-code`` is the entry
``cli`` given the argument ``claude-code`` (:meth:`Registry.resolve`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from sgrgym.core.errors import UnknownName

Entry = TypeVar("Entry")


def close_hint(name: str, known: Iterable[str], n: int = 3) -> str:
    """`` (did you mean 'a' or 'b'?)`` naming up to ``n`` of ``known`` closest to ``name``, or
    "" when none is close: what every "no such name" error adds."""
    close = difflib.get_close_matches(name, list(known), n=n, cutoff=0.6)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


@dataclass(frozen=True)
class Registered(Generic[Entry]):
    name: str
    entry: Entry
    help: str  # one clause for --help ("follows the reference path")
    argument: str = ""  # a family's argument, as --help names it ("NAME"): name:NAME

    @property
    def shown(self) -> str:
        """The name as a user writes it (``cli:NAME`` for a family)."""
        return f"{self.name}:{self.argument}" if self.argument else self.name


@dataclass(frozen=True)
class Resolved(Generic[Entry]):
    """A name looked up: the entry and, for a family, the argument after the colon."""

    registered: Registered[Entry]
    argument: str = ""

    @property
    def entry(self) -> Entry:
        return self.registered.entry


class Registry(Generic[Entry]):
    """Entries by name; ``kind`` names them in messages ("SGR agent", "belief")."""

    def __init__(self, kind: str, plural: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[str, Registered[Entry]] = {}

    def register(self, name: str, entry: Entry, help_text: str = "", argument: str = "") -> None:
        """Add ``name`` (a later registration of a name replaces the earlier one); with
        ``argument``, a family looked up as ``name:ARGUMENT``."""
        if not name or name != name.strip() or ":" in name:
            raise ValueError(f"a {self.kind} name must be a non-empty word, got {name!r}")
        self._entries[name] = Registered(name, entry, help_text, argument)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a missing name is the usual UnknownName error)."""
        if name not in self._entries:
            raise self.unknown(name)
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` resolves: a plain entry, or ``family:ARG`` with a non-empty ARG."""
        return isinstance(name, str) and self._find(name) is not None

    def _find(self, name: str) -> Resolved[Entry] | None:
        family, colon, argument = name.partition(":")
        found = self._entries.get(family)
        if found is None or bool(colon) != bool(found.argument) or (colon and not argument):
            return None
        return Resolved(found, argument)

    def resolve(self, name: str) -> Resolved[Entry]:
        """The entry ``name`` names, with a family's argument; unknown: UnknownName."""
        found = self._find(name)
        if found is None:
            raise self.unknown(name)
        return found

    def registered(self, name: str) -> Registered[Entry]:
        """The registration of ``name`` (its help and argument), as :meth:`resolve` finds it."""
        return self.resolve(name).registered

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return sorted(self._entries)

    def help(self) -> str:
        """One ``name (what it does)`` clause per entry, for ``--help``."""
        return ", ".join(
            f"{r.shown} ({r.help})" if r.help else r.shown
            for r in map(self._entries.get, self)
            if r is not None
        )

    def unknown(self, name: str, extra: tuple[str, ...] = ()) -> UnknownName:
        """The error for a name that is not registered: the closest names, then all of them
        (``extra``: names served elsewhere, listed too)."""
        known = [*(self._entries[n].shown for n in self.names()), *extra]
        hint = close_hint(name, known)
        return UnknownName(f"no {self.kind} {name!r}{hint}; {self.plural}: {', '.join(known)}")

    def get(self, name: str) -> Entry:
        """The entry ``name`` names (a family's entry for ``family:ARG``); an unknown name is
        an UnknownName error (:meth:`unknown`)."""
        return self.resolve(name).entry
