"""Bad values, damaged recordings, edited pins and a full disk: refused with exit 2 and a
message, before any work, with nothing lost and a folder that resumes."""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.core.io import write_atomic

DOC = "howto/auth-remote-user"  # a document of the demo corpus
STORE = Path("embeddings/djangodocs__minilm-l6-onnx")

# (argv, the message's key words): every numeric, date and count option refuses what a run
# cannot use at parse time, with the accepted range in the message.
VALUES: list[tuple[list[str], str]] = [
    (["seeker", "run", "--theta", "nan"], "--theta: 'nan' is not a number in (0, 1)"),
    (["seeker", "run", "--theta", "inf"], "--theta: 'inf' is not a number in (0, 1)"),
    (["seeker", "run", "--theta", "-1"], "--theta: '-1' is not a number in (0, 1)"),
    (["seeker", "run", "--theta", "2"], "--theta: '2' is not a number in (0, 1)"),
    (["seeker", "run", "--seeds", "0"], "--seeds: 0 is not from 1 to 10,000"),
    (["seeker", "run", "--steps", "1000000000"], "--steps: 1000000000 is not from 1 to 1,000"),
    (["seeker", "run", "--steps", "1e9"], "--steps: '1e9' is not a whole number"),
    (["seeker", "run", "--queries-per-step", "0"], "--queries-per-step: 0 is not from 1 to 100"),
    (["seeker", "run", "--agent", "llm", "--stop-q-hat", "nan"], "--stop-q-hat: 'nan'"),
    (["seeker", "sweep-theta", "--thetas", "0.5", "nan"], "--thetas: 'nan' is not a number"),
    (["seeker", "select-theta", "--grid", "1.5"], "--grid: '1.5' is not a number in (0, 1)"),
    (["seeker", "calibrate", "--alpha", "nan"], "--alpha: 'nan' is not a number in (0, 1)"),
    (["seeker", "calibrate", "--alpha", "1.5"], "--alpha: '1.5' is not a number in (0, 1)"),
    (["seeker", "calibrate", "--seed", "-3"], "--seed: -3 is not from 0 to 4,294,967,295"),
    (["seeker", "calibrate", "--stop-delta", "inf"], "--stop-delta: 'inf' is not a number"),
    (["seeker", "calibrate", "--splits", "0"], "--splits: 0 is not from 1 to 1,000"),
    (["seeker", "build-corpus", "--eps", "nan"], "--eps: 'nan' is not a number in (0, 2]"),
    (["sgr", "run", "--agent", "oracle", "--out", "x", "--current-date", "notadate"], "YYYY-MM-DD"),
    (["sgr", "run", "--agent", "oracle", "--out", "x", "--current-date", "9" * 100_000], "date"),
    (["sgr", "run", "--agent", "oracle", "--out", "x", "--max-wall-s", "inf"], "--max-wall-s"),
    (["sgr", "run", "--agent", "llm", "--out", "x", "--temperature", "nan"], "--temperature"),
    (["sgr", "run", "--agent", "llm", "--out", "x", "--top-p", "0"], "--top-p: '0'"),
    (["snapshot", "record", "--timeout", "0", "--out", "x"], "--timeout: '0': give a finite"),
    (["snapshot", "record", "--fixed-date", "notadate", "--out", "x"], "a UTC time like"),
    (["run", "--seeds", "0"], "--seeds: 0 is not from 1 to 10,000"),
    (["llm", "serve", "--seed", "abc"], "--seed: 'abc' is not a whole number"),
]


@pytest.mark.parametrize(("argv", "message"), VALUES, ids=[" ".join(v[0])[:60] for v in VALUES])
def test_a_bad_value_is_refused_while_parsing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(tmp_path / a) if a == "x" else a for a in argv]
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err) < 3_000
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


# A flag means one thing everywhere: what was spelled another way elsewhere says where it went.
RENAMED: list[tuple[list[str], str]] = [
    (["seeker", "calibrate", "--seeds", "3"], "--seeds: the estimator seeds per split are --estim"),
    (["seeker", "run", "--model", "minilm-l6-onnx"], "the embedding model is --embedder"),
]


