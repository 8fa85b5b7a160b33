"""Benchmark: replay from a 5,000-record pack, against raw warcio reads and pywb, in one run.

Builds the pack first: a throwaway site on 127.0.0.1 (stdlib ``http.server``) serves
2,500 deterministic documents (half ~2 KB HTML pages, half ~20 KB JSON documents), and the
sgrgym recorder captures them with a fixed WARC-Date (5,000 WARC records: request +
response). Then it measures, in the same run:

(a) library: :meth:`Snapshot.fetch` latency over random lookups against the floor of any
    WARC reader, "raw warcio at a known offset" (open the file, seek to the offset, read the
    first record of an ``ArchiveIterator``, read its content), interleaved on the same
    records; every pair of bodies is compared.
(b) HTTP: ``sgrgym snapshot serve`` (this package's replay server) against pywb 2.10's
    ``wayback`` serving the same WARC file (``/<coll>/<timestamp>id_/<url>``: identity
    mode, the archived bytes), both with a fresh TCP connection per request (keep-alive
    numbers would be distorted by Nagle's algorithm on pywb's side): p50/p95 latency and
    requests/s with one client, then requests/s with ``--clients`` concurrent clients.
    Rounds alternate between the servers; every body is compared to the site's.
(c) load: ``--load-clients`` clients (default 64) x ``--load-requests`` requests each
    (default 1,000) on keep-alive connections to ``sgrgym snapshot serve``; every status and
    body is checked, and errors (wrong answers, failed connections) are counted: 0 expected.

pywb is not a dependency of sgrgym: it is installed, if missing, into its own virtualenv
(``--pywb-venv``, default ``benchmarks/out/pywb-venv``) from
``benchmarks/requirements-pywb.txt``, and its collection is made with its own ``wb-manager``.
Every server binds 127.0.0.1. Prints a table (medians and ratios from this run) and, with
``--json FILE``, a JSON summary. Usage:
``python benchmarks/bench_snapshot_replay.py [--skip-pywb] [--pywb-venv DIR] [--json FILE]``
"""

from __future__ import annotations

# The recorder patches http.client for warcio; it must be imported before requests/urllib3.
from sgrgym.snapshot.record import CrawlSpec, Recorder, RequestSpec  # isort: skip

import argparse
import http.client
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler
from importlib.metadata import version
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from sgrgym.core.loopback import serve_http
from sgrgym.snapshot.pack import warc_files
from sgrgym.snapshot.replay import Snapshot

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-pywb.txt"
FIXED_DATE = "2026-11-30T00:00:00Z"
TIMESTAMP = "20261130000000"  # FIXED_DATE as pywb's 14-digit timestamp
COLLECTION = "bench"
WORDS = [
    "boa",
    "naja",
    "vipera",
    "python",
    "elapid",
    "colubrid",
    "venom",
    "scale",
    "habitat",
    "range",
    "survey",
    "census",
    "record",
    "specimen",
    "museum",
    "locality",
    "holotype",
    "synonym",
    "genus",
    "family",
    "order",
    "clade",
    "island",
    "river",
    "forest",
]


# ---------------------------------------------------------------------------- the site


def make_documents(pairs: int, seed: int) -> dict[str, tuple[str, bytes]]:
    """``pairs`` deterministic documents, path -> (Content-Type, body): HTML and JSON halves."""
    rng = random.Random(seed)
    docs: dict[str, tuple[str, bytes]] = {}
    for i in range(pairs):
        if i % 2 == 0:
            text = " ".join(rng.choice(WORDS) for _ in range(300))
            html = (
                f"<!doctype html><html><head><title>Page {i}</title></head><body>"
                f"<h1>Page {i}</h1><p>{text}</p></body></html>"
            )
            docs[f"/page/{i}"] = ("text/html; charset=utf-8", html.encode())
        else:
            rows = [
                {
                    "id": f"{i}-{j}",
                    "name": rng.choice(WORDS),
                    "count": rng.randint(0, 10**6),
                    "tags": rng.sample(WORDS, 3),
                }
                for j in range(205)
            ]
            docs[f"/data/{i}.json"] = ("application/json", json.dumps({"rows": rows}).encode())
    return docs


