"""A scripted OpenAI-compatible chat-completions server (run with sgrgym.runs.loopback)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

Script = Callable[[dict[str, Any]], str]


class ChatHandler(BaseHTTPRequestHandler):
    """``POST .../chat/completions``: the reply text is ``script(request body)``."""

    received: ClassVar[list[dict[str, Any]]] = []
    auth: ClassVar[list[str | None]] = []
    script: ClassVar[Script]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(body)
        type(self).auth.append(self.headers.get("Authorization"))
        text = type(self).script(body)
        payload = {
            "id": f"cmpl-{len(type(self).received)}",
            "model": "served-model-7b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
        }  # fmt: skip
        raw = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:
        pass


def scripted(script: Script) -> type[ChatHandler]:
    """A fresh handler class (its own request log) replying with ``script``."""

    class Handler(ChatHandler):
        received: ClassVar[list[dict[str, Any]]] = []
        auth: ClassVar[list[str | None]] = []

    Handler.script = staticmethod(script)  # type: ignore[assignment]
    return Handler
