"""Every command that reads a user file answers bad input with exit 2 and a message naming it,
and leaves the file as it was (a command never rewrites a file it refuses).

The sweep covers the ``sgr``, ``seeker`` and ``snapshot`` commands' file inputs and the
caches and recordings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sgrgym.cli import main

DEMO_TASKS = "tasks/sgr/places/constraint.jsonl"
EXAMPLE_TASKS = "tasks/examples/constraint.jsonl"
EXAMPLE_PREDICTIONS = "tasks/examples/predictions.jsonl"
DOC = "howto/auth-remote-user"  # a document of the demo corpus


def _deep(path: Path) -> None:
    path.write_text("[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")


def _folder(path: Path) -> None:
    path.mkdir()


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'{"task_id": "caf\xe9"}\n')


def _garbage(path: Path) -> None:
    path.write_text("this is not what the command reads\n\x00\x01\x02\n", encoding="utf-8")


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # read naively, a FIFO blocks until a writer comes: it must be refused


def _torn_json(path: Path) -> None:
    path.write_text('{"settings": {"theta": 0.55}}', encoding="utf-8")  # no final newline


BAD: dict[str, Callable[[Path], None]] = {
    "deep-json": _deep,
    "folder": _folder,
    "not-utf8": _not_utf8,
    "garbage": _garbage,
    "empty": _empty,
    "fifo": _fifo,
    "torn-json": _torn_json,
}


def _state(path: Path) -> object:
    """What a command must not change: a file's bytes, or the kind of a non-file."""
    if path.is_file():
        return path.read_bytes()
    return "folder" if path.is_dir() else "fifo" if path.is_fifo() else "missing"


# (name, argv with "{F}" for the bad file and "{T}" for a scratch folder, bad inputs it takes)
ALL = tuple(BAD)
COMMANDS: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("sgr tasks --tasks", ["sgr", "tasks", "--tasks", "{F}"], ALL),
    ("sgr tasks --row-keys", ["sgr", "tasks", "--tasks", DEMO_TASKS, "--row-keys", "{F}"], ALL),
    (
        "sgr score --tasks",
        ["sgr", "score", "--tasks", "{F}", "--predictions", EXAMPLE_PREDICTIONS],
        ALL,
    ),
    (
        "sgr score --row-keys",
        [
            "sgr",
            "score",
            "--tasks",
            EXAMPLE_TASKS,
            "--row-keys",
            "{F}",
            "--predictions",
            EXAMPLE_PREDICTIONS,
        ],
        ALL,
    ),
    (
        "sgr score --predictions",
        ["sgr", "score", "--tasks", EXAMPLE_TASKS, "--predictions", "{F}"],
        ALL,
    ),
    (
        "sgr run --tasks",
        ["sgr", "run", "--agent", "default", "--tasks", "{F}", "--out", "{T}/run", "--quiet"],
        ALL,
    ),
    ("sgr states --tasks", ["sgr", "states", "--task", "x", "--tasks", "{F}"], ALL),
    (
        "sgr build-packs --tasks",
        ["sgr", "build-packs", "--tasks", "{F}", "--out", "{T}/packs"],
        ALL,
    ),
    (
        "seeker build-corpus jsonl",
        ["seeker", "build-corpus", "--source", "jsonl", "{F}", "--out", "{T}/c.jsonl"],
        ALL,
    ),
    (
        "seeker build-store --corpus-file",
        ["seeker", "build-store", "--corpus-file", "{F}", "--out", "{T}/store", "--quiet"],
        ALL,
    ),
    (
        "seeker run --corpus-file",
        ["seeker", "run", "--corpus-file", "{F}", "--out", "{T}/run", "--quiet"],
        ALL,
    ),
    (
        "seeker sweep-theta --corpus-file",
        [
            "seeker",
            "sweep-theta",
            "--corpus-file",
            "{F}",
            "--thetas",
            "0.6",
            "--out",
            "{T}/sw",
            "--quiet",
        ],
        ALL,
    ),
    (
        "seeker calibrate --corpus-file",
        [
            "seeker",
            "calibrate",
            "--corpus-file",
            "{F}",
            "--estimator",
            "constant",
            "--no-stopping",
            "--quiet",
        ],
        ALL,
    ),
    # An empty estimate cache is a cache with no entries yet.
    (
        "seeker calibrate --estimate-cache",
        [
            "seeker",
            "calibrate",
            "--estimate-cache",
            "{F}",
            "--estimator",
            "constant",
            "--no-stopping",
            "--splits",
            "1",
            "--estimator-seeds",
            "1",
            "--quiet",
        ],
        ("deep-json", "folder", "not-utf8", "garbage", "fifo", "torn-json"),
    ),
    (
        "seeker run --llm-cache (replay)",
        [
            "seeker",
            "run",
            "--agent",
            "llm",
            "--llm-model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--llm-cache",
            "{F}",
            "--docs",
            DOC,
            "--steps",
            "1",
            "--out",
            "{T}/run",
            "--quiet",
        ],
        ALL,
    ),
    (
        "sgr run --llm-cache (record)",
        [
            "sgr",
            "run",
            "--agent",
            "llm",
            "--llm-model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--llm-cache",
            "{F}",
            "--llm-mode",
            "record",
            "--out",
            "{T}/run",
            "--quiet",
        ],
        ("deep-json", "folder", "not-utf8", "garbage", "fifo", "torn-json"),
    ),
    (
        "seeker run --query-cache",
        [
            "seeker",
            "run",
            "--query-cache",
            "{F}",
            "--docs",
            DOC,
            "--steps",
            "1",
            "--out",
            "{T}/run",
            "--quiet",
        ],
        ALL,
    ),
    (
        "seeker calibrate --query-cache",
        [
            "seeker",
            "calibrate",
            "--query-cache",
            "{F}",
            "--estimator",
            "abstract-coverage",
            "--no-stopping",
            "--splits",
            "1",
            "--estimator-seeds",
            "1",
            "--quiet",
        ],
        ALL,
    ),
]

