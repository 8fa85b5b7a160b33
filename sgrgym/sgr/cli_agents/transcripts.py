"""Agent CLI transcripts: the tool calls and the final answer of a session, from its own log.

Formats (a profile names one):

- ``stream-json``: one JSON event per line, as Claude Code (``-p --output-format stream-json
  --verbose``) and Qwen Code (``--output-format stream-json``) write it: ``assistant`` events
  carry ``tool_use`` parts, ``user`` events the ``tool_result`` parts, the ``result`` event (at
  the session's end) the final text.
- ``codex-json``: the events of ``codex exec --json``: ``item.completed`` events whose item is
  an ``mcp_tool_call`` (server, tool, arguments, result or error) or an ``agent_message``; the
  final text is the last message of a turn that completed (``turn.completed``).

Only calls of the ``sgrgym`` MCP server count as tool calls of the episode; anything else the
CLI did (its own tools) is listed as ``other``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sgrgym.core.errors import UserError

FORMATS = ("stream-json", "codex-json")
SERVER = "sgrgym"


@dataclass
class TranscriptCall:
    tool: str  # the episode's tool name (search, fetch, ...), or the CLI's own tool name
    arguments: dict[str, Any]
    ours: bool  # a call of the sgrgym MCP server
    is_error: bool = False
    result_chars: int = 0
    t: float | None = None  # seconds since the session started, when the runner saw it
    call_id: str = ""


@dataclass
class Transcript:
    calls: list[TranscriptCall] = field(default_factory=list)
    final: str | None = None  # the CLI's final answer text

    def summary(self) -> list[dict[str, Any]]:
        """The calls in a deterministic form (no timings), for the trajectory record."""
        return [
            {
                "tool": c.tool,
                "args": c.arguments,
                "ours": c.ours,
                "is_error": c.is_error,
                "result_chars": c.result_chars,
            }
            for c in self.calls
        ]


def _our_name(name: str, prefix: str) -> str | None:
    return name[len(prefix) :] if name.startswith(prefix) else None


def _arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments as an object, whatever the CLI wrote (a JSON text, a list, a
    number): an argument list that is not an object is kept whole under ``raw``."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"raw": value}
    if value is None:
        return {}
    return dict(value) if isinstance(value, dict) else {"raw": value}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _stream_json(events: list[tuple[float | None, dict[str, Any]]], prefix: str) -> Transcript:
    out = Transcript()
    by_id: dict[str, TranscriptCall] = {}
    for t, event in events:
        kind = event.get("type")
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        parts = message.get("content") if isinstance(message, dict) else None
        if kind == "assistant" and isinstance(parts, list):
            for part in parts:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "tool_use":
                    name = str(part.get("name", ""))
                    ours = _our_name(name, prefix)
                    call = TranscriptCall(
                        ours or name,
                        _arguments(part.get("input")),
                        ours is not None,
                        t=t,
                        call_id=str(part.get("id", "")),
                    )
                    out.calls.append(call)
                    by_id[call.call_id] = call
        elif kind == "user" and isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    done = by_id.get(str(part.get("tool_use_id", "")))
                    if done is not None:
                        done.is_error = bool(part.get("is_error"))
                        done.result_chars = len(_content_text(part.get("content")))
        elif kind == "result" and isinstance(event.get("result"), str):
            out.final = event["result"]  # only the session's end: earlier text is narration
    return out


def _codex_json(events: list[tuple[float | None, dict[str, Any]]], prefix: str) -> Transcript:
    out = Transcript()
    message: str | None = None
    for t, event in events:
        if event.get("type") == "turn.completed" and message is not None:
            out.final = message  # the turn's last message, once the turn is over
        if event.get("type") != "item.completed" or not isinstance(event.get("item"), dict):
            continue
        item = event["item"]
        kind = item.get("type")
        if kind == "agent_message":
            message = str(item.get("text", ""))
        elif kind == "mcp_tool_call":
            server, tool = str(item.get("server", "")), str(item.get("tool", ""))
            arguments = _arguments(item.get("arguments"))
            result = item.get("result")
            text = ""
            if isinstance(result, dict):
                text = _content_text(result.get("content"))
            out.calls.append(
                TranscriptCall(
                    tool,
                    arguments,
                    server == SERVER,
                    t=t,
                    is_error=item.get("status") == "failed" or bool(item.get("error")),
                    result_chars=len(text),
                    call_id=str(item.get("id", "")),
                )
            )
        elif kind in ("command_execution", "web_search", "file_change"):
            out.calls.append(TranscriptCall(str(kind), {}, False, t=t))
    return out


def parse_events(
    lines: list[tuple[float | None, str]], fmt: str, prefix: str = f"mcp__{SERVER}__"
) -> Transcript:
    """The transcript of a session from its event lines ((time seen, line) pairs)."""
    if fmt not in FORMATS:
        raise UserError(f"transcript format {fmt!r} is unknown; formats: {', '.join(FORMATS)}")
    events = []
    for t, line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue  # CLIs print banners and warnings between events
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line of a killed session
        if isinstance(event, dict):
            events.append((t, event))
    if fmt == "stream-json":
        return _stream_json(events, prefix)
    return _codex_json(events, prefix)
