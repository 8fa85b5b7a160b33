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
only: it never opens an outbound connection.

It is one asyncio event loop (no thread per connection) speaking HTTP/1.1 with keep-alive;
lookups are in-memory and records are read with ``os.pread``, so answering inside the loop
is cheaper than handing work to threads.

Limits: a request head of at most 64 KiB (431), a body of at most 64 MiB (413) that must
arrive within :data:`BODY_TIMEOUT_S` seconds (408), and at most :data:`MAX_INFLIGHT_BYTES`
of request bodies held at once over all connections (a body that would pass it gets a 503
with ``Retry-After``). A malformed request or URL gets a 400.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import threading
from collections.abc import Callable
from urllib.parse import unquote

from sgrgym.core.errors import UserError
from sgrgym.core.version import __version__
from sgrgym.snapshot.replay import Response, Snapshot
from sgrgym.snapshot.urls import BadUrl, check_url, clip

REPLAY_PREFIX = "/replay/"
MAX_REQUEST_BODY = 64 * 1024 * 1024
MAX_HEAD = 64 * 1024
IDLE_TIMEOUT_S = 120.0
BODY_TIMEOUT_S = 30.0  # a request body must arrive in full within this time
MAX_INFLIGHT_BYTES = 128 * 1024 * 1024  # request bodies held at once, all connections
SERVER = f"sgrgym-replay/{__version__}"
_ABSOLUTE = re.compile(r"^https?://", re.IGNORECASE)
_ONE_SLASH = re.compile(r"^(https?):/(?!/)", re.IGNORECASE)  # some clients merge "//"
_QUOTED = re.compile(r"^https?%3A", re.IGNORECASE)  # a target sent percent-encoded whole
_OWN_HEADERS = {"content-length", "connection", "keep-alive", "transfer-encoding"}
_METHODS = ("GET", "HEAD", "POST")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    408: "Request Timeout",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class BadRequest(Exception):
    """The request cannot be understood; the connection is closed after the answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Request:
    """One parsed request: method, target, version and headers (names lower-cased)."""

    __slots__ = ("headers", "method", "target", "version")

    def __init__(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest(400, f"malformed request line {lines[0][:200]!r}")
        self.method, self.target, self.version = parts
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, sep, value = line.partition(":")
                if not sep:
                    raise BadRequest(400, f"malformed header line {line[:200]!r}")
                key, value = name.strip().lower(), value.strip()
                if key == "content-length" and self.headers.get(key, value) != value:
                    raise BadRequest(400, "conflicting Content-Length headers")  # RFC 9112 6.3
                self.headers[key] = value

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"

    def body_length(self) -> int:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            raise BadRequest(400, "chunked request bodies are not supported: send Content-Length")
        text = self.headers.get("content-length", "").strip() or "0"
        if not (text.isascii() and text.isdigit()):  # "²".isdigit() is True, int("²") fails
            raise BadRequest(400, f"invalid Content-Length {text[:40]!r}")
        if int(text) > MAX_REQUEST_BODY:
            raise BadRequest(413, f"request body larger than {MAX_REQUEST_BODY} bytes")
        return int(text)


def _latin1(text: str) -> str:
    """``text`` if it encodes as Latin-1 (what HTTP/1.1 heads carry), else its UTF-8 bytes."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8").decode("latin-1")
    return text


