"""The records of an SGR run folder (one line each in ``answers.jsonl`` and
``trajectories.jsonl``) and their one reader each.

Written by :func:`sgrgym.sgr.run.record_episode`; read by ``sgrgym run``'s results,
``verify-run`` and the report. A trajectory carries what an agent adds of its own (an LLM
agent's calls, an agent CLI's session) beside the common fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sgrgym.runs.folder import read_records

ANSWER = "SGR answer"
TRAJECTORY = "SGR trajectory"


class AnswerRecord(BaseModel):
    """The answer scored for a task (None: the episode ended without one)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    answer: str | None


class TrajectoryRecord(BaseModel):
    """How an episode went: how it ended, its tool calls and appendix G's diagnosis."""

    model_config = ConfigDict(extra="allow")  # an agent's own parts (llm, cli)

    task_id: str
    ended_by: str  # answer | budget: wall | budget: stall | budget: tool calls | agent error
    answer_from: str  # final | submitted | none
    error: str
    tool_calls: int
    submitted_answers: int
    target_site_rank: int | None
    steps: list[dict[str, Any]]
    diagnostics: dict[str, Any]  # appendix G: category, evidence

    @property
    def category(self) -> str:
        return str(self.diagnostics.get("category", "unknown"))

    def data(self) -> dict[str, Any]:
        """The record as written, the agent's own parts included."""
        return self.model_dump()


def read_answers(path: Path) -> list[AnswerRecord]:
    """The answer records of a finished run's ``answers.jsonl`` (a missing file: none)."""
    return read_records(path, AnswerRecord, ANSWER)


def read_trajectories(path: Path) -> list[TrajectoryRecord]:
    """The trajectory records of a finished run's ``trajectories.jsonl``."""
    return read_records(path, TrajectoryRecord, TRAJECTORY)
