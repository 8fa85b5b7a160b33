"""``sgrgym mcp``: the MCP server over one episode, in-process and over stdio (SDK client)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sgr_helpers import write_jsonl
from toy_site import SOUTH_TWO_PAGES, TREES_BY_HEIGHT, ToySite

from sgrgym.cli import main
from sgrgym.runs.folder import open_run_folder
from sgrgym.sgr.cli_agents.episode import STEPS, LiveEpisode, read_live, trajectory_of
from sgrgym.sgr.cli_agents.server import build_server
from sgrgym.sgr.cli_agents.tools import tool_specs, tools_sha256, tools_text
from sgrgym.sgr.env import Budget, SgrEnv
from sgrgym.sgr.sites.build import build_pack
from sgrgym.sgr.sites.model import site_models
from sgrgym.sgr.tasks import load_tasks
from sgrgym.snapshot.replay import Snapshot

TREES = "http://toy.sgrgym.test/plants?kind=tree&order=desc&sort=height"


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(pack folder, task file) of the toy site."""
    root = tmp_path_factory.mktemp("toy-mcp")
    task_file = write_jsonl(root / "constraint.jsonl", [TREES_BY_HEIGHT, SOUTH_TWO_PAGES])
    result = build_pack(root / "packs" / "toy", [ToySite()], load_tasks([task_file]), True)
    return result.pack_dir, task_file


def _texts(result: Any) -> str:
    return "".join(part.text for part in result.content)


def test_in_process_tools_go_through_the_env_and_are_logged_live(
    toy: tuple[Path, Path], tmp_path: Path
) -> None:
    pack, task_file = toy
    task = load_tasks([task_file])[0]
    snapshot = Snapshot.open(pack)
    env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), Budget())
    out = tmp_path / "episode"
    with snapshot, open_run_folder(out, Budget(), finals=()) as folder:
        live = LiveEpisode(env, task, folder)
        live.start()

        async def session() -> dict[str, Any]:
            async with Client(build_server(live)) as client:
                listed = await client.list_tools()
                seen: dict[str, Any] = {"tools": listed.tools}
                seen["search"] = await client.call_tool("search", {"query": "plant register"})
                seen["fetch"] = await client.call_tool("fetch", {"url": TREES})
                assert len(read_live(out).steps) == 2  # written as calls happen
                seen["bad"] = await client.call_tool("fetch", {"address": TREES})
                seen["huge"] = await client.call_tool("submit_answer", {"answer": "x" * 10**7})
                seen["ipv6"] = await client.call_tool("fetch", {"url": "http://[::1"})
                seen["submit"] = await client.call_tool(
                    "submit_answer", {"answer": "cedar|tree|40\nbirch|tree|25"}
                )
                return seen

        seen = anyio.run(session)
        episode = live.finish()
    specs = {s.name: s for s in tool_specs()}
    assert [t.name for t in seen["tools"]] == ["search", "fetch", "pdf", "submit_answer"]
    for tool in seen["tools"]:  # exactly the versioned file's schemas and descriptions
        assert tool.input_schema == specs[tool.name].input_schema
        assert tool.description == specs[tool.name].description
    assert "http://toy.sgrgym.test/" in _texts(seen["search"])
    assert _texts(seen["fetch"]).startswith(f"{TREES}\nHTTP status 200\n\n")
    assert "cedar" in _texts(seen["fetch"])
    assert seen["bad"].is_error and "unknown argument" in _texts(seen["bad"])
    assert seen["huge"].is_error and "'answer' is 10,000,000 characters" in _texts(seen["huge"])
    assert (out / STEPS).stat().st_size < 100_000  # the refused argument is not logged
    assert "not a valid URL" in _texts(seen["ipv6"])  # a tool error, logged like any step
    log = read_live(out)
    assert log.answer == "cedar|tree|40\nbirch|tree|25" and log.submitted_answers == 1
    assert log.tool_calls == 4  # the rejected calls never reached the env
    assert trajectory_of(log) == episode.trajectory  # the live log is the env's trajectory
    assert [s.tool for s in episode.trajectory] == ["search", "fetch", "fetch", "submit_answer"]
    assert episode.answer_from == "submitted" and episode.ended_by == "session closed"
    # The same calls made directly on the env (what a built-in agent does) give the same steps.
    again = SgrEnv(Snapshot.open(pack), env.sites, Budget())
    again.reset(task, "toy.sgrgym.test")
    again.search("plant register")
    again.fetch(TREES)
    again.fetch("http://[::1")
    again.submit_answer("cedar|tree|40\nbirch|tree|25")
    assert again.finish(None).trajectory == episode.trajectory


