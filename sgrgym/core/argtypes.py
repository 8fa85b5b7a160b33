"""Argument types for the command line: each refuses a bad value at parse time with the
accepted range in the message (a finite number in an interval, a whole number a run can
finish, a date, a shard). No import beyond the standard library (and
:mod:`sgrgym.core.shard`, itself standard library only): ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from sgrgym.core.shard import Shard


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number (0 to 65535)")
    return int(text)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a whole number of at least 1")
    return int(text)


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (the range is in the message:
    a count a run can finish, a seed a generator takes)."""

    def parse(text: str) -> int:
        digits = text[1:] if text.startswith("-") else text
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 20):
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a whole number")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not from {low} to {high:,}")
        return value

    return parse


def number_in(
    low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite number in the interval from ``low`` to ``high`` (open at an
    end with ``low_open`` / ``high_open``); nan, inf and anything outside are refused with the
    interval in the message."""
    shown = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number") from None
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (math.isfinite(value) and above and below):
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number in {shown}")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text[:20]!r}: give a finite number of seconds above 0")
    return value


def calendar_date(text: str) -> str:
    """``text`` if it is a calendar date written YYYY-MM-DD, else ValueError (the one check
    the command line and the run config share)."""
    import datetime

    if len(text) != 10:
        raise ValueError("a date is YYYY-MM-DD")
    datetime.date.fromisoformat(text)
    return text


def iso_date(text: str) -> str:
    """An argparse type: a calendar date, YYYY-MM-DD."""
    try:
        return calendar_date(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a date (YYYY-MM-DD)") from None


def iso_timestamp(text: str) -> str:
    """An argparse type: a UTC time as WARC-Date writes it, YYYY-MM-DDTHH:MM:SSZ."""
    import datetime
    import re

    shape = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text)
    try:
        if shape is None:
            raise ValueError
        datetime.datetime.fromisoformat(text[:-1])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text[:30]!r} is not a UTC time like 2026-01-01T00:00:00Z"
        ) from None
    return text


# The ranges every command and the run config share (a run must be able to finish; the
# paper's values inside).
MAX_SEED = 2**32 - 1
MAX_SEEDS = 10_000  # episodes per document; estimator seeds
MAX_STEPS = 1_000  # a horizon M
MAX_PER_STEP = 100  # queries a step
THETA = number_in(0.0, 1.0, low_open=True, high_open=True)  # a cosine threshold (section 2.2)
UNIT = number_in(0.0, 1.0)  # a completeness, a q̂, a δ
ALPHA = number_in(0.0, 1.0, low_open=True, high_open=True)  # miscoverage (section 2.4)
SEED = whole_number(0, MAX_SEED)
SEEDS = whole_number(1, MAX_SEEDS)
STEPS = whole_number(1, MAX_STEPS)
PER_STEP = whole_number(1, MAX_PER_STEP)


def output_file(text: str) -> Path:
    """An argparse type: a file to write (new, or a file to replace): not a folder, not a
    special file, in a folder that exists."""
    import stat

    path = Path(text)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{text}: is a folder; name a file to write")
    if mode is not None and not stat.S_ISREG(mode):
        raise argparse.ArgumentTypeError(f"{text}: is not a regular file; name a file to write")
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: the folder {parent} does not exist")
    return path


def shard_spec(text: str) -> Shard:
    """An argparse type: a shard of a run, ``I/N`` (1 ≤ I ≤ N ≤ 10,000)."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
