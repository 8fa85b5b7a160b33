"""``sgrgym mcp`` and the ``cli:NAME`` agents of ``sgrgym sgr run`` (handlers import lazily)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from sgrgym.cli.options import open_world_of
from sgrgym.core import defaults
from sgrgym.core.argtypes import iso_date

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas
    from sgrgym.sgr.cli_agents.agent import CliAgentOptions


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from sgrgym.core.errors import UserError
    from sgrgym.runs.folder import open_run_folder
    from sgrgym.sgr.cli_agents.episode import (
        SESSION_CLOSED,
        LiveEpisode,
        McpRunCard,
        episode_prompt,
    )
    from sgrgym.sgr.cli_agents.server import budget_watch, build_server, serve_stdio
    from sgrgym.sgr.cli_agents.tools import tools_sha256
    from sgrgym.sgr.run import SCORES, answered, finish_run, record_episode, run_card

    world = open_world_of(args)
    env, files, tasks = world.env, world.files, world.tasks
    task = next((t for t in tasks if t.task_id == args.task), None)
    if task is None:
        known = ", ".join(t.task_id for t in tasks[:30])
        raise UserError(f"--task {args.task!r}: no such task in the task files ({known}, ...)")
    if args.print_prompt:
        sys.stdout.write(episode_prompt(env, task, args.site_ops) + "\n")
        return 0
    if args.out is None:
        raise UserError("sgrgym mcp: --out RUN_DIR is required (where the episode is written)")
    card = McpRunCard(
        **run_card(env, "mcp", 0, files).model_dump(),
        task_id=task.task_id,
        tools_sha256=tools_sha256(),
        site_ops=args.site_ops,
    )
    with env.snapshot, open_run_folder(args.out, card, finals=(SCORES,)) as folder:
        if task.task_id in answered(folder):
            raise UserError(
                f"{args.out}: episode {task.task_id} is already over (one session per episode); "
                "use a new --out folder"
            )
        folder.begin()
        live = LiveEpisode(env, task, folder, args.site_ops)
        live.start()
        done = threading.Event()
        once, finished = threading.Lock(), threading.Event()

        def finalize() -> None:
            """Score the episode into the folder, once (session end or SIGTERM)."""
            if not once.acquire(blocking=False):
                return
            done.set()
            stopped = env.stopped
            ended_by = f"budget: {stopped.reason}" if stopped else SESSION_CLOSED
            episode = live.finish(ended_by, str(stopped or ""))
            record_episode(folder, task, env.sites, episode)
            finish_run(folder, [task])
            finished.set()

        def terminate(signum: int, frame: FrameType | None) -> None:
            # Python cannot interrupt the thread reading stdin: score in another thread (it
            # waits for a tool call under way), then leave without waiting for the reader.
            def end() -> None:
                finalize()
                os._exit(128 + signum)

            threading.Thread(target=end, name="sgr-mcp-sigterm").start()

        signal.signal(signal.SIGTERM, terminate)
        budget_watch(env, done)
        try:
            anyio.run(serve_stdio, build_server(live))
        finally:
            finalize()
            finished.wait(60)  # when SIGTERM's thread scores it, the folder stays open till then
            env.close()
    return 0


def add_commands(areas: Areas) -> None:
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
        "--tasks",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="task files (default: tasks/sgr/<site>/constraint.jsonl, goal.jsonl)",
    )
    mcp.add_argument(
        "--site-ops",
        action="store_true",
        help="also offer the operate tool (site operations; the paper's agents had none)",
    )
    mcp.add_argument("--no-render", action="store_true", help="archived pages only")
    mcp.add_argument(
        "--current-date",
        type=iso_date,
        default=defaults.CURRENT_DATE,
        help="date shown to the agent (YYYY-MM-DD)",
    )
    mcp.add_argument(
        "--print-prompt",
        action="store_true",
        help="print the task prompt for this episode (appendix C) and exit",
    )
    from sgrgym.cli.options import add_budget_options

    add_budget_options(mcp)
    mcp.set_defaults(handler=cmd_mcp)


def cli_agent_options(args: argparse.Namespace) -> CliAgentOptions:
    """The agent CLI options of ``sgr run --agent cli:NAME``."""
    from sgrgym.sgr.cli_agents.agent import CliAgentOptions

    return CliAgentOptions(
        base_url=args.base_url or "",
        model=args.model or "",
        api_key_env=args.api_key_env,
        allow_hosts=tuple(args.allow_host),
        egress_sandbox=not args.no_egress_sandbox,
        cli_dir=args.cli_dir,
        poll_s=args.poll_s,
        site_ops=args.site_ops,
    )


def add_cli_run_options(run: argparse.ArgumentParser) -> None:
    """The options of ``sgr run --agent cli:NAME`` (agent CLIs)."""
    from sgrgym.core.argtypes import positive_int, positive_seconds

    group = run.add_argument_group(
        "agent CLIs (--agent cli:NAME)",
        "NAME is a packaged profile (claude-code, codex, qwen-code) or a profile file "
        "(cli:path/to/profile.json). Per task: a fresh project and home folder, a strict MCP "
        "config exposing only `sgrgym mcp` for that task, the CLI's own web tools disabled, "
        "the task prompt, the CLI run non-interactively; answers polled every --poll-s "
        "seconds from submit_answer and from its final output; stopped at --max-wall-s or "
        "after --stall-s without a tool call. By default the CLI runs in a network namespace "
        "that reaches only the --allow-host endpoints.",
    )
    group.add_argument(
        "--cli-dir",
        type=Path,
        metavar="DIR",
        help=f"the folder the CLI is installed in (default: {defaults.CLI_AGENTS_ROOT}/NAME)",
    )
    group.add_argument("--base-url", metavar="URL", help="the model endpoint the CLI talks to")
    group.add_argument("--model", metavar="NAME", help="the model name sent to the endpoint")
    group.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the endpoint's API key (never written to the run)",
    )
    group.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="an endpoint the CLI may reach (repeatable; default: --base-url's host and port)",
    )
    group.add_argument(
        "--no-egress-sandbox",
        action="store_true",
        help="run the CLI without the network namespace (it can then reach any address)",
    )
    group.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="sessions at once (results identical to --jobs 1 but for timings)",
    )
    group.add_argument(
        "--poll-s",
        type=positive_seconds,
        default=defaults.CLI_POLL_S,
        help="seconds between answer and progress polls (default: %(default)s, appendix C)",
    )
    group.add_argument(
        "--site-ops", action="store_true", help="also offer site operations (operate)"
    )
