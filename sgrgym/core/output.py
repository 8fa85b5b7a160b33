"""Writing command output: JSON to stdout or atomically to a file, progress to stderr."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def write_json(text: str, out: Path | None = None) -> None:
    """``text`` plus a newline to stdout, or atomically to ``out``."""
    if out is None:
        sys.stdout.write(text + "\n")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, out)


def jsonl_line(record: object) -> str:
    """One results line: JSON with sorted keys, UTF-8 kept, newline-terminated (stable bytes)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def append_jsonl(path: Path, record: object) -> None:
    """Append one results line to ``path`` (runs write a line per finished episode)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(jsonl_line(record))


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
