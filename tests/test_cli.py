"""The ``sgrgym`` command line: help, score (table and JSON), tasks, and user errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sgr_helpers import task_record, write_jsonl

from sgrgym.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "tasks" / "examples"
TASKS = [str(EXAMPLES / "constraint.jsonl"), str(EXAMPLES / "goal.jsonl")]
PREDS = str(EXAMPLES / "predictions.jsonl")
SCORE = ("sgr", "score", "--tasks", *TASKS, "--predictions", PREDS)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_console_script_help_lists_commands() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sgrgym", "sgr", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "score" in out and "tasks" in out


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\nfrom sgrgym.cli import build_parser\nbuild_parser()\n"
        "print(sorted(m for m in ('pydantic', 'sgrgym.sgr.score') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_score_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *SCORE, "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report) >= {"overall", "by_variant", "by_domain", "by_cardinality", "tasks"}
    assert set(report["by_variant"]["CG"]) == {"item_f1", "row_f1", "poa", "n"}
    tasks = {t["task_id"]: t for t in report["tasks"]}
    # elements_001-g: 5 of 6 rows, Krypton/Xenon swapped -> 40/44, 10/11, 9/10.
    g = tasks["elements_001-g"]
    assert (g["item_f1"], g["row_f1"], g["poa"]) == pytest.approx((40 / 44, 10 / 11, 0.9))
    assert tasks["python_001-g"]["missing"] is True
    assert tasks["states_001-g"]["parse_failure"] is True
    assert report["unknown_predictions"] == ["python_002"]
    assert report["overall"]["item_f1"] == pytest.approx(
        sum(t["item_f1"] for t in report["tasks"]) / 6
    )
    row = tasks["states_001"]["rows"][0]
    assert row["matched"] and row["fields"][0] == {
        "column": "state",
        "gold": "Delaware",
        "pred": "Delaware",
        "correct": True,
    }


def test_score_table_and_deterministic_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, *SCORE, "--per-task", "--out", str(tmp_path / "a.json"))
    assert code == 0
    assert "Constraint-Guided Tasks" in out and "Goal-Oriented Tasks" in out
    assert "Predictions for unknown task ids, not scored (1): python_002" in out
    run(capsys, *SCORE, "--out", str(tmp_path / "b.json"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_predictions_from_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "elements_001.txt").write_text("Helium|He|2|1\nNeon|Ne|10|2\n")
    code, out, _ = run(
        capsys, "sgr", "score", "--tasks", TASKS[0], "--predictions", str(folder), "--json"
    )
    tasks = {t["task_id"]: t for t in json.loads(out)["tasks"]}
    assert code == 0 and tasks["elements_001"]["item_f1"] == pytest.approx(16 / 32)
    assert tasks["states_001"]["missing"] is True


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"task_id": "a", "answer": 3}'], "'answer' must be the agent's raw text"),
        (['{"task_id": "a"}'], "no 'answer' field"),
        (["[1]"], "expected an object"),
        (["{bad"], ":1: not valid JSON"),
        (
            ['{"task_id": "a", "answer": "x"}', '{"task_id": "a", "answer": "y"}'],
            "a second answer (the first is on line 1)",
        ),
    ],
)
def test_bad_predictions_are_clear_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "sgr", "score", "--tasks", *TASKS, "--predictions", str(path))
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_bad_task_file_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [task_record(fields={"tag": {"comparison": "x"}})])
    code, _, err = run(capsys, "sgr", "tasks", "--tasks", str(path))
    assert code == 2
    assert f"{path}:1: task demo_001: field rubric.fields.tag.comparison" in err


def test_tasks_listing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sgr", "tasks", "--tasks", *TASKS, "--json")
    listing = json.loads(out)
    assert code == 0 and len(listing) == 6
    assert listing[0]["row_key"] == ["symbol"]
    code, out, _ = run(capsys, "sgr", "tasks", "--tasks", *TASKS)
    assert "6 task variants (3 CG, 3 GO), all valid." in out


@pytest.mark.parametrize(
    "argv",
    [
        ["sgr", "run", "--ag", "oracle", "--out", "unused"],
        ["seeker", "run", "--queries", "3", "--out", "unused"],
        ["sgr", "score", "--task", "tasks/examples/constraint.jsonl", "--predictions", "x"],
    ],
)
def test_abbreviated_options_are_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--ag`` is not ``--agent``: an abbreviation never runs a command (every subparser
    inherits the root's class)."""
    with pytest.raises(SystemExit) as refused:
        main([a.replace("unused", str(tmp_path / "out")) for a in argv])
    assert refused.value.code == 2 and "error:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
