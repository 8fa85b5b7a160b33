"""One SGR episode served to an external agent, written into its run folder as calls happen.

The live log ``steps.jsonl`` gets one line per trajectory step right after the tool call that
made it: the step (as in ``trajectories.jsonl``), seconds since the episode started, the
episode's counters so far and, for ``submit_answer``, the answer text. Whoever watches the
episode from outside (the CLI runner) reads progress and interim answers from it; an episode
whose process was killed still leaves every step it took.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sgrgym.core.inputs import shorten
from sgrgym.runs.folder import RunFolder
from sgrgym.sgr.env import BudgetExceeded, Episode, SgrEnv
from sgrgym.sgr.prompt import task_prompt
from sgrgym.sgr.run import RunCard
from sgrgym.sgr.simulator import TrajectoryStep
from sgrgym.sgr.sites.reference import reference_of
from sgrgym.sgr.tasks import ScoringTask

from .tools import TOOLS_FILE, ToolCallError, call_tool, tool_names

STEPS = "steps.jsonl"
# Ours: the longest string argument a tool call may carry (an answer of ~2,000 rows of 100
# characters); a longer one is refused, so a session cannot grow the episode's logs unbounded.
MAX_ARGUMENT_CHARS = 200_000
SESSION_CLOSED = "session closed"  # the agent's session ended without a returned answer


class McpRunCard(RunCard):
    """A run card for an MCP episode: the run card plus the tool file and the task."""

    task_id: str = ""
    tools_file: str = TOOLS_FILE
    tools_sha256: str = ""
    site_ops: bool = False


def episode_prompt(env: SgrEnv, task: ScoringTask, site_ops: bool) -> str:
    """The paper's task prompt (appendix C), naming the tools this server offers."""
    return task_prompt(
        env.current_date,
        task.task.instruction,
        task.task.output_format,
        task.columns,
        task.field_sep,
        task.record_sep,
        tool_names(site_ops),
    )


@dataclass
class LiveEpisode:
    """An episode of ``env`` on ``task``, logging each step to ``folder``'s live log."""

    env: SgrEnv
    task: ScoringTask
    folder: RunFolder
    site_ops: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _logged: int = 0
    _stop_logged: bool = False

    def start(self) -> None:
        reference = reference_of(self.task)
        model = self.env.sites.get(reference.site) if reference else None
        self.env.reset(self.task, model.host if model else "")
        (self.folder.path / STEPS).write_bytes(b"")  # a fresh live log: no session resumes

    def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        """(text, is_error) of one tool call; every new trajectory step is logged."""
        with self._lock:
            answer = None
            long = {k: len(v) for k, v in (arguments or {}).items() if isinstance(v, str)}
            over = sorted(k for k, n in long.items() if n > MAX_ARGUMENT_CHARS)
            if over:
                return (
                    f"{name}: argument {over[0]!r} is {long[over[0]]:,} characters; the limit "
                    f"is {MAX_ARGUMENT_CHARS:,}",
                    True,
                )
            try:
                text = call_tool(self.env, name, arguments, self.site_ops)
                is_error = False
                if name == "submit_answer" and arguments:
                    answer = str(arguments.get("answer", ""))
            except (BudgetExceeded, ToolCallError) as exc:
                text, is_error = str(exc), True
            self._log(answer)
            stopped = self.env.stopped
            if stopped is not None and not self._stop_logged:  # tells the runner to stop the CLI
                self._stop_logged = True
                t = round(time.monotonic() - self.env.started, 3)
                self.folder.append(STEPS, {"t": t, "stopped": stopped.reason})
            return text, is_error

    def _log(self, answer: str | None) -> None:
        env = self.env
        steps = env.sim.trajectory[self._logged :]
        for step in steps:
            record: dict[str, Any] = {
                "t": round(time.monotonic() - env.started, 3),
                "step": asdict(step),
                "tool_calls": env.episode.tool_calls,
                "submitted_answers": env.episode.submitted_answers,
                "target_site_rank": env.episode.target_site_rank,
            }
            if step.tool == "submit_answer" and answer is not None:
                record["answer"] = answer
            self.folder.append(STEPS, record)
        self._logged += len(steps)

    def finish(self, ended_by: str = SESSION_CLOSED, error: str = "") -> Episode:
        with self._lock:
            return self.env.finish(None, ended_by, error)


class LiveLog(BaseModel):
    """What an outside watcher reads from a live log."""

    steps: list[dict[str, Any]] = []
    answer: str | None = None  # the last submitted answer
    answer_t: float = -1.0  # when it was submitted (seconds since the episode started)
    tool_calls: int = 0
    submitted_answers: int = 0
    target_site_rank: int | None = None
    stopped: str | None = None  # the budget that ended the episode (e.g. "tool calls")
    malformed: list[str] = []  # lines that are not the server's records ("line N: why")


def read_live(folder: Path) -> LiveLog:
    """The live log of an episode folder so far (a torn last line is left for later)."""
    path = folder / STEPS
    if not path.is_file():
        return LiveLog()
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].decode("utf-8", "replace").splitlines()
    log = LiveLog()
    for number, line in enumerate(lines, start=1):
        try:
            _read_record(log, json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:  # not one of the server's records
            log.malformed.append(f"line {number}: {shorten(f'{type(exc).__name__}: {exc}', 120)}")
    return log


def _read_record(log: LiveLog, record: Any) -> None:
    """Add one record of the live log to ``log`` (a record of another shape raises)."""
    if "stopped" in record:
        log.stopped = str(record["stopped"])
        return
    step = record["step"]
    if not isinstance(step, dict):
        raise TypeError(f"step is {type(step).__name__}, not an object")
    tool_calls, submitted = int(record["tool_calls"]), int(record["submitted_answers"])
    answer = (str(record["answer"]), float(record["t"])) if "answer" in record else None
    log.steps.append(step)
    log.tool_calls, log.submitted_answers = tool_calls, submitted
    log.target_site_rank = record.get("target_site_rank")
    if answer is not None:
        log.answer, log.answer_t = answer


def trajectory_of(log: LiveLog) -> list[TrajectoryStep]:
    """The trajectory of the live log's steps (a step of another shape is noted as malformed)."""
    steps = []
    for number, step in enumerate(log.steps, start=1):
        try:
            steps.append(TrajectoryStep(**step))
        except TypeError as exc:
            log.malformed.append(f"step {number}: {shorten(str(exc), 120)}")
    return steps
