"""The SGR LLM agent: a chat model calling the SGR tools until it answers.

One episode is one conversation. The first message is the paper's task prompt
(:func:`sgrgym.sgr.prompt.task_prompt`: date, instruction, output schema, the tools, the ban on
other retrieval paths; SGR-Bench appendix C). The tools offered are the ones external agents
get over MCP, with the same schemas, descriptions and execution code
(:mod:`sgrgym.sgr.cli_agents.tools`): ``search``, ``fetch`` and ``pdf`` (appendix C: the CLI agents'
only retrieval tools) and ``submit_answer``; the site operations (``operate``) only with
``site_ops`` (off by default, as the paper's agents had none). Every call goes through
:class:`~sgrgym.sgr.env.SgrEnv`, so budgets, trajectory and diagnostics are those of the
built-in agents, and the watchdog (:mod:`sgrgym.sgr.watchdog`) enforces wall and stall limits.

Each turn the model either calls tools or replies with text:

- **tool calls**: native ``tool_calls``, or, when the server returns none, a JSON call written
  in the reply text (:mod:`sgrgym.llm.toolcalls`: the fallback small local models need). Both
  are run in order and counted apart (``native_tool_calls`` / ``text_tool_calls``). Results
  go back as ``tool`` messages for native calls, as one user message for text calls.
- **a final reply**: text without a tool call ends the episode.
- **malformed** (counted, never fatal): an empty reply, a reply that tries a tool call that
  cannot be read, an unknown tool, arguments that are not a JSON object or do not fit the
  schema. The model is told what was wrong and the episode goes on.

The answer scored is the last ``submit_answer`` or, when there was none, the final reply's text
as written (the scorer parses it: fences, headers, separators). ``max_turns`` model calls
without a final reply end the episode as ``budget: model turns`` (the last submitted answer is
scored, as after any overrun).

Context growth is bounded: each tool result is cut to ``result_chars`` characters (a note
says how much was cut), and only the last ``keep_results`` result messages are kept in full;
older ones are replaced by a one-line note (the model can call the tool again). A request thus
holds the prompt (~0.5k tokens), the tool schemas (~0.4k), at most ``keep_results *
result_chars`` characters of results (defaults 2 x 3,000, about 1.5k tokens) and the turns'
short calls and notes: about 2.5-3k tokens for the first dozen turns, as issue 15 asks of
built-in prompts for CPU models.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sgrgym.llm.chat import CallRecord, ChatReply
from sgrgym.llm.settings import LLMOptions
from sgrgym.llm.toolcalls import ToolCall
from sgrgym.llm.usage import CallMeter, LLMTotals, add_totals, totals_of
from sgrgym.sgr.cli_agents.tools import (
    TOOLS_FILE,
    ToolCallError,
    call_tool,
    tool_names,
    tool_specs,
    tools_sha256,
)
from sgrgym.sgr.env import BudgetExceeded, SgrEnv, TaskObservation
from sgrgym.sgr.llm_limits import DEFAULT_KEEP_RESULTS, DEFAULT_MAX_TURNS, DEFAULT_RESULT_CHARS
from sgrgym.sgr.prompt import task_prompt
from sgrgym.sgr.run import RunCard

LLM_TOTALS = "llm_totals.json"

NUDGE_EMPTY = "Your reply was empty. Call one of the tools, or reply with the answer rows."
NUDGE_UNREAD = (
    "Your tool call could not be read. Write it as one JSON object: "
    '{"name": "<tool>", "arguments": {...}}, or reply with the answer rows.'
)


class LLMAgentSettings(BaseModel):
    """What decides an LLM agent's requests (it goes into the run card; the cache mode does
    not: a record and its replay are the same run)."""

    model: str
    base_url: str
    sampling: dict[str, float | int]  # temperature, top_p, max_tokens as sent
    seed: int | None
    site_ops: bool = False
    max_turns: int = DEFAULT_MAX_TURNS
    result_chars: int = DEFAULT_RESULT_CHARS
    keep_results: int = DEFAULT_KEEP_RESULTS
    tools_file: str = TOOLS_FILE
    tools_sha256: str = ""
    prices_sha256: str = ""


class LLMRunCard(RunCard):
    """The run card of an LLM run: the run card plus the agent's settings."""

    llm: LLMAgentSettings


def openai_tools(site_ops: bool = False) -> list[dict[str, Any]]:
    """The tool file's tools as OpenAI function tools (same names, descriptions, schemas)."""
    return [
        {
            "type": "function",
            "function": {
                "name": s.name,
                "description": s.description,
                "parameters": s.input_schema,
            },
        }
        for s in tool_specs(site_ops)
    ]


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


