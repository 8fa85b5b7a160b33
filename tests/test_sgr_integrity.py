"""Nothing read that was not verified: demo task pins, task files of a resumed run, site models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sgrgym.cli import main

REPO = Path(__file__).resolve().parent.parent
CWE_TASKS = "tasks/sgr/cwe/constraint.jsonl"


def _change_a_digit(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    answer = record["oracle_answer"]
    digit = next(i for i, ch in enumerate(answer) if ch.isdigit())
    record["oracle_answer"] = (
        answer[:digit] + str((int(answer[digit]) + 1) % 10) + answer[digit + 1 :]
    )
    lines[0] = json.dumps(record) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_demo_task_files_are_checked_against_their_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(REPO / "tasks/sgr", tmp_path / "tasks/sgr")
    monkeypatch.chdir(tmp_path)
    assert main(["sgr", "tasks", "--tasks", CWE_TASKS]) == 0
    capsys.readouterr()
    _change_a_digit(tmp_path / CWE_TASKS)
    assert main(["sgr", "tasks", "--tasks", CWE_TASKS]) == 2
    err = capsys.readouterr().err
    assert CWE_TASKS in err and "tasks/sgr/manifest.json" in err and "--update-pin" in err
    pack = str(REPO / "snapshots" / "demo")
    assert main(["sgr", "findability", "--pack", pack, "--tasks", CWE_TASKS]) == 2
    assert CWE_TASKS in capsys.readouterr().err
    assert main(["sgr", "tasks", "--tasks", CWE_TASKS, "--update-pin"]) == 0
    assert main(["sgr", "tasks", "--tasks", CWE_TASKS]) == 0


def test_resume_refused_after_a_user_task_file_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "mine" / "constraint.jsonl"
    tasks.parent.mkdir()
    shutil.copy(REPO / "tasks/sgr/places/constraint.jsonl", tasks)
    out = tmp_path / "run"
    argv = [
        "sgr",
        "run",
        "--agent",
        "default",
        "--tasks",
        str(tasks),
        "--out",
        str(out),
        "--quiet",
        "--json",
    ]
    assert main(argv) == 0
    assert str(tasks) in json.loads((out / "run.json").read_text())["task_files"]
    _change_a_digit(tasks)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and f"task_files[{tasks}]" in err


@pytest.fixture
def pack_copy(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir()
    shutil.copy(REPO / "snapshots/demo/manifest.json", pack / "manifest.json")
    shutil.copytree(REPO / "snapshots/demo/warc", pack / "warc")
    return pack


def _edit_cwe_model(pack: Path, edit: str) -> None:
    manifest = json.loads((pack / "manifest.json").read_text(encoding="utf-8"))
    model = next(s for s in manifest["sites"] if s["host"].startswith("cwe."))["model"]
    if edit == "value":
        # a value that cwe_001's reference path sets (the Top 25 view it opens)
        control = next(c for c in model["controls"] if "1425" in c["values"])
        control["values"][control["values"].index("1425")] += "x"
    else:
        model["controls"][0]["kind"] = 5
    (pack / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


@pytest.mark.parametrize("edit", ["value", "malformed"])
def test_changed_site_model_names_the_manifest(
    pack_copy: Path, edit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_cwe_model(pack_copy, edit)
    code = main(
        [
            "sgr",
            "run",
            "--pack",
            str(pack_copy),
            "--agent",
            "oracle",
            "--tasks",
            str(REPO / CWE_TASKS),
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(pack_copy / "manifest.json") in err and "build-packs" in err
    code = main(
        [
            "sgr",
            "states",
            "--pack",
            str(pack_copy),
            "--task",
            "cwe_001",
            "--tasks",
            str(REPO / CWE_TASKS),
        ]
    )
    assert code == 2
    assert str(pack_copy / "manifest.json") in capsys.readouterr().err
