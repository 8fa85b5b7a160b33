"""``sgrgym sgr``: SGR-Bench task files and scoring (handlers import their modules lazily)."""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.cli.options import (
    add_budget_options,
    add_executor_options,
    open_world_of,
    ray_executor_of,
)
from sgrgym.core import defaults
from sgrgym.core.argtypes import (
    SEED,
    iso_date,
    number_in,
    output_file,
    positive_int,
    shard_spec,
)
from sgrgym.core.home import home_path
from sgrgym.core.output import progress, write_json
from sgrgym.sgr.make import (
    DEFAULT_TASKS_DIR,
    demo_task_files,
    load_tasks,
    open_pack,
    page_renderer,
)

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas
    from sgrgym.sgr.agents import Agent
    from sgrgym.sgr.env import SgrEnv
    from sgrgym.sgr.make import SgrWorld
    from sgrgym.sgr.registry import AgentSetup, LLMAgentOptions


def _row_keys(args: argparse.Namespace) -> dict[str, list[str]] | None:
    from sgrgym.sgr.tasks import load_row_keys

    return load_row_keys(args.row_keys) if args.row_keys else None


def cmd_sgr_score(args: argparse.Namespace) -> int:
    from sgrgym.sgr.score_stream import COMPACT, INDENTED, score_files
    from sgrgym.sgr.score_table import render_report

    layouts = ([INDENTED] if args.out is not None else []) + ([COMPACT] if args.json else [])
    with score_files(
        args.tasks,
        args.predictions,
        row_keys=_row_keys(args),
        strict=args.strict,
        families=args.families,
        layouts=layouts,
        folder=None if args.out is None else args.out.parent,
    ) as scored:
        if args.out is not None:
            scored.write_json(args.out, INDENTED)
        if args.json:
            scored.write_json(None, COMPACT)
        else:
            label = Path(args.predictions).name
            print(render_report(scored.report, label, per_task=args.per_task, tasks=scored.tasks))
            if scored.warnings:
                print(f"Task file warnings ({scored.warnings}): listed by sgrgym sgr tasks")
    return 0


def cmd_sgr_tasks(args: argparse.Namespace) -> int:
    from sgrgym.core.table import format_table
    from sgrgym.sgr.tasks import load_tasks as read_task_files

    if args.update_pin:
        from sgrgym.sgr.task_pins import write_pins

        read_task_files(demo_task_files())  # the files must read before they are pinned
        pins = write_pins(demo_task_files())
        progress(f"pinned {len(pins.files)} demo task files in {DEFAULT_TASKS_DIR}/manifest.json")
    tasks = load_tasks(args.tasks, _row_keys(args), strict=args.strict)
    if args.stats:
        from sgrgym.sgr.taskstats import render_stats, task_stats

        stats = task_stats(tasks)
        if args.json:
            write_json(stats.model_dump_json(), None)
        else:
            print(render_stats(stats))
        return 0
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
                "row_key_statement": t.key_statement,
                "canonicalization": t.canonicalization,
                "column_kinds": dict(zip(t.columns, t.column_kinds, strict=True)),
                "warnings": list(t.warnings),
                "notes": list(t.notes),
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
            t.key_rule + (f" ({t.key_statement!r})" if t.key_statement else ""),
            t.canonicalization,
        ]
        for t in tasks
    ]
    header = ["Task", "Var", "Domain", "Rows", "Cols", "Row key", "Key from", "Canon"]
    print(format_table(header, rows))
    cg = sum(t.variant == "CG" for t in tasks)
    warned = [(t, w) for t in tasks for w in t.warnings]
    verdict = "all valid" if not warned else f"all valid, {len(warned)} warnings"
    print(f"\n{len(tasks)} task variants ({cg} CG, {len(tasks) - cg} GO), {verdict}.")
    for task, warning in warned:
        print(f"  warning: {task.source}:{task.line}: task {task.task_id}: {warning}")
    for task in tasks:
        for note in task.notes:
            print(f"  note: task {task.task_id}: {note}")
    return 0


