"""A scripted OpenAI-compatible chat-completions server (run with sgrgym.core.loopback)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

# The reply to a request body: its text, or the whole assistant message (``content``,
# ``tool_calls``) with, optionally, the ``usage`` to report.
Script = Callable[[dict[str, Any]], str | dict[str, Any]]


class RecordingJsonHandler(BaseHTTPRequestHandler):
    """A quiet handler of JSON POSTs that keeps each request body and Authorization header."""

    received: ClassVar[list[dict[str, Any]]] = []
    auth: ClassVar[list[str | None]] = []

    def read_json(self) -> Any:
        """The request's JSON body (kept in ``received``, its Authorization in ``auth``)."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(body)
        type(self).auth.append(self.headers.get("Authorization"))
        return body

    def send_json(self, raw: bytes) -> None:
        """Answer 200 with the JSON bytes ``raw``."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:
        pass


class ChatHandler(RecordingJsonHandler):
    """``POST .../chat/completions``: the reply is ``script(request body)``."""

    script: ClassVar[Script]

    def do_POST(self) -> None:
        body = self.read_json()
        reply = type(self).script(body)
        message = dict(reply) if isinstance(reply, dict) else {"content": reply}
        usage = message.pop("usage", None) or {"prompt_tokens": 11, "completion_tokens": 5}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        payload = {
            "id": f"cmpl-{len(type(self).received)}",
            "model": "served-model-7b",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
            ],
            "usage": usage,
        }
        self.send_json(json.dumps(payload, ensure_ascii=False).encode())


def scripted(script: Script) -> type[ChatHandler]:
    """A fresh handler class (its own request log) replying with ``script``."""

    class Handler(ChatHandler):
        received: ClassVar[list[dict[str, Any]]] = []
        auth: ClassVar[list[str | None]] = []

    Handler.script = staticmethod(script)  # type: ignore[assignment]
    return Handler
