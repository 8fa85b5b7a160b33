"""``sgrgym mcp``: a stdio MCP server over one SGR episode (official ``mcp`` SDK, low-level API).

The tools and their schemas come from the versioned tool file (:mod:`.tools`), not from Python
signatures, so what the agent is offered is exactly what the run card's sha256 names. Every
call goes through :class:`~sgrgym.sgr.env.SgrEnv` and is logged to the episode's live log as
it happens (:mod:`.episode`). The wall and stall budgets (appendix C) are also enforced here:
once one is spent every tool call is refused (the CLI runner stops the agent itself).
"""

from __future__ import annotations

import io
import json
import sys
import threading
from typing import IO, Any, cast

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from sgrgym.core.version import __version__
from sgrgym.sgr.env import SgrEnv

from .episode import LiveEpisode
from .tools import tool_specs

SERVER_NAME = "sgrgym"
INSTRUCTIONS = (
    "Tools of one SGR-Bench research task: search the web, fetch pages and PDF documents, and "
    "record your answer with submit_answer."
)


def build_server(live: LiveEpisode) -> Server[Any]:
    """An MCP server whose tools call ``live``'s episode."""
    specs = tool_specs(live.site_ops)
    tools = [
        types.Tool(name=s.name, description=s.description, input_schema=s.input_schema)
        for s in specs
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text, is_error = live.call(params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=is_error
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def budget_watch(env: SgrEnv, done: threading.Event) -> threading.Thread:
    """A thread that stops ``env``'s episode when its wall or stall budget is spent."""

    def watch() -> None:
        while not done.is_set():
            due = env.check_budget()
            if due is None:
                return
            done.wait(min(due, 1.0))

    thread = threading.Thread(target=watch, name="sgr-mcp-budget", daemon=True)
    thread.start()
    return thread


def _well_formed(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_well_formed(v) for v in value]
    if isinstance(value, dict):
        return {_well_formed(k): _well_formed(v) for k, v in value.items()}
    return value


def well_formed_line(line: str) -> str:
    """A JSON-RPC line whose strings hold lone surrogate escapes (``"\\ud800"``, which JSON
    allows and no Unicode text can hold) with each replaced by U+FFFD, as the SDK already does
    for bytes that are not UTF-8: the request is then answered instead of silently dropped.
    Any other line is passed on as it is."""
    if "\\u" not in line:
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line
    fixed = _well_formed(message)
    if fixed == message:
        return line
    return json.dumps(fixed, ensure_ascii=False) + "\n"


class _WellFormedLines:
    """The process's stdin as UTF-8 lines, each passed through :func:`well_formed_line`."""

    def __init__(self) -> None:
        self._inner = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")

    def readline(self) -> str:
        return well_formed_line(self._inner.readline())

    def close(self) -> None:
        self._inner.detach()  # the process's stdin stays open for whoever owns it


async def serve_stdio(server: Server[Any]) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    stdin = anyio.wrap_file(cast("IO[str]", _WellFormedLines()))  # readline and close suffice
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
