"""Tool calls written as text: the documented fallback when a server returns no ``tool_calls``.

Small local models (and llama.cpp's server with them) write a tool call into the reply text
instead of the ``tool_calls`` field. :func:`text_tool_calls` reads, in this order:

1. fenced blocks (```` ```json ... ``` ```` or a bare ```` ``` ````) holding a JSON object;
2. ``<tool_call>{...}</tool_call>`` tags;
3. else the first balanced ``{...}`` object in the text.

An object counts as a call when it has ``name`` (or ``tool``/``function``) naming one of the
offered tools, and ``arguments`` (or ``parameters``/``args``; an object, or a JSON string of
one). Anything else is not a call. Agents count calls found this way apart from native ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


class ToolCall(BaseModel):
    """One tool call: its id (native calls), the tool name and its arguments."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""  # the arguments text as sent when it was not a JSON object


def _objects(text: str) -> Iterator[str]:
    """Every balanced top-level ``{...}`` substring, in order."""
    depth, start, in_string, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                yield text[start : i + 1]


def arguments_of(value: Any) -> tuple[dict[str, Any], str]:
    """(arguments object, raw text when it was not one) from an ``arguments`` value."""
    if isinstance(value, dict):
        return value, ""
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value.strip() else {}
        except ValueError:
            return {}, value
        return (parsed, "") if isinstance(parsed, dict) else ({}, value)
    return {}, "" if value is None else json.dumps(value)


def _call(obj: Any, tools: Collection[str]) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name", obj.get("tool", obj.get("function")))
    if not isinstance(name, str) or name not in tools:
        return None
    raw = obj.get("arguments", obj.get("parameters", obj.get("args", {})))
    arguments, unparsed = arguments_of(raw)
    return ToolCall(name=name, arguments=arguments, raw_arguments=unparsed)


def _candidates(text: str) -> Iterator[str]:
    for pattern in (_FENCE, _TAG):
        for match in pattern.finditer(text):
            yield from _objects(match.group(1))
    yield from _objects(text)


def text_tool_calls(text: str, tools: Collection[str]) -> list[ToolCall]:
    """The tool calls written in ``text`` (the first source that has any), in order."""
    seen: set[str] = set()
    calls: list[ToolCall] = []
    for candidate in _candidates(text):
        if candidate in seen:
            continue
        seen.add(candidate)
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        items = parsed if isinstance(parsed, list) else [parsed]
        for item in items:
            call = _call(item, tools)
            if call is not None:
                calls.append(call)
        if calls:
            return calls
    return calls