def cmd_sgr_compare(args: argparse.Namespace) -> int:
    from sgrgym.sgr.compare import compare_runs
    from sgrgym.sgr.families import load_families
    from sgrgym.sgr.score_table import render_comparison

    comparison = compare_runs(
        args.runs, load_families(args.families), strict=args.strict, tasks=args.tasks
    )
    if args.out is not None:
        write_json(comparison.model_dump_json(indent=2), args.out)
    if args.json:
        write_json(comparison.model_dump_json(), None)
    else:
        print(render_comparison([(s.system, s.report) for s in comparison.systems]))
        for note in comparison.notes:
            print(f"\nnote: {note}")
    return 0


def _rescored_runs(parser: argparse.ArgumentParser, runs_help: str) -> None:
    """The arguments of a command that re-scores run folders (compare, difficulty)."""
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help=runs_help)
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="score every run against these task files instead of those in its run.json",
    )
    parser.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    parser.add_argument("--families", type=Path, metavar="FILE", help=_FAMILIES_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--out", type=output_file, metavar="FILE", help="also write the JSON here")


def cmd_sgr_difficulty(args: argparse.Namespace) -> int:
    from sgrgym.sgr.difficulty import calibrate, render
    from sgrgym.sgr.families import load_families

    report = calibrate(
        args.runs,
        load_families(args.families),
        solved=args.solved,
        progress=args.progress,
        strict=args.strict,
        tasks=args.tasks,
    )
    if args.out is not None:
        write_json(report.model_dump_json(indent=2), args.out)
    if args.json:
        write_json(report.model_dump_json(), None)
    else:
        print(render(report))
    return 0


def cmd_sgr_build_packs(args: argparse.Namespace) -> int:
    from sgrgym.sgr.sites.app import SITES, load_site
    from sgrgym.sgr.sites.build import build_pack

    tasks = load_tasks(args.tasks or demo_task_files())
    apps = [load_site(name) for name in args.sites or sorted(SITES)]
    pin = args.pin or home_path("snapshots") / args.pack / "manifest.json"  # the committed pin
    result = build_pack(args.out / args.pack, apps, tasks, args.update_pin, progress, pin)
    states = ", ".join(f"{site} {n}" for site, n in sorted(result.states.items()))
    action = (
        "re-pinned"
        if result.repinned
        else "first pin written"
        if result.new_pin
        else "matches its pin"
    )
    print(
        f"{result.pack_dir}: {result.records} records ({states} states); {action}; "
        f"manifest sha256 {result.manifest_sha256}"
    )
    return 0


def _agent_name(text: str) -> str:
    from sgrgym.sgr.registry import AGENTS

    if text in AGENTS:
        return text
    raise argparse.ArgumentTypeError(str(AGENTS.unknown(text)))


def _agent_setup(args: argparse.Namespace, world: SgrWorld) -> AgentSetup:
    from sgrgym.cli.agents import cli_agent_options
    from sgrgym.sgr.registry import AgentSetup

    return AgentSetup(
        references=world.references,
        task_ids=tuple(t.task_id for t in world.tasks),
        seed=args.seed,
        steps=args.random_steps,
        llm=partial(_llm_options, args),
        cli=partial(cli_agent_options, args),
    )


def _ray_worker(args: argparse.Namespace) -> tuple[SgrEnv, Agent]:
    """On a Ray worker (``--executor ray``): the world and agent of ``sgr run``'s ``args``,
    opened and made as the driver opens and makes them (the files verified on open)."""
    from sgrgym.sgr.registry import make_agent
    from sgrgym.sgr.run import TaskRunner

    world = open_world_of(args)  # open for the worker process's life
    agent = make_agent(args.agent, _agent_setup(args, world))
    assert not isinstance(agent, TaskRunner)  # cli:NAME is refused before any worker starts
    return world.env, agent


def cmd_sgr_run(args: argparse.Namespace) -> int:
    from sgrgym.core.errors import UserError
    from sgrgym.core.output import progress_bar
    from sgrgym.sgr.registry import make_agent
    from sgrgym.sgr.run import ModelAgent, RemoteSgr, run_agent
    from sgrgym.sgr.score_table import render_report

    executor = ray_executor_of(args)
    if executor is not None and args.agent.startswith("cli:"):
        raise UserError(
            f"--executor ray: --agent {args.agent} runs each task in an agent CLI process of "
            "its own and is not run as Ray tasks; use --executor local (--jobs N for sessions "
            "at once)"
        )
    world = open_world_of(args)
    setup = _agent_setup(args, world)
    try:
        agent = make_agent(args.agent, setup)
        remote = None if executor is None else RemoteSgr(executor, partial(_ray_worker, args))
        with world.env.snapshot:
            show = None if args.quiet else progress_bar
            report = run_agent(
                world,
                agent,
                args.out,
                seed=args.seed,
                progress=show,
                jobs=args.jobs,
                shard=args.shard,
                remote=remote,
            )
    finally:
        world.env.close()
    if args.json:
        write_json(report.model_dump_json(exclude={"tasks"}))
        return 0
    print(render_report(report, f"{agent.name} agent"))
    if isinstance(agent, ModelAgent):
        print(f"\n{agent.summary(args.out)}")
    print(f"\nanswers, trajectories and scores in {args.out}/")
    return 0


def _llm_options(args: argparse.Namespace) -> LLMAgentOptions:
    """The chat model and limits of ``--agent llm``."""
    from sgrgym.llm.options import llm_options
    from sgrgym.sgr.registry import LLMAgentOptions

    if args.llm_model is None:
        args.llm_model = args.model  # --model names the endpoint's model for CLIs too
    return LLMAgentOptions(
        chat=llm_options(args),
        site_ops=args.site_ops,
        max_turns=args.llm_max_turns,
        result_chars=args.llm_result_chars,
        keep_results=args.llm_keep_results,
    )


def cmd_sgr_audit(args: argparse.Namespace) -> int:
    from sgrgym.sgr.audit import audit_runs, render_audit

    audit = audit_runs(args.run_dirs)
    if args.json:
        write_json(audit.model_dump_json())
    else:
        print(render_audit(audit))
    return 0


def cmd_sgr_findability(args: argparse.Namespace) -> int:
    from sgrgym.core.table import format_table
    from sgrgym.sgr.simulator import Simulator
    from sgrgym.sgr.sites.reference import reference_of
    from sgrgym.sgr.websearch import WebSearch, findability

    tasks = load_tasks(args.tasks or demo_task_files())
    snapshot, models = open_pack(args.pack)
    with snapshot:
        sim = Simulator(snapshot, models, page_renderer(snapshot, args.no_render))
        web = WebSearch.for_simulator(sim)
        results = []
        for task in tasks:
            reference = reference_of(task)
            model = models.get(reference.site) if reference else None
            results.append(
                findability(
                    web,
                    sim,
                    task.task_id,
                    task.task.instruction,
                    model.host if model else "",
                    task.gold_rows,
                    args.depth,
                )
            )
        web.close()
    if args.json:
        write_json(
            json.dumps([r.__dict__ | {"leaking_urls": list(r.leaking_urls)} for r in results])
        )
        return 0
    rows = [
        [r.task_id, str(r.target_rank) if r.target_rank else "absent", str(r.answer_rows_in_top)]
        for r in results
    ]
    print(format_table(["Task", "Site rank", f"Answer rows in top {args.depth}"], rows))
    ranks = [r.target_rank for r in results if r.target_rank]
    print(
        f"\n{len(results)} tasks: site first hit at rank 1 for {ranks.count(1)}, "
        f"median rank {sorted(ranks)[len(ranks) // 2] if ranks else '-'}, absent for "
        f"{len(results) - len(ranks)}; answer rows in the top {args.depth}: "
        f"{sum(r.answer_rows_in_top for r in results)}."
    )
    return 1 if any(r.answer_rows_in_top for r in results) else 0


def cmd_sgr_states(args: argparse.Namespace) -> int:
    from sgrgym.core.errors import UserError
    from sgrgym.sgr.sites.reference import answer_states, check_references, reference_of, walk

    tasks = {t.task_id: t for t in load_tasks(args.tasks or demo_task_files())}
    task = tasks.get(args.task)
    if task is None:
        raise UserError(f"no task {args.task!r}; tasks: {', '.join(sorted(tasks))}")
    reference = reference_of(task)
    if reference is None:
        raise UserError(f"task {args.task} has no reference path")
    snapshot, models = open_pack(args.pack)
    with snapshot:
        model = models.get(reference.site)
        if model is None:
            raise UserError(f"pack {args.pack} has no site {reference.site!r}")
        check_references(
            models, {task.task_id: reference}, str(snapshot.pack_dir / "manifest.json")
        )
        states = walk(model, reference.path)
        answers = {model.url(s) for s in answer_states(reference, states)}
        nodes: list[dict[str, Any]] = []
        for i, state in enumerate(states):
            url = model.url(state)
            _, how = snapshot.lookup(url)
            nodes.append(
                {
                    "state": i,
                    "url": url,
                    "describe": state.describe(),
                    "archived": how != "miss",
                    "answer": url in answers,
                }
            )
    edges: list[dict[str, Any]] = [
        {
            "from": i,
            "to": i + 1,
            "op": op.op,
            "type": op.type,
            "args": {k: v for k, v in op.model_dump().items() if v and k not in ("op", "type")},
        }
        for i, op in enumerate(reference.path)
    ]
    if args.json:
        write_json(
            json.dumps(
                {"task_id": args.task, "site": reference.site, "states": nodes, "edges": edges}
            )
        )
        return 0
    print(f"{args.task} on {model.title} ({model.host}): {len(edges)} operations\n")
    for node in nodes:
        marks = ("archived" if node["archived"] else "not archived: rendered when reached") + (
            ", answer" if node["answer"] else ""
        )
        print(f"  [{node['state']}] {node['describe']}  ({marks})\n      {node['url']}")
        if node["state"] < len(edges):
            edge = edges[node["state"]]
            args_text = ", ".join(f"{k}={v}" for k, v in edge["args"].items())
            print(f"   --{edge['op']}({args_text}) [{edge['type']}]-->")
    return 0


def _add_llm_run_options(run: argparse.ArgumentParser) -> None:
    """The options of ``sgr run --agent llm`` (the agent CLIs' --base-url, --api-key-env,
    --jobs and --site-ops are shared)."""
    from sgrgym.llm.options import add_llm_options
    from sgrgym.sgr.llm_limits import (
        DEFAULT_KEEP_RESULTS,
        DEFAULT_MAX_TURNS,
        DEFAULT_RESULT_CHARS,
    )

    group = add_llm_options(
        run,
        leave_out=("--base-url", "--api-key-env", "--jobs"),
        description="A chat model at --base-url (OpenAI-compatible) calls the tools (search, "
        "fetch, pdf, submit_answer; operate with --site-ops) with the schemas of `sgrgym mcp`. "
        "Every model call is recorded in --llm-cache and replayed from it (--llm-mode); "
        "--base-url, --api-key-env, --jobs and --site-ops are those above. --model works "
        "as --llm-model.",
    )
    group.add_argument(
        "--llm-max-turns",
        type=positive_int,
        default=DEFAULT_MAX_TURNS,
        metavar="N",
        help="model calls per episode before it ends as 'budget: model turns' "
        "(default: %(default)s)",
    )
    group.add_argument(
        "--llm-result-chars",
        type=positive_int,
        default=DEFAULT_RESULT_CHARS,
        metavar="N",
        help="characters of each tool result the model sees (default: %(default)s)",
    )
    group.add_argument(
        "--llm-keep-results",
        type=positive_int,
        default=DEFAULT_KEEP_RESULTS,
        metavar="N",
        help="tool results kept in full in the conversation; older ones are replaced by a "
        "note (default: %(default)s)",
    )


_STRICT_HELP = (
    "legacy rubrics: compare with the text rules only, without the default canonicalization "
    "of numbers, dates, case, punctuation and abbreviations (typed rubrics keep their rules)"
)
_FAMILIES_HELP = (
    'JSON object {"DOMAIN": "family", ...} adding to or overriding the shipped '
    "domain-to-source-family map"
)


def add_commands(areas: Areas) -> None:
    """Register ``sgrgym sgr ...`` on the top-level sub-parsers."""
    from sgrgym.sgr.registry import agent_help

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
    score.add_argument(
        "--out", type=output_file, metavar="FILE", help="also write the JSON report here"
    )
    score.add_argument("--per-task", action="store_true", help="add a line per task to the table")
    score.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    score.add_argument("--families", type=Path, metavar="FILE", help=_FAMILIES_HELP)
    score.set_defaults(handler=cmd_sgr_score)

    tasks = sgr_cmds.add_parser(
        "tasks",
        parents=[common],
        help="validate task files and show row keys",
        description="Validate task files and list each task with the row key the scorer uses.",
    )
    tasks.add_argument("--json", action="store_true", help="print JSON instead of a table")
    tasks.add_argument(
        "--update-pin",
        action="store_true",
        help="first re-pin the demo task files (tasks/sgr/manifest.json: sha256 of each)",
    )
    tasks.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    tasks.add_argument(
        "--stats",
        action="store_true",
        help="print dataset statistics instead (paper section 3.3: pairs per source family, "
        "cardinality, dependency types, state mechanisms per task)",
    )
    tasks.set_defaults(handler=cmd_sgr_tasks)

    compare = sgr_cmds.add_parser(
        "compare",
        help="compare runs (systems) in one table laid out like the paper's table 2",
        description="Re-score each run folder's answers.jsonl against the task files its "
        "run.json names (checked against their sha256), with one scorer and one "
        "canonicalization for all, and print one row per system: CG/GO Row-F1, Item-F1, "
        "P.O.A. and Overall Item-F1 (table 2), overall Item-F1/Row-F1/P.O.A. (table 3), and "
        "Item-F1 per source family and per cardinality bin.",
    )
    _rescored_runs(
        compare, "a folder written by sgr run (run.json, answers.jsonl); one table row each"
    )
    compare.set_defaults(handler=cmd_sgr_compare)

    difficulty = sgr_cmds.add_parser(
        "difficulty",
        help="label each task solved reliably / partial progress / no progress over runs of a "
        "baseline agent (paper section 3.2.4)",
        description="Difficulty calibration as SGR-Bench section 3.2.4 does it: re-score each "
        "run folder (several runs of one baseline agent, e.g. other seeds) and label each task "
        "variant 'solved reliably' (Item-F1 >= --solved in every run), 'no progress' (Item-F1 "
        "<= --progress in every run) or 'partial progress' (the tasks a benchmark keeps); then "
        "print the set's mean Item-F1 and Row-F1, its share of perfect variant-runs and its "
        "CG and GO means against the targets of a set at the paper's difficulty.",
    )
    _rescored_runs(
        difficulty, "a finished folder written by sgr run (all of them on the same tasks)"
    )
    difficulty.add_argument(
        "--solved",
        type=number_in(0, 1, low_open=True),
        default=1.0,
        metavar="F",
        help="Item-F1 that counts as solved (default 1.0: a perfect answer)",
    )
    difficulty.add_argument(
        "--progress",
        type=number_in(0, 1, high_open=True),
        default=0.0,
        metavar="F",
        help="Item-F1 at or below which a run made no progress (default 0.0)",
    )
    difficulty.set_defaults(handler=cmd_sgr_difficulty)

    build = sgr_cmds.add_parser(
        "build-packs",
        help="record the replica sites into the demo pack (checked against its pin)",
        description="Start each replica site on 127.0.0.1, record its states (its own list plus "
        "the tasks' reference states) into snapshots/<pack>/, and check the result against "
        "the pinned manifest.json.",
    )
    build.add_argument("--pack", default="demo", help="pack name (default: demo)")
    build.add_argument(
        "--out",
        type=Path,
        default=home_path("snapshots"),
        help="packs folder (default: the data home's snapshots/)",
    )
    build.add_argument("--sites", nargs="+", metavar="SITE", help="default: every site")
    build.add_argument(
        "--tasks",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="task files whose reference states to record (default: tasks/sgr)",
    )
    build.add_argument(
        "--pin",
        type=Path,
        metavar="FILE",
        help="pinned manifest to check the build against (default: the committed "
        "snapshots/<pack>/manifest.json, whatever --out says)",
    )
    build.add_argument(
        "--update-pin", action="store_true", help="accept a new manifest pin (writes --pin)"
    )
    build.set_defaults(handler=cmd_sgr_build_packs)

    run = sgr_cmds.add_parser(
        "run",
        help="run an agent on the tasks, offline, over a pack",
        description="Run one episode per task variant against the pack. The agent gets the "
        "task prompt (date, instruction, output schema, tools; no start URL) and the tools "
        "search (a web search engine over the sites' entry and about pages and distractor "
        "sites, never a filtered state), fetch, pdf, site operations and submit_answer. Every "
        "state a replica site can express is reachable: archived pages are served from the "
        "pack, others rendered by the pinned site app (a pack without apps answers a miss "
        "with a 404). Wall time and stall are enforced by a watchdog (appendix C); on an "
        "overrun the last submitted answer is scored. Writes answers (scorer predictions "
        "JSONL), trajectories with appendix G diagnostics, scores and a run card to --out. "
        "Interrupted runs resume.",
    )
    run.add_argument("--pack", default="demo", help="pack folder or name (default: demo)")
    run.add_argument(
        "--agent",
        required=True,
        type=_agent_name,
        metavar="AGENT",
        help=f"{agent_help()}, llm (a chat model calling the tools: see below), or cli:NAME "
        "(an agent CLI: see below)",
    )
    run.add_argument("--out", type=Path, required=True, metavar="DIR")
    run.add_argument(
        "--tasks",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="task files (default: tasks/sgr/<site>/constraint.jsonl, goal.jsonl)",
    )
    run.add_argument(
        "--task",
        dest="task_ids",
        nargs="+",
        metavar="ID",
        help="run only these task variants (e.g. cwe_001 cwe_001-g); the run card says so",
    )
    run.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="run only the first N task variants (after --task); the run card says so",
    )
    run.add_argument(
        "--shard",
        type=shard_spec,
        metavar="I/N",
        help="run only shard I of N: of the task variants in the order a run without --shard "
        "takes them (task-file order, after --task and --limit), the k-th (from 0) is in shard "
        "k mod N + 1. The run card records it; `sgrgym merge` joins the N finished shard "
        "folders into the folder of the run without --shard (docs/sharding.md). Not for "
        "cli:NAME agents",
    )
    run.add_argument(
        "--seed",
        type=SEED,
        default=0,
        help="seed of the random/explore agents, and sent with the LLM agent's requests",
    )
    run.add_argument(
        "--random-steps",
        type=positive_int,
        default=4,
        help="links the random agent follows / operations the explore agent makes",
    )
    add_budget_options(run)
    run.add_argument(
        "--no-render",
        action="store_true",
        help="serve only archived pages (a miss is a 404) instead of rendering them",
    )
    run.add_argument(
        "--current-date",
        type=iso_date,
        default=defaults.CURRENT_DATE,
        help="date shown to the agent (YYYY-MM-DD)",
    )
    run.add_argument("--json", action="store_true", help="print the score summary as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_options(run)
    from sgrgym.cli.agents import add_cli_run_options

    add_cli_run_options(run)
    _add_llm_run_options(run)
    run.set_defaults(handler=cmd_sgr_run)

    states = sgr_cmds.add_parser(
        "states",
        help="show a task's reference state path and which states the pack holds",
        description="Print the task's state graph along its reference path: states (URL, "
        "archived or not, answer-bearing or not) and operations typed control or data.",
    )
    states.add_argument("--task", required=True, metavar="ID")
    states.add_argument("--pack", default="demo")
    states.add_argument("--tasks", nargs="+", type=Path, metavar="FILE")
    states.add_argument("--json", action="store_true")
    states.set_defaults(handler=cmd_sgr_states)

    audit = sgr_cmds.add_parser(
        "audit",
        help="failure categories of runs (paper appendix G/H)",
        description="Count each run's episodes by their appendix G failure category (from "
        "the trajectories' diagnostics) and print a table like the paper's table 4: counts "
        "per category, failures, solved, and shares over failures. Intent rewriting is not "
        "detectable from states and answers and is not counted.",
    )
    audit.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="sgr run --out")
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(handler=cmd_sgr_audit)

    find = sgr_cmds.add_parser(
        "findability",
        help="rank of each task's site in web search; answer rows in the top results",
        description="Search each task's instruction with the agents' web search: report the "
        "rank of the first hit on the task's site, and how many reference rows the pages in "
        "the top --depth results show for the instruction and each of its sentences (must be "
        "0; exit 1 otherwise).",
    )
    find.add_argument("--pack", default="demo")
    find.add_argument("--tasks", nargs="+", type=Path, metavar="FILE")
    find.add_argument("--depth", type=positive_int, default=50, help="results checked per query")
    find.add_argument("--no-render", action="store_true", help="archived pages only")
    find.add_argument("--json", action="store_true")
    find.set_defaults(handler=cmd_sgr_findability)
