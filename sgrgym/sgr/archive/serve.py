"""Serve a pack over HTTP: ``/replay/<url>`` and proxy-style requests, answered from the pack.

>>> server = make_server(Snapshot.open("snapshots/demo"))   # 127.0.0.1, ephemeral port
>>> threading.Thread(target=server.serve_forever, daemon=True).start()

Two request forms are understood:

- ``GET|HEAD|POST /replay/<absolute-url>``: the target is everything after ``/replay/``,
  query string included (``http://127.0.0.1:8765/replay/http://site.example/a?x=1``);
- proxy-style absolute-form requests (``GET http://site.example/a?x=1 HTTP/1.1``), as sent
  by a client that uses this server as its HTTP proxy.

Each answer is the archived status, reason, headers and body (with ``X-Sgrgym-Snapshot:
exact|rule|miss``); a request the pack does not hold gets the snapshot's deterministic 404.
``GET /`` describes the server; any other path is a 400. The server answers from the pack
only: it never opens an outbound connection. It speaks HTTP/1.1 with keep-alive, one thread
per connection, and disables Nagle's algorithm so that small answers leave at once.
"""

from __future__ import annotations

import re
import socket
import socketserver
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import unquote

from sgrgym import __version__
from sgrgym.errors import UserError
from sgrgym.sgr.archive.replay import Response, Snapshot

REPLAY_PREFIX = "/replay/"
MAX_REQUEST_BODY = 64 * 1024 * 1024
_ABSOLUTE = re.compile(r"^https?://", re.IGNORECASE)
_ONE_SLASH = re.compile(r"^(https?):/(?!/)", re.IGNORECASE)  # some clients merge "//"
_QUOTED = re.compile(r"^https?%3A", re.IGNORECASE)  # a target sent percent-encoded whole
_OWN_HEADERS = {"content-length", "connection", "keep-alive", "transfer-encoding"}


