"""Source families (figure 3), table 3, `sgr compare` over run folders, `sgr tasks` notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sgr_helpers import task_record, write_jsonl

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.sgr.families import load_families, paper_families
from sgrgym.sgr.make import demo_task_files
from sgrgym.sgr.score import score_tasks
from sgrgym.sgr.tasks import load_tasks

PUBLISHED_DOMAINS = [
    "ARXIV",
    "CENSUS_GOV",
    "CDC_WONDER",
    "CFPB_COMPLAINT_DATABASE",
    "CFPB_REPORTS",
    "COMPTOX_CHEMEXPO",
    "EUROPEPMC_PMC",
    "KEGG_BRITE",
    "KEGG_GENOME",
    "NOAA_NCEI_CLIMATE_AT_A_GLANCE",
    "NVD",
    "REPTILE_DATABASE",
    "WATER_OFFICE",
    "WATER_QUALITY_PORTAL",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_shipped_map_covers_the_published_domains_with_six_families() -> None:
    families = load_families()
    assert set(PUBLISHED_DOMAINS) <= set(families)
    assert set(families.values()) == set(paper_families())
    assert len(paper_families()) == 6


def test_families_file_overrides_and_adds(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"NVD": "security", "DEMO": "demo family"}))
    families = load_families(path)
    assert families["NVD"] == "security" and families["DEMO"] == "demo family"
    assert families["ARXIV"] == "scholarly archives"
    path.write_text('["NVD"]')
    with pytest.raises(UserError, match="expected a JSON object mapping domains"):
        load_families(path)


def _tasks(tmp_path: Path) -> list[Path]:
    cg = [
        task_record("arx_001", domain="ARXIV"),
        task_record("nvd_001", answer="p|1|q\nr|2|s", domain="NVD"),
        task_record("odd_001", answer="m|1|n", domain="SOMEWHERE"),
    ]
    go = [dict(r, task_id=r["task_id"] + "-g") for r in cg]
    return [
        write_jsonl(tmp_path / "constraint.jsonl", cg),
        write_jsonl(tmp_path / "goal.jsonl", go),
    ]


def test_report_by_family_and_overall_table_3(tmp_path: Path) -> None:
    tasks = load_tasks(_tasks(tmp_path))
    answers = {
        "arx_001": "a|1|x\nb|2|y\nc|3|z",  # 1, 1, 1
        "arx_001-g": "c|3|z\nb|2|y\na|1|x",  # 1, 1, 0 (reversed)
        "nvd_001": "p|1|q",  # Item 2*3/(6+3), Row 2*1/(2+1), P.O.A. 0 (one shared key)
    }
    report = score_tasks(tasks, answers)
    assert list(report.by_family) == ["scholarly archives", "vulnerability databases"]
    scholarly = report.by_family["scholarly archives"]
    assert (scholarly.item_f1, scholarly.row_f1, scholarly.poa, scholarly.n) == (
        1.0,
        1.0,
        0.5,
        2,
    )
    assert report.by_family["vulnerability databases"].item_f1 == pytest.approx(1 / 3)  # GO: 0
    assert report.unmapped_domains == ["SOMEWHERE"]
    # Table 3: means over all six variants.
    assert report.overall.item_f1 == pytest.approx((1 + 1 + 2 / 3) / 6)
    assert report.overall.row_f1 == pytest.approx((1 + 1 + 2 / 3) / 6)
    assert report.overall.poa == pytest.approx(1 / 6)
    assert report.canonicalization == {"typed": 6}


def _run_dir(root: Path, name: str, files: list[Path], answers: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir()
    card = {"agent": name, "task_files": {str(f): sha256_file(f)[0] for f in files}}
    (folder / "run.json").write_text(json.dumps(card))
    write_jsonl(folder / "answers.jsonl", [{"task_id": k, "answer": v} for k, v in answers.items()])
    (folder / "complete.json").write_text("{}\n")  # a finished run
    return folder


def test_an_unfinished_run_is_marked_not_ranked_as_done(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = _tasks(tmp_path)
    done = _run_dir(tmp_path, "done", files, {"arx_001": "a|1|x\nb|2|y\nc|3|z"})
    going = _run_dir(tmp_path, "going", files, {"arx_001": "a|1|x"})
    (going / "complete.json").unlink()
    code, out, _ = run(capsys, "sgr", "compare", str(done), str(going), "--json")
    assert code == 0
    data = json.loads(out)
    assert [(s["system"], s["finished"]) for s in data["systems"]] == [
        ("done", True),
        ("going (unfinished)", False),
    ]
    assert any("going is unfinished (1 of" in n for n in data["notes"])


def test_compare_one_row_per_system(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = _tasks(tmp_path)
    good = _run_dir(tmp_path, "oracle", files, {"arx_001": "a|1|x\nb|2|y\nc|3|z"})
    bad = _run_dir(tmp_path, "random", files, {"arx_001": "nothing found"})
    code, out, _ = run(capsys, "sgr", "compare", str(good), str(bad))
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("oracle ") for line in lines)
    assert any(line.startswith("random ") for line in lines)
    assert "Item-F1 by source family" in out and "scholarly archives" in out
    assert "Item-F1 by cardinality" in out
    code, out, _ = run(capsys, "sgr", "compare", str(good), str(bad), "--json")
    data = json.loads(out)
    assert [s["system"] for s in data["systems"]] == ["oracle", "random"]
    oracle, random = (s["report"] for s in data["systems"])
    assert oracle["by_family"]["scholarly archives"]["item_f1"] == 0.5  # CG 1.0, GO missing
    assert random["parse_failures"] == ["arx_001"]


def test_compare_checks_the_task_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = _tasks(tmp_path)
    folder = _run_dir(tmp_path, "sys", files, {})
    files[0].write_text(files[0].read_text().replace("Report", "List"))
    code, _, err = run(capsys, "sgr", "compare", str(folder))
    assert code == 2 and "differs from" in err and "Traceback" not in err
    code, _, err = run(capsys, "sgr", "compare", str(tmp_path / "absent"))
    assert code == 2 and "not a run folder" in err


def test_tasks_lists_warnings_key_statement_and_canonicalization(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = task_record(typed=False, cardinality=4)
    record["rubric"]["normalization"]["dedup_key"] = "dedup by tag; count may repeat"
    path = write_jsonl(tmp_path / "t.jsonl", [record])
    code, out, _ = run(capsys, "sgr", "tasks", "--tasks", str(path))
    assert code == 0
    assert "normalization.dedup_key ('dedup by tag')" in out
    assert "1 task variants (1 CG, 0 GO), all valid, 1 warnings." in out
    assert "oracle_output_cardinality says 4 rows but oracle_answer has 3" in out
    code, out, _ = run(capsys, "sgr", "tasks", "--tasks", str(path), "--json", "--strict")
    (listing,) = json.loads(out)
    assert listing["row_key"] == ["tag"] and listing["canonicalization"] == "strict"
    assert listing["column_kinds"] == {"name": "strict", "count": "strict", "tag": "strict"}


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    not any((ROOT / "snapshots" / "demo" / "warc").glob("*")),
    reason="the demo pack is not built (sgrgym sgr build-packs)",
)
def test_compare_reads_real_run_folders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # run.json records the task files relative to where runs start
    for agent in ("oracle", "default"):
        code, _, err = run(
            capsys, "sgr", "run", "--agent", agent, "--out", str(tmp_path / agent), "--quiet"
        )
        assert code == 0, err
    runs = [str(tmp_path / "oracle"), str(tmp_path / "default")]
    code, out, _ = run(capsys, "sgr", "compare", *runs, "--json")
    assert code == 0
    oracle, default = json.loads(out)["systems"]
    assert (oracle["system"], oracle["agent"]) == ("oracle", "oracle")
    n = len(load_tasks(demo_task_files()))
    assert oracle["report"]["overall"] == {"item_f1": 1.0, "row_f1": 1.0, "poa": 1.0, "n": n}
    assert default["report"]["overall"]["item_f1"] < 0.2
    # Re-scoring gives what the run itself wrote to scores.json.
    written = json.loads((tmp_path / "default" / "scores.json").read_text())
    assert written["overall"] == default["report"]["overall"]


def test_a_run_of_some_variants_says_so_and_is_compared_on_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "some"
    args = ["sgr", "run", "--agent", "oracle", "--task", "cwe_001-g", "places_002", "cwe_001"]
    code, _, err = run(capsys, *args, "--limit", "2", "--out", str(out), "--quiet")
    assert code == 0, err
    card = json.loads((out / "run.json").read_text())
    assert card["task_ids"] == ["cwe_001", "cwe_001-g"]  # file order, then the first two
    assert len((out / "answers.jsonl").read_text().splitlines()) == 2
    code, text, _ = run(capsys, "sgr", "compare", str(out), "--json")
    assert json.loads(text)["systems"][0]["report"]["overall"]["n"] == 2
    code, _, err = run(capsys, "sgr", "run", "--agent", "oracle", "--task", "cwe_01", "--out", "x")
    assert code == 2 and "did you mean 'cwe_001'" in err and not Path("x").exists()
