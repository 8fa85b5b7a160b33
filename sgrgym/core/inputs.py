"""Reading the user's files: one place that turns every way a file can be wrong into a UserError.

Each reader names the file (and the line, for JSONL) and says what was expected: a missing
file, a folder where a file is expected, unreadable bytes, text that is not UTF-8, JSON that
does not parse or is nested too deeply for Python to decode, and an empty file. Input echoed
back in a message is cut to :data:`ECHO_CHARS` characters (:func:`shorten`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.core.errors import InputError

if TYPE_CHECKING:
    from pydantic import ValidationError

ECHO_CHARS = 120


class BadJson(ValueError):
    """A text that is not one JSON value (the message says why; the caller adds where)."""


def shorten(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with the full length noted when cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def read_bytes(path: Path, what: str, limit: int | None = None) -> bytes:
    """The bytes of the ``what`` file ``path`` (e.g. ``what="task file"``); with ``limit``, a
    file of more bytes is an error (and no more than one byte past it is read). Only a regular
    file is read: a FIFO, a device or a socket is refused at once (never waited on or drained)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder; expected a {what}") from None
    except PermissionError:
        raise InputError(f"{path}: {what} not readable (permission denied)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputError(f"{path}: is a folder; expected a {what}")
        raise InputError(f"{path}: not a regular file; expected a {what}")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read() if limit is None else handle.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if limit is not None and len(data) > limit:
        raise InputError(f"{path}: the {what} is over {limit} bytes")
    return data


def decode_text(data: bytes, path: Path, what: str) -> str:
    """``data`` as UTF-8 (a leading byte-order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path} line {line}: the {what} is not UTF-8 text (byte {exc.start}: {exc.reason}); "
            "save it as UTF-8"
        ) from None


def read_text(path: Path, what: str, allow_empty: bool = False) -> str:
    """The ``what`` file ``path`` as UTF-8 text; an empty file is an error unless allowed."""
    text = decode_text(read_bytes(path, what), path, what)
    if not allow_empty and not text.strip():
        raise InputError(f"{path}: the {what} is empty")
    return text


def json_value(text: str | bytes) -> Any:
    """One JSON value; :class:`BadJson` (with the reason and column) when it is not one."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJson(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise BadJson("JSON nested too deeply to read (arrays/objects inside each other)") from None


def read_json(path: Path, what: str) -> Any:
    """The ``what`` file ``path`` as one JSON value."""
    text = read_text(path, what)
    try:
        return json_value(text)
    except BadJson as exc:
        raise InputError(f"{path}: {exc}") from None


def jsonl_lines(path: Path, what: str, allow_empty: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, line) for each non-blank line of the JSONL ``what`` file ``path``."""
    text = read_text(path, what, allow_empty=allow_empty)
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def existing_file(path: Path, what: str) -> bool:
    """Whether ``path`` exists (a folder there is an error: ``what`` must be a file)."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a {what}")
    return path.exists()


def field_problem(exc: ValidationError, top: str = "(top level)") -> str:
    """``field LOC: message`` for a pydantic error's first problem (``top`` names an error of
    the whole value): the one wording every file and record check uses."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or top
    return f"field {where}: {first['msg']}"
