"""The egress sandbox, agent CLI profiles, transcript parsing and the runner's bad input."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.sgr.cli_agents.egress import Egress, parse_host_port
from sgrgym.sgr.cli_agents.profiles import fill, load_profile
from sgrgym.sgr.cli_agents.transcripts import parse_events

PROBE = """
import socket, sys, urllib.request
def attempt(f):
    try:
        return str(f())
    except Exception as exc:
        return type(exc).__name__
allowed, named, other = (int(a) for a in sys.argv[1:4])
print(attempt(lambda: urllib.request.urlopen(f"http://127.0.0.1:{allowed}/", timeout=5).status))
print(attempt(lambda: urllib.request.urlopen(f"http://localhost:{named}/", timeout=5).status))
print(attempt(lambda: socket.create_connection(("127.0.0.1", other), timeout=3)))
print(attempt(lambda: socket.create_connection(("192.0.2.1", 80), timeout=3)))
print(attempt(lambda: socket.getaddrinfo("example.com", 443)))
"""


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[list[int]]:
    running = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet) for _ in range(3)]
    for server in running:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield [s.server_address[1] for s in running]
    for server in running:
        server.shutdown()
        server.server_close()


def test_only_the_allowed_endpoints_are_reachable(servers: list[int]) -> None:
    try:
        Egress.check()
    except UserError as exc:
        pytest.skip(f"no egress sandbox here: {exc}")
    allowed, named, other = servers
    with Egress([("127.0.0.1", allowed), ("localhost", named)]) as egress:
        argv = egress.wrap([sys.executable, "-c", PROBE, str(allowed), str(named), str(other)])
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == [
        "200",  # the allowed loopback endpoint, through the relays
        "200",  # an allowed name, mapped inside the namespace only
        "ConnectionRefusedError",  # another port of the host's loopback: not there
        "OSError",  # any other address: network unreachable
        "gaierror",  # no name resolves
    ]


def test_host_port_parsing() -> None:
    assert parse_host_port("API.example.com:443") == ("api.example.com", 443)
    assert parse_host_port("[::1]:8080") == ("::1", 8080)
    for bad in ("api.example.com", ":80", "h:0", "h:http"):
        with pytest.raises(UserError, match="HOST:PORT"):
            parse_host_port(bad)


def test_profiles_from_files_are_checked(tmp_path: Path) -> None:
    good, _ = load_profile("qwen-code")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({**good.model_dump(by_alias=True), "name": "mine"}))
    assert load_profile(str(path))[0].name == "mine"  # users add profiles without code
    path.write_text(json.dumps({**good.model_dump(by_alias=True), "argv": ["{nope}"]}))
    with pytest.raises(UserError, match=r"unknown placeholder \{nope\}"):
        load_profile(str(path))
    path.write_text(json.dumps({"name": "x"}))
    with pytest.raises(UserError, match=r"mine\.json: field about"):
        load_profile(str(path))
    with pytest.raises(UserError, match="no such agent CLI profile; profiles: claude-code"):
        load_profile("nosuch")
    assert fill(["a", "{mcp_args}", "{model}"], {"model": "m"}, ["-m", "x"]) == [
        "a",
        "-m",
        "x",
        "m",
    ]


def test_stream_json_and_codex_transcripts() -> None:
    stream = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Let me search."},
                    {
                        "type": "tool_use",
                        "id": "1",
                        "name": "mcp__sgrgym__search",
                        "input": {"query": "q"},
                    },
                    {
                        "type": "tool_use",
                        "id": "2",
                        "name": "run_shell_command",
                        "input": {"c": "ls"},
                    },
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "1",
                        "is_error": False,
                        "content": "hits",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "2",
                        "is_error": True,
                        "content": [{"type": "text", "text": "denied"}],
                    },
                ]
            },
        },
    ]
    lines = [(1.0, json.dumps(e)) for e in stream] + [(2.0, "a banner line"), (2.5, '{"torn')]
    transcript = parse_events(lines, "stream-json")
    assert transcript.final is None  # narration before tool calls is no answer
    assert [(c.tool, c.ours, c.is_error, c.result_chars) for c in transcript.calls] == [
        ("search", True, False, 4),
        ("run_shell_command", False, True, 6),
    ]
    done = parse_events(
        [*lines, (3.0, json.dumps({"type": "result", "result": "a|1"}))], "stream-json"
    )
    assert done.final == "a|1"
    codex = [
        {"type": "item.completed", "item": {"type": "agent_message", "text": "thinking"}},
        {
            "type": "item.completed",
            "item": {
                "type": "mcp_tool_call",
                "server": "sgrgym",
                "tool": "fetch",
                "arguments": {"url": "http://x.test/"},
                "status": "completed",
                "result": {"content": [{"type": "text", "text": "page"}]},
            },
        },
        {"type": "item.completed", "item": {"type": "agent_message", "text": "a|1"}},
    ]
    unfinished = parse_events([(None, json.dumps(e)) for e in codex], "codex-json")
    assert unfinished.final is None  # the turn never completed (a killed session)
    assert [(c.tool, c.ours, c.result_chars) for c in unfinished.calls] == [("fetch", True, 4)]
    finished = parse_events(
        [(None, json.dumps(e)) for e in [*codex, {"type": "turn.completed"}]], "codex-json"
    )
    assert finished.final == "a|1"
    with pytest.raises(UserError, match="transcript format 'x' is unknown"):
        parse_events([], "x")


def test_runner_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = str(tmp_path / "r")
    assert main(["sgr", "run", "--agent", "cli:nosuch", "--out", out]) == 2
    assert "no such agent CLI profile" in capsys.readouterr().err
    assert main(["sgr", "run", "--agent", "cli:qwen-code", "--out", out]) == 2
    assert "--base-url and --model" in capsys.readouterr().err
    common = ["sgr", "run", "--agent", "cli:qwen-code", "--out", out, "--model", "m"]
    assert main([*common, "--base-url", "ftp://x"]) == 2
    assert "give an http(s) URL" in capsys.readouterr().err
    assert (
        main(
            [
                *common,
                "--base-url",
                "http://127.0.0.1:1/v1",
                "--api-key-env",
                "SGRGYM_TEST_UNSET_KEY",
            ]
        )
        == 2
    )
    assert "empty or unset" in capsys.readouterr().err
    assert (
        main(
            [
                *common,
                "--base-url",
                "http://127.0.0.1:1/v1",
                "--cli-dir",
                str(tmp_path),
                "--no-egress-sandbox",
            ]
        )
        == 2
    )
    assert "CLI is not installed there; install it: npm install" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sgr", "run", "--agent", "robot", "--out", out])
    assert (
        "no SGR agent 'robot'; SGR agents: cli:NAME, default, explore, llm, oracle, random, "
        "search-only" in capsys.readouterr().err
    )


LEAVER = """
import os, signal, subprocess, sys, time
marker = sys.argv[1]
# what a session may leave: a setsid child, a child that ignores SIGTERM, a background child
subprocess.Popen(["setsid", "sleep", "300", marker])
subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)", marker])
subprocess.Popen(["sh", "-c", f"sleep 300 {marker} &"])
time.sleep(0.5)
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(len(pids), os.getppid() in pids, os.path.exists(f"/proc/{os.getppid()}/ns/net"))
"""


def test_a_session_sees_no_host_process_and_leaves_nothing_behind(tmp_path: Path) -> None:
    try:
        Egress.check()
    except UserError as exc:
        pytest.skip(f"no egress sandbox here: {exc}")
    marker = f"sgrgym-leftover-{tmp_path.name}"
    with Egress([]) as egress:
        argv = egress.wrap([sys.executable, "-c", LEAVER, marker])
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    seen, parent_seen, _ = result.stdout.split()
    assert int(seen) < 12  # the session's own few processes, not the host's
    assert parent_seen == "True"  # its parent is the namespace's first process, not a host one
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == "", f"processes outlived the session: {left.stdout}"
