"""Task-set statistics (section 3.3 / appendix K) on small task sets made here."""

from __future__ import annotations

from pathlib import Path

from sgr_helpers import task_record, write_jsonl

from sgrgym.sgr.sites.reference import Reference
from sgrgym.sgr.tasks import load_tasks
from sgrgym.sgr.taskstats import mechanisms_of, render_stats, task_stats


def _pair(pair_id: str, rows: int, family: str, dependency: str) -> list[dict[str, object]]:
    answer = "\n".join(f"r{i}|{i}|x" for i in range(rows))
    records = []
    for suffix in ("", "-g"):
        record = task_record(f"{pair_id}{suffix}", answer)
        record["domain"] = family.upper().replace(" ", "_")
        record["metadata"] = {
            "dependency_type": dependency,
            "intra_chain": True,
            "inter_chain": suffix == "",
        }
        records.append(record)
    return records


def test_counts_pairs_bins_and_families(tmp_path: Path) -> None:
    records = [
        *_pair("a_001", 2, "official statistics", "Data + Control"),
        *_pair("a_002", 4, "official statistics", "Control"),
        *_pair("b_001", 7, "environmental monitoring", "Data"),
        *_pair("b_002", 12, "environmental monitoring", "Data + Control"),
    ]
    cg = write_jsonl(
        tmp_path / "constraint.jsonl", [r for r in records if "-g" not in r["task_id"]]
    )
    go = write_jsonl(tmp_path / "goal.jsonl", [r for r in records if "-g" in r["task_id"]])
    families = {
        "OFFICIAL_STATISTICS": "official statistics",
        "ENVIRONMENTAL_MONITORING": "environmental monitoring",
    }
    stats = task_stats(load_tasks([cg, go]), families)
    assert (stats.variants, stats.cg, stats.go, stats.pairs) == (8, 4, 4, 4)
    assert stats.families == {"environmental monitoring": 2, "official statistics": 2}
    assert (stats.rows_min, stats.rows_max, stats.rows_median) == (2, 12, 5.5)
    assert stats.rows_mean == 6.25 and stats.at_most_seven == 3
    assert stats.cardinality_bins == {"1-2": 1, "3-5": 1, "6-10": 1, "11+": 1}
    assert stats.dependency_types == {"Control": 1, "Data": 1, "Data + Control": 2}
    assert stats.intra_chain == 4 and stats.inter_chain == 4  # counted on the CG variant
    assert stats.with_reference == 0 and stats.mechanisms == {}
    text = render_stats(stats)
    assert "official statistics: 2 (50.0%)" in text and "11+ rows: 1 (25.0%)" in text
    assert "State mechanisms" not in text  # no reference paths to count them from


def test_mechanisms_of_a_reference_path() -> None:
    reference = Reference.model_validate(
        {
            "site": "weather",
            "path": [
                {"op": "select_view", "value": "/report.pdf"},
                {"op": "set_scope", "control": "station", "value": "JFK"},
                {"op": "select_view", "value": "/observations"},
                {"op": "set_window", "control": "dates", "value": "2013-09-13", "type": "data"},
                {"op": "page", "control": "page", "value": "2"},
            ],
        }
    )
    assert mechanisms_of(reference) == {"view", "PDF report", "scope", "time window", "pages"}