@contextmanager
def serve_documents(docs: dict[str, tuple[str, bytes]]) -> Iterator[str]:
    """Serve ``docs`` on an ephemeral loopback port (fixed Date/Server); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two sends: no 40 ms stalls

        def log_message(self, format: str, *args: object) -> None:
            pass

        def date_time_string(self, timestamp: float | None = None) -> str:
            return "Mon, 30 Nov 2026 00:00:00 GMT"

        def version_string(self) -> str:
            return "bench-site/1"

        def do_GET(self) -> None:
            ctype, body = docs.get(self.path, ("text/plain", b"not found"))
            self.send_response(200 if self.path in docs else 404)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_http(Handler) as base:
        yield base


def build_pack(pack_dir: Path, docs: dict[str, tuple[str, bytes]]) -> tuple[str, float]:
    """Record every document into ``pack_dir``; returns the site's base URL and seconds taken."""
    start = time.perf_counter()
    with serve_documents(docs) as base:
        spec = CrawlSpec(
            requests=[RequestSpec(url=base + path) for path in docs],
            follow_links=False,
            max_pages=len(docs),
        )
        result = Recorder(pack_dir, spec, fixed_date=FIXED_DATE).run()
    if result.failed or result.recorded != len(docs):
        raise SystemExit(f"recording failed: {result.recorded} recorded, {result.failed[:3]}")
    return base, time.perf_counter() - start


# ---------------------------------------------------------------------------- statistics


@dataclass
class Latency:
    n: int
    p50_ms: float
    p95_ms: float


def latency(seconds: list[float]) -> Latency:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return Latency(len(ordered), statistics.median(ordered) * 1000, p95 * 1000)


# ---------------------------------------------------------------------------- (a) library


def raw_warcio_read(path: str, offset: int) -> bytes:
    """The baseline: open, seek to a known offset, first record's content, as plain warcio."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream)))
        content: bytes = record.content_stream().read()
        return content


def bench_library(
    snapshot: Snapshot, urls: list[str], lookups: int, rng: random.Random
) -> dict[str, Any]:
    """Interleaved ``snapshot.fetch`` vs raw warcio reads of the same records."""
    warc = {p.name: str(p) for p in warc_files(snapshot.pack_dir)}
    located: dict[str, tuple[str, int]] = {}
    for url in urls:
        capture, _ = snapshot.lookup(url)
        assert capture is not None, url
        located[url] = (warc[Path(capture.warc_file).name], capture.offset)
    sample = [rng.choice(urls) for _ in range(lookups)]
    for url in sample[:200]:  # warm-up: page cache, code paths
        snapshot.fetch(url)
        raw_warcio_read(*located[url])
    ours: list[float] = []
    raw: list[float] = []
    for i, url in enumerate(sample):
        path, offset = located[url]
        bodies: dict[str, bytes] = {}
        for which in ("ours", "raw") if i % 2 == 0 else ("raw", "ours"):
            start = time.perf_counter()
            if which == "ours":
                bodies[which] = snapshot.fetch(url).body
                ours.append(time.perf_counter() - start)
            else:
                bodies[which] = raw_warcio_read(path, offset)
                raw.append(time.perf_counter() - start)
        if bodies["ours"] != bodies["raw"]:
            raise SystemExit(f"library: bodies differ for {url}")
    ours_lat, raw_lat = latency(ours), latency(raw)
    return {
        "lookups": lookups,
        "ours": asdict(ours_lat),
        "raw_warcio": asdict(raw_lat),
        "ratio_ours_over_raw_p50": ours_lat.p50_ms / raw_lat.p50_ms,
    }


# ---------------------------------------------------------------------------- (b) HTTP


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_once(port: int, target: str) -> tuple[int, bytes]:
    """One GET on a fresh connection (``Connection: close``), the body read in full."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", target, headers={"Connection": "close"})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def get_once_raw(port: int, target: str) -> tuple[int, bytes]:
    """The same request as :func:`get_once` over a bare socket: the client's own cost (parsing
    with http.client) stays out of the measured server time. Both servers get this client."""
    request = (
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            body = body[: int(value)]
    return status, body


CLIENTS: dict[str, Callable[[int, str], tuple[int, bytes]]] = {
    "raw": get_once_raw,
    "http.client": get_once,
}


def wait_until_up(port: int, target: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode}); see {log}")
        try:
            if get_once(port, target)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server on port {port} did not answer {target} in 120 s; see {log}")


@dataclass
class Server:
    name: str
    port: int
    target: Callable[[str], str]  # archived URL -> request target
    proc: subprocess.Popen[bytes]


