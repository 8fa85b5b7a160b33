"""The replay server over real loopback sockets: a pack recorded from the demo site, the site
stopped, then every answer comes from the pack."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from site_server import serve_site

from sgrgym.snapshot.record import CrawlSpec, Recorder, RequestSpec
from sgrgym.snapshot.replay import Snapshot
from sgrgym.snapshot.serve import ReplayServer, make_server, serve_forever

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
PAGES = ["/", "/species/naja?_=1", "/species/boa?_=1", "/report.pdf", "/api/species?year=2024"]


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def request(
    conn: http.client.HTTPConnection,
    target: str,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request on ``conn`` (kept open for the next one), the reply read in full."""
    conn.request(method, target, body=body, headers=headers or {})
    answer = conn.getresponse()
    data = answer.read()
    return Reply(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)


def once(port: int, target: str, method: str = "GET", body: bytes | None = None) -> Reply:
    """One request on a fresh connection to 127.0.0.1:port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        return request(conn, target, method, body, FORM if body else None)
    finally:
        conn.close()


@dataclass(frozen=True)
class Recorded:
    base: str  # the demo site's base URL (no longer served)
    live: dict[str, bytes]  # path -> body the live site served
    search: bytes  # body of the live POST /search q=naja
    pack: Path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    pack = tmp_path_factory.mktemp("serve") / "demo"
    with serve_site() as base:
        port = int(base.rsplit(":", 1)[1])
        live = {path: once(port, path).body for path in PAGES}
        search = once(port, "/search", "POST", b"q=naja").body
        spec = CrawlSpec(
            seeds=[base + "/"],
            requests=[
                RequestSpec(url=base + "/search", method="POST", body="q=naja", headers=FORM),
                RequestSpec(url=base + "/api/species?year=2024"),
            ],
        )
        result = Recorder(pack, spec, fixed_date="2026-11-30T00:00:00Z").run()
        assert not result.failed
    return Recorded(base, live, search, pack)


@contextlib.contextmanager
def _running(httpd: ReplayServer) -> Iterator[ReplayServer]:
    """``httpd`` serving in a background thread until the block ends."""
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def server(recorded: Recorded) -> Iterator[ReplayServer]:
    with Snapshot.open(recorded.pack) as snapshot, _running(make_server(snapshot)) as httpd:
        yield httpd


def port_of(server: ReplayServer) -> int:
    return int(server.server_address[1])


def test_binds_loopback_ephemeral(server: ReplayServer) -> None:
    host = server.server_address[0]
    assert host == "127.0.0.1" and port_of(server) > 0


@pytest.mark.parametrize("path", PAGES)
def test_replay_form_is_byte_identical(recorded: Recorded, server: ReplayServer, path: str) -> None:
    reply = once(port_of(server), "/replay/" + recorded.base + path)
    assert reply.status == 200
    assert reply.body == recorded.live[path]
    assert reply.headers["x-sgrgym-snapshot"] == "exact"
    assert reply.headers["content-length"] == str(len(reply.body))


def test_proxy_form(recorded: Recorded, server: ReplayServer) -> None:
    reply = once(port_of(server), recorded.base + "/species/naja?_=1")
    assert reply.status == 200
    assert reply.body == recorded.live["/species/naja?_=1"]
    assert reply.headers["x-sgrgym-snapshot"] == "exact"


def test_rule_match_and_archived_redirect(recorded: Recorded, server: ReplayServer) -> None:
    # The cache-busting parameter is declared volatile: the canonical key still matches.
    reply = once(port_of(server), "/replay/" + recorded.base + "/species/naja?_=999")
    assert reply.status == 200 and reply.headers["x-sgrgym-snapshot"] == "rule"
    assert reply.body == recorded.live["/species/naja?_=1"]
    moved = once(port_of(server), "/replay/" + recorded.base + "/old")  # 301 -> /species/boa
    assert moved.status == 200 and b"Boa constrictor" in moved.body


def test_miss_is_404(recorded: Recorded, server: ReplayServer) -> None:
    reply = once(port_of(server), "/replay/" + recorded.base + "/never-recorded")
    assert reply.status == 404
    assert reply.headers["x-sgrgym-snapshot"] == "miss"
    assert reply.body.startswith(b"not in snapshot: GET ")


def test_post_replays_archived_search(recorded: Recorded, server: ReplayServer) -> None:
    target = "/replay/" + recorded.base + "/search"
    reply = once(port_of(server), target, "POST", b"q=naja")
    assert reply.status == 200 and reply.headers["x-sgrgym-snapshot"] == "exact"
    assert reply.body == recorded.search and b"Naja naja" in reply.body
    other = once(port_of(server), target, "POST", b"q=boa")
    assert other.status == 404 and other.headers["x-sgrgym-snapshot"] == "miss"


def test_expect_100_continue_is_answered_at_once(recorded: Recorded, server: ReplayServer) -> None:
    head = (
        f"POST /replay/{recorded.base}/search HTTP/1.1\r\nConnection: close\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=2) as sock:
        sock.sendall(head.encode())
        assert sock.recv(1024).startswith(b"HTTP/1.1 100")  # before the body is sent
        sock.sendall(b"q=naja")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(recorded.search)


def test_percent_encoded_target(recorded: Recorded, server: ReplayServer) -> None:
    target = "/replay/" + quote(recorded.base + "/species/boa?_=1", safe="")
    reply = once(port_of(server), target)
    assert reply.status == 200 and reply.body == recorded.live["/species/boa?_=1"]


def test_head_has_headers_without_body(recorded: Recorded, server: ReplayServer) -> None:
    reply = once(port_of(server), "/replay/" + recorded.base + "/report.pdf", "HEAD")
    assert reply.status == 200 and reply.body == b""
    assert reply.headers["content-length"] == str(len(recorded.live["/report.pdf"]))
    assert reply.headers["content-type"] == "application/pdf"


def test_help_and_bad_paths(recorded: Recorded, server: ReplayServer) -> None:
    with Snapshot.open(recorded.pack) as snapshot:
        pin = snapshot.pin
    home = once(port_of(server), "/")
    assert home.status == 200 and home.headers["content-type"].startswith("text/plain")
    assert b"pack: demo" in home.body and pin.encode() in home.body
    for target in ("/nothing", "/replay/", "/replay/ftp://x/"):
        bad = once(port_of(server), target)
        assert bad.status == 400, target
        assert b"/replay/<absolute-url>" in bad.body and b"proxy-style" in bad.body


def test_keep_alive_connection_serves_many(recorded: Recorded, server: ReplayServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10)
    try:
        for path in PAGES * 3:
            reply = request(conn, "/replay/" + recorded.base + path)
            assert reply.body == recorded.live[path]
            assert reply.headers.get("connection", "") != "close"
    finally:
        conn.close()


def test_concurrent_clients(recorded: Recorded, server: ReplayServer) -> None:
    """32 clients x 200 requests each on keep-alive connections: no error, every body right."""
    clients, per_client = 32, 200
    plan: list[tuple[str, str, bytes | None, int, bytes | None]] = [
        ("GET", "/replay/" + recorded.base + p, None, 200, recorded.live[p]) for p in PAGES
    ]
    plan.append(("GET", recorded.base + "/", None, 200, recorded.live["/"]))  # proxy form
    plan.append(("POST", "/replay/" + recorded.base + "/search", b"q=naja", 200, recorded.search))
    plan.append(("GET", "/replay/" + recorded.base + "/missing", None, 404, None))
    errors: list[str] = []
    done = [0] * clients

    def client(number: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=30)
        try:
            for i in range(per_client):
                method, target, body, status, expected = plan[(number + i) % len(plan)]
                reply = request(conn, target, method, body, FORM if body else None)
                if reply.status != status or (expected is not None and reply.body != expected):
                    errors.append(f"client {number} #{i}: {reply.status} for {method} {target}")
                done[number] += 1
        except Exception as exc:  # any failure is an error to report, not a crash
            errors.append(f"client {number}: {exc.__class__.__name__}: {exc}")
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(done) == clients * per_client


def test_serve_forever_announces_and_stops_on_interrupt(recorded: Recorded) -> None:
    messages: list[str] = []

    def ready(message: str) -> None:
        messages.append(message)
        raise KeyboardInterrupt  # as if Ctrl-C came right after start-up

    with Snapshot.open(recorded.pack) as snapshot:
        serve_forever(snapshot, "127.0.0.1", 0, ready=ready)
    assert len(messages) == 1
    assert messages[0].startswith("serving demo on http://127.0.0.1:")
    assert messages[0].endswith("/ (replay: /replay/<url>)")


def raw_exchange(port: int, data: bytes, wait_s: float = 10.0) -> bytes:
    """Send raw bytes on a fresh connection; return everything the server sends back."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "target",
    ["/replay/http://[::1/", "http://[::1/", "/replay/http://site.example:99999/", "http://a:b/"],
)
def test_malformed_urls_get_a_400(server: ReplayServer, target: str) -> None:
    answer = raw_exchange(
        port_of(server), f"GET {target} HTTP/1.1\r\nConnection: close\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    assert b"not a valid URL" in answer
    # ... and the server goes on serving.
    assert once(port_of(server), "/").status == 200


def test_echoed_targets_are_cut_short(server: ReplayServer) -> None:
    answer = raw_exchange(
        port_of(server), b"GET /" + b"z" * 60_000 + b" HTTP/1.1\r\nConnection: close\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 400 ") and len(answer) < 2_000


@pytest.fixture
def strict_server(recorded: Recorded) -> Iterator[ReplayServer]:
    """A server with a short body timeout and a small cap on bodies in flight."""
    with Snapshot.open(recorded.pack) as snapshot:
        strict = ReplayServer(snapshot, body_timeout_s=0.5, max_inflight_bytes=1000)
        with _running(strict) as httpd:
            yield httpd


def _post_head(recorded: Recorded, length: int) -> bytes:
    return (
        f"POST /replay/{recorded.base}/search HTTP/1.1\r\nConnection: close\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def test_a_stalled_body_times_out(recorded: Recorded, strict_server: ReplayServer) -> None:
    answer = raw_exchange(port_of(strict_server), _post_head(recorded, 100) + b"q=na")
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]


def test_bodies_in_flight_are_capped(recorded: Recorded, strict_server: ReplayServer) -> None:
    port = port_of(strict_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as held:
        held.sendall(_post_head(recorded, 800) + b"q=naja&")  # 800 bytes announced, 7 sent
        assert once(port, "/").status == 200  # the first head has been read by now
        refused = raw_exchange(port, _post_head(recorded, 800) + b"q" * 800)
        assert refused.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in refused
        held.sendall(b"x" * 793)
        answer = held.recv(65536)
    assert answer.startswith(b"HTTP/1.1 404 ")  # a body the pack does not hold: a miss
    # The held bytes were released: the same request is accepted now.
    accepted = raw_exchange(port, _post_head(recorded, 6) + b"q=naja")
    assert accepted.startswith(b"HTTP/1.1 200 ") and accepted.endswith(recorded.search)


@pytest.mark.parametrize(
    "lengths",
    [["\u00b2"], ["6", "7"]],  # a digit str.isdigit accepts and int refuses; two lengths
    ids=["superscript-two", "conflicting"],
)
def test_a_bad_content_length_is_400_and_the_server_stays_up(
    recorded: Recorded, server: ReplayServer, lengths: list[str]
) -> None:
    port = port_of(server)
    head = f"POST /replay/{recorded.base}/search HTTP/1.1\r\nConnection: close\r\n"
    head += "".join(f"Content-Length: {n}\r\n" for n in lengths) + "\r\n"
    answer = raw_exchange(port, head.encode("latin-1") + b"q=naja")  # ² is one byte, 0xb2
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    assert once(port, "/").status == 200
