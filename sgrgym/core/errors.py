"""Errors raised for user mistakes: the CLI prints them without a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (a malformed file, an unknown id, a wrong flag).

    The message says what was wrong and, where possible, how to fix it.
    """


class TaskFileError(UserError):
    """One or more records of a task file are invalid; nothing was loaded."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:20]
        more = len(problems) - len(shown)
        text = "\n".join(f"  - {p}" for p in shown)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(f"invalid task file(s), nothing loaded:\n{text}")