def test_site_ops_add_the_operate_tool(toy: tuple[Path, Path], tmp_path: Path) -> None:
    pack, task_file = toy
    task = load_tasks([task_file])[0]
    snapshot = Snapshot.open(pack)
    env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), Budget())
    with snapshot, open_run_folder(tmp_path / "ops", Budget(), finals=()) as folder:
        live = LiveEpisode(env, task, folder, site_ops=True)
        live.start()

        async def session() -> tuple[list[str], str, str]:
            async with Client(build_server(live)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                await client.call_tool("fetch", {"url": "http://toy.sgrgym.test/"})
                view = await client.call_tool(
                    "operate", {"site": "toy.sgrgym.test", "op": "select_view", "value": "/plants"}
                )
                bad = await client.call_tool("operate", {"site": "toy", "op": "fly"})
                return names, _texts(view), _texts(bad)

        names, view, bad = anyio.run(session)
    assert names == ["search", "fetch", "pdf", "operate", "submit_answer"]
    assert view.startswith("http://toy.sgrgym.test/plants\nHTTP status 200")
    assert bad.startswith("operate:")


def test_stdio_server_writes_a_scored_run_folder(
    toy: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack, task_file = toy
    out = tmp_path / "run"
    argv = [
        "-m",
        "sgrgym",
        "mcp",
        "--task",
        "toy_001",
        "--out",
        str(out),
        "--pack",
        str(pack),
        "--tasks",
        str(task_file),
    ]

    async def session() -> list[str]:
        params = StdioServerParameters(command=sys.executable, args=argv)
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("fetch", {"url": TREES})
            await client.call_tool("fetch", {"url": TREES + "&page=2"})
            await client.call_tool(
                "submit_answer", {"answer": "cedar|tree|40\nbirch|tree|25\nalder|tree|20"}
            )
            return names

    assert anyio.run(session) == ["search", "fetch", "pdf", "submit_answer"]
    card = json.loads((out / "run.json").read_text())
    assert card["agent"] == "mcp" and card["task_id"] == "toy_001"
    assert card["tools_sha256"] == tools_sha256() and card["tools_file"] == "tools.v2.json"
    assert json.loads(tools_text())["version"] == 2
    record = json.loads((out / "trajectories.jsonl").read_text())
    assert record["ended_by"] == "session closed" and record["answer_from"] == "submitted"
    assert record["diagnostics"]["category"] == "solved"
    assert [s["tool"] for s in record["steps"]] == ["fetch", "fetch", "submit_answer"]
    assert len((out / STEPS).read_text().splitlines()) == 3
    scores = json.loads((out / "scores.json").read_text())
    assert scores["tasks"][0]["item_f1"] == 1.0
    assert (out / "complete.json").is_file()
    assert main(["sgr", "audit", str(out)]) == 0
    assert "mcp" in capsys.readouterr().out
    # One session per episode: the folder refuses a second one, and loses nothing doing so.
    finished = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".lock"}
    assert (
        main(
            [
                "mcp",
                "--task",
                "toy_001",
                "--out",
                str(out),
                "--pack",
                str(pack),
                "--tasks",
                str(task_file),
            ]
        )
        == 2
    )
    assert "already over" in capsys.readouterr().err
    assert {
        p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".lock"
    } == finished


def test_unknown_task_and_prompt(
    toy: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pack, task_file = toy
    common = ["--pack", str(pack), "--tasks", str(task_file)]
    assert main(["mcp", "--task", "nope", "--out", "x", *common]) == 2
    assert "no such task" in capsys.readouterr().err
    assert main(["mcp", "--task", "toy_002", "--print-prompt", *common]) == 0
    prompt = capsys.readouterr().out
    assert "List the plants asked for in toy_002." in prompt
    assert "submit_answer(answer)" in prompt and "operate(" not in prompt
    assert "toy.sgrgym.test" not in prompt  # no start URL (appendix C)


def test_sigterm_still_scores_the_episode(toy: tuple[Path, Path], tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    pack, task_file = toy
    out = tmp_path / "killed"
    argv = [
        sys.executable,
        "-m",
        "sgrgym",
        "mcp",
        "--task",
        "toy_001",
        "--out",
        str(out),
        "--pack",
        str(pack),
        "--tasks",
        str(task_file),
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (out / "steps.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # the episode has started (its live log is open)
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    record = json.loads((out / "trajectories.jsonl").read_text())
    assert record["ended_by"] == "session closed" and record["answer_from"] == "none"
    assert record["diagnostics"]["category"] == "site never reached"
    assert (out / "complete.json").is_file()


def test_a_request_with_lone_surrogates_is_answered(toy: tuple[Path, Path], tmp_path: Path) -> None:
    """JSON allows "\\ud800" and no text can hold it: the SDK's reader drops such a line without
    an answer; the server's stdin replaces each lone surrogate with U+FFFD (as the SDK does
    for bytes that are not UTF-8), so the request is answered."""
    import select
    import subprocess

    from sgrgym.sgr.cli_agents.server import well_formed_line

    assert (
        well_formed_line('{"a": "x\\ud800y", "b": "\\ud83d\\ude00"}\n')
        == '{"a": "x\ufffdy", "b": "😀"}\n'
    )
    assert well_formed_line('{"a": "\\u00e9"}\n') == '{"a": "\\u00e9"}\n'  # nothing to replace
    assert well_formed_line("not json \\ud800\n") == "not json \\ud800\n"
    pack, task_file = toy
    argv = ["mcp", "--task", "toy_001", "--out", str(tmp_path / "run"), "--pack", str(pack)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgrgym", *argv, "--tasks", str(task_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def exchange(line: str) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line.encode("utf-8") + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, f"no answer to {line[:80]}"
        answer: dict[str, Any] = json.loads(proc.stdout.readline())
        return answer

    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    assert (
        exchange(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))[
            "id"
        ]
        == 1
    )
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    search = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", '
    answer = exchange(search + '"arguments": {"query": "plant\\ud800 register"}}}')
    assert answer["id"] == 2 and "result" in answer
    proc.stdin.close()
    assert proc.wait(60) == 0
