"""SGR-Bench as an Inspect AI task: ``inspect eval sgrgym/sgr_bench --model M``.

One sample per task variant (id: the task id; metadata: task id, variant, domain, reference
cardinality, task file; target: the oracle answer). The input is sgrgym's own task prompt
(:func:`sgrgym.sgr.cli_agents.episode.episode_prompt`, the one the LLM agent and the agent
CLIs get: date, instruction, output schema, the tools offered, no start URL; appendix C).

Tools: the ones ``sgrgym mcp`` offers, from the same schema file (``tools.v2.json``: names,
descriptions, JSON schemas) and run by the same function
(:func:`sgrgym.sgr.cli_agents.tools.call_tool`) over an :class:`~sgrgym.sgr.env.SgrEnv` of the
sample's own (a twin of the task's environment: same pack, sites, renderer and search index):
``search``, ``fetch``, ``pdf``, ``submit_answer``; ``operate`` only with ``site_ops``.

The agent loop is the SGR LLM agent's (:mod:`sgrgym.sgr.llm_agent`): each turn the model calls
tools or replies. Native tool calls are run by Inspect; where the model writes its call into
the reply text instead (small local models behind ``llama-server``), the call is read with
:func:`sgrgym.llm.toolcalls.text_tool_calls`, run, and its result given back as a user
message. A reply without a tool call ends the episode; an empty one, or one that tries a call
that cannot be read, is answered with the agent's nudge. The answer scored is the last
``submit_answer``, else that reply's text; after a limit, the last submitted answer.

Budgets (appendix C): the wall time per task is Inspect's ``time_limit``; the stall limit and
the optional tool-call cap are the environment's own (checked at every tool call, which the
environment then refuses, ending the episode); the LLM agent's model-turn cap is Inspect's
``turn_limit``; ``message_limit`` is Inspect's, off unless given. Records name them as ``sgr
run`` does (``ended_by``: ``budget: wall``, ``budget: stall``, ``budget: tool calls``,
``budget: model turns``).

The scorer (``sgrgym/sgr_score``) closes the episode and scores its answer with
:func:`sgrgym.sgr.score.score_answer` and labels it with appendix G's categories
(:func:`sgrgym.sgr.diagnostics.diagnose`), exactly as an ``sgr run`` does; the episode
(answer, how it ended, trajectory as ``trajectories.jsonl`` has it) is kept in the sample's
store.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, execute_tools
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParams
from inspect_ai.util import LimitExceededError

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.inspect.args import names
from sgrgym.inspect.scoring import SGR_METRICS, SGR_SCORER, sgr_inspect_score
from sgrgym.llm.toolcalls import ToolCall, text_tool_calls
from sgrgym.sgr.cli_agents.episode import MAX_ARGUMENT_CHARS, episode_prompt
from sgrgym.sgr.cli_agents.tools import (
    TOOLS_FILE,
    ToolCallError,
    ToolSpec,
    call_tool,
    tool_names,
    tool_specs,
    tools_sha256,
)
from sgrgym.sgr.diagnostics import diagnose
from sgrgym.sgr.env import Budget, BudgetExceeded, Episode, SgrEnv
from sgrgym.sgr.llm_agent import NUDGE_EMPTY, NUDGE_UNREAD, cut
from sgrgym.sgr.llm_limits import DEFAULT_MAX_TURNS
from sgrgym.sgr.make import SgrWorld, open_world
from sgrgym.sgr.run import RunCard, run_card
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.simulator import TrajectoryStep
from sgrgym.sgr.sites.reference import reference_of
from sgrgym.sgr.tasks import ScoringTask

AGENT = "inspect"
EPISODE_KEY = "sgrgym_episode"  # the sample store's record of the episode
# Inspect's limits by the names sgrgym's records give the budgets (``ended_by``).
LIMIT_BUDGETS = {"time": "wall", "working": "wall", "turn": "model turns", "message": "messages"}


class InspectSgrCard(RunCard):
    """The pins of an ``sgr_bench`` task (the eval metadata's ``sgrgym``): the run card of an
    ``sgr run`` plus the tool schema file and the agent loop's settings."""

    tools_file: str = TOOLS_FILE
    tools_sha256: str = ""
    site_ops: bool = False
    max_turns: int | None = DEFAULT_MAX_TURNS
    result_chars: int | None = None


def sample_of(task: ScoringTask, prompt: str) -> Sample:
    return Sample(
        id=task.task_id,
        input=prompt,
        target=task.task.oracle_answer,
        metadata={
            "task_id": task.task_id,
            "variant": task.variant,
            "domain": task.domain,
            "cardinality": len(task.gold_canon),
            "task_file": task.source,
        },
    )


@dataclass
class _Open:
    """One sample's open episode: its environment and how its agent loop ended."""

    env: SgrEnv
    ended_by: str = "answer"
    error: str = ""
    final: str | None = None  # the text of the reply that ended the loop


class SgrEpisodes:
    """The episodes of one ``sgr_bench`` task, one environment per running sample (keyed by
    the sample's uuid), each a twin of the world's environment."""

    def __init__(self, world: SgrWorld, site_ops: bool, result_chars: int | None) -> None:
        self.world = world
        self.site_ops = site_ops
        self.result_chars = result_chars
        self.tasks = {t.task_id: t for t in world.tasks}
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def prompt(self, task: ScoringTask) -> str:
        return episode_prompt(self.world.env, task, self.site_ops)

    def start(self, key: str, task_id: str) -> _Open:
        task = self.tasks[task_id]
        env = self.world.env.twin()
        reference = reference_of(task)
        model = env.sites.get(reference.site) if reference else None
        env.reset(task, model.host if model else "")
        episode = _Open(env)
        with self._lock:
            self._open[key] = episode
        return episode

    def pop(self, key: str) -> _Open | None:
        with self._lock:
            return self._open.pop(key, None)

    def tools(self, env: SgrEnv) -> list[Tool]:
        return [self._tool(env, spec) for spec in tool_specs(self.site_ops)]

    def call(self, env: SgrEnv, name: str, arguments: dict[str, Any]) -> str:
        """One tool call in ``env`` (a ToolError for a call the tool cannot take)."""
        long = sorted(k for k, v in arguments.items() if len(str(v)) > MAX_ARGUMENT_CHARS)
        if long:
            limit = f"{MAX_ARGUMENT_CHARS:,}"
            raise ToolError(f"{name}: argument {long[0]!r} is over {limit} characters")
        env.check_budget()  # the stall and wall budgets: a spent one refuses this call
        try:
            text = call_tool(env, name, arguments, self.site_ops)
        except ToolCallError as exc:
            raise ToolError(str(exc)) from None
        except BudgetExceeded as exc:
            return f"The episode is over ({exc}); no further tool call is taken."
        return cut(text, self.result_chars) if self.result_chars else text

    async def text_call(self, env: SgrEnv, call: ToolCall) -> str:
        """The result of a call read from the reply text, as the model reads it."""
        if call.raw_arguments:
            return f"Error: the arguments of {call.name} must be a JSON object."
        try:
            return await anyio.to_thread.run_sync(self.call, env, call.name, call.arguments)
        except ToolError as exc:
            return f"Error: {exc.message}"

    def _tool(self, env: SgrEnv, spec: ToolSpec) -> Tool:
        async def execute(**kwargs: Any) -> str:
            return await anyio.to_thread.run_sync(self.call, env, spec.name, kwargs)

        return ToolDef(
            execute,
            name=spec.name,
            description=spec.description,
            parameters=ToolParams.model_validate(spec.input_schema),
        ).as_tool()

    def finish(self, state: TaskState) -> dict[str, Any] | None:
        """Close the sample's episode (if it is still open) into its store record."""
        episode = self.pop(state.uuid)
        if episode is None:
            return None
        env = episode.env
        try:
            if env.stopped is not None and episode.ended_by == "answer" and episode.final is None:
                episode.ended_by = f"budget: {env.stopped.reason}"
                episode.error = str(env.stopped)
            if episode.final is not None:
                submitted = env.submitted_answer()
                answer = submitted if submitted is not None else episode.final
                closed = env.finish(answer, "answer")
            else:
                closed = env.finish(None, episode.ended_by, episode.error)
        finally:
            env.close()
        record = episode_record(closed)
        state.store.set(EPISODE_KEY, record)
        return record


def episode_record(episode: Episode) -> dict[str, Any]:
    """What the sample's store keeps of a closed episode (JSON: the trajectory as written to
    ``trajectories.jsonl``)."""
    return {
        "answer": episode.answer,
        "answer_from": episode.answer_from,
        "ended_by": episode.ended_by,
        "error": episode.error,
        "tool_calls": episode.tool_calls,
        "submitted_answers": episode.submitted_answers,
        "target_site_rank": episode.target_site_rank,
        "steps": [asdict(step) for step in episode.trajectory],
    }


def _agent(episodes: SgrEpisodes) -> Solver:
    offered = tool_names(episodes.site_ops)
    names = "|".join(map(re.escape, offered))
    attempt = re.compile(rf'<tool_call>|"(?:name|tool|function)"\s*:\s*"(?:{names})"')

    @solver(name="sgr_agent")
    def sgr_agent() -> Solver:
        """The SGR LLM agent's loop over the sample's own environment."""

        async def solve(state: TaskState, generate: Generate) -> TaskState:
            episode = episodes.start(state.uuid, str(state.sample_id))
            state.tools = episodes.tools(episode.env)
            try:
                while episode.env.stopped is None:
                    state = await generate(state, tool_calls="none")
                    if state.output.message.tool_calls:
                        result = await execute_tools(state.messages, state.tools)
                        state.messages.extend(result.messages)
                        continue
                    text = state.output.completion
                    calls = text_tool_calls(text, offered)
                    if calls:
                        results = [
                            f"Result of {c.name}:\n{await episodes.text_call(episode.env, c)}"
                            for c in calls
                        ]
                        state.messages.append(ChatMessageUser(content="\n\n".join(results)))
                        continue
                    if text.strip() and not attempt.search(text):
                        episode.final = text.strip()
                        break
                    nudge = NUDGE_UNREAD if text.strip() else NUDGE_EMPTY
                    state.messages.append(ChatMessageUser(content=nudge))
            except LimitExceededError as exc:
                budget = LIMIT_BUDGETS.get(exc.type, exc.type)
                episode.ended_by, episode.error = f"budget: {budget}", exc.message
                raise
            except anyio.get_cancelled_exc_class():  # Inspect's time limit cancels the sample
                wall = f"{episodes.world.env.budget.max_wall_s:g}"
                episode.ended_by = "budget: wall"
                episode.error = f"budget: over {wall} s of wall time"
                raise
            return state

        return solve

    return sgr_agent()


def _scorer(episodes: SgrEpisodes) -> Scorer:
    @scorer(name=SGR_SCORER, metrics={name: [mean(), stderr()] for name in SGR_METRICS})
    def sgr_score() -> Scorer:
        """sgrgym's SGR-Bench scorer and appendix G diagnostics on the episode's answer."""

        async def score(state: TaskState, target: Target) -> Score:
            record = episodes.finish(state) or state.store.get(EPISODE_KEY)
            task = episodes.tasks[str(state.sample_id)]
            if record is None:  # no episode ran (the solver was replaced): the final output
                record = {"answer": state.output.completion or None, "steps": []}
            answer = record["answer"]
            steps = [TrajectoryStep(**step) for step in record["steps"]]
            result = score_answer(task, answer)
            reference = reference_of(task)
            model = episodes.world.env.sites.get(reference.site) if reference else None
            diagnostics = diagnose(task, reference, model, steps, result, answer)
            return sgr_inspect_score(result, diagnostics, answer)

        return score

    return sgr_score()


def _cleanup(episodes: SgrEpisodes) -> Callable[[TaskState], Awaitable[None]]:
    async def cleanup(state: TaskState) -> None:
        episode = episodes.pop(state.uuid)  # a sample that never reached its scorer
        if episode is not None:
            episode.env.close()

    return cleanup


def sgr_card(
    world: SgrWorld, site_ops: bool, max_turns: int | None, result_chars: int | None
) -> dict[str, Any]:
    """The task's pins: pack and its sha256, task files and theirs, prompt template, tool
    schema file, rendered sites' apps and data files, budget, date, sgrgym version."""
    card = run_card(world.env, AGENT, 0, world.files, world.selection)
    pins = InspectSgrCard(
        **card.model_dump(),
        tools_sha256=tools_sha256(),
        site_ops=site_ops,
        max_turns=max_turns,
        result_chars=result_chars,
    )
    return pins.model_dump(mode="json")


@task
def sgr_bench(
    task_files: str | list[str] | None = None,
    task_ids: str | list[str] | None = None,
    pack: str = defaults.SGR_PACK,
    site_ops: bool = False,
    current_date: str = defaults.CURRENT_DATE,
    max_wall_s: float = defaults.MAX_WALL_S,
    stall_s: float = defaults.STALL_S,
    max_tool_calls: int | None = None,
    max_turns: int | None = DEFAULT_MAX_TURNS,
    message_limit: int | None = None,
    result_chars: int | None = None,
) -> Task:
    """SGR-Bench on sgrgym's offline replica sites (default: the demo pack and its 60 task
    variants).

    Args:
        task_files: SGR task files (JSONL; a list or comma-separated), default the demo tasks.
        task_ids: only these task variants (a list or comma-separated), in file order.
        pack: a pack name under snapshots/ or a pack folder (default: demo).
        site_ops: also offer the site operations (operate); the paper's agents had none.
        current_date: the date the prompt gives.
        max_wall_s: wall time per task (appendix C: 6000), Inspect's time_limit.
        stall_s: a task with no tool call for this long is stopped (appendix C: 3000).
        max_tool_calls: optional cap on tool calls (default: none).
        max_turns: model turns per task (sgr run --agent llm's default: 30), Inspect's
            turn_limit; None for none.
        message_limit: Inspect's message limit (default: none).
        result_chars: cut each tool result to this many characters (sgr run --agent llm
            cuts to 3000); default: no cut beyond Inspect's own tool output limit.
    """
    files = [Path(p) for p in names(task_files) or []] or None
    budget = Budget(max_wall_s=max_wall_s, stall_s=stall_s, max_tool_calls=max_tool_calls)
    world = open_world(
        pack, files, budget=budget, current_date=current_date, task_ids=names(task_ids)
    )
    if not world.tasks:
        raise UserError("sgr_bench: no task variants selected")
    episodes = SgrEpisodes(world, site_ops, result_chars)
    samples = [sample_of(t, episodes.prompt(t)) for t in world.tasks]
    return Task(
        dataset=MemoryDataset(samples, name=f"sgr-bench-{world.env.snapshot.manifest.pack}"),
        solver=_agent(episodes),
        scorer=_scorer(episodes),
        cleanup=_cleanup(episodes),
        time_limit=max(1, round(max_wall_s)),
        turn_limit=max_turns,
        message_limit=message_limit,
        metadata={"sgrgym": sgr_card(world, site_ops, max_turns, result_chars)},
    )
