"""The ``sgrgym`` command line.

Only ``argparse`` is imported at start-up so that ``sgrgym --help`` stays fast; each command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, cast

from sgrgym.core.errors import UserError
from sgrgym.core.version import __version__

Handler = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """Every sgrgym parser (subcommands inherit the class): an option must be spelled out, as
    an abbreviation such as ``--ag`` for ``--agent`` would silently run another command than
    the one meant."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from sgrgym.cli import agents as cli_agent_commands
    from sgrgym.cli import inspect_export as inspect_commands
    from sgrgym.cli import llm as llm_commands
    from sgrgym.cli import seeker as seeker_commands
    from sgrgym.cli import sgr as sgr_commands
    from sgrgym.cli import snapshot as snapshot_commands
    from sgrgym.cli import suite as run_commands

    parser = Parser(
        prog="sgrgym",
        description="Offline, deterministic harness for the SeekerGym and SGR-Bench benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"sgrgym {__version__}")
    areas = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="area", metavar="AREA", required=True),
    )
    run_commands.add_commands(areas)
    sgr_commands.add_commands(areas)
    snapshot_commands.add_commands(areas)
    seeker_commands.add_commands(areas)
    cli_agent_commands.add_commands(areas)
    llm_commands.add_commands(areas)
    inspect_commands.add_commands(areas)
    return parser


def run_command(argv: Sequence[str]) -> None:
    """Run ``sgrgym ARGV`` in this process (a recorded command being replayed); arguments
    this version refuses, an error or a non-zero exit are a UserError."""
    shown = " ".join(argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:  # argparse said what it refused on stderr
        raise UserError(f"this sgrgym refuses the arguments: {shown}") from None
    handler: Handler = args.handler
    code = handler(args)
    if code != 0:
        raise UserError(f"exit {code}: sgrgym {shown}")


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` and ``with`` runs (temporary
    folders are removed, run folders unlocked) as they do for Ctrl-C."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main else None
    try:
        return handler(args)
    except (KeyboardInterrupt, Terminated) as stop:
        what = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
        print(f"sgrgym: stopped by {what}; the same command resumes", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130
    except UserError as exc:
        print(f"sgrgym: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the system refused a file operation: a full disk, a permission
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"sgrgym: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
