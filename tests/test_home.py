"""The data home: default paths read there, so sgrgym runs from any folder; `sgrgym setup`
fills a data home from the pins a wheel ships (the wheel itself: setup/check-wheel)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.core import home as data_home
from sgrgym.suite import setup as home_setup

ROOT = Path(__file__).resolve().parent.parent


def test_the_checkout_is_the_data_home_and_paths_stay_relative_in_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(data_home.HOME_ENV, raising=False)
    monkeypatch.chdir(ROOT)
    assert data_home.home() == ROOT
    assert data_home.home_path("tasks/sgr") == Path("tasks/sgr")
    assert data_home.recorded(ROOT / "tasks/sgr/cwe/goal.jsonl") == "tasks/sgr/cwe/goal.jsonl"
    monkeypatch.chdir(tmp_path)  # elsewhere: the same files, named absolutely
    assert data_home.home_path("tasks/sgr") == ROOT / "tasks/sgr"
    assert data_home.recorded(ROOT / "tasks/sgr/cwe/goal.jsonl") == "tasks/sgr/cwe/goal.jsonl"
    assert data_home.locate("tasks/sgr/cwe/goal.jsonl") == ROOT / "tasks/sgr/cwe/goal.jsonl"
    assert data_home.recorded(tmp_path / "mine.jsonl") == str(tmp_path / "mine.jsonl")
    monkeypatch.setenv(data_home.HOME_ENV, str(tmp_path / "home"))
    assert data_home.home() == tmp_path / "home"
    assert data_home.home_path("snapshots") == tmp_path / "home" / "snapshots"


@pytest.mark.skipif(
    not (ROOT / "snapshots/demo/warc").is_dir(),
    reason="the demo pack is not built (setup/test builds it)",
)
def test_commands_read_their_defaults_in_the_data_home_from_any_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != data_home.HOME_ENV}
    argv = ["sgr", "run", "--agent", "oracle", "--task", "cwe_001", "--out", "here", "--quiet"]
    done = subprocess.run(
        [sys.executable, "-m", "sgrgym", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads((tmp_path / "here" / "run.json").read_text())
    assert next(iter(card["task_files"])) == "tasks/sgr/cwe/constraint.jsonl"  # as in the checkout
    assert json.loads((tmp_path / "here" / "scores.json").read_text())["overall"]["item_f1"] == 1


def test_built_artifacts_are_never_shipped() -> None:
    shipped = {p.as_posix() for p in home_setup.shipped_files(ROOT)}
    assert "tasks/sgr/cwe/constraint.jsonl" in shipped
    assert "embeddings/djangodocs__minilm-l6-onnx/documents.json" in shipped
    assert "snapshots/demo/manifest.json" in shipped
    assert "baselines/qwen2.5-coder-0.5b/calls.sqlite.xz" in shipped
    for built in ("tasks/seeker/djangodocs/corpus.jsonl", "snapshots/demo/warc/x.warc.gz"):
        assert home_setup.is_built(Path(built)) and built not in shipped
    assert not any(p.startswith("embeddings/models/all-MiniLM-L6-v2/") for p in shipped)
    assert not any(p.endswith("passages.arrow") for p in shipped)


def test_setup_copies_missing_pins_and_refuses_a_changed_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = tmp_path / "shipped"
    (shipped / "tasks" / "sgr").mkdir(parents=True)
    (shipped / "tasks" / "sgr" / "manifest.json").write_text("{}\n")
    (shipped / "baselines").mkdir()
    (shipped / "baselines" / "b.json").write_text("[1]\n")
    monkeypatch.setattr(home_setup, "shipped_root", lambda: shipped)
    home = tmp_path / "home"
    (home / "baselines").mkdir(parents=True)
    (home / "baselines" / "b.json").write_text("[1]\n")  # the same bytes: kept
    assert home_setup.install_pins(home, print) == 1
    assert (home / "tasks" / "sgr" / "manifest.json").read_text() == "{}\n"
    (home / "baselines" / "b.json").write_text("[2]\n")
    monkeypatch.setattr(home_setup, "STEPS", ())
    assert main(["setup", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert f"{home / 'baselines' / 'b.json'}: differs from the one this sgrgym ships" in err
    assert (home / "baselines" / "b.json").read_text() == "[2]\n"  # nothing overwritten
