"""The typed SeekerGym episode record: written bytes unchanged by the round trip, one reader
that names the file, line and field of a bad record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sgrgym.core.errors import UserError
from sgrgym.core.io import jsonl_line
from sgrgym.seeker.records import EpisodeRecord, read_episodes, read_pairs, read_partitions

RECORD = {
    "belief_tokens": [40, 55],
    "completeness": [0.25, 0.5],
    "doc_id": "howto/windows",
    "final_completeness": 0.5,
    "near_theta": 0,
    "passages": 4,
    "query_diversity": [1.0, 0.0, 0.123457],
    "retrieved": ["p1", "p3"],
    "seed": 0,
    "steps": [
        {"new": ["p1"], "per_query": [["p1"]], "queries": ["a"]},
        {"new": ["p3"], "per_query": [["p3"], []], "queries": ["b", "c"]},
    ],
    "topic": "howto",
}


def test_round_trip_keeps_the_bytes(tmp_path: Path) -> None:
    with_llm = {**RECORD, "seed": 1, "llm": {"calls": [], "totals": {"calls": 0}}}
    text = jsonl_line(RECORD) + jsonl_line(with_llm)
    path = tmp_path / "episodes.jsonl"
    path.write_text(text, "utf-8")
    episodes = read_episodes(path)
    assert [e.llm for e in episodes] == [None, {"calls": [], "totals": {"calls": 0}}]
    assert "".join(jsonl_line(e.data()) for e in episodes) == text
    assert read_episodes(tmp_path / "none.jsonl") == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"completeness": [0.25, "half"]}, "completeness.1"),
        ({"seed": "zero"}, "seed"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_record_names_file_line_and_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_text(jsonl_line(RECORD) + json.dumps({**RECORD, **change}) + "\n", "utf-8")
    with pytest.raises(UserError, match=rf"episodes\.jsonl line 2: .*field {field}\b"):
        read_episodes(path)


def test_missing_near_theta_reads_as_zero() -> None:
    old = {k: v for k, v in RECORD.items() if k != "near_theta"}
    assert EpisodeRecord.model_validate(old).near_theta == 0


def test_sgr_records_round_trip_with_an_agents_own_parts(tmp_path: Path) -> None:
    """A trajectory keeps what an agent adds of its own (an LLM agent's calls) byte for byte;
    a bad answer record names file, line and field."""
    from sgrgym.sgr.records import read_answers, read_trajectories

    trajectory = {
        "task_id": "cwe_001",
        "ended_by": "answer",
        "answer_from": "final",
        "error": "",
        "tool_calls": 2,
        "submitted_answers": 1,
        "target_site_rank": None,
        "steps": [{"tool": "search", "status": 200}],
        "diagnostics": {"category": "solved"},
        "llm": {"calls": [{"prompt_tokens": 12}]},
    }
    path = tmp_path / "trajectories.jsonl"
    path.write_text(jsonl_line(trajectory), "utf-8")
    (read,) = read_trajectories(path)
    assert read.category == "solved" and jsonl_line(read.data()) == jsonl_line(trajectory)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"task_id": "a", "answer": null}\n{"task_id": 3, "answer": "x"}\n')
    with pytest.raises(UserError, match=r"answers\.jsonl line 2: .*field task_id"):
        read_answers(answers)


def test_calibration_records_round_trip_and_name_a_bad_field(tmp_path: Path) -> None:
    """Pairs and partitions read back typed with their bytes unchanged (no ``c_hat_by_seed``
    for a deterministic estimator); +∞ written as "Infinity" reads as a float; a bad field
    names file, line and field."""
    pairs = [
        {
            "c": 0.5,
            "c_hat": 0.4,
            "doc_id": "a",
            "interval": 0,
            "n_passages": 9,
            "retrieved": 4,
            "score": 0.1,
        },
        {
            "c": 0.2,
            "c_hat": None,
            "c_hat_by_seed": [None, 0.3],
            "doc_id": "b",
            "interval": 1,
            "n_passages": 7,
            "retrieved": 1,
            "score": None,
        },
    ]
    partition = {
        "coverage": 1.0,
        "n_calibration": 3,
        "n_test": 2,
        "q_hat": "Infinity",
        "r2": 0.5,
        "rank": 4,
        "seed": 0,
        "split": 0,
    }
    text = "".join(jsonl_line(p) for p in pairs)
    (tmp_path / "pairs.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "partitions.jsonl").write_text(jsonl_line(partition), encoding="utf-8")
    read = read_pairs(tmp_path)
    assert "".join(jsonl_line(p.data()) for p in read) == text
    assert read[1].c_hat_by_seed == [None, 0.3] and read[0].c_hat_by_seed is None
    assert read_partitions(tmp_path)[0].q_hat == float("inf")
    (tmp_path / "pairs.jsonl").write_text(jsonl_line({**pairs[0], "c": "high"}), encoding="utf-8")
    with pytest.raises(UserError, match=r"pairs.jsonl line 1: a calibration pair record: field c"):
        read_pairs(tmp_path)