@dataclass
class EpisodeCalls:
    """The model calls of one episode and what the agent made of them."""

    records: list[CallRecord] = field(default_factory=list)
    malformed: int = 0
    problems: list[str] = field(default_factory=list)  # what each malformed reply was
    answer_source: str = "none"  # submit_answer | last message | none

    def totals(self) -> LLMTotals:
        return totals_of(self.records, self.malformed)

    def extra(self) -> dict[str, object]:
        """The ``llm`` part of the episode's trajectory record."""
        return {
            "llm": {
                "calls": [r.model_dump() for r in self.records],
                "totals": self.totals().model_dump(),
                "malformed": list(self.problems),
                "answer_source": self.answer_source,
            }
        }


@dataclass
class _Conversation:
    messages: list[dict[str, Any]]
    results: list[tuple[int, str]] = field(default_factory=list)  # (message index, tool)

    def add_result(self, message: dict[str, Any], tool: str) -> None:
        self.results.append((len(self.messages), tool))
        self.messages.append(message)

    def elide(self, keep: int) -> None:
        """Replace all but the last ``keep`` result messages' content with a short note."""
        for index, tool in self.results[: max(len(self.results) - keep, 0)]:
            message = self.messages[index]
            note = f"[{tool} result removed to keep the conversation short; call it again]"
            message["content"] = note


class LLMAgent:
    """Chat-model episodes through a :class:`~sgrgym.llm.usage.CallMeter` (thread-safe:
    ``--jobs`` episodes share one agent)."""

    name = "llm"
    final_files = (LLM_TOTALS,)

    def __init__(self, meter: CallMeter, settings: LLMAgentSettings) -> None:
        self.meter = meter
        self.settings = settings
        self.tools = openai_tools(settings.site_ops)
        self.tool_names = tool_names(settings.site_ops)
        names = "|".join(map(re.escape, self.tool_names))
        # a reply that tries a call we cannot read: a tag, or a JSON key naming a tool
        self._attempt = re.compile(rf'<tool_call>|"(?:name|tool|function)"\s*:\s*"(?:{names})"')
        self._episodes: dict[str, EpisodeCalls] = {}
        self._lock = threading.Lock()

    # -- the run's view ----------------------------------------------------------------------
    def episode_extra(self, task_id: str) -> dict[str, object]:
        """The model calls of ``task_id``'s episode (for its trajectory record)."""
        with self._lock:
            calls = self._episodes.pop(task_id, EpisodeCalls())
        return calls.extra()

    def finals(self, trajectories: list[Any]) -> dict[str, str]:
        """``llm_totals.json``: the run's totals, summed over every episode's record."""
        return totals_finals(trajectories)

    def run_card(self, card: RunCard) -> LLMRunCard:
        """The run card plus this agent's settings."""
        return LLMRunCard(**card.model_dump(), llm=self.settings)

    def summary(self, out_dir: Path) -> str:
        """The run's calls, tokens and cost (its totals file)."""
        return totals_line(read_totals(out_dir))

    def write_log(self, out_dir: Path) -> None:
        """The run's network log (mode, cache hits, retries) beside its results."""
        self.meter.write_log(out_dir)

    def close(self) -> None:
        self.meter.client.close()

    # -- one episode -------------------------------------------------------------------------
    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        calls = EpisodeCalls()
        with self._lock:
            self._episodes[obs.task_id] = calls
        prompt = task_prompt(
            obs.current_date,
            obs.instruction,
            obs.output_format,
            obs.columns,
            obs.field_separator,
            obs.record_separator,
            self.tool_names,
        )
        talk = _Conversation([{"role": "user", "content": prompt}])
        final: str | None = None
        for turn in range(self.settings.max_turns):
            reply = self._complete(talk, obs.task_id, calls)
            if reply.tool_calls:
                self._run_calls(env, talk, reply, turn, calls)
                talk.elide(self.settings.keep_results)
                continue
            text = reply.text.strip()
            problem = "empty reply" if not text else ""
            if text and self._attempt.search(text):
                problem = "unreadable tool call"
            if not problem:
                final = text
                break
            self._malformed(calls, turn, problem)
            talk.messages.append({"role": "assistant", "content": reply.text})
            nudge = NUDGE_EMPTY if problem == "empty reply" else NUDGE_UNREAD
            talk.messages.append({"role": "user", "content": nudge})
        submitted = env.submitted_answer()
        if submitted is not None:
            calls.answer_source = "submit_answer"
        if final is None:  # scored as after any overrun: the last submitted answer
            raise BudgetExceeded(
                "model turns", f"budget: {self.settings.max_turns} model turns without a reply"
            )
        if submitted is not None:
            return submitted
        calls.answer_source = "last message"
        return final

    def _complete(self, talk: _Conversation, task_id: str, calls: EpisodeCalls) -> ChatReply:
        reply, record = self.meter.complete(
            talk.messages,
            episode=task_id,
            tools=self.tools,
            seed=self.settings.seed,
            **self.settings.sampling,
        )
        calls.records.append(record)
        return reply

    def _malformed(self, calls: EpisodeCalls, turn: int, problem: str) -> None:
        calls.malformed += 1
        calls.problems.append(f"turn {turn + 1}: {problem}")

    def _run_calls(
        self, env: SgrEnv, talk: _Conversation, reply: ChatReply, turn: int, calls: EpisodeCalls
    ) -> None:
        native = reply.tool_call_source == "native"
        ids = [c.id or f"call_{turn + 1}_{i + 1}" for i, c in enumerate(reply.tool_calls)]
        if native:
            talk.messages.append(
                {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.raw_arguments or json.dumps(c.arguments),
                            },
                        }
                        for call_id, c in zip(ids, reply.tool_calls, strict=True)
                    ],
                }
            )
        else:
            talk.messages.append({"role": "assistant", "content": reply.text})
        texts = []
        for call_id, call in zip(ids, reply.tool_calls, strict=True):
            result = cut(self._run_one(env, call, turn, calls), self.settings.result_chars)
            if native:
                message = {"role": "tool", "tool_call_id": call_id, "content": result}
                talk.add_result(message, call.name)
            else:
                texts.append(f"Result of {call.name}:\n{result}")
        if texts:
            names = "+".join(c.name for c in reply.tool_calls)
            talk.add_result({"role": "user", "content": "\n\n".join(texts)}, names)

    def _run_one(self, env: SgrEnv, call: ToolCall, turn: int, calls: EpisodeCalls) -> str:
        """The text result of one call (an error text for a malformed one)."""
        if call.raw_arguments:
            self._malformed(calls, turn, f"{call.name}: arguments are not a JSON object")
            return f"Error: the arguments of {call.name} must be a JSON object."
        try:
            return call_tool(env, call.name, call.arguments, self.settings.site_ops)
        except ToolCallError as exc:
            self._malformed(calls, turn, str(exc))
            return f"Error: {exc}"


