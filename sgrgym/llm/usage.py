"""Tokens and cost per call, episode and run; the run's network log (mode, cache hits, retries).

:class:`LLMTotals` sums :class:`~sgrgym.llm.chat.CallRecord` s (an episode's) or other totals (a
run's), so the two levels always add up. :class:`CallMeter` is what an agent calls through:
it prices each reply, keeps the episode's records and the run's log, and is safe to share
between ``--jobs`` threads. The log (``llm_run.json``) holds what differs between a record and
a replay (cache hits, network attempts, retries) and the mode; results files never do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sgrgym.core.errors import InputError
from sgrgym.core.inputs import read_json
from sgrgym.llm.chat import CallRecord, ChatClient, ChatReply
from sgrgym.llm.prices import PriceTable

LOG = "llm_run.json"


class LLMTotals(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    native_tool_calls: int = 0
    text_tool_calls: int = 0  # tool calls parsed out of the reply text (the fallback)
    malformed_replies: int = 0  # replies an agent could not use (logged, never fatal)


def totals_of(records: Iterable[CallRecord], malformed: int = 0) -> LLMTotals:
    total = LLMTotals(malformed_replies=malformed)
    for r in records:
        total.calls += 1
        total.prompt_tokens += r.prompt_tokens
        total.completion_tokens += r.completion_tokens
        total.reasoning_tokens += r.reasoning_tokens
        if r.cost_usd is None:
            total.unpriced_calls += 1
        else:
            total.cost_usd += r.cost_usd
        if r.tool_call_source == "native":
            total.native_tool_calls += r.tool_calls
        elif r.tool_call_source == "text":
            total.text_tool_calls += r.tool_calls
    total.cost_usd = round(total.cost_usd, 9)
    return total


def add_totals(parts: Sequence[LLMTotals]) -> LLMTotals:
    fields = LLMTotals.model_fields
    sums: dict[str, Any] = {f: sum(getattr(p, f) for p in parts) for f in fields}
    sums["cost_usd"] = round(sums["cost_usd"], 9)
    return LLMTotals(**sums)


class CallMeter:
    """A chat client with its price table and the run's network log (thread-safe)."""

    def __init__(self, client: ChatClient, prices: PriceTable) -> None:
        self.client = client
        self.prices = prices
        self._lock = threading.Lock()
        self.log: dict[str, Any] = {
            "mode": client.mode,
            "model": client.model,
            "base_url": client.base_url,
            "calls": 0,
            "from_cache": 0,
            "network_attempts": 0,
            "retries": [],
        }

    def cost(self, reply: ChatReply) -> float | None:
        usage = reply.usage
        return self.prices.cost(
            usage.prompt_tokens, usage.completion_tokens, reply.requested_model, reply.model
        )

    def complete(
        self, messages: list[dict[str, Any]], *, episode: str, **params: Any
    ) -> tuple[ChatReply, CallRecord]:
        reply = self.client.complete(messages, episode=episode, **params)
        with self._lock:
            self.log["calls"] += 1
            self.log["from_cache"] += int(reply.from_cache)
            self.log["network_attempts"] += reply.attempts
            if reply.retried:
                self.log["retries"].append({"episode": episode, "retried": reply.retried})
        return reply, reply.record(self.cost)

    def write_log(self, folder: Path) -> None:
        """``llm_run.json`` beside the results (not one of them: it differs on a replay)."""
        with self._lock:
            log = {**self.log, "prices_sha256": self.prices.sha256}
        (folder / LOG).write_text(log_text(log), "utf-8")


def log_text(log: dict[str, Any]) -> str:
    """The bytes of ``llm_run.json``."""
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


_COUNTS = ("calls", "from_cache", "network_attempts")


def joined_log(folders: Sequence[Path]) -> str | None:
    """The log of a run joined from the logs of its shards' ``folders`` (None: none has one):
    the counts summed, the retries one shard after the other, and any other field its value,
    or the list of its values where they differ (a shard replayed, another recorded)."""
    logs = []
    for folder in folders:
        if (folder / LOG).exists():
            log = read_json(folder / LOG, "LLM call log")
            if not isinstance(log, dict):
                raise InputError(f"{folder / LOG}: not an LLM call log (not a JSON object)")
            logs.append(log)
    if not logs:
        return None
    joined: dict[str, Any] = {}
    for key in dict.fromkeys(k for log in logs for k in log):
        values = [log[key] for log in logs if key in log]
        if key in _COUNTS and all(isinstance(v, int) for v in values):
            joined[key] = sum(values)
        elif key == "retries" and all(isinstance(v, list) for v in values):
            joined[key] = [r for v in values for r in v]
        else:
            distinct = [v for n, v in enumerate(values) if v not in values[:n]]
            joined[key] = distinct[0] if len(distinct) == 1 else distinct
    return log_text(joined)
