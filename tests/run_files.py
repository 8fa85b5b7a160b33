"""Comparing run folders file by file, as the byte-identity tests of sharded, Ray and
single-process runs do."""

from __future__ import annotations

from pathlib import Path

from sgrgym.cli import main
from sgrgym.suite.layout import VOLATILE


def folder_files(out: Path) -> dict[str, bytes]:
    """Every file of the folder but its lock; the volatile ones (wall-clock timings, call
    logs) by name only, as tests/test_run_main.py compares run folders."""
    found = {}
    for p in sorted(out.rglob("*")):
        if not p.is_file() or p.name == ".lock":
            continue
        rel = p.relative_to(out).as_posix()
        found[rel] = b"(volatile)" if p.name in VOLATILE else p.read_bytes()
    return found


def run_ok(argv: list[str], out: Path, *extra: str) -> None:
    """Run ``sgrgym ARGV --out OUT EXTRA...`` in-process; it must exit 0."""
    assert main([*argv, "--out", str(out), *extra]) == 0
