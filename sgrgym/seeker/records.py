"""SeekerGym's records and their one reader each: the episode (a line of a run's
``episodes.jsonl``) and the calibration's (c, ĉ) pair and partition (lines of an estimator's
``pairs.jsonl`` and ``partitions.jsonl``).

Episodes are written by :func:`sgrgym.seeker.run.run_seeker`, pairs and partitions by
:func:`sgrgym.seeker.calibrate.write_outputs`; all are read by the run itself when it resumes,
by ``sgrgym run``'s results, ``verify-run`` and the report. A record is written as JSON with
sorted keys (:func:`sgrgym.core.io.jsonl_line`); ``llm`` is there only for model agents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sgrgym.runs.folder import read_records, typed_record

EPISODE = "SeekerGym episode"
PAIR = "calibration pair"
PARTITION = "calibration partition"


class EpisodeStep(BaseModel):
    """One step: the queries, the passage ids each retrieved, those new to the episode."""

    model_config = ConfigDict(extra="forbid")

    queries: list[str]
    per_query: list[list[str]]
    new: list[str]


class EpisodeRecord(BaseModel):
    """One episode to its end (paper sections 2.2-2.3 and C.4)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    topic: str
    seed: int
    passages: int  # N, the document's goal passages
    completeness: list[float]  # c after each step (6 decimals)
    final_completeness: float
    retrieved: list[str]  # passage ids, in the order first retrieved
    steps: list[EpisodeStep]
    query_diversity: list[float]  # per query, 1 - max cosine to the earlier ones (C.4)
    near_theta: int = 0  # retrieval decisions within 1e-5 of θ (processor-sensitive live)
    belief_tokens: list[int]  # the rendered belief's length before each step (chars / 4)
    llm: dict[str, Any] | None = None  # a model agent's calls, replies and totals

    def data(self) -> dict[str, Any]:
        """The record as written (no ``llm`` key for agents without a model)."""
        return self.model_dump(exclude_none=True)


def episode_record(data: object, where: str) -> EpisodeRecord:
    """``data`` as an episode record; a bad one is an error naming ``where`` and the field."""
    return typed_record(EpisodeRecord, data, where, EPISODE)


def read_episodes(path: Path) -> list[EpisodeRecord]:
    """The episode records of a finished run's ``episodes.jsonl`` (a missing file: none)."""
    return read_records(path, EpisodeRecord, EPISODE)


class CalibrationPair(BaseModel):
    """One pool state's true completeness c, its estimate ĉ and the nonconformity |c - ĉ|
    (6 decimals; ĉ and the score are null where the estimate could not be read)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    interval: int  # the remaining-passage interval the state was drawn from (section 3.3)
    n_passages: int
    retrieved: int
    c: float
    c_hat: float | None
    score: float | None
    c_hat_by_seed: list[float | None] | None = None  # a seeded estimator's ĉ per seed

    def data(self) -> dict[str, Any]:
        """The record as written (no ``c_hat_by_seed`` for a deterministic estimator)."""
        data = self.model_dump()
        if self.c_hat_by_seed is None:
            del data["c_hat_by_seed"]
        return data


class PartitionResult(BaseModel):
    """One (split, seed): q̂, its rank k, test coverage and raw test R², failures counted."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    split: int
    seed: int
    n_calibration: int
    n_test: int
    rank: int
    q_hat: float  # +∞ (written "Infinity") when the rank exceeds the calibration split
    coverage: float
    r2: float
    parse_failures: int = 0  # states of this seed whose estimate could not be read
    constant: float | None = None  # the fitted calibration mean (constant estimator)


def read_pairs(folder: Path) -> list[CalibrationPair]:
    """The (c, ĉ) pairs of an estimator's calibration folder (a missing file: none)."""
    return read_records(folder / "pairs.jsonl", CalibrationPair, PAIR)


def read_partitions(folder: Path) -> list[PartitionResult]:
    """The partitions of an estimator's calibration folder (a missing file: none)."""
    return read_records(folder / "partitions.jsonl", PartitionResult, PARTITION)
