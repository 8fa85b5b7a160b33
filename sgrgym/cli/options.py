"""Argument types and option groups shared by the commands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sgrgym.core import defaults
from sgrgym.core.argtypes import positive_int, positive_seconds

if TYPE_CHECKING:
    from sgrgym.runs.parallel import RayExecutor
    from sgrgym.sgr.make import SgrWorld

    Areas = argparse._SubParsersAction[argparse.ArgumentParser]  # `sgrgym AREA ...`


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """The watchdog budgets of an SGR episode (`sgr run`, `sgrgym mcp`)."""
    parser.add_argument(
        "--max-tool-calls",
        type=positive_int,
        default=None,
        help="optional cap on tool calls (default: none)",
    )
    parser.add_argument(
        "--max-wall-s",
        type=positive_seconds,
        default=defaults.MAX_WALL_S,
        help="wall time per task (default: 6000, appendix C)",
    )
    parser.add_argument(
        "--stall-s",
        type=positive_seconds,
        default=defaults.STALL_S,
        help="stop a task after this long without a tool call (default: 3000, appendix C)",
    )


def open_world_of(args: argparse.Namespace) -> SgrWorld:
    """The SGR world the options name (``--pack``, ``--tasks``, ``--current-date``,
    ``--no-render``), with the episode budget of :func:`add_budget_options`."""
    from sgrgym.sgr.env import Budget
    from sgrgym.sgr.make import open_world

    budget = Budget(
        max_tool_calls=args.max_tool_calls, max_wall_s=args.max_wall_s, stall_s=args.stall_s
    )
    return open_world(
        args.pack,
        args.tasks,
        budget=budget,
        current_date=args.current_date,
        render=not args.no_render,
        task_ids=getattr(args, "task_ids", None),  # sgr run --task (mcp's --task is one id)
        limit=getattr(args, "limit", None),
    )


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """Where a run's episodes run (`sgr run`, `seeker run`): ``--executor``, ``--address``."""
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: --jobs threads in this process (default); ray: each episode a Ray task "
        "(the `ray` extra), its results written here in episode order, so the files are "
        "those of --jobs 1 but for timings; a task whose worker dies is run again "
        "(docs/sharding.md)",
    )
    parser.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: the running Ray cluster to use (HOST:PORT of its head, or "
        "auto); its workers read the pack, store and model from the data home and verify "
        "their sha256 as this process does (default: start a cluster on 127.0.0.1 with "
        "--jobs CPUs for the run, no dashboard, no usage statistics)",
    )


def ray_executor_of(args: argparse.Namespace) -> RayExecutor | None:
    """The Ray executor ``--executor ray`` asks for (None: the local loop); ``--address``
    without it is refused."""
    from sgrgym.core.errors import UserError
    from sgrgym.runs.parallel import RayExecutor

    if args.executor != "ray":
        if args.address is not None:
            raise UserError("--address: only with --executor ray")
        return None
    return RayExecutor(address=args.address, cpus=max(args.jobs, 1))