COMMANDS += [
    ("snapshot record --urls", ["snapshot", "record", "--urls", "{F}", "--out", "{T}/p"], ALL),
    ("snapshot record --crawl", ["snapshot", "record", "--crawl", "{F}", "--out", "{T}/p"], ALL),
    ("snapshot import", ["snapshot", "import", "{F}", "--out", "{T}/p"], ALL),
    (
        "snapshot fetch --data @FILE",
        ["snapshot", "fetch", "--data", "@{F}", "snapshots/demo", "http://x.sgrgym.test/"],
        ("folder", "fifo"),
    ),
]

CASES = [
    pytest.param(argv, bad, id=f"{name} <- {bad}")
    for name, argv, takes in COMMANDS
    for bad in takes
]


@pytest.mark.parametrize(("argv", "bad"), CASES)
def test_bad_file_is_exit_2_naming_it(
    argv: list[str], bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / f"bad-{bad}.jsonl"
    BAD[bad](target)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = [a.replace("{F}", str(target)).replace("{T}", str(scratch)) for a in argv]
    before = _state(target)
    code = main(args)  # an exception escaping here is the traceback the user would see
    err = capsys.readouterr().err
    assert code == 2, err
    assert _state(target) == before, "the refused file was changed"
    assert str(target) in err
    assert "Traceback" not in err
    assert len(err) < 2_000


def test_html_corpus_folder_with_bad_pages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "a.html").write_bytes(b"<html><body><h1>caf\xe9</h1></body></html>")
    code = main(
        [
            "seeker",
            "build-corpus",
            "--source",
            "html",
            str(pages),
            "--out",
            str(tmp_path / "c.jsonl"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and str(pages / "a.html") in err and "UTF-8" in err
    (pages / "a.html").unlink()
    (pages / "b.html").mkdir()
    code = main(["seeker", "build-corpus", "--source", "html", str(pages)])
    err = capsys.readouterr().err
    assert code == 2 and str(pages / "b.html") in err


def test_long_input_is_not_echoed_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "constraint.jsonl"
    tasks.write_text('{"task_id": "' + "x" * 1_000_000 + '"}\n', encoding="utf-8")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"task_id": "' + "y" * 1_000_000 + '", "answer": 5}\n', "utf-8")
    assert main(["sgr", "tasks", "--tasks", str(tasks)]) == 2
    err = capsys.readouterr().err
    assert str(tasks) in err and len(err) < 5_000
    assert main(["sgr", "score", "--tasks", EXAMPLE_TASKS, "--predictions", str(predictions)]) == 2
    err = capsys.readouterr().err
    assert str(predictions) in err and len(err) < 5_000
