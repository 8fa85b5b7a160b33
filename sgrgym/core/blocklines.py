"""JSONL lines read a block at a time: what :func:`~sgrgym.core.inputs.jsonl_lines` yields, in
memory bounded by the longest line rather than by the file.

Lines are the pieces :meth:`str.splitlines` gives (so ``\\r\\n``, ``\\r``, ``\\x85``, ``\\u2028``
and the other line boundaries count as in the whole-file reader), numbered from 1 with the
blank ones counted and skipped. Every refusal is the whole-file reader's own message: a file
that cannot be opened, is not a regular file, cannot be read or is not UTF-8 is handed to
:func:`~sgrgym.core.inputs.read_text`, which names the problem (for bad UTF-8, with the line
and the byte offset in the whole file).
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from sgrgym.core.errors import InputError
from sgrgym.core.inputs import read_text

BLOCK_BYTES = 1 << 20
# The characters str.splitlines ends a line at ("\r\n" is one boundary).
LINE_BOUNDARIES = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _open_regular(path: Path) -> BinaryIO | None:
    """``path`` opened for reading when it is a regular file (never waits on a FIFO), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _refuse(path: Path, what: str, allow_empty: bool) -> InputError:
    """The whole-file reader's error for ``path`` (it raises it); a fallback if it reads."""
    read_text(path, what, allow_empty=allow_empty)
    return InputError(f"{path}: cannot read the {what} (it changed while being read)")


def jsonl_lines_blockwise(
    path: Path, what: str, allow_empty: bool = False, block: int = BLOCK_BYTES
) -> Iterator[tuple[int, str]]:
    """(line number, line) for each non-blank line of the JSONL ``what`` file ``path``.

    The same lines, numbers and errors as :func:`~sgrgym.core.inputs.jsonl_lines`; an empty
    file (only blank lines) is an error unless ``allow_empty``.
    """
    handle = _open_regular(path)
    if handle is None:
        raise _refuse(path, what, allow_empty)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    number = 0
    carry = ""
    empty = True
    with handle:
        while True:
            try:
                data = handle.read(block)
                text = carry + decoder.decode(data, final=not data)
            except (OSError, UnicodeDecodeError):
                text = None
            if text is None:
                raise _refuse(path, what, allow_empty)
            parts = text.splitlines(keepends=True)
            carry = ""
            if data and parts and (parts[-1][-1] not in LINE_BOUNDARIES or parts[-1][-1] == "\r"):
                carry = parts.pop()  # not ended yet (or a "\r" whose "\n" may come next)
            for part in parts:
                number += 1
                line = part.rstrip(LINE_BOUNDARIES)
                if line.strip():
                    empty = False
                    yield number, line
            if not data:
                break
    if empty and not allow_empty:
        raise InputError(f"{path}: the {what} is empty")
