"""``sgrgym export-inspect``: a finished SGR run folder as an Inspect AI log (handler imports
lazily; needs the ``inspect`` extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas


def cmd_export_inspect(args: argparse.Namespace) -> int:
    from sgrgym.inspect import require_inspect

    require_inspect()
    from sgrgym.inspect.export import export_run

    done = export_run(args.run_dir, args.out)
    means = ", ".join(
        f"{label} {done.overall[name]:.3f}"
        for label, name in (("Item-F1", "item_f1"), ("Row-F1", "row_f1"), ("P.O.A.", "poa"))
        if done.overall[name] is not None
    )
    inputs = "" if done.prompts else "; task files not found: inputs name the tasks only"
    print(
        f"wrote {done.out}: {done.samples} samples, agent {done.agent}, model {done.model}; "
        f"{means}; the run card's pins in the eval metadata (sgrgym){inputs}"
    )
    return 0


def add_commands(areas: Areas) -> None:
    """Register ``sgrgym export-inspect``."""
    parser = areas.add_parser(
        "export-inspect",
        help="write a finished SGR run folder as an Inspect AI log",
        description="Write the Inspect AI log of a finished sgr run (or sgrgym mcp) folder: one "
        "sample per task variant with its prompt, its transcript as far as the folder records "
        "it (tool calls from trajectories.jsonl), its scores (Item-F1, Row-F1, P.O.A., the "
        "per-row comparison and the appendix G category) and the run card's pins in the eval "
        "metadata. Read it with `inspect view` or inspect_ai.log.read_eval_log. Needs the "
        "inspect extra. Exit 2, nothing written, when RUN_DIR is not a finished SGR run "
        "folder or --out cannot be written.",
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run folder")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="FILE",
        help="the log to write: FILE.eval (Inspect's binary format) or FILE.json",
    )
    parser.set_defaults(handler=cmd_export_inspect)
