"""The SeekerGym episode record: one line of a run's ``episodes.jsonl``, and its one reader.

Written by :func:`sgrgym.seeker.run.run_seeker`; read by the run itself when it resumes, by
``sgrgym run``'s results, ``verify-run`` and the report. A record is written as JSON with
sorted keys (:func:`sgrgym.core.io.jsonl_line`); ``llm`` is there only for model agents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sgrgym.runs.folder import read_records, typed_record

EPISODE = "SeekerGym episode"


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
