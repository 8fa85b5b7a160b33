"""``sgrgym sgr score`` scores a task at a time: its output is byte for byte what the
in-process ``score_tasks`` report serializes to, and it leaves no temporary file behind."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from sgr_helpers import task_record, write_jsonl

from sgrgym.cli import main
from sgrgym.core.blocklines import jsonl_lines_blockwise
from sgrgym.core.errors import InputError
from sgrgym.core.inputs import jsonl_lines
from sgrgym.sgr.score import ScoreReport, load_predictions, score_tasks
from sgrgym.sgr.score_table import render_report
from sgrgym.sgr.tasks import load_tasks

COLUMNS = ("name", "count", "tag")


def _answer(rng: random.Random, rows: list[list[str]]) -> str | None:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return "I could not find the requested data."
    if roll < 0.3:
        return "NONE"
    kept = [[*r] for r in rows if rng.random() > 0.2]
    for r in kept:
        if rng.random() < 0.3:
            r[rng.randrange(1, len(r))] = "wrong"
    if rng.random() < 0.3:
        rng.shuffle(kept)
    if rng.random() < 0.2:
        kept.append(["extra", "9", "z", "surplus"])
    body = "\n".join("|".join(r) for r in kept)
    if rng.random() < 0.2:
        return f"first try:\n```\na|1|x\n```\nfinal:\n```\n{body}\n```"
    return body


def _inputs(folder: Path, n: int = 40) -> tuple[list[str], str]:
    """``n`` CG/GO pairs over three domains (typed and legacy rubrics, a cardinality warning,
    non-ASCII values), answers of every kind, and two predictions for unknown ids."""
    rng = random.Random(7)
    constraint: list[dict[str, Any]] = []
    goal: list[dict[str, Any]] = []
    predictions: list[dict[str, Any]] = []
    for i in range(n):
        rows = [[f"näme {i}-{j}", str(rng.randint(0, 99)), "x"] for j in range(rng.randint(0, 6))]
        text = "\n".join("|".join(r) for r in rows) or "NONE"
        for task_id, records in ((f"t_{i:03d}", constraint), (f"t_{i:03d}-g", goal)):
            records.append(
                task_record(
                    task_id,
                    answer=text,
                    columns=COLUMNS,
                    typed=i % 3 != 0,
                    domain=("ALPHA", "BETA", "GAMMA_Ω")[i % 3],
                    cardinality=len(rows) + 1 if i == 5 else None,
                )
            )
            answer = _answer(rng, rows)
            if answer is not None or rng.random() < 0.5:
                predictions.append({"task_id": task_id, "answer": answer})
    predictions += [{"task_id": "zz_unknown", "answer": "x"}, {"task_id": "aa_gone", "answer": ""}]
    tasks = [
        str(write_jsonl(folder / "constraint.jsonl", constraint)),
        str(write_jsonl(folder / "goal.jsonl", goal)),
    ]
    return tasks, str(write_jsonl(folder / "predictions.jsonl", predictions))


def _in_process(tasks: list[str], predictions: str) -> ScoreReport:
    return score_tasks(load_tasks(tasks), load_predictions(predictions))


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temporary folder, pointed at an empty folder to watch."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_streamed_json_equals_the_in_process_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, temp_dir: Path
) -> None:
    tasks, predictions = _inputs(tmp_path)
    report = _in_process(tasks, predictions)
    assert report.missing and report.parse_failures and report.multiple_tables
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = ["sgr", "score", "--tasks", *tasks, "--predictions", predictions]
    assert main([*argv, "--json", "--out", str(out_dir / "report.json")]) == 0
    stdout = capsys.readouterr().out
    assert stdout == report.model_dump_json() + "\n"
    written = (out_dir / "report.json").read_bytes()
    assert written == (report.model_dump_json(indent=2) + "\n").encode()
    assert [p.name for p in out_dir.iterdir()] == ["report.json"]
    assert list(temp_dir.iterdir()) == []


@pytest.mark.parametrize("per_task", [False, True])
def test_streamed_table_equals_the_in_process_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, per_task: bool
) -> None:
    tasks, predictions = _inputs(tmp_path, n=12)
    report = _in_process(tasks, predictions)
    flags = ["--per-task"] if per_task else []
    assert main(["sgr", "score", "--tasks", *tasks, "--predictions", predictions, *flags]) == 0
    expected = render_report(report, "predictions.jsonl", per_task=per_task)
    warning = "Task file warnings (2): listed by sgrgym sgr tasks"
    assert capsys.readouterr().out == f"{expected}\n{warning}\n"


def test_a_single_task_and_no_predictions_for_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tasks = [str(write_jsonl(tmp_path / "t.jsonl", [task_record()]))]
    predictions = str(write_jsonl(tmp_path / "p.jsonl", [{"task_id": "other", "answer": "x"}]))
    report = _in_process(tasks, predictions)
    out = tmp_path / "r.json"
    argv = ["sgr", "score", "--tasks", *tasks, "--predictions", predictions, "--json"]
    assert main([*argv, "--out", str(out)]) == 0
    assert capsys.readouterr().out == report.model_dump_json() + "\n"
    assert out.read_text(encoding="utf-8") == report.model_dump_json(indent=2) + "\n"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unknown task file", "nope.jsonl: task file not found"),
        ("bad task line", "invalid task file(s), nothing loaded"),
        ("bad predictions", "'answer' must be the agent's raw text"),
    ],
)
def test_a_refused_command_leaves_nothing_behind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, temp_dir: Path, case: str, message: str
) -> None:
    tasks, predictions = _inputs(tmp_path, n=6)
    if case == "unknown task file":
        tasks.append(str(tmp_path / "nope.jsonl"))
    elif case == "bad task line":
        with open(tasks[1], "a", encoding="utf-8") as f:
            f.write('{"task_id": "t_000-g"}\n')
    else:
        with open(predictions, "a", encoding="utf-8") as f:
            f.write(json.dumps({"task_id": "t_001", "answer": 3}) + "\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = ["sgr", "score", "--tasks", *tasks, "--predictions", predictions, "--json"]
    assert main([*argv, "--out", str(out_dir / "report.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
    assert list(out_dir.iterdir()) == [] and list(temp_dir.iterdir()) == []


def test_task_errors_come_before_predictions_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tasks = [str(write_jsonl(tmp_path / "t.jsonl", [task_record(), {"task_id": "x"}]))]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("{bad\n", encoding="utf-8")
    argv = ["sgr", "score", "--tasks", *tasks, "--predictions", str(predictions)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:2: task x: field domain" in err and "not valid JSON" not in err


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n \r\n",
        b'\xef\xbb\xbf{"a": 1}\r\n\r\n{"b": 2}',
        '{"a": 1}\u2028{"b": "\u00e9"}\x85\n\x1c{}\r'.encode(),
        b'{"a": 1}\n\xff\n',
        b'{"a": "\xc3',
    ],
)
def test_blockwise_lines_match_the_whole_file_reader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)

    def read(lines: Any) -> Any:
        try:
            return list(lines)
        except InputError as exc:
            return str(exc)

    for allow_empty in (False, True):
        expected = read(jsonl_lines(path, "task file", allow_empty))
        for block in (1, 2, 3, 1 << 20):
            got = read(jsonl_lines_blockwise(path, "task file", allow_empty, block=block))
            assert got == expected
