"""The baseline replay inside ``sgrgym run``: every difference named (file, record, field, both
values), a mismatch or a failed replay recorded and reported after the results and the report
are written (exit 1), ``--no-baseline`` skipping it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.suite.baseline import compare_file, difference_lines, pin_files, read_status

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "baselines" / "qwen2.5-coder-0.5b"
MODEL_ONNX = ROOT / "embeddings" / "models" / "all-MiniLM-L6-v2" / "model.onnx"
CORPUS = ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl"


def _jsonl(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()


def test_a_changed_value_in_an_episode_is_named_by_record_field_and_both_values() -> None:
    a = {"doc_id": "howto/windows", "seed": 0, "query_diversity": [1.0, 0.25, 0.5]}
    b = {"doc_id": "howto/windows", "seed": 1, "query_diversity": [1.0, 0.1]}
    changed = {**a, "query_diversity": [1.0, 0.25, 0.500001]}
    found = compare_file("seeker-dedup/episodes.jsonl", _jsonl(a, b), _jsonl(changed, b))
    assert found is not None and found.unlisted == 0
    (only,) = found.listed
    assert (only.file, only.record, only.field) == (
        "seeker-dedup/episodes.jsonl",
        "doc_id=howto/windows seed=0",
        "query_diversity[2]",
    )
    assert (only.committed, only.replayed) == ("0.5", "0.500001")
    assert difference_lines(found.listed) == [
        "seeker-dedup/episodes.jsonl doc_id=howto/windows seed=0: query_diversity[2]: "
        "committed 0.5, replayed 0.500001"
    ]
    missing = compare_file("seeker-dedup/episodes.jsonl", _jsonl(a, b), _jsonl(a))
    assert missing is not None
    assert [(d.record, d.field, d.replayed) for d in missing.listed] == [
        ("doc_id=howto/windows seed=1", "(record)", None)
    ]


def test_json_fields_run_cards_and_formatting() -> None:
    committed = json.dumps({"summary": {"final_completeness": 0.4}, "n": 6}).encode()
    replayed = json.dumps({"summary": {"final_completeness": 0.41}, "n": 6}).encode()
    found = compare_file("seeker-oracle/summary.json", committed, replayed)
    assert found is not None
    assert [(d.record, d.field, d.committed, d.replayed) for d in found.listed] == [
        ("(file)", "summary.final_completeness", "0.4", "0.41")
    ]
    card = {"agent": "llm", "environment": {"python": "3.13.0"}}
    other_machine = {"agent": "llm", "environment": {"python": "3.10.2"}}
    assert (
        compare_file("sgr/run.json", json.dumps(card).encode(), json.dumps(other_machine).encode())
        is None
    )
    spaced = compare_file("sgr/scores.json", b'{"a": 1}\n', b'{"a":1}\n')
    assert spaced is not None and spaced.listed[0].field == "(bytes)"
    gone = compare_file("sgr/scores.json", b"{}", None)
    assert gone is not None and gone.listed[0].replayed is None


def test_many_differences_are_capped_and_counted() -> None:
    before = [{"task_id": f"t{i}", "score": i} for i in range(30)]
    after = [{"task_id": f"t{i}", "score": i + 1} for i in range(30)]
    found = compare_file("sgr/answers.jsonl", _jsonl(*before), _jsonl(*after))
    assert found is not None and len(found.listed) == 20 and found.unlisted == 10
    assert found.listed[0].record == "task_id=t0"


needs_built = pytest.mark.skipif(
    not (MODEL_ONNX.is_file() and CORPUS.is_file()),
    reason="the demo corpus or the MiniLM model is not built (setup/test builds them)",
)


def _baseline_only(path: Path, folder: Path) -> Path:
    path.write_text(
        "[seeker]\nenabled = false\n[calibration]\nenabled = false\n[sgr]\nenabled = false\n"
        f"[baseline]\nfolder = {json.dumps(str(folder))}\n",
        encoding="utf-8",
    )
    return path


@needs_built
def test_a_mismatch_is_recorded_after_the_results_and_report_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)  # the recorded commands' task paths are relative to the root
    copy = tmp_path / "baseline"
    shutil.copytree(BASELINE, copy)
    summary = copy / "seeker-oracle" / "summary.json"
    data = json.loads(summary.read_text("utf-8"))
    committed = data["final_completeness"]
    data["final_completeness"] = 0.123456
    summary.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    pin_files(copy)
    out = tmp_path / "out"
    config = _baseline_only(tmp_path / "run.toml", copy)
    assert main(["run", "--out", str(out), "--config", str(config), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "does not replay to its committed results" in err
    assert "seeker-oracle/summary.json: final_completeness: committed 0.123456" in err
    for written in (
        "results/baseline.json",
        "results/tables.md",
        "report/index.html",
        "report/report.md",
        "complete.json",
    ):
        assert (out / written).is_file(), written
    status = read_status(out / "baseline" / "replay.json")
    assert not status.identical and status.error is None
    differences = [d for d in status.differences if d.file == "seeker-oracle/summary.json"]
    assert [(d.record, d.field, d.committed, d.replayed) for d in differences] == [
        ("(file)", "final_completeness", "0.123456", json.dumps(committed))
    ]
    report = (out / "report" / "report.md").read_text("utf-8")
    assert "Baseline replay" in report and "0.123456" in report
    assert main(["verify-run", str(out)]) == 0  # the recorded mismatch is itself verified
    # A resumed run does not replay again, and still says the replay differed.
    assert main(["run", "--out", str(out), "--config", str(config), "--quiet"]) == 1


@needs_built
def test_a_failed_replay_is_recorded_and_no_baseline_skips_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    copy = tmp_path / "baseline"
    shutil.copytree(BASELINE, copy)
    manifest = json.loads((copy / "manifest.json").read_text("utf-8"))
    manifest["runs"][0]["argv"] = [*manifest["runs"][0]["argv"], "--max-tokens", "99"]
    (copy / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    config = _baseline_only(tmp_path / "run.toml", copy)
    out = tmp_path / "out"
    assert main(["run", "--out", str(out), "--config", str(config), "--quiet"]) == 1
    assert "could not be replayed" in capsys.readouterr().err
    status = read_status(out / "baseline" / "replay.json")
    assert status.error is not None and "not in the cache" in status.error
    assert (out / "report" / "index.html").is_file() and (out / "complete.json").is_file()
    skipped = tmp_path / "skipped"
    argv = ["run", "--out", str(skipped), "--config", str(config), "--quiet", "--no-baseline"]
    assert main(argv) == 0
    assert not (skipped / "baseline").exists() and (skipped / "complete.json").is_file()
