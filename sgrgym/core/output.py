"""Writing command output: JSON to stdout or atomically to a file, progress to stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from sgrgym.core.io import write_atomic

Progress = Callable[[int, int, str], None]  # (done, total, label): a progress bar's step
Say = Callable[[str], None]  # one line of progress to tell


def write_json(text: str, out: Path | None = None) -> None:
    """``text`` plus a newline to stdout, or atomically to ``out``."""
    if out is None:
        sys.stdout.write(text + "\n")
        return
    write_atomic(out, text + "\n", parents=True)


def progress(message: str) -> None:
    """One progress line on stderr (stdout stays clean for tables and JSON)."""
    print(message, file=sys.stderr, flush=True)


def progress_bar(done: int, total: int, label: str = "", width: int = 30) -> None:
    """A one-line progress bar on stderr (redrawn in place on a terminal)."""
    filled = width * done // max(total, 1)
    line = f"[{'=' * filled}{' ' * (width - filled)}] {done}/{total} {label}"
    if sys.stderr.isatty():
        end = "\n" if done >= total else ""
        print(f"\r{line[:120]:<120}", end=end, file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)