class ReplayServer(ThreadingHTTPServer):
    """A threading HTTP server that answers every request from one :class:`Snapshot`."""

    daemon_threads = True
    request_queue_size = 128  # many clients opening connections at once are not refused

    def __init__(self, snapshot: Snapshot, host: str, port: int, log_requests: bool = False):
        self.snapshot = snapshot
        self.log_requests = log_requests
        if ":" in host:  # an IPv6 literal such as ::1
            self.address_family = socket.AF_INET6
        super().__init__((host, port), ReplayHandler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's ``getfqdn`` (a name lookup that may leave the machine)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        """A client that went away mid-answer is no error; anything else is reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        """``http://host:port/`` of the bound socket (IPv6 hosts in brackets)."""
        host, port = self.server_address[:2]
        shown = f"[{host!s}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}/"


class ReplayHandler(BaseHTTPRequestHandler):
    """One connection: parse each request, look it up in the snapshot, write the answer."""

    protocol_version = "HTTP/1.1"
    server_version = f"sgrgym-replay/{__version__}"
    disable_nagle_algorithm = True
    wbufsize = 64 * 1024  # status line, headers and body leave in as few sends as possible
    timeout = 120  # seconds an idle keep-alive connection keeps its thread

    def version_string(self) -> str:
        return self.server_version

    @property
    def replay_server(self) -> ReplayServer:
        return cast(ReplayServer, self.server)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet unless the server was made with ``log_requests``."""
        if self.replay_server.log_requests:
            super().log_message(format, *args)

    def handle_expect_100(self) -> bool:
        """Send ``100 Continue`` at once: the buffered writer would otherwise hold it back."""
        accepted = super().handle_expect_100()
        self.wfile.flush()
        return accepted

    def send_header(self, keyword: str, value: str) -> None:
        """Like the base class, but archived non-Latin-1 text goes out as its UTF-8 bytes."""
        super().send_header(_latin1(keyword), _latin1(value))

    def do_GET(self) -> None:
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("HEAD")

    def do_POST(self) -> None:
        self._answer("POST")

    def _target(self) -> str | None:
        """The archived URL asked for, or None when the path is in neither form."""
        path = self.path
        if path.startswith(REPLAY_PREFIX):
            path = path[len(REPLAY_PREFIX) :]
            if _QUOTED.match(path):
                path = unquote(path)
            path = _ONE_SLASH.sub(r"\1://", path)
        return path if _ABSOLUTE.match(path) else None

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length); None when there is none. Raises ValueError."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise ValueError("chunked request bodies are not supported: send Content-Length")
        text = self.headers.get("Content-Length", "").strip()
        if not text:
            return None
        if not text.isdigit():
            raise ValueError(f"invalid Content-Length {text!r}")
        length = int(text)
        if length > MAX_REQUEST_BODY:
            raise ValueError(f"request body larger than {MAX_REQUEST_BODY} bytes")
        return self.rfile.read(length) if length else None

    def _answer(self, method: str) -> None:
        try:
            body = self._read_body()
        except ValueError as exc:
            self.close_connection = True  # the rest of the stream cannot be trusted
            self._send_text(400, f"{exc}\n")
            return
        target = self._target()
        if target is None:
            if self.path in ("/", "") and method != "POST":
                self._send_text(200, self._help())
            else:
                self._send_text(400, self._usage(f"cannot replay {self.path!r}"))
            return
        try:
            response = self._fetch(target, method, body)
        except UserError as exc:  # a damaged record: say so, keep serving
            self._send_text(500, f"cannot replay {target}: {exc}\n")
            return
        self._send(response, head_only=method == "HEAD")

    def _fetch(self, url: str, method: str, body: bytes | None) -> Response:
        """The archived answer; a HEAD the pack did not record is answered from its GET."""
        snapshot = self.replay_server.snapshot
        content_type = self.headers.get("Content-Type", "")
        if method == "HEAD":
            response = snapshot.fetch(url, "HEAD", body, content_type)
            if response.match != "miss":
                return response
            method = "GET"
        return snapshot.fetch(url, method, body, content_type)

    def _send(self, response: Response, head_only: bool = False) -> None:
        """Write the archived status, reason, headers and body with our own Content-Length."""
        status, reason = response.status, _latin1(response.reason) or None
        if not 100 <= status <= 599:
            status, reason = 502, "Bad Archived Status"
        self.send_response_only(status, reason)
        for name, value in response.headers:
            if name.lower() not in _OWN_HEADERS:
                self.send_header(name, value)
        self._finish(len(response.body))
        if not head_only:
            self.wfile.write(response.body)

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response_only(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self._finish(len(data))
        if self.command != "HEAD":
            self.wfile.write(data)

    def _finish(self, length: int) -> None:
        self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        elif self.request_version == "HTTP/1.0":  # it asked for keep-alive: confirm it
            self.send_header("Connection", "keep-alive")
        self.end_headers()

    def _origin(self) -> str:
        host = self.headers.get("Host") or self.replay_server.base_url.split("/")[2]
        return f"http://{host}"

    def _usage(self, problem: str = "") -> str:
        origin = self._origin()
        lines = [
            "Ask for an archived URL in one of two forms:",
            f"  {origin}/replay/<absolute-url>   e.g. {origin}/replay/http://site.example/a?x=1",
            "  a proxy-style request whose target is the absolute URL",
            "    (GET http://site.example/a?x=1 HTTP/1.1: use this server as the HTTP proxy)",
            "GET, HEAD and POST are answered; a POST is matched on its body and Content-Type.",
        ]
        return (f"{problem}\n\n" if problem else "") + "\n".join(lines) + "\n"

    def _help(self) -> str:
        snapshot = self.replay_server.snapshot
        return (
            "sgrgym snapshot replay server: answers only from the pack, never the network\n"
            f"pack: {snapshot.manifest.pack}\n"
            f"pin:  {snapshot.pin}\n"
            f"urls: {len(snapshot.urls())} archived\n\n"
            + self._usage()
            + "Answers carry X-Sgrgym-Snapshot: exact | rule | miss; a miss is a 404.\n"
        )


def _latin1(text: str) -> str:
    """``text`` if it encodes as Latin-1 (what HTTP/1.1 heads carry), else its UTF-8 bytes."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8").decode("latin-1")
    return text


def make_server(snapshot: Snapshot, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A bound (not yet serving) replay server; port 0 picks a free port.

    The real address is ``server.server_address``; run it with ``server.serve_forever()``
    (in a thread if need be) and stop it with ``shutdown()`` then ``server_close()``.
    """
    return ReplayServer(snapshot, host, port)


def serve_forever(
    snapshot: Snapshot,
    host: str = "127.0.0.1",
    port: int = 8765,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``snapshot`` until interrupted (Ctrl-C), then close the listening socket."""
    server = ReplayServer(snapshot, host, port)
    try:
        if ready is not None:
            ready(f"serving {snapshot.manifest.pack} on {server.base_url} (replay: /replay/<url>)")
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
