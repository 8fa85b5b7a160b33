"""A scripted OpenAI-compatible model server on 127.0.0.1 for end-to-end tests of agent CLIs.

A real HTTP server (threads, keep-alive) that answers ``POST /v1/chat/completions`` (JSON or
SSE stream), ``POST /v1/responses`` (SSE stream) and Anthropic's ``POST /v1/messages`` (JSON or
SSE stream) from a script: the n-th reply of the
script is chosen by how many tool results the request's conversation already holds, so the
same conversation always gets the same reply, whatever side requests a CLI makes. Every
request body is kept (``requests``) for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str  # as the CLI names the tool (e.g. mcp__sgrgym__search)
    arguments: dict[str, Any]
    namespace: str = ""  # Responses API: the namespace tool holding it (e.g. mcp__sgrgym)


@dataclass(frozen=True)
class Reply:
    """One model turn: tool calls, or a final text."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()


Script = Callable[[int, dict[str, Any]], Reply]  # (tool results so far, request) -> reply


@dataclass
class ScriptedModel:
    script: Script
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps(
                    {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
                ).encode()
                self._send(200, "application/json", body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                model.requests.append((self.path, request))
                if self.path.endswith("/chat/completions"):
                    self._chat(request)
                elif self.path.endswith("/responses"):
                    self._responses(request)
                elif self.path.split("?")[0].endswith("/messages"):
                    self._messages(request)
                else:
                    self._send(404, "application/json", b'{"error": "not found"}')

            def _send(self, status: int, ctype: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _sse(self, events: list[tuple[str | None, dict[str, Any] | str]]) -> None:
                chunks = []
                for name, data in events:
                    text = data if isinstance(data, str) else json.dumps(data)
                    chunks.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
                self._send(200, "text/event-stream", "".join(chunks).encode())

            def _chat(self, request: dict[str, Any]) -> None:
                done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
                reply = model.script(done, request) if request.get("tools") else Reply("ok")
                calls = [
                    {
                        "index": i,
                        "id": f"call_{done}_{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for i, c in enumerate(reply.calls)
                ]
                finish = "tool_calls" if calls else "stop"
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                base = {"id": f"chatcmpl-{done}", "created": 0, "model": "scripted"}
                if not request.get("stream"):
                    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
                    if calls:
                        message["tool_calls"] = [
                            {k: v for k, v in c.items() if k != "index"} for c in calls
                        ]
                    body = {
                        **base,
                        "object": "chat.completion",
                        "usage": usage,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    }
                    self._send(200, "application/json", json.dumps(body).encode())
                    return
                delta: dict[str, Any] = {"role": "assistant", "content": reply.text}
                if calls:
                    delta["tool_calls"] = calls
                chunk = {**base, "object": "chat.completion.chunk"}
                self._sse(
                    [
                        (
                            None,
                            {
                                **chunk,
                                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                            },
                        ),
                        (
                            None,
                            {
                                **chunk,
                                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                                "usage": usage,
                            },
                        ),
                        (None, "[DONE]"),
                    ]
                )

            def _responses(self, request: dict[str, Any]) -> None:
                items = request.get("input", [])
                done = sum(1 for i in items if i.get("type") == "function_call_output")
                reply = model.script(done, request) if request.get("tools") else Reply("ok")
                output: list[dict[str, Any]] = []
                for i, c in enumerate(reply.calls):
                    item = {
                        "type": "function_call",
                        "id": f"fc_{done}_{i}",
                        "call_id": f"call_{done}_{i}",
                        "name": c.name,
                        "arguments": json.dumps(c.arguments),
                        "status": "completed",
                    }
                    if c.namespace:
                        item["namespace"] = c.namespace
                    output.append(item)
                if reply.text:
                    output.append(
                        {
                            "type": "message",
                            "id": f"msg_{done}",
                            "role": "assistant",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": reply.text, "annotations": []}
                            ],
                        }
                    )
                response = {
                    "id": f"resp_{done}",
                    "object": "response",
                    "created_at": 0,
                    "model": "scripted",
                    "status": "completed",
                    "output": output,
                    "usage": {
                        "input_tokens": 10,
                        "output_tokens": 5,
                        "total_tokens": 15,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0},
                    },
                }
                events: list[tuple[str | None, dict[str, Any] | str]] = [
                    (
                        "response.created",
                        {
                            "type": "response.created",
                            "response": {**response, "status": "in_progress", "output": []},
                        },
                    ),
                ]
                for index, item in enumerate(output):
                    events.append(
                        (
                            "response.output_item.done",
                            {
                                "type": "response.output_item.done",
                                "output_index": index,
                                "item": item,
                            },
                        )
                    )
                events.append(
                    ("response.completed", {"type": "response.completed", "response": response})
                )
                self._sse(events)

            def _messages(self, request: dict[str, Any]) -> None:
                done = sum(
                    1
                    for m in request.get("messages", [])
                    if m.get("role") == "user" and isinstance(m.get("content"), list)
                    for part in m["content"]
                    if part.get("type") == "tool_result"
                )
                reply = model.script(done, request) if request.get("tools") else Reply("ok")
                blocks: list[dict[str, Any]] = []
                if reply.text:
                    blocks.append({"type": "text", "text": reply.text})
                for i, c in enumerate(reply.calls):
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": f"toolu_{done}_{i}",
                            "name": c.name,
                            "input": c.arguments,
                        }
                    )
                stop = "tool_use" if reply.calls else "end_turn"
                usage = {"input_tokens": 10, "output_tokens": 5}
                message = {
                    "id": f"msg_{done}",
                    "type": "message",
                    "role": "assistant",
                    "model": request.get("model", "scripted"),
                    "stop_sequence": None,
                }
                if not request.get("stream"):
                    body = {**message, "content": blocks, "stop_reason": stop, "usage": usage}
                    self._send(200, "application/json", json.dumps(body).encode())
                    return
                start = {**message, "content": [], "stop_reason": None, "usage": usage}
                events: list[tuple[str | None, dict[str, Any] | str]] = [
                    ("message_start", {"type": "message_start", "message": start})
                ]
                for index, block in enumerate(blocks):
                    if block["type"] == "text":
                        opened: dict[str, Any] = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        opened = {**block, "input": {}}
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    events += [
                        (
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": index,
                                "content_block": opened,
                            },
                        ),
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": index, "delta": delta},
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": index}),
                    ]
                events += [
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                self._sse(events)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