def _head(status: int, reason: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_latin1(reason) or _REASONS.get(status, 'Unknown')}"]
    lines += [f"{_latin1(name)}: {_latin1(value)}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def replay_target(path: str) -> str | None:
    """The archived URL a request asks for, or None when the path is in neither form."""
    if path.startswith(REPLAY_PREFIX):
        path = path[len(REPLAY_PREFIX) :]
        if _QUOTED.match(path):
            path = unquote(path)
        path = _ONE_SLASH.sub(r"\1://", path)
    return path if _ABSOLUTE.match(path) else None


class ReplayServer:
    """An HTTP server answering every request from one :class:`Snapshot`.

    The socket is bound (and listening) when the object is made, so ``server_address`` is
    known at once; :meth:`serve_forever` runs the event loop in the calling thread and
    :meth:`shutdown` (from another thread) stops it.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        host: str = "127.0.0.1",
        port: int = 0,
        log_requests: bool = False,
        body_timeout_s: float = BODY_TIMEOUT_S,
        max_inflight_bytes: int = MAX_INFLIGHT_BYTES,
    ) -> None:
        self.snapshot = snapshot
        self.log_requests = log_requests
        self.body_timeout_s = body_timeout_s
        self.max_inflight_bytes = max_inflight_bytes
        self.inflight_bytes = 0  # request bodies being read or answered (event loop only)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OverflowError:
            self.socket.close()
            raise UserError(f"cannot listen on port {port}: a port is 0 to 65535") from None
        except OSError as exc:
            self.socket.close()
            raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
        self.socket.listen(128)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._finished = threading.Event()

    @property
    def base_url(self) -> str:
        """``http://host:port/`` of the bound socket (IPv6 hosts in brackets)."""
        host, port = self.server_address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` is called (or the thread is interrupted)."""
        try:
            asyncio.run(self._main())
        finally:
            self._finished.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop :meth:`serve_forever` (call from another thread) and wait for it to end."""
        if not self._started.wait(timeout) or self._loop is None or self._stop is None:
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        self._finished.wait(timeout)

    def server_close(self) -> None:
        self.socket.close()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self.socket, limit=MAX_HEAD)
        self._started.set()
        async with server:
            await self._stop.wait()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to be closed."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_TIMEOUT_S)
        except asyncio.IncompleteReadError:
            return False
        except asyncio.LimitOverrunError:
            writer.write(self._text(431, f"request head over {MAX_HEAD} bytes\n", close=True))
            await writer.drain()
            return False
        try:
            request = Request(head)
            if request.method not in _METHODS:
                raise BadRequest(501, f"method {request.method} is not served (GET, HEAD, POST)")
            length = request.body_length()
        except BadRequest as exc:
            writer.write(self._text(exc.status, f"{exc}\n", close=True))
            await writer.drain()
            return False
        if length and self.inflight_bytes + length > self.max_inflight_bytes:
            busy = f"too many request bytes in flight (over {self.max_inflight_bytes}); retry\n"
            writer.write(self._text(503, busy, close=True, extra=[("Retry-After", "1")]))
            await writer.drain()
            return False
        self.inflight_bytes += length
        try:
            return await self._complete(reader, writer, request, length)
        finally:
            self.inflight_bytes -= length

    async def _complete(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: Request,
        length: int,
    ) -> bool:
        """Read the request's body (within the body timeout) and answer it."""
        if length and request.headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        body = None
        if length:
            try:
                body = await asyncio.wait_for(reader.readexactly(length), self.body_timeout_s)
            except asyncio.TimeoutError:
                late = f"request body not received within {self.body_timeout_s:g} s\n"
                writer.write(self._text(408, late, close=True))
                await writer.drain()
                return False
        keep = request.keep_alive
        try:
            answer = self._answer(request, body, keep)
        except Exception as exc:  # a bug, not the client's fault: say so, keep serving
            print(
                f"error answering {request.method} {clip(request.target)}: {exc!r}", file=sys.stderr
            )
            answer = self._text(500, f"internal error ({exc.__class__.__name__})\n", close=True)
            keep = False
        writer.write(answer)
        await writer.drain()
        if self.log_requests:
            print(f"{request.method} {request.target}", file=sys.stderr)
        return keep

    def _answer(self, request: Request, body: bytes | None, keep: bool) -> bytes:
        target = replay_target(request.target)
        if target is None:
            if request.target in ("/", "") and request.method != "POST":
                return self._text(200, self._help(request), keep_alive=keep, request=request)
            usage = self._usage(request, f"cannot replay {clip(request.target)}")
            return self._text(400, usage, keep_alive=keep, request=request)
        try:
            check_url(target)
        except BadUrl as exc:
            return self._text(400, self._usage(request, str(exc)), keep_alive=keep, request=request)
        try:
            response = self._fetch(target, request, body)
        except UserError as exc:  # a damaged record: say so, keep serving
            return self._text(
                500, f"cannot replay {clip(target)}: {exc}\n", keep_alive=keep, request=request
            )
        status, reason = response.status, response.reason
        if not 100 <= status <= 599:
            status, reason = 502, "Bad Archived Status"
        headers = [(k, v) for k, v in response.headers if k.lower() not in _OWN_HEADERS]
        headers += self._framing(len(response.body), keep, request)
        head = _head(status, reason, headers)
        return head if request.method == "HEAD" else head + response.body

    def _fetch(self, url: str, request: Request, body: bytes | None) -> Response:
        """The archived answer; a HEAD the pack did not record is answered from its GET."""
        content_type = request.headers.get("content-type", "")
        if request.method == "HEAD":
            response = self.snapshot.fetch(url, "HEAD", body, content_type)
            if response.match != "miss":
                return response
            return self.snapshot.fetch(url, "GET", body, content_type)
        return self.snapshot.fetch(url, request.method, body, content_type)

    @staticmethod
    def _framing(length: int, keep: bool, request: Request | None) -> list[tuple[str, str]]:
        headers = [("Content-Length", str(length))]
        if not keep:
            headers.append(("Connection", "close"))
        elif request is not None and request.version == "HTTP/1.0":
            headers.append(("Connection", "keep-alive"))  # it asked for keep-alive: confirm
        return headers

    def _text(
        self,
        status: int,
        text: str,
        keep_alive: bool = False,
        close: bool = False,
        request: Request | None = None,
        extra: list[tuple[str, str]] | None = None,
    ) -> bytes:
        data = text.encode("utf-8")
        headers = [("Server", SERVER), ("Content-Type", "text/plain; charset=utf-8")]
        headers += extra or []
        headers += self._framing(len(data), keep_alive and not close, request)
        head = _head(status, _REASONS.get(status, ""), headers)
        return head if request is not None and request.method == "HEAD" else head + data

    def _usage(self, request: Request, problem: str = "") -> str:
        origin = f"http://{request.headers.get('host') or self.base_url.split('/')[2]}"
        lines = [
            "Ask for an archived URL in one of two forms:",
            f"  {origin}/replay/<absolute-url>   e.g. {origin}/replay/http://site.example/a?x=1",
            "  a proxy-style request whose target is the absolute URL",
            "    (GET http://site.example/a?x=1 HTTP/1.1: use this server as the HTTP proxy)",
            "GET, HEAD and POST are answered; a POST is matched on its body and Content-Type.",
        ]
        return (f"{problem}\n\n" if problem else "") + "\n".join(lines) + "\n"

    def _help(self, request: Request) -> str:
        snapshot = self.snapshot
        return (
            "sgrgym snapshot replay server: answers only from the pack, never the network\n"
            f"pack: {snapshot.manifest.pack}\n"
            f"pin:  {snapshot.pin}\n"
            f"urls: {len(snapshot.urls())} archived\n\n"
            + self._usage(request)
            + "Answers carry X-Sgrgym-Snapshot: exact | rule | miss; a miss is a 404.\n"
        )


def make_server(snapshot: Snapshot, host: str = "127.0.0.1", port: int = 0) -> ReplayServer:
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
