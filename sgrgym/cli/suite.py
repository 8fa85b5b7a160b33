"""``sgrgym run``, ``sgrgym verify-run``, ``sgrgym merge`` and ``sgrgym report`` (handlers
import lazily)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.core.argtypes import SEEDS

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas

SHOWN_DIFFERENCES = 8  # baseline differences printed by `sgrgym run`; replay.json has them all


def cmd_run(args: argparse.Namespace) -> int:
    from sgrgym.suite.config import load_config
    from sgrgym.suite.layout import BASELINE, REPLAY_JSON, baseline_status
    from sgrgym.suite.main import run_all

    config = load_config(args.config)
    if args.agent:
        extra = [a for a in args.agent if a not in config.sgr.agents]
        config = config.model_copy(
            update={"sgr": config.sgr.model_copy(update={"agents": [*config.sgr.agents, *extra]})}
        )
    if args.seeds is not None:
        config = config.model_copy(
            update={"seeker": config.seeker.model_copy(update={"seeds": args.seeds})}
        )
    if args.no_baseline:
        config = config.model_copy(
            update={"baseline": config.baseline.model_copy(update={"enabled": False})}
        )
    from sgrgym.cli import run_command

    places = run_all(
        args.out, config, run_command, show_progress=not args.quiet, report=not args.no_report
    )
    _print_places(places)
    status = baseline_status(args.out, config)
    if status is None or status.identical:
        return 0
    where = args.out / BASELINE / REPLAY_JSON
    what = "could not be replayed" if status.error else "does not replay to its committed results"
    print(
        f"sgrgym run: the baseline {status.baseline} {what} (recorded in {where}; the results "
        "and the report are written):",
        file=sys.stderr,
    )
    for line in status.lines(limit=SHOWN_DIFFERENCES):
        print(f"  {line}", file=sys.stderr)
    return 1


def _print_places(places: dict[str, Path]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="sgrgym run: where everything is")
    table.add_column("What")
    table.add_column("Where")
    for what, path in places.items():
        table.add_row(what, str(path))
    console = Console()
    if not console.is_terminal:  # a log keeps whole paths, however long
        widest = max((len(w) + len(str(p)) for w, p in places.items()), default=0)
        console = Console(width=max(80, widest + 7))
    console.print(table)


def cmd_verify_run(args: argparse.Namespace) -> int:
    from sgrgym.suite.layout import BASELINE, REPLAY_JSON, baseline_status
    from sgrgym.suite.results import card_config, read_json_file
    from sgrgym.suite.verify import folder_kind, verify_run

    problems = verify_run(args.dir)
    if problems:
        for problem in problems:
            print(f"FAILED {problem}")
        print(f"\n{args.dir}: {len(problems)} problem(s)")
        return 1
    print(f"{args.dir}: every hash matches and every metric recomputes from the records")
    if folder_kind(read_json_file(args.dir / "run.json", "run card")) != "run":
        return 0
    status = baseline_status(args.dir, card_config(args.dir))
    if status is not None and not status.identical:
        print(
            "note: the run recorded that its baseline replay did not match the committed "
            f"results ({args.dir / BASELINE / REPLAY_JSON})"
        )
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from sgrgym.suite.merge import merge_runs

    merged = merge_runs(args.dirs, args.out)
    print(
        f"{args.out}: {merged.kind} run joined from {merged.shards} shards, {merged.episodes} "
        f"episodes; {merged.headline}; verified (same files as the run without --shard)"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from sgrgym.core.errors import UserError
    from sgrgym.suite.report.html import require_report_extra, write_report

    require_report_extra()
    out = args.out
    if out is None:
        if len(args.dirs) > 1:
            raise UserError("several run folders: name the report folder with --out DIR")
        out = args.dirs[0] / "report"
    index = write_report(args.dirs, out)
    print(f"{index}\n{out / 'report.md'}")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    from sgrgym.core.home import home
    from sgrgym.core.output import progress
    from sgrgym.suite.setup import run_setup

    run_setup((args.home or home()).resolve(), progress)
    return 0


def add_commands(areas: Areas) -> None:
    """Register ``sgrgym run``, ``sgrgym verify-run``, ``sgrgym merge``, ``sgrgym report`` and
    ``sgrgym setup``."""
    run = areas.add_parser(
        "run",
        help="the main job: both benchmarks, calibration and the report, one run folder",
        description="Run SeekerGym (the built-in agents x the three belief representations x "
        "seeds), the calibration protocol (table 4) and SGR-Bench (oracle, default, "
        "search-only, random and any --agent), offline, into one resumable run folder with "
        "every record, the summary tables and the HTML report, then replay the committed "
        "real-model baseline ([baseline] in the config) and compare it with its committed "
        "results. Without --config the embedded default runs. The results and the report "
        "are always written; exit 1 when the baseline replay differs from its committed "
        "results or fails (each difference is in DIR/baseline/replay.json and the report), "
        "2 on bad input.",
    )
    run.add_argument("--out", type=Path, required=True, metavar="DIR", help="the run folder")
    run.add_argument(
        "--config",
        type=Path,
        metavar="FILE.toml",
        help="TOML: [seeker], [calibration], [sgr] tables (agents, beliefs, "
        "seeds, models, budgets); default: the embedded one",
    )
    run.add_argument(
        "--agent",
        nargs="+",
        metavar="NAME",
        help="further SGR agents by name (see sgrgym sgr run --help)",
    )
    run.add_argument("--seeds", type=SEEDS, metavar="N", help="SeekerGym seeds (overrides config)")
    run.add_argument("--no-report", action="store_true", help="skip the HTML report")
    run.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the baseline replay (sets [baseline] enabled = false)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(handler=cmd_run)

    verify = areas.add_parser(
        "verify-run",
        help="check every hash of a run folder and recompute its metrics",
        description="Check the sha256 of every file listed in complete.json (and of the "
        "manifests in run.json), recompute every summary from the records (SeekerGym "
        "summaries, calibration tables, SGR scores, results/) and compare. Exit 1 and name "
        "each file that differs. DIR is a sgrgym run folder, or the folder of one sgr run or "
        "seeker run (one joined by sgrgym merge, or a shard, too): its complete.json hashes, "
        "and its scores.json or summary.json recomputed from its records.",
    )
    verify.add_argument("dir", type=Path, metavar="DIR")
    verify.set_defaults(handler=cmd_verify_run)

    merge = areas.add_parser(
        "merge",
        help="join the shard folders of an sgr run or seeker run (--shard I/N) into one",
        description="Join the finished shard folders of one `sgrgym sgr run` or `sgrgym "
        "seeker run` (each run with --shard I/N, same command otherwise) into --out: the "
        "folder the same command writes without --shard, byte for byte (run.json, the "
        "records in the single run's order, the final results recomputed from them, "
        "complete.json; timings.jsonl and an LLM agent's llm_run.json, which differ between "
        "any two runs, are joined too). "
        "Refused, with nothing written (exit 2): a folder that is not a shard or did not "
        "finish (no complete.json) or changed since, shards of another run (the cards, "
        "environment included, must agree but for the shard), a shard missing or given "
        "twice, an --out that holds anything. The joined folder is verified as verify-run "
        "does. See docs/sharding.md.",
    )
    merge.add_argument(
        "dirs", nargs="+", type=Path, metavar="SHARD_DIR", help="every shard folder of the run"
    )
    merge.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="the joined run (new or empty)"
    )
    merge.set_defaults(handler=cmd_merge)

    report = areas.add_parser(
        "report",
        help="static HTML + Markdown report with figures from run folders",
        description="Write index.html and report.md with matplotlib figures (SVG, "
        "byte-deterministic) from one or more sgrgym run folders, side by side.",
    )
    report.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    report.add_argument(
        "--out", type=Path, metavar="DIR", help="report folder (default: DIR/report for one run)"
    )
    report.set_defaults(handler=cmd_report)

    setup = areas.add_parser(
        "setup",
        help="fill the data home with the pins and build every artifact (model, corpus, pack)",
        description="Make the data home ready: copy the pins this sgrgym ships (task files, "
        "manifests, the committed passage store and baseline) where they are missing, then "
        "build the embedding model, the SeekerGym demo corpus and the SGR demo pack and check "
        "the passage store, each against its pin (a finished step is checked, not redone). The "
        "data home is SGRGYM_HOME, else the checkout sgrgym runs from, else "
        "~/.local/share/sgrgym; every command reads its default paths there.",
    )
    setup.add_argument(
        "--home", type=Path, metavar="DIR", help="the data home (default: as described above)"
    )
    setup.set_defaults(handler=cmd_setup)
