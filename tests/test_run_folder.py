"""Run folders: one card per folder, one process at a time, torn lines dropped, killed runs
resume to byte-identical results with no duplicates."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from pydantic import BaseModel

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.runs.folder import COMPLETE, open_run_folder, read_log
from sgrgym.seeker.estimators import EstimateCache


class Card(BaseModel):
    agent: str
    seed: int
    files: dict[str, str] = {}


def test_torn_last_line_is_cut_and_never_merges(tmp_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    log.write_text('{"a": 1}\n{"a": 2}\n{"a": ', encoding="utf-8")
    assert [r for _, r in read_log(log, "records")] == [{"a": 1}, {"a": 2}]
    assert log.read_text(encoding="utf-8") == '{"a": 1}\n{"a": 2}\n'
    with open_run_folder(tmp_path / "run", Card(agent="x", seed=1), finals=()) as folder:
        folder.append("r.jsonl", {"n": 1})
    (tmp_path / "run" / "r.jsonl").open("a").write('{"n": 2')  # killed mid-line
    with open_run_folder(tmp_path / "run", Card(agent="x", seed=1), finals=()) as folder:
        assert folder.records("r.jsonl") == [{"n": 1}]
        folder.append("r.jsonl", {"n": 3})
        assert folder.records("r.jsonl") == [{"n": 1}, {"n": 3}]


def test_a_bad_complete_line_is_an_error_naming_it(tmp_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    log.write_text('{"a": 1}\nnot json\n{"a": 3}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"records.jsonl line 2: not valid JSON"):
        read_log(log, "records")


def test_torn_estimate_cache_line_does_not_block_resume(tmp_path: Path) -> None:
    path = tmp_path / "estimates.jsonl"
    cache = EstimateCache(path)
    cache.put("constant", "k1", None, 0.5)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"estimator": "constant", "key": "k2", "c_h')
    again = EstimateCache(path)
    assert len(again) == 1
    again.put("constant", "k2", None, 0.25)
    assert len(EstimateCache(path)) == 2


def test_card_mismatch_and_foreign_folders_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with open_run_folder(out, Card(agent="x", seed=1, files={"t.jsonl": "aa"}), ("s.json",)):
        pass
    with (
        pytest.raises(UserError, match=r"holds another run .*files\[t.jsonl\], seed"),
        open_run_folder(out, Card(agent="x", seed=2, files={"t.jsonl": "bb"}), ()),
    ):
        pass
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with (
        pytest.raises(UserError, match="holds files but no run card"),
        open_run_folder(foreign, Card(agent="x", seed=1), ()),
    ):
        pass
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with (
        pytest.raises(UserError, match="names an existing file"),
        open_run_folder(a_file, Card(agent="x", seed=1), ()),
    ):
        pass


def test_final_results_go_at_the_first_change_not_at_opening(tmp_path: Path) -> None:
    """Reopening a finished folder deletes nothing until the command changes it (a command
    that refuses after opening loses no result); the first change removes the completion
    marker and the final results before anything else is written."""
    out = tmp_path / "run"
    card = Card(agent="x", seed=1)
    with open_run_folder(out, card, ("summary.json",)) as folder:
        folder.append("episodes.jsonl", {"n": 1})
        folder.write_final("summary.json", "{}\n")
        folder.complete()
    assert json.loads((out / COMPLETE).read_text())["files"].keys() == {
        "episodes.jsonl",
        "summary.json",
    }
    with open_run_folder(out, card, ("summary.json",)) as folder:
        assert (out / "summary.json").exists() and (out / COMPLETE).exists()
        folder.append("episodes.jsonl", {"n": 2})
        assert not (out / "summary.json").exists() and not (out / COMPLETE).exists()
    with open_run_folder(out, card, ("summary.json",)) as folder:
        folder.begin()  # a command that writes into the folder itself says so first
        assert not (out / "summary.json").exists() and not (out / COMPLETE).exists()


def test_out_naming_a_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "taken"
    target.write_text("x")
    runs = [
        ["sgr", "run", "--agent", "default", "--out", str(target), "--quiet"],
        [
            "seeker",
            "run",
            "--docs",
            "howto/auth-remote-user",
            "--steps",
            "1",
            "--out",
            str(target),
            "--quiet",
        ],
        [
            "seeker",
            "calibrate",
            "--estimator",
            "constant",
            "--no-stopping",
            "--splits",
            "1",
            "--estimator-seeds",
            "1",
            "--out",
            str(target),
            "--quiet",
        ],
    ]
    for argv in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert str(target) in err and "existing file" in err


def _sgrgym(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sgrgym", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _results(out: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in names}


def _lines(path: Path, key: str) -> Counter[str]:
    return Counter(str(json.loads(line)[key]) for line in path.read_text().splitlines())


def _kill_at_random_points(argv: list[str], out: Path, grows: str, kills: int, seed: int) -> int:
    """Start the run, wait until it is writing ``grows``, kill -9 after a random pause; rerun."""
    rng = random.Random(seed)
    killed = 0
    for _ in range(kills):
        proc = _sgrgym(*argv)
        while proc.poll() is None and not (out / grows).is_file():
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        proc.communicate()
        assert not (out / COMPLETE).exists() or proc.returncode == 0
    return killed


SGR_RESULTS = ("answers.jsonl", "trajectories.jsonl", "scores.json", "run.json")


def test_sgr_run_killed_at_random_points_resumes_byte_identical(tmp_path: Path) -> None:
    argv = ["sgr", "run", "--agent", "random", "--seed", "3", "--quiet", "--json", "--out"]
    clean = tmp_path / "clean"
    assert main([*argv, str(clean)]) == 0
    out = tmp_path / "killed"
    killed = _kill_at_random_points([*argv, str(out)], out, "answers.jsonl", 4, seed=1)
    assert killed >= 1
    assert not (out / COMPLETE).exists() and not (out / "scores.json").exists()
    assert main([*argv, str(out)]) == 0
    assert _results(out, SGR_RESULTS) == _results(clean, SGR_RESULTS)
    for name in ("answers.jsonl", "trajectories.jsonl", "timings.jsonl"):
        counts = _lines(out / name, "task_id")
        assert set(counts.values()) == {1}, name
    assert (out / COMPLETE).is_file()


def test_seeker_run_killed_at_random_points_resumes_byte_identical(tmp_path: Path) -> None:
    argv = ["seeker", "run", "--steps", "3", "--quiet", "--json", "--out"]
    clean = tmp_path / "clean"
    assert main([*argv, str(clean)]) == 0
    out = tmp_path / "killed"
    killed = _kill_at_random_points([*argv, str(out)], out, "episodes.jsonl", 3, seed=2)
    assert killed >= 1
    assert not (out / "summary.json").exists()
    assert main([*argv, str(out)]) == 0
    names = ("episodes.jsonl", "summary.json", "run.json")
    assert _results(out, names) == _results(clean, names)
    assert set(_lines(out / "episodes.jsonl", "doc_id").values()) == {1}
    assert main(["seeker", "run", "--steps", "2", "--quiet", "--out", str(out)]) == 2


def test_two_processes_on_one_out_the_second_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["sgr", "run", "--agent", "random", "--seed", "5", "--quiet", "--json", "--out"]
    first = _sgrgym(*argv, str(out))
    while first.poll() is None and not (out / "answers.jsonl").is_file():
        time.sleep(0.01)
    first.send_signal(signal.SIGSTOP)  # frozen mid-run, holding the folder's lock
    try:
        assert first.poll() is None, "the first run ended before it could be paused"
        assert not (out / COMPLETE).exists()
        second = _sgrgym(*argv, str(out))
        _, err = second.communicate()
    finally:
        first.send_signal(signal.SIGCONT)
    assert second.returncode == 2
    assert b"another sgrgym process is writing" in err and str(out).encode() in err
    assert b"Traceback" not in err
    _, err = first.communicate()
    assert first.returncode == 0, err
    clean = tmp_path / "clean"
    assert main([*argv, str(clean)]) == 0
    assert _results(out, SGR_RESULTS) == _results(clean, SGR_RESULTS)


def test_calibrate_out_reused_with_other_options_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal"
    base = [
        "seeker",
        "calibrate",
        "--no-stopping",
        "--splits",
        "1",
        "--estimator-seeds",
        "1",
        "--quiet",
        "--out",
        str(out),
    ]
    assert main([*base, "--estimator", "constant", "visible-count"]) == 0
    done = json.loads((out / COMPLETE).read_text())["files"]
    assert {"pool.jsonl", "constant/report.json", "visible-count/pairs.jsonl"} <= done.keys()
    capsys.readouterr()
    assert main([*base, "--estimator", "constant"]) == 2
    assert "holds another run" in capsys.readouterr().err
    assert (out / "visible-count").is_dir()  # untouched: the other run's results stay


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_calibrate_rerun_killed_leaves_no_completed_results_then_resumes(tmp_path: Path) -> None:
    argv = [
        "seeker",
        "calibrate",
        "--estimator",
        "constant",
        "visible-count",
        "--splits",
        "1",
        "--estimator-seeds",
        "1",
        "--steps",
        "3",
        "--quiet",
        "--json",
        "--out",
    ]
    clean = tmp_path / "clean"
    assert main([*argv, str(clean)]) == 0
    out = tmp_path / "rerun"
    shutil.copytree(clean, out)
    proc = _sgrgym(*argv, str(out))
    while proc.poll() is None and (out / COMPLETE).exists():
        time.sleep(0.01)
    time.sleep(random.Random(3).uniform(0.0, 1.0))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        assert not (out / COMPLETE).exists()
    else:
        proc.communicate()
    assert main([*argv, str(out)]) == 0
    assert _tree(out) == _tree(clean)


def test_a_run_that_fails_before_recording_leaves_no_folder(tmp_path: Path) -> None:
    """A typo found late, or a model server that is not there, costs nothing: the corrected
    command is not refused as another run. A folder that held a run keeps it."""
    new = tmp_path / "new"
    with (
        pytest.raises(UserError, match="no server"),
        open_run_folder(new, Card(agent="x", seed=1), finals=()),
    ):
        raise UserError("no server")
    assert not new.exists()
    with open_run_folder(new, Card(agent="y", seed=1), finals=()) as folder:  # not refused
        folder.append("episodes.jsonl", {"n": 1})
    with (
        pytest.raises(UserError, match="later"),
        open_run_folder(new, Card(agent="y", seed=1), finals=()),
    ):
        raise UserError("later")
    assert (new / "run.json").is_file() and (new / "episodes.jsonl").is_file()
    recorded = tmp_path / "recorded"
    with (
        pytest.raises(UserError, match="after a record"),
        open_run_folder(recorded, Card(agent="x", seed=1), finals=()) as folder,
    ):
        folder.append("episodes.jsonl", {"n": 1})
        raise UserError("after a record")
    assert (recorded / "episodes.jsonl").is_file()  # what was recorded is kept for a resume
