"""The SGR environment: one episode per task variant, tools over a snapshot pack, budgets.

The agent sees the task's ``instruction``, ``output_format`` and a ``current_date`` (never
the start URL, SGR-Bench appendix C). Tools: ``search(query)`` over the pack's pages,
``fetch(url)``, ``pdf(url)`` and the site operations (:meth:`SgrEnv.operate`). Budgets follow
appendix C (6,000 s per task, stalled after 3,000 s without progress) plus a cap on tool
calls; an overrun ends the episode and is recorded, not raised to the caller.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from sgrgym.sgr.archive.replay import Snapshot
from sgrgym.sgr.archive.search import SearchHit, search
from sgrgym.sgr.archive.text import body_to_text
from sgrgym.sgr.simulator import Simulator, StepResult, TrajectoryStep
from sgrgym.sgr.sites.model import Op, SiteModel
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.tasks import ScoringTask


class Budget(BaseModel):
    """Per-episode limits (appendix C: 6,000 s runtime, stalled after 3,000 s)."""

    max_wall_s: float = Field(default=6000.0, gt=0)
    stall_s: float = Field(default=3000.0, gt=0)
    max_tool_calls: int = Field(default=200, ge=1)


class Observation(BaseModel):
    """What the agent is told: the task, its output schema and the date (no start URL)."""

    task_id: str
    instruction: str
    output_format: str
    current_date: str
    columns: list[str]
    field_separator: str = "|"
    record_separator: str = "\n"


class BudgetExceeded(Exception):
    """Raised inside an episode when a budget runs out; the runner records it."""


@dataclass(frozen=True)
class Page:
    """A tool's answer: the URL reached, HTTP status, how the archive matched, and content."""

    url: str
    status: int
    match: str
    body: bytes
    content_type: str
    message: str = ""

    @property
    def text(self) -> str:
        if self.match == "miss" or self.status >= 400:
            return self.message or self.body.decode("utf-8", "replace")
        try:
            return body_to_text(self.body, self.content_type)
        except ValueError as exc:
            return f"cannot read {self.url}: {exc}"

    def tables(self) -> dict[str, list[dict[str, str]]]:
        """The page's data tables (what an agent reading the HTML sees in them)."""
        if "html" not in self.content_type:
            return {}
        return extract_tables(self.body)


def _page(result: StepResult) -> Page:
    response = result.response
    if response is None:
        return Page(result.url, 400, "error", b"", "text/plain", result.error)
    return Page(
        response.url, response.status, response.match, response.body, response.content_type,
        result.message,
    )  # fmt: skip


@dataclass
class Episode:
    """The record of one episode (deterministic fields only; wall time kept apart)."""

    task_id: str
    answer: str | None = None
    ended_by: str = "answer"  # answer | budget: ... | agent error: ...
    tool_calls: int = 0
    trajectory: list[TrajectoryStep] = field(default_factory=list)
    wall_s: float = 0.0


class SgrEnv:
    """Episodes over one snapshot pack and its site models."""

    def __init__(
        self,
        snapshot: Snapshot,
        sites: dict[str, SiteModel],
        budget: Budget | None = None,
        current_date: str = "2026-01-01",
    ) -> None:
        self.snapshot = snapshot
        self.sites = sites
        self.budget = budget or Budget()
        self.current_date = current_date
        self.sim = Simulator(snapshot, sites)
        self.episode = Episode(task_id="")
        self._started = self._last = 0.0

    def reset(self, task: ScoringTask) -> Observation:
        self.sim = Simulator(self.snapshot, self.sites)
        self.episode = Episode(task_id=task.task_id)
        self._started = self._last = time.monotonic()
        return Observation(
            task_id=task.task_id,
            instruction=task.task.instruction,
            output_format=task.task.output_format,
            current_date=self.current_date,
            columns=list(task.columns),
            field_separator=task.field_sep,
            record_separator=task.record_sep,
        )

    def _spend(self) -> None:
        now = time.monotonic()
        budget = self.budget
        if self.episode.tool_calls >= budget.max_tool_calls:
            raise BudgetExceeded(f"budget: more than {budget.max_tool_calls} tool calls")
        if now - self._started > budget.max_wall_s:
            raise BudgetExceeded(f"budget: over {budget.max_wall_s:g} s of wall time")
        if now - self._last > budget.stall_s:
            raise BudgetExceeded(f"budget: stalled over {budget.stall_s:g} s")
        self.episode.tool_calls += 1
        self._last = now

    def home(self, url: str) -> str | None:
        """The start page of the site serving ``url`` (what typing its host name shows)."""
        model = self.sim.site_of_url(url)
        return model.url(model.default_state()) if model else None

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        self._spend()
        hits = search(self.snapshot, query, limit)
        self.sim.note("search", {"query": query}, f"{len(hits)} hits")
        return hits

    def fetch(self, url: str) -> Page:
        self._spend()
        return _page(self.sim.fetch(url))

    def pdf(self, url: str) -> Page:
        self._spend()
        return _page(self.sim.fetch(url, tool="pdf"))

    def operate(self, site: str, op: Op) -> Page:
        self._spend()
        return _page(self.sim.operate(site, op))

    def finish(self, answer: str | None, ended_by: str = "answer") -> Episode:
        if answer is not None:
            self.sim.note("answer", {}, f"{len(answer)} characters")
        self.episode.answer = answer
        self.episode.ended_by = ended_by
        self.episode.trajectory = list(self.sim.trajectory)
        self.episode.wall_s = time.monotonic() - self._started
        return self.episode
