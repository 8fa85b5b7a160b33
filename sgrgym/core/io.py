"""Files written whole or not at all, and JSON lines.

:func:`write_atomic` is how every result, manifest, pin and report file is written: to a
temporary file beside the target (``NAME.tmp``: run folders and their completion markers
leave such names out) and then renamed over it, so a reader, or a run killed at any point,
sees the old file or the new one and never a part.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TMP_SUFFIX = ".tmp"


def write_atomic(path: Path, data: bytes | str, *, parents: bool = False) -> None:
    """Write ``data`` (a str is written as UTF-8) to ``path`` atomically; with ``parents``,
    make the missing folders first."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:  # a full disk, a folder in the way, an interrupt: no part stays
        tmp.unlink(missing_ok=True)
        raise


def jsonl_line(record: object) -> str:
    """One results line: JSON with sorted keys, UTF-8 kept, newline-terminated (stable bytes)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def append_jsonl(path: Path, record: object) -> None:
    """Append one results line to ``path`` (runs write a line per finished episode)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(jsonl_line(record))
