"""Errors raised for user mistakes: the CLI prints them without a traceback (exit 2).

Every error a user can cause is a :class:`UserError`; library code raises the typed subclass
that says what kind it is, so callers can tell a bad input from a changed pin or a replay
miss without reading the message.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (a malformed file, an unknown id, a wrong flag).

    The message says what was wrong and, where possible, how to fix it.
    """


class InputError(UserError):
    """A file or value the user gave cannot be read, or is not what it must be."""


class PinError(UserError):
    """An artifact (model, corpus, pack, task file, baseline, evidence) differs from its pin."""


class ReplayMiss(UserError):
    """A recording lacks what a replay needs (a model call, an embedding); nothing is sent."""


class UnknownName(UserError):
    """A name that no registry holds (an agent, belief, estimator or site)."""


class TaskFileError(InputError):
    """One or more records of a task file are invalid; nothing was loaded."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:20]
        more = len(problems) - len(shown)
        text = "\n".join(f"  - {p}" for p in shown)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(f"invalid task file(s), nothing loaded:\n{text}")
