"""The SGR environment: one episode per task variant, tools over a snapshot pack, budgets.

The agent sees the task prompt (:mod:`sgrgym.sgr.prompt`: date, instruction, output schema,
tools, the ban on other retrieval paths; never the start URL, SGR-Bench appendix C). Tools:
``search(query)`` (a web search engine over the sites' entry pages,
:mod:`sgrgym.sgr.websearch`), ``fetch(url)``, ``pdf(url)``, the site operations
(:meth:`SgrEnv.operate`) and ``submit_answer(answer)`` for interim answers.

Budgets (appendix C): 6,000 s of wall time per task, stalled after 3,000 s without progress
(a tool call or a submitted answer); a cap on tool calls is optional and off by default. The
wall and stall limits are enforced from outside the agent by :mod:`sgrgym.sgr.watchdog`; when
an episode is stopped, :meth:`SgrEnv.stop` refuses every later tool call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from sgrgym.core import defaults
from sgrgym.sgr.prompt import DEFAULT_TOOLS, task_prompt
from sgrgym.sgr.render import SiteRenderer
from sgrgym.sgr.simulator import Simulator, TrajectoryStep, Transition
from sgrgym.sgr.sites.model import Op, SiteModel
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.tasks import ScoringTask
from sgrgym.sgr.websearch import WebSearch, first_rank
from sgrgym.snapshot.reading import read_page
from sgrgym.snapshot.replay import Snapshot
from sgrgym.snapshot.search import SearchHit


class Budget(BaseModel):
    """Per-episode limits (appendix C: 6,000 s runtime, stalled after 3,000 s without progress;
    the paper has no tool-call cap, so ``max_tool_calls`` is off unless set)."""

    max_wall_s: float = Field(default=defaults.MAX_WALL_S, gt=0)
    stall_s: float = Field(default=defaults.STALL_S, gt=0)
    max_tool_calls: int | None = Field(default=None, ge=1)

    def spent(self, started: float, last_progress: float, now: float) -> BudgetExceeded | None:
        """The wall or stall budget spent at ``now`` (monotonic seconds), if one is: the one
        budget check of an episode, whoever watches it (the in-process watchdog, the MCP
        server, the agent CLI runner)."""
        if now - started >= self.max_wall_s:
            return BudgetExceeded("wall", f"budget: over {self.max_wall_s:g} s of wall time")
        if now - last_progress >= self.stall_s:
            return BudgetExceeded("stall", f"budget: no progress for {self.stall_s:g} s")
        return None

    def due_in(self, started: float, last_progress: float, now: float) -> float:
        """Seconds until the wall or stall budget could be spent (the next check)."""
        return max(0.0, min(started + self.max_wall_s - now, last_progress + self.stall_s - now))


class TaskObservation(BaseModel):
    """What the agent is told: the prompt, and its parts (no start URL)."""

    task_id: str
    prompt: str
    instruction: str
    output_format: str
    current_date: str
    columns: list[str]
    field_separator: str = "|"
    record_separator: str = "\n"
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))


class BudgetExceeded(Exception):
    """Raised by a tool call once the episode is over (budget spent or stopped)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # wall | stall | tool calls


@dataclass(frozen=True)
class Page:
    """A tool's answer as the agent sees it: the address, HTTP status and content.

    Nothing here tells an archived page from a rendered one; a tool error (an operation the
    page does not have) has status 400 and its ``message``.
    """

    url: str
    status: int
    body: bytes
    content_type: str
    message: str = ""

    @property
    def text(self) -> str:
        """The page as an agent's fetch tool reads it: its text with its links and forms
        (:func:`~sgrgym.snapshot.reading.read_page`), or the tool error's message."""
        if self.message:
            return self.message
        try:
            return read_page(self.body, self.content_type, self.url)
        except ValueError as exc:
            return f"cannot read {self.url}: {exc}"

    def tables(self) -> dict[str, list[dict[str, str]]]:
        """The page's data tables (what an agent reading the HTML sees in them)."""
        if "html" not in self.content_type:
            return {}
        return extract_tables(self.body)


