"""The ``sgrgym`` command line.

Only ``argparse`` is imported at start-up so that ``sgrgym --help`` stays fast; each command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from sgrgym import __version__
from sgrgym.errors import UserError

Handler = Callable[[argparse.Namespace], int]


def _write_json(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(out)


def _row_keys(args: argparse.Namespace) -> dict[str, list[str]] | None:
    from sgrgym.sgr.tasks import load_row_keys

    return load_row_keys(args.row_keys) if args.row_keys else None


def cmd_sgr_score(args: argparse.Namespace) -> int:
    from sgrgym.sgr.score import load_predictions, score_tasks
    from sgrgym.sgr.score_table import render_report
    from sgrgym.sgr.tasks import load_tasks

    tasks = load_tasks(args.tasks, _row_keys(args))
    answers = load_predictions(args.predictions)
    report = score_tasks(tasks, answers)
    if args.out is not None:
        _write_json(report.model_dump_json(indent=2), args.out)
    if args.json:
        _write_json(report.model_dump_json(), None)
    else:
        print(render_report(report, Path(args.predictions).name, per_task=args.per_task))
    return 0


def cmd_sgr_tasks(args: argparse.Namespace) -> int:
    from sgrgym.report.table import format_table
    from sgrgym.sgr.tasks import load_tasks

    tasks = load_tasks(args.tasks, _row_keys(args))
    if args.json:
        records = [
            {
                "task_id": t.task_id,
                "variant": t.variant,
                "domain": t.domain,
                "source": f"{t.source}:{t.line}",
                "rows": len(t.gold_rows),
                "columns": list(t.columns),
                "row_key": t.key_names,
                "row_key_rule": t.key_rule,
            }
            for t in tasks
        ]
        _write_json(json.dumps(records, ensure_ascii=False), None)
        return 0
    rows = [
        [
            t.task_id,
            t.variant,
            t.domain,
            str(len(t.gold_rows)),
            str(len(t.columns)),
            ", ".join(t.key_names),
            t.key_rule,
        ]
        for t in tasks
    ]
    print(format_table(["Task", "Var", "Domain", "Rows", "Cols", "Row key", "Key from"], rows))
    cg = sum(t.variant == "CG" for t in tasks)
    print(f"\n{len(tasks)} task variants ({cg} CG, {len(tasks) - cg} GO), all valid.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sgrgym",
        description="Offline, deterministic harness for the SeekerGym and SGR-Bench benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"sgrgym {__version__}")
    areas = parser.add_subparsers(dest="area", metavar="AREA", required=True)

    sgr = areas.add_parser("sgr", help="SGR-Bench: tasks and scoring", description="SGR-Bench.")
    sgr_cmds = sgr.add_subparsers(dest="command", metavar="COMMAND", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--tasks",
        nargs="+",
        required=True,
        type=Path,
        metavar="FILE",
        help="task JSONL files (published constraint.jsonl / goal.jsonl, or sgrgym's own)",
    )
    common.add_argument(
        "--row-keys",
        type=Path,
        metavar="FILE",
        help='JSON object mapping task ids to row-key columns, e.g. {"reptile_001": ["species"]}'
        " (a CG id also covers its -g twin)",
    )

    score = sgr_cmds.add_parser(
        "score",
        parents=[common],
        help="score predictions: Item-F1, Row-F1, P.O.A.",
        description="Score agent answers against SGR-Bench tasks (paper appendix A). Prints a "
        "table laid out like the paper's table 2, or one JSON object with --json.",
    )
    score.add_argument(
        "--predictions",
        required=True,
        type=Path,
        metavar="PATH",
        help='JSONL of {"task_id": ..., "answer": "<raw agent output>"}, '
        "or a folder of <task_id>.txt files",
    )
    score.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    score.add_argument("--out", type=Path, metavar="FILE", help="also write the JSON report here")
    score.add_argument("--per-task", action="store_true", help="add a line per task to the table")
    score.set_defaults(handler=cmd_sgr_score)

    tasks = sgr_cmds.add_parser(
        "tasks",
        parents=[common],
        help="validate task files and show row keys",
        description="Validate task files and list each task with the row key the scorer uses.",
    )
    tasks.add_argument("--json", action="store_true", help="print JSON instead of a table")
    tasks.set_defaults(handler=cmd_sgr_tasks)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except UserError as exc:
        print(f"sgrgym: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
