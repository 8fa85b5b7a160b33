"""A scripted OpenAI-compatible chat-completions server (run with sgrgym.runs.loopback)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

Script = Callable[[dict[str, Any]], str]


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
    """``POST .../chat/completions``: the reply text is ``script(request body)``."""

    script: ClassVar[Script]

    def do_POST(self) -> None:
        body = self.read_json()
        text = type(self).script(body)
        payload = {
            "id": f"cmpl-{len(type(self).received)}",
            "model": "served-model-7b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
        }  # fmt: skip
        self.send_json(json.dumps(payload, ensure_ascii=False).encode())


def scripted(script: Script) -> type[ChatHandler]:
    """A fresh handler class (its own request log) replying with ``script``."""

    class Handler(ChatHandler):
        received: ClassVar[list[dict[str, Any]]] = []
        auth: ClassVar[list[str | None]] = []

    Handler.script = staticmethod(script)  # type: ignore[assignment]
    return Handler
