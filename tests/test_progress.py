"""Progress on stderr: in a log, a few lines a bar with the time left; whole paths in the
final table of `sgrgym run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgrgym.cli.suite import _print_places
from sgrgym.core.output import progress_bar


def test_a_log_gets_a_few_lines_per_bar(capsys: pytest.CaptureFixture[str]) -> None:
    for done in range(1, 1001):
        progress_bar(done, 1000, f"task_{done}")
    for done in range(1, 4):  # a new bar: a new total
        progress_bar(done, 3, f"doc_{done}")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5 + 3
    assert lines[0].startswith("1/1000 (0%) after ") and "left: task_1" in lines[0]
    assert lines[1].startswith("250/1000 (25%)") and lines[3].startswith("750/1000 (75%)")
    assert lines[4].startswith("1000/1000 (100%) done in ") and lines[4].endswith(": task_1000")
    assert [line.split(" ")[0] for line in lines[5:]] == ["1/3", "2/3", "3/3"]


def test_a_bar_that_starts_again_is_a_new_bar(capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        for done in range(1, 9):
            progress_bar(done, 8, "x")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["1/8", "2/8", "4/8", "6/8", "8/8"] * 2


def test_the_final_table_keeps_long_paths_whole(capsys: pytest.CaptureFixture[str]) -> None:
    deep = Path("/") / ("d" * 60) / ("e" * 60) / "report" / "index.html"
    _print_places({"report": deep})
    assert str(deep) in capsys.readouterr().out
