"""``sgrgym mcp`` and the ``cli:NAME`` agents of ``sgrgym sgr run`` (handlers import lazily)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any


def _world(args: argparse.Namespace) -> tuple[list[Path], list[Any], Any, Any, Any]:
    """(task files, tasks, snapshot, site models, renderer) as ``sgr run`` opens them."""
    from sgrgym.sgr.commands import _load_tasks, _open_pack, _renderer, demo_task_files

    files = list(args.tasks or demo_task_files())
    tasks = _load_tasks(files)
    snapshot, models = _open_pack(args.pack)
    return files, tasks, snapshot, models, _renderer(snapshot, args.no_render)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from sgrgym.errors import UserError
    from sgrgym.runs.folder import open_run_folder
    from sgrgym.sgr.env import Budget, SgrEnv
    from sgrgym.sgr.run import SCORES, answered, finish_run, record_episode, run_card

    from .episode import SESSION_CLOSED, LiveEpisode, McpRunCard, episode_prompt
    from .server import budget_watch, build_server, serve_stdio
    from .tools import tools_sha256

    files, tasks, snapshot, models, renderer = _world(args)
    task = next((t for t in tasks if t.task_id == args.task), None)
    if task is None:
        known = ", ".join(t.task_id for t in tasks[:30])
        raise UserError(f"--task {args.task!r}: no such task in the task files ({known}, ...)")
    budget = Budget(
        max_tool_calls=args.max_tool_calls, max_wall_s=args.max_wall_s, stall_s=args.stall_s
    )
    env = SgrEnv(snapshot, models, budget, current_date=args.current_date, renderer=renderer)
    if args.print_prompt:
        sys.stdout.write(episode_prompt(env, task, args.site_ops) + "\n")
        return 0
    if args.out is None:
        raise UserError("sgrgym mcp: --out RUN_DIR is required (where the episode is written)")
    card = McpRunCard(
        **run_card(env, "mcp", 0, files).model_dump(),
        task_id=task.task_id, tools_sha256=tools_sha256(), site_ops=args.site_ops,
    )  # fmt: skip
    signal.signal(signal.SIGTERM, _terminate)
    with snapshot, open_run_folder(args.out, card, finals=(SCORES,)) as folder:
        if task.task_id in answered(folder):
            raise UserError(
                f"{args.out}: episode {task.task_id} is already over (one session per episode); "
                "use a new --out folder"
            )
        live = LiveEpisode(env, task, folder, args.site_ops)
        live.start()
        done = threading.Event()
        budget_watch(env, done)
        try:
            anyio.run(serve_stdio, build_server(live))
        finally:
            done.set()
            stopped = env.stopped
            ended_by = f"budget: {stopped.reason}" if stopped else SESSION_CLOSED
            episode = live.finish(ended_by, str(stopped or ""))
            record_episode(folder, task, env.sites, episode)
            finish_run(folder, [task])
            env.close()
    return 0


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    from sgrgym.sgr.commands import _positive_float, _positive_int

    parser.add_argument(
        "--max-tool-calls", type=_positive_int, default=None,
        help="optional cap on tool calls (default: none)",
    )  # fmt: skip
    parser.add_argument(
        "--max-wall-s", type=_positive_float, default=6000.0,
        help="wall time per task (default: 6000, appendix C)",
    )  # fmt: skip
    parser.add_argument(
        "--stall-s", type=_positive_float, default=3000.0,
        help="stop a task after this long without a tool call (default: 3000, appendix C)",
    )  # fmt: skip


def add_commands(areas: Any) -> None:
    """Register ``sgrgym mcp`` on the top-level sub-parsers."""
    mcp = areas.add_parser(
        "mcp",
        help="a stdio MCP server over one SGR episode (for agent CLIs)",
        description="Serve one SGR-Bench episode to an agent over MCP (stdio). Tools: search, "
        "fetch, pdf and submit_answer (site operations only with --site-ops); schemas from the "
        "versioned tool file, whose sha256 is in the run card. Every call goes through the SGR "
        "environment; each step is appended to RUN_DIR/steps.jsonl as it happens, and when "
        "the client closes the session (or on SIGTERM) the episode is scored into RUN_DIR like "
        "an `sgr run` folder (answers, trajectories with diagnostics, scores).",
    )
    mcp.add_argument("--task", required=True, metavar="ID", help="the task variant to serve")
    mcp.add_argument("--out", type=Path, metavar="RUN_DIR", help="the episode's run folder")
    mcp.add_argument("--pack", default="demo", help="pack folder or name (default: demo)")
    mcp.add_argument(
        "--tasks", nargs="+", type=Path, metavar="FILE",
        help="task files (default: tasks/sgr/<site>/constraint.jsonl, goal.jsonl)",
    )  # fmt: skip
    mcp.add_argument(
        "--site-ops", action="store_true",
        help="also offer the operate tool (site operations; the paper's agents had none)",
    )  # fmt: skip
    mcp.add_argument("--no-render", action="store_true", help="archived pages only")
    mcp.add_argument("--current-date", default="2026-01-01", help="date shown to the agent")
    mcp.add_argument(
        "--print-prompt", action="store_true",
        help="print the task prompt for this episode (appendix C) and exit",
    )  # fmt: skip
    add_budget_options(mcp)
    mcp.set_defaults(handler=cmd_mcp)
