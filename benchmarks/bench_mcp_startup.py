"""Benchmark: how long an agent CLI waits for ``sgrgym mcp``, and ``sgr run``'s set-up.

1. A real MCP client (the ``mcp`` SDK's ``stdio_client`` and ``ClientSession``) spawns
   (a) ``python -m sgrgym mcp --task ID --out DIR`` (as the CLI runner does) and (b) a bare
   MCP SDK stdio server (low-level ``mcp.server.Server``, written to a temporary file here)
   with one ``fetch`` tool answering the very text the sgrgym server answered for the same
   URL; each is timed from the spawn through ``initialize`` to the first ``fetch`` result.
   Rounds alternate (a) and (b) after one warm-up of each. Goal: median (a) <= 1.5x median (b).
   Also printed: the best round of each, and the server's CPU seconds by its first result
   (Linux), which a busy machine disturbs less than wall times.
2. ``sgr run`` set-up: ``open_world()`` on the demo pack and tasks in a fresh interpreter,
   after importing every module it imports (listed by a first interpreter), so that the time
   is the set-up beyond imports. Goal: <= 1 s.

Needs the demo pack (``sgrgym sgr build-packs``) and the ``mcp`` extra. Run from the checkout.
Usage: ``python benchmarks/bench_mcp_startup.py [--task diseases_001] [--url URL]
[--rounds 7] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent

BARE_SERVER = '''\
"""A bare MCP SDK stdio server: one fetch tool answering a fixed text."""

import json
import sys

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

with open(sys.argv[1], encoding="utf-8") as f:
    TEXT = json.load(f)["text"]
TOOL = types.Tool(
    name="fetch",
    description="Fetch a URL.",
    input_schema={"type": "object", "properties": {"url": {"type": "string"}}},
)


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])


async def call(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=TEXT)])


async def main():
    server = Server("bare", on_list_tools=list_tools, on_call_tool=call)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
'''


def server_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's children (Linux; else 0):
    the server being measured, on a machine too busy for wall times to say much alone."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid():  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def first_fetch(params: StdioServerParameters, url: str) -> tuple[float, float, float, str]:
    """(seconds to initialized, seconds to the first fetch result, the server's CPU seconds
    by then, the result's text) of a server."""
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter() - start
        result = await session.call_tool("fetch", {"url": url})
        fetched = time.perf_counter() - start
        cpu = server_cpu_s()
        text = "".join(getattr(part, "text", "") for part in result.content)
    return initialized, fetched, cpu, text


SETUP_PROBE = """\
import importlib, json, sys, time
names = json.loads(sys.argv[1])
start = time.perf_counter()
for name in names:
    try:
        importlib.import_module(name)
    except Exception:
        pass
imported = time.perf_counter()
from sgrgym.sgr.make import open_world
open_world()
done = time.perf_counter()
print(json.dumps({"imports_s": imported - start, "open_world_s": done - imported}))
"""

MODULES_PROBE = """\
import json, sys, time
before = set(sys.modules)
start = time.perf_counter()
from sgrgym.sgr.make import open_world
open_world()
done = time.perf_counter()
print(json.dumps({"total_s": done - start, "modules": [m for m in sys.modules if m not in before]}))
"""


def setup_times(rounds: int) -> dict[str, Any]:
    """``open_world()`` in fresh interpreters: with its imports, and beyond them."""

    def probe(code: str, *args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-c", code, *args], cwd=ROOT, check=True, capture_output=True
        )
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    totals, imports, setups = [], [], []
    modules: list[str] = []
    for _ in range(rounds):
        first = probe(MODULES_PROBE)
        totals.append(first["total_s"])
        modules = first["modules"]
        second = probe(SETUP_PROBE, json.dumps(modules))
        imports.append(second["imports_s"])
        setups.append(second["open_world_s"])
    return {
        "open_world_with_imports_s": statistics.median(totals),
        "imports_s": statistics.median(imports),
        "setup_beyond_imports_s": statistics.median(setups),
        "modules_imported": len(modules),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="diseases_001", help="a demo task id")
    parser.add_argument(
        "--url", help="the URL of the first fetch (default: the task's site's start page)"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args()
    url = args.url or f"http://{args.task.rsplit('_', 1)[0]}.sgrgym.test/"

    result: dict[str, Any] = {"task": args.task, "url": url, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        runs = 0

        def sgrgym_server() -> StdioServerParameters:
            nonlocal runs
            runs += 1
            out = tmp / f"run-{runs}"
            argv = ["-m", "sgrgym", "mcp", "--task", args.task, "--out", str(out)]
            return StdioServerParameters(command=sys.executable, args=argv, cwd=ROOT)

        *_, text = anyio.run(first_fetch, sgrgym_server(), url)  # warm-up, and the text
        if text.split("\n", 2)[1:2] != ["HTTP status 200"]:
            print(f"the first fetch of {url} did not answer a page:\n{text[:500]}")
            return 1
        (tmp / "answer.json").write_text(json.dumps({"text": text}), encoding="utf-8")
        (tmp / "bare_server.py").write_text(BARE_SERVER, encoding="utf-8")
        bare = StdioServerParameters(
            command=sys.executable, args=[str(tmp / "bare_server.py"), str(tmp / "answer.json")]
        )
        *_, bare_text = anyio.run(first_fetch, bare, url)  # warm-up
        assert bare_text == text
        ours: list[tuple[float, float, float]] = []
        theirs: list[tuple[float, float, float]] = []
        for _ in range(args.rounds):
            initialized, fetched, cpu, again = anyio.run(first_fetch, sgrgym_server(), url)
            assert again == text
            ours.append((initialized, fetched, cpu))
            initialized, fetched, cpu, _ = anyio.run(first_fetch, bare, url)
            theirs.append((initialized, fetched, cpu))

    for name, rounds in (("sgrgym_mcp", ours), ("bare_sdk", theirs)):
        result[name] = {
            "initialize_s": statistics.median(r[0] for r in rounds),
            "first_fetch_s": statistics.median(r[1] for r in rounds),
            "first_fetch_best_s": min(r[1] for r in rounds),
            "server_cpu_s": statistics.median(r[2] for r in rounds),
        }
    ratio = result["sgrgym_mcp"]["first_fetch_s"] / result["bare_sdk"]["first_fetch_s"]
    result["ratio"] = ratio
    result["text_chars"] = len(text)
    result["setup"] = setup_times(max(1, min(args.rounds, 5)))

    print(
        f"MCP spawn -> initialize -> first fetch of {url} ({len(text):,} characters), "
        f"median of {args.rounds} interleaved rounds:"
    )
    for label, key in (("sgrgym mcp", "sgrgym_mcp"), ("bare MCP SDK server", "bare_sdk")):
        times = result[key]
        print(
            f"  {label:20} initialize {times['initialize_s']:.2f} s, "
            f"first fetch result {times['first_fetch_s']:.2f} s "
            f"(best {times['first_fetch_best_s']:.2f} s), server CPU {times['server_cpu_s']:.2f} s"
        )
    best = result["sgrgym_mcp"]["first_fetch_best_s"] / result["bare_sdk"]["first_fetch_best_s"]
    result["ratio_best"] = best
    print(f"  ratio of medians {ratio:.2f}x (goal <= 1.5x); of the best rounds {best:.2f}x")
    setup = result["setup"]
    print(
        f"sgr run set-up: open_world() {setup['open_world_with_imports_s']:.2f} s with its "
        f"imports ({setup['modules_imported']} modules, {setup['imports_s']:.2f} s), "
        f"{setup['setup_beyond_imports_s']:.2f} s beyond them (goal <= 1 s)"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