@pytest.mark.parametrize(("argv", "message"), RENAMED, ids=[" ".join(v[0]) for v in RENAMED])
def test_a_flag_used_with_another_meaning_is_refused(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


# [section] key = value of a `sgrgym run` config, and the message's key words
CONFIGS: list[tuple[str, str]] = [
    ("[calibration]\nalpha = nan\n", "calibration.alpha: Input should be a finite number"),
    ("[calibration]\nalpha = 1.5\n", "calibration.alpha: Input should be less than 1"),
    ('[calibration]\nestimators = ["nope"]\n', "calibration.estimators: no estimator 'nope'"),
    ("[calibration]\nstop_deltas = [inf]\n", "calibration.stop_deltas.0"),
    ('[seeker]\nenabled = "yes"\n', "seeker.enabled: Input should be a valid boolean"),
    ("[seeker]\nseeds = 1e26\n", "seeker.seeds"),
    ("[seeker]\nsteps = 1000000000\n", "seeker.steps: Input should be less than or equal"),
    ("[seeker]\ntheta = -1.0\n", "seeker.theta: Input should be greater than 0"),
    ('[sgr]\ncurrent_date = "notadate"\n', "sgr.current_date"),
    ("[sgr]\nmax_wall_s = inf\n", "sgr.max_wall_s: Input should be a finite number"),
    ("x = " + "[" * 5_000 + "]" * 5_000 + "\n", "nested too deeply"),
]


@pytest.mark.parametrize(("toml", "message"), CONFIGS, ids=[c[1][:40] for c in CONFIGS])
def test_a_bad_config_value_is_refused_before_any_work(
    toml: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(toml, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", "--config", str(config), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_a_file_output_that_is_a_folder_is_refused_and_nothing_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, predictions = "tasks/examples/constraint.jsonl", "tasks/examples/predictions.jsonl"
    score = ["sgr", "score", "--tasks", tasks, "--predictions", predictions]
    with pytest.raises(SystemExit):
        main([*score, "--out", str(tmp_path)])
    assert "is a folder; name a file to write" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*score, "--out", str(tmp_path / "no" / "such" / "report.json")])
    assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_atomic_write_leaves_no_part(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")
    (tmp_path / "sub").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "sub", "new\n")  # the rename fails: a folder is in the way
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "sub"]
    assert target.read_text() == "old\n"


def _full_disk_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Writing ``name`` (a temporary file of write_atomic) fails as a full disk does: after
    part of the bytes."""
    original = Path.write_bytes

    def write_bytes(self: Path, data: bytes) -> int:  # type: ignore[override]
        if self.name == name:
            original(self, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def test_a_full_disk_is_exit_2_and_the_folder_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["sgr", "run", "--agent", "default", "--out", str(out), "--quiet", "--json"]
    argv += ["--tasks", "tasks/sgr/cwe/constraint.jsonl"]
    with monkeypatch.context() as patch:
        _full_disk_on(patch, "run.json.tmp")
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert not out.exists()  # a new folder whose card could not be written is removed
    with monkeypatch.context() as patch:
        _full_disk_on(patch, "scores.json.tmp")
        assert main(argv) == 2
    assert not (out / "scores.json.tmp").exists() and not (out / "complete.json").exists()
    capsys.readouterr()
    assert main(argv) == 0  # space again: the same folder finishes the run
    assert (out / "complete.json").is_file()


def test_a_card_cut_short_by_a_kill_does_not_lock_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json.tmp").write_text('{"pack": "de')  # killed while writing the card
    argv = ["sgr", "run", "--agent", "default", "--out", str(out), "--quiet", "--json"]
    assert main([*argv, "--tasks", "tasks/sgr/cwe/constraint.jsonl"]) == 0
    assert not (out / "run.json.tmp").exists() and (out / "complete.json").is_file()


def test_an_edited_theta_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not (STORE / "manifest.json").is_file():
        pytest.skip("the demo store is not built")
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["theta_selection"] is not None
    assert main(["seeker", "check-store", "--store", str(store)]) == 0
    capsys.readouterr()
    manifest["theta"] = 0.3
    (store / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    assert main(["seeker", "check-store", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "θ = 0.3 is not the θ its evidence theta-selection.json chose (0.55)" in err


def test_a_damaged_recording_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "calls.sqlite"
    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE t (x BLOB)")
    db.executemany("INSERT INTO t VALUES (?)", [(b"x" * 4000,)] * 50)
    db.commit()
    db.close()
    data = cache.read_bytes()
    cache.write_bytes(data[: len(data) // 3])  # truncated: the header is SQLite's, pages gone
    argv = ["seeker", "run", "--agent", "llm", "--llm-model", "m", "--base-url"]
    argv += ["http://127.0.0.1:9/v1", "--llm-cache", str(cache), "--docs", DOC, "--steps", "1"]
    argv += ["--out", str(tmp_path / "run"), "--quiet"]
    before = cache.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(cache) in err and "Traceback" not in err
    assert cache.read_bytes() == before
