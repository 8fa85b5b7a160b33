"""``sgrgym mcp`` and the ``cli:NAME`` agents of ``sgrgym sgr run`` (handlers import lazily)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from sgrgym.cli.options import open_world_of
from sgrgym.core import defaults


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
        "--current-date", default=defaults.CURRENT_DATE, help="date shown to the agent"
    )
    mcp.add_argument(
        "--print-prompt",
        action="store_true",
        help="print the task prompt for this episode (appendix C) and exit",
    )
    from sgrgym.cli.options import add_budget_options

    add_budget_options(mcp)
    mcp.set_defaults(handler=cmd_mcp)


DEFAULT_CLI_ROOT = Path("benchmarks/cli-agents")  # one folder per profile, npm ci in each


def _base_url_host(url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    from sgrgym.core.errors import UserError

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--base-url {url!r}: give an http(s) URL, e.g. http://127.0.0.1:8080/v1")
    return parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)


def cmd_cli_run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from sgrgym.core.errors import UserError
    from sgrgym.core.output import progress_bar, write_json
    from sgrgym.sgr.cli_agents.egress import Egress, parse_host_port
    from sgrgym.sgr.cli_agents.episode import episode_prompt
    from sgrgym.sgr.cli_agents.profiles import load_profile
    from sgrgym.sgr.cli_agents.runner import CliRunCard, CliSettings, run_cli_tasks
    from sgrgym.sgr.cli_agents.tools import tools_sha256
    from sgrgym.sgr.run import run_card
    from sgrgym.sgr.score_table import render_report

    profile, profile_sha256 = load_profile(args.agent[len("cli:") :])
    if not args.base_url or not args.model:
        raise UserError(f"--agent {args.agent}: give the model endpoint (--base-url and --model)")
    api_key = "sgrgym-local"
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env, "")
        if not api_key:
            raise UserError(f"--api-key-env {args.api_key_env}: that variable is empty or unset")
    allow = [parse_host_port(h) for h in args.allow_host] or [_base_url_host(args.base_url)]
    world = open_world_of(args)
    env, files, tasks = world.env, world.files, world.tasks
    prompts = {t.task_id: episode_prompt(env, t, args.site_ops) for t in tasks}
    egress = None if args.no_egress_sandbox else Egress(allow)
    card = CliRunCard(
        **run_card(env, args.agent, args.seed, files).model_dump(),
        profile=profile.name,
        profile_sha256=profile_sha256,
        tools_sha256=tools_sha256(),
        site_ops=args.site_ops,
        model=args.model,
        base_url=args.base_url,
        poll_s=args.poll_s,
        egress=[f"{h}:{p}" for h, p in allow] if egress else [],
    )
    cli_dir = (args.cli_dir or DEFAULT_CLI_ROOT / profile.name).resolve()
    settings = CliSettings(
        profile=profile,
        cli_dir=cli_dir,
        base_url=args.base_url,
        model=args.model,
        api_key=api_key,
        pack_dir=env.snapshot.pack_dir.resolve(),
        task_files=tuple(p.resolve() for p in files),
        budget=env.budget,
        current_date=args.current_date,
        site_ops=args.site_ops,
        no_render=args.no_render,
        poll_s=args.poll_s,
        egress=egress,
    )
    env.snapshot.close()
    env.close()
    with egress or nullcontext():
        report = run_cli_tasks(
            settings,
            env.sites,
            tasks,
            prompts,
            args.out,
            card,
            args.jobs,
            None if args.quiet else progress_bar,
        )
    if args.json:
        write_json(report.model_dump_json(exclude={"tasks"}))
    else:
        print(render_report(report, f"{args.agent} agent"))
        print(f"\nanswers, trajectories, transcripts and scores in {args.out}/")
    return 0


def add_cli_run_options(run: argparse.ArgumentParser) -> None:
    """The options of ``sgr run --agent cli:NAME`` (agent CLIs)."""
    from sgrgym.cli.options import positive_int, positive_seconds

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
        help=f"the folder the CLI is installed in (default: {DEFAULT_CLI_ROOT}/NAME)",
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
        default=5.0,
        help="seconds between answer and progress polls (default: 5, appendix C)",
    )
    group.add_argument(
        "--site-ops", action="store_true", help="also offer site operations (operate)"
    )
