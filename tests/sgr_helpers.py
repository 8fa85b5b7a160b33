"""Small builders for SGR task records used across the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sgrgym.sgr.tasks import ScoringTask, load_tasks


def task_record(
    task_id: str = "demo_001",
    answer: str = "a|1|x\nb|2|y\nc|3|z",
    columns: tuple[str, ...] = ("name", "count", "tag"),
    *,
    typed: bool = True,
    row_key: list[str] | None = None,
    fields: dict[str, Any] | None = None,
    record_separator: str = "\n",
    cardinality: int | None = None,
    domain: str = "DEMO",
    encode: bool = False,
) -> dict[str, Any]:
    """A task record in the published shape; ``typed`` picks the typed or legacy rubric."""
    rubric: dict[str, Any]
    if typed:
        rubric = {"columns": list(columns), "record_separator": record_separator}
        if row_key is not None:
            rubric["row_key"] = row_key
        if fields:
            rubric["fields"] = fields
    else:
        rubric = {
            "normalization": {
                "field_separator": "|",
                "record_separator": record_separator,
                "schema": list(columns),
            }
        }
    rows = [] if answer.strip() in ("", "NONE") else answer.split(record_separator)
    record: dict[str, Any] = {
        "task_id": task_id,
        "domain": domain,
        "autonomy_type": "ordered table",
        "oracle_output_cardinality": len(rows) if cardinality is None else cardinality,
        "instruction": "Report the rows.",
        "output_format": "|".join(columns),
        "start_url": "http://site.example/",
        "oracle_answer": answer,
        "metadata": {"dependency_type": "Control"},
        "rubric": rubric,
    }
    if encode:
        record["metadata"] = json.dumps(record["metadata"])
        record["rubric"] = json.dumps(record["rubric"])
    return record


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load_one(tmp_path: Path, record: dict[str, Any], name: str = "tasks.jsonl") -> ScoringTask:
    (task,) = load_tasks([write_jsonl(tmp_path / name, [record])])
    return task