def _page(result: Transition, requested: str = "") -> Page:
    """The page of ``result``, under the ``requested`` address when one is given."""
    served = result.served
    if served is None:
        return Page(requested or result.url, 400, b"", "text/plain; charset=utf-8", result.error)
    return Page(requested or served.url, served.status, served.body, served.content_type)


@dataclass
class Episode:
    """The record of one episode (deterministic fields only; wall time kept apart).

    ``ended_by``: ``answer`` (the agent returned one), ``budget: wall``, ``budget: stall``,
    ``budget: tool calls`` or ``agent error``; ``answer_from``: ``final`` (returned),
    ``submitted`` (the last submit_answer, scored after an overrun or error) or ``none``.
    """

    task_id: str
    answer: str | None = None
    ended_by: str = "answer"
    answer_from: str = "none"
    error: str = ""
    tool_calls: int = 0
    submitted_answers: int = 0
    searches: int = 0
    target_site_rank: int | None = None  # the task's site in the first search (None: absent)
    trajectory: list[TrajectoryStep] = field(default_factory=list)
    wall_s: float = 0.0


class SgrEnv:
    """Episodes over one snapshot pack and its site models (and their renderer, if any)."""

    def __init__(
        self,
        snapshot: Snapshot,
        sites: dict[str, SiteModel],
        budget: Budget | None = None,
        current_date: str = defaults.CURRENT_DATE,
        renderer: SiteRenderer | None = None,
        web: WebSearch | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.sites = sites
        self.budget = budget or Budget()
        self.current_date = current_date
        self.renderer = renderer
        self.sim = Simulator(snapshot, sites, renderer)
        self._own_web = web is None
        self.web = WebSearch.for_simulator(self.sim) if web is None else web
        self.episode = Episode(task_id="")
        self._target_host = ""
        self._lock = threading.RLock()
        self._stopped: BudgetExceeded | None = None
        self._submitted: str | None = None
        self._owner: threading.Thread | None = None  # the agent thread of this episode
        self._past: set[threading.Thread] = set()  # agent threads of ended episodes, alive
        self.started = self.last_progress = 0.0

    def reset(self, task: ScoringTask, target_host: str = "") -> TaskObservation:
        """Start an episode. ``target_host`` (the site holding the answer, for the researcher)
        lets search steps record the rank of its first hit; the agent never sees it."""
        with self._lock:
            self.sim = Simulator(self.snapshot, self.sites, self.renderer)
            self.episode = Episode(task_id=task.task_id)
            self._target_host = target_host
            self._stopped = None
            self._submitted = None
            self.started = self.last_progress = time.monotonic()
        prompt = task_prompt(
            self.current_date,
            task.task.instruction,
            task.task.output_format,
            task.columns,
            task.field_sep,
            task.record_sep,
        )
        return TaskObservation(
            task_id=task.task_id,
            prompt=prompt,
            instruction=task.task.instruction,
            output_format=task.task.output_format,
            current_date=self.current_date,
            columns=list(task.columns),
            field_separator=task.field_sep,
            record_separator=task.record_sep,
        )

    # -- budget ------------------------------------------------------------------------------
    def stop(self, reason: str, message: str) -> None:
        """End the episode from outside: every later tool call raises BudgetExceeded."""
        with self._lock:
            if self._stopped is None:
                self._stopped = BudgetExceeded(reason, message)

    @property
    def stopped(self) -> BudgetExceeded | None:
        return self._stopped

    def check_budget(self) -> float | None:
        """Stop the episode if its wall or stall budget is spent (None), else the seconds until
        it could be (when to check again)."""
        now = time.monotonic()
        spent = self.budget.spent(self.started, self.last_progress, now)
        if spent is not None:
            self.stop(spent.reason, str(spent))
            return None
        return self.budget.due_in(self.started, self.last_progress, now)

    def claim(self) -> None:
        """Bind the episode to the calling (agent) thread: once the episode ends, that
        thread's tool calls stay refused, in later episodes too."""
        with self._lock:
            self._owner = threading.current_thread()

    @contextmanager
    def _tool(self) -> Iterator[None]:
        """One tool call: refused once stopped or over the call cap; counts as progress."""
        with self._lock:
            if threading.current_thread() in self._past:
                raise BudgetExceeded("over", "this agent's episode is over")
            if self._stopped is not None:
                raise self._stopped
            cap = self.budget.max_tool_calls
            if cap is not None and self.episode.tool_calls >= cap:
                self._stopped = BudgetExceeded("tool calls", f"budget: more than {cap} tool calls")
                raise self._stopped
            self.episode.tool_calls += 1
            self.last_progress = time.monotonic()
            yield

    # -- tools -------------------------------------------------------------------------------
    def home(self, url: str) -> str | None:
        """The start page of the site serving ``url`` (what typing its host name shows)."""
        model = self.sim.site_of_url(url)
        return model.url(model.default_state()) if model else None

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        with self._tool():
            hits = self.web.search(query, limit)
            note = f"{len(hits)} hits"
            if self._target_host:
                rank = first_rank(hits, self._target_host)
                note += f"; target site first at rank {rank}" if rank else "; target site absent"
                if self.episode.searches == 0:
                    self.episode.target_site_rank = rank
            self.episode.searches += 1
            self.sim.note("search", {"query": query}, note)
            return hits

    def fetch(self, url: str) -> Page:
        """The page at ``url``, under the address as asked for (a browser's address bar keeps
        what was typed; the page is that of the state the site reads from it)."""
        with self._tool():
            return _page(self.sim.fetch(url), url)

    def pdf(self, url: str) -> Page:
        with self._tool():
            return _page(self.sim.fetch(url, tool="pdf"), url)

    def operate(self, site: str, op: Op) -> Page:
        """An operation on ``site`` (its name or host name)."""
        with self._tool():
            if site not in self.sites:
                model = self.sim.site_of_url(f"http://{site}/")
                site = model.name if model else site
            return _page(self.sim.operate(site, op))

    def submit_answer(self, answer: str) -> None:
        """Record an interim answer; the last one is scored if the episode overruns."""
        with self._tool():
            self._submitted = answer
            self.episode.submitted_answers += 1
            self.sim.note("submit_answer", {}, f"{len(answer)} characters")

    def submitted_answer(self) -> str | None:
        """The latest submitted answer (what an outside poller reads)."""
        return self._submitted

    def progress(self) -> None:
        """Mark trace progress without a tool call (an external agent's transcript grew)."""
        with self._lock:
            self.last_progress = time.monotonic()

    def finish(self, answer: str | None, ended_by: str = "answer", error: str = "") -> Episode:
        """Close the episode: a returned answer wins; otherwise the last submitted one."""
        with self._lock:
            if self._stopped is None:
                self._stopped = BudgetExceeded("finished", "the episode is over")
            if self._owner is not None:
                self._past = {t for t in self._past if t.is_alive()} | {self._owner}
                self._owner = None
            episode = self.episode
            if answer is not None:
                self.sim.note("answer", {}, f"{len(answer)} characters")
                episode.answer, episode.answer_from = answer, "final"
            elif self._submitted is not None:
                episode.answer, episode.answer_from = self._submitted, "submitted"
            episode.ended_by = ended_by
            episode.error = error
            episode.trajectory = list(self.sim.trajectory)
            episode.wall_s = time.monotonic() - self.started
            return episode

    def twin(self) -> SgrEnv:
        """Another environment over the same pack, sites, renderer and search index, for a
        parallel episode (each environment runs one episode at a time)."""
        return SgrEnv(
            self.snapshot, self.sites, self.budget, self.current_date, self.renderer, web=self.web
        )

    def close(self) -> None:
        if self._own_web:
            self.web.close()
