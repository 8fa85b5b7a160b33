"""``sgrgym sgr``: SGR-Bench task files and scoring (handlers import their modules lazily)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sgrgym.report.output import write_json


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
        write_json(report.model_dump_json(indent=2), args.out)
    if args.json:
        write_json(report.model_dump_json(), None)
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
        write_json(json.dumps(records, ensure_ascii=False), None)
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


def add_commands(areas: Any) -> None:
    """Register ``sgrgym sgr ...`` on the top-level sub-parsers."""
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
