"""Difficulty calibration over runs of a baseline agent (SGR-Bench section 3.2.4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sgr_helpers import task_record, write_jsonl

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.sgr.difficulty import calibrate, label_of


def test_labels_follow_section_3_2_4() -> None:
    assert label_of([1.0, 1.0, 1.0], 1.0, 0.0) == "solved reliably"
    assert label_of([1.0, 0.5, 1.0], 1.0, 0.0) == "partial progress"
    assert label_of([0.0, 0.0], 1.0, 0.0) == "no progress"
    assert label_of([0.0, 0.2], 1.0, 0.0) == "partial progress"
    assert label_of([0.1, 0.05], 1.0, 0.1) == "no progress"


def _tasks(root: Path) -> Path:
    records = []
    for n, variant in ((1, "CG"), (2, "CG"), (3, "GO")):
        record = task_record(f"t_00{n}", "a|1\nb|2", ("name", "count"))
        record["task_id"] = f"t_00{n}" + ("-g" if variant == "GO" else "")
        records.append(record)
    return write_jsonl(root / "tasks.jsonl", records)


def _run(root: Path, name: str, tasks: Path, answers: dict[str, str], done: bool = True) -> Path:
    run = root / name
    run.mkdir()
    card = {"agent": "baseline", "task_files": {str(tasks): sha256_file(tasks)[0]}}
    (run / "run.json").write_text(json.dumps(card), encoding="utf-8")
    write_jsonl(run / "answers.jsonl", [{"task_id": k, "answer": v} for k, v in answers.items()])
    if done:
        (run / "complete.json").write_text("{}", encoding="utf-8")
    return run


def test_runs_are_labelled_and_the_set_targets_measured(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path)
    perfect, half = "a|1\nb|2", "a|1"
    one = _run(tmp_path, "seed0", tasks, {"t_001": perfect, "t_002": half, "t_003-g": "x|9"})
    two = _run(tmp_path, "seed1", tasks, {"t_001": perfect, "t_002": "x|9", "t_003-g": "x|9"})
    report = calibrate([one, two], {})
    labels = {t.task_id: t.label for t in report.tasks}
    assert labels == {
        "t_001": "solved reliably",
        "t_002": "partial progress",
        "t_003-g": "no progress",
    }
    assert report.counts == {"solved reliably": 1, "partial progress": 1, "no progress": 1}
    assert report.perfect_share == pytest.approx(2 / 6)
    assert report.go_item_f1 == 0.0 and report.cg_item_f1 is not None
    met = {t.name: t.met for t in report.targets}
    assert met["perfect variant-runs"] is False and met["CG minus GO Item-F1"] is True


def test_the_command_prints_labels_and_refuses_what_it_cannot_calibrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = _tasks(tmp_path)
    one = _run(tmp_path, "a", tasks, {"t_001": "a|1", "t_002": "", "t_003-g": ""})
    assert main(["sgr", "difficulty", str(one), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["label"] for t in out["tasks"]] == ["partial progress", "no progress", "no progress"]
    assert any("one run only" in note for note in out["notes"])
    unfinished = _run(tmp_path, "b", tasks, {"t_001": "a|1"}, done=False)
    with pytest.raises(UserError, match="unfinished"):
        calibrate([one, unfinished], {})
    with pytest.raises(SystemExit) as refused:
        main(["sgr", "difficulty", str(one), "--progress", "1"])
    assert refused.value.code == 2 and "--progress" in capsys.readouterr().err
    with pytest.raises(UserError, match="must be below --solved"):
        calibrate([one], {}, solved=0.5, progress=0.5)
