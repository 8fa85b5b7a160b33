"""Writing command output: JSON to stdout or atomically to a file, progress to stderr."""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


class _Bars:
    """Progress bars on stderr, one at a time. On a terminal, a live bar (rich) with the step's
    label, the count, the time spent and the time left; in a log (stderr is not a terminal),
    a few lines per bar: its first step, each quarter reached and the last step, each with the
    time spent and the time left. A bar starts with a new total or a count that went back, and
    ends at its total."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._live: Any = None  # a rich Progress on a terminal
        self._task: Any = None

    def step(self, done: int, total: int, label: str) -> None:
        with self._lock:
            if total != self._total or done <= self._done or self._done >= self._total:
                self._start(total)
            quarter = 4 * done // max(total, 1)
            passed = quarter > 4 * self._done // max(total, 1) or self._done == 0
            self._done = done
            if self._live is not None:
                self._live.update(self._task, completed=done, description=label)
                if done >= total:
                    self._stop()
            elif passed or done >= total:
                print(self._line(done, total, label), file=sys.stderr, flush=True)

    def _start(self, total: int) -> None:
        self._stop()
        self._total, self._done, self._started = total, 0, time.monotonic()
        if not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._live = Progress(
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
        )
        self._live.start()
        self._task = self._live.add_task("", total=total)

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _line(self, done: int, total: int, label: str) -> str:
        spent = time.monotonic() - self._started
        left = spent / done * (total - done) if done else 0.0
        share = 100 * done // max(total, 1)
        if done >= total:
            return f"{done}/{total} (100%) done in {_clock(spent)}: {label}"
        return (
            f"{done}/{total} ({share}%) after {_clock(spent)}, about {_clock(left)} left: {label}"
        )

    def close(self) -> None:
        with self._lock:
            self._stop()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


_BARS = _Bars()
atexit.register(_BARS.close)


def progress_bar(done: int, total: int, label: str = "") -> None:
    """One step of a progress bar on stderr (see :class:`_Bars`): step ``done`` of ``total``."""
    _BARS.step(done, total, label)