@contextmanager
def running(
    name: str, argv: list[str], cwd: Path, log: Path, target: Callable[[str], str], probe: str
) -> Iterator[Server]:
    """Start a server process bound to loopback; terminate it on the way out."""
    port = free_port()
    argv = [a.replace("{port}", str(port)) for a in argv]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_up(port, target(probe), proc, log)
        yield Server(name, port, target, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def timed_requests(
    server: Server,
    urls: list[str],
    expected: dict[str, bytes],
    clients: int,
    client: str = "raw",
) -> tuple[list[float], float, int]:
    """Request ``urls`` with ``clients`` threads; (latencies, wall seconds, errors)."""
    get = CLIENTS[client]
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def work(part: list[str]) -> None:
        mine: list[float] = []
        bad = 0
        for url in part:
            start = time.perf_counter()
            try:
                status, body = get(server.port, server.target(url))
            except OSError:
                status, body = 0, b""
            mine.append(time.perf_counter() - start)
            bad += status != 200 or body != expected[url]
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    parts = [urls[i::clients] for i in range(clients)]
    threads = [threading.Thread(target=work, args=(p,)) for p in parts]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, time.perf_counter() - start, errors[0]


def bench_http(
    servers: list[Server], urls: list[str], expected: dict[str, bytes], args: argparse.Namespace
) -> dict[str, Any]:
    """Alternating rounds over every server: one client (latency), then ``--clients``."""
    rng = random.Random(args.seed + 1)
    sample = [rng.choice(urls) for _ in range(args.http_requests)]
    rounds = max(1, args.rounds)
    chunk = -(-len(sample) // rounds)
    stats: dict[str, dict[str, Any]] = {
        s.name: {"lat": [], "wall": 0.0, "cwall": 0.0, "errors": 0} for s in servers
    }
    for server in servers:  # warm-up
        timed_requests(server, sample[:100], expected, 1, args.client)
    for r in range(rounds):
        part = sample[r * chunk : (r + 1) * chunk]
        for server in servers if r % 2 == 0 else servers[::-1]:
            lat, wall, errors = timed_requests(server, part, expected, 1, args.client)
            _, cwall, cerrors = timed_requests(server, part, expected, args.clients, args.client)
            entry = stats[server.name]
            entry["lat"] += lat
            entry["wall"] += wall
            entry["cwall"] += cwall
            entry["errors"] += errors + cerrors
    result: dict[str, Any] = {
        "requests_per_server": 2 * len(sample),
        "clients": args.clients,
        "client": args.client,
    }
    for name, entry in stats.items():
        result[name] = {
            **asdict(latency(entry["lat"])),
            "rps_1_client": len(sample) / entry["wall"],
            f"rps_{args.clients}_clients": len(sample) / entry["cwall"],
            "errors": entry["errors"],
        }
    if "pywb" in result:
        ours, pywb = result["sgrgym"], result["pywb"]
        result["ratio_pywb_over_ours_p50"] = pywb["p50_ms"] / ours["p50_ms"]
        result["ratio_ours_over_pywb_rps_1_client"] = ours["rps_1_client"] / pywb["rps_1_client"]
        key = f"rps_{args.clients}_clients"
        result[f"ratio_ours_over_pywb_{key}"] = ours[key] / pywb[key]
    return result


def load_test(
    server: Server,
    urls: list[str],
    expected: dict[str, bytes],
    clients: int,
    requests: int,
    seed: int,
) -> dict[str, Any]:
    """``clients`` threads x ``requests`` keep-alive GETs each: errors and requests/s."""
    errors = [0] * clients
    done = [0] * clients

    def work(number: int) -> None:
        rng = random.Random(seed + number)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            for _ in range(requests):
                url = rng.choice(urls)
                try:
                    conn.request("GET", server.target(url))
                    answer = conn.getresponse()
                    body = answer.read()
                    errors[number] += answer.status != 200 or body != expected[url]
                except (OSError, http.client.HTTPException):
                    errors[number] += 1
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
                done[number] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    total = sum(done)
    return {
        "clients": clients,
        "requests_per_client": requests,
        "requests": total,
        "errors": sum(errors),
        "wall_s": wall,
        "rps": total / wall,
    }


def ensure_pywb(venv: Path) -> Path:
    """The ``bin`` folder of a virtualenv holding pywb, made from REQUIREMENTS if missing."""
    bin_dir = venv / "bin"
    if not (bin_dir / "wayback").exists():
        print(f"installing pywb into {venv} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    return bin_dir


def pywb_collection(bin_dir: Path, root: Path, warc: Path) -> None:
    """``wb-manager init`` + ``wb-manager add`` of the pack's WARC under ``root``."""
    manager = str(bin_dir / "wb-manager")
    subprocess.run([manager, "init", COLLECTION], cwd=root, check=True, capture_output=True)
    subprocess.run(
        [manager, "add", COLLECTION, str(warc)], cwd=root, check=True, capture_output=True
    )


# ---------------------------------------------------------------------------- report


def print_table(summary: dict[str, Any]) -> None:
    lib = summary["library"]
    print(
        f"pack: {summary['records']} WARC records ({summary['documents']} documents), "
        f"{summary['warc_bytes'] / 1e6:.1f} MB WARC, recorded in {summary['record_s']:.1f} s"
    )
    print(f"\n(a) library, {lib['lookups']} random lookups        p50 ms    p95 ms")
    print(
        f"  Snapshot.fetch                       {lib['ours']['p50_ms']:8.3f}  "
        f"{lib['ours']['p95_ms']:8.3f}"
    )
    print(
        f"  raw warcio read at known offset      {lib['raw_warcio']['p50_ms']:8.3f}  "
        f"{lib['raw_warcio']['p95_ms']:8.3f}"
    )
    print(
        f"  ratio ours/raw (p50): {lib['ratio_ours_over_raw_p50']:.2f}x   (goal: ours p50 <= 1 ms)"
    )
    web = summary["http"]
    clients = web["clients"]
    print(f"\n(client for both servers: {web['client']})")
    print(
        f"\n(b) HTTP, new connection per request    p50 ms    p95 ms   req/s 1c  "
        f"req/s {clients}c  errors"
    )
    for name in ("sgrgym", "pywb"):
        if name in web:
            row = web[name]
            print(
                f"  {name:<36} {row['p50_ms']:8.3f}  {row['p95_ms']:8.3f}  "
                f"{row['rps_1_client']:8.0f}  {row[f'rps_{clients}_clients']:8.0f}  "
                f"{row['errors']:6d}"
            )
    if "ratio_pywb_over_ours_p50" in web:
        print(
            f"  ratio pywb/ours (p50 latency): {web['ratio_pywb_over_ours_p50']:.1f}x   "
            "(goal: >= 10x)"
        )
        print(
            f"  ratio ours/pywb (req/s, 1 client): "
            f"{web['ratio_ours_over_pywb_rps_1_client']:.1f}x; "
            f"({clients} clients): {web[f'ratio_ours_over_pywb_rps_{clients}_clients']:.1f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=2500, help="request/response pairs")
    parser.add_argument("--lookups", type=int, default=5000, help="library lookups")
    parser.add_argument("--http-requests", type=int, default=2000, help="per server and mode")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (req/s)")
    parser.add_argument(
        "--client",
        choices=sorted(CLIENTS),
        default="raw",
        help="HTTP client used for both servers: a bare socket (default) or http.client",
    )
    parser.add_argument("--rounds", type=int, default=4, help="alternating HTTP rounds")
    parser.add_argument("--load-clients", type=int, default=64, help="load test (0: skip)")
    parser.add_argument("--load-requests", type=int, default=1000, help="per load client")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--pywb-venv", type=Path, default=HERE / "out" / "pywb-venv")
    parser.add_argument("--skip-pywb", action="store_true", help="HTTP: sgrgym only")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write a JSON summary")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()

    bin_dir = None if args.skip_pywb else ensure_pywb(args.pywb_venv.resolve())
    work = Path(tempfile.mkdtemp(prefix="sgrgym-bench-replay-"))
    try:
        docs = make_documents(args.documents, args.seed)
        pack_dir = work / "bench"
        base, record_s = build_pack(pack_dir, docs)
        expected = {base + path: body for path, (_, body) in docs.items()}
        urls = sorted(expected)
        (warc,) = warc_files(pack_dir)
        with Snapshot.open(pack_dir) as snapshot:
            records = snapshot.manifest.record_count
            library = bench_library(snapshot, urls, args.lookups, random.Random(args.seed))

        ours_argv = [
            sys.executable,
            "-m",
            "sgrgym",
            "snapshot",
            "serve",
            str(pack_dir),
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
        ]
        servers: list[Server] = []
        with running(
            "sgrgym", ours_argv, work, work / "sgrgym.log", lambda url: "/replay/" + url, urls[0]
        ) as ours:
            servers.append(ours)
            if bin_dir is None:
                web = bench_http(servers, urls, expected, args)
            else:
                root = work / "pywb"
                root.mkdir()
                pywb_collection(bin_dir, root, warc)
                pywb_argv = [str(bin_dir / "wayback"), "-b", "127.0.0.1", "-p", "{port}"]
                with running(
                    "pywb",
                    pywb_argv,
                    root,
                    work / "pywb.log",
                    lambda url: f"/{COLLECTION}/{TIMESTAMP}id_/{url}",
                    urls[0],
                ) as pywb:
                    servers.append(pywb)
                    web = bench_http(servers, urls, expected, args)
            load = None
            if args.load_clients > 0:
                load = load_test(
                    ours, urls, expected, args.load_clients, args.load_requests, args.seed
                )
        summary: dict[str, Any] = {
            "documents": len(docs),
            "records": records,
            "warc_bytes": warc.stat().st_size,
            "record_s": record_s,
            "library": library,
            "http": web,
            "load": load,
            "environment": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "warcio": version("warcio"),
                "pywb": None if bin_dir is None else "2.10.0 (" + REQUIREMENTS.name + ")",
            },
        }
        print_table(summary)
        if load is not None:
            print(
                f"\n(c) load: {load['clients']} keep-alive clients x "
                f"{load['requests_per_client']} requests: {load['requests']} answered, "
                f"{load['errors']} errors, {load['rps']:.0f} req/s"
            )
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        if args.keep:
            print(f"work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