def totals_line(totals: LLMTotals) -> str:
    """One line summing up a run's model calls."""
    cost = f"${totals.cost_usd:.6f}" + (
        f" ({totals.unpriced_calls} calls not in the price table)" if totals.unpriced_calls else ""
    )
    return (
        f"LLM: {totals.calls} calls, {totals.prompt_tokens} prompt + "
        f"{totals.completion_tokens} completion tokens, {cost}; tool calls: "
        f"{totals.native_tool_calls} native, {totals.text_tool_calls} read from text; "
        f"{totals.malformed_replies} malformed replies"
    )


def read_totals(out_dir: Path) -> LLMTotals:
    return LLMTotals.model_validate_json((out_dir / LLM_TOTALS).read_text("utf-8"))


def run_totals(trajectories: list[Any]) -> LLMTotals:
    """The run's totals: the sum of the episodes' (as the trajectory records keep them)."""
    parts = [
        LLMTotals.model_validate(r["llm"]["totals"])
        for r in trajectories
        if isinstance(r, dict) and isinstance(r.get("llm"), dict)
    ]
    return add_totals(parts)


def totals_finals(trajectories: list[Any]) -> dict[str, str]:
    """The agent's final results from a run's trajectory records: ``llm_totals.json`` (the
    same for a run and for its shards joined)."""
    return {LLM_TOTALS: run_totals(trajectories).model_dump_json(indent=2) + "\n"}


def make_llm_agent(
    options: LLMOptions,
    seed: int,
    site_ops: bool = False,
    max_turns: int = DEFAULT_MAX_TURNS,
    result_chars: int = DEFAULT_RESULT_CHARS,
    keep_results: int = DEFAULT_KEEP_RESULTS,
) -> LLMAgent:
    """The SGR LLM agent over the recorded chat client ``options`` name (``sgr run --agent
    llm`` and ``sgrgym run``'s ``[llm]`` table build it here)."""
    from sgrgym.llm.options import open_meter

    settings = LLMAgentSettings(
        model=options.model,
        base_url=options.base_url,
        sampling=options.sampling(),
        seed=seed,
        site_ops=site_ops,
        max_turns=max_turns,
        result_chars=result_chars,
        keep_results=keep_results,
        tools_sha256=tools_sha256(),
    )
    meter = open_meter(options)
    return LLMAgent(meter, settings.model_copy(update={"prices_sha256": meter.prices.sha256}))
