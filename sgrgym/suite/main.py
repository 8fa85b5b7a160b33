"""``sgrgym run``: both benchmarks, the calibration protocol and the report in one run folder.

Layout of ``OUT``:

- ``run.json``: the run card: the whole config and its sha256, the seeds, the models and
  endpoints, the sha256 of every manifest used (pack, passage store, embedding models, corpus,
  task files, prompts), and the environment (:mod:`sgrgym.runs.environment`);
- ``seeker/<agent>__<belief>/``: one SeekerGym run folder per agent and belief
  (:func:`sgrgym.seeker.run.run_seeker`: episodes, summary, its own card);
- ``calibration/``: the calibration protocol (:mod:`sgrgym.seeker.calibrate`);
- ``sgr/<agent>/``: one SGR run folder per agent (:func:`sgrgym.sgr.run.run_tasks`);
- ``baseline/``: the committed real-model baseline (``baselines/``) replayed from its recorded
  model calls and compared byte for byte with its committed results; ``baseline/replay.json``
  records the outcome (identical, or each difference, or why the replay failed): a mismatch
  never stops the run, ``sgrgym run`` reports it (exit 1) once everything else is written;
- ``results/``: the summary tables, recomputed from the records (:mod:`sgrgym.suite.results`);
- ``report/``: the HTML and Markdown report (:mod:`sgrgym.suite.report.html`);
- ``complete.json``: sha256 of every file above (``volatile``: the wall-clock timings and the
  LLM call logs, which differ between two runs), written last.

Every part is itself a resumable run folder, so a run killed at any point resumes where it
stopped, and a finished part is only re-summarized. The whole folder is locked while it runs.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.home import home_path
from sgrgym.core.io import write_atomic
from sgrgym.core.output import Progress, progress
from sgrgym.runs.environment import file_hashes
from sgrgym.runs.folder import COMPLETE, open_run_folder
from sgrgym.suite.config import LLMConfig, RunConfig
from sgrgym.suite.layout import (
    BASELINE,
    CALIBRATION,
    REPLAY_JSON,
    REPORT,
    RESULTS,
    SEEKER,
    SGR,
    pinned_files,
    seeker_part,
    sgr_part,
)

if TYPE_CHECKING:
    from sgrgym.llm.settings import LLMOptions
    from sgrgym.seeker.embed import Embedder
    from sgrgym.seeker.env import SeekerEnv
    from sgrgym.sgr.env import SgrEnv
    from sgrgym.sgr.make import SgrWorld
    from sgrgym.sgr.registry import AgentSetup
    from sgrgym.suite.baseline import RunCommand


class TopCard(BaseModel):
    """The card of a ``sgrgym run`` folder."""

    kind: str = "sgrgym run"
    config: dict[str, Any]
    config_sha256: str
    seeds: dict[str, Any]
    models: dict[str, str]
    endpoints: list[str]  # LLM endpoints (none for the built-in agents)
    manifests: dict[str, dict[str, str]]  # label -> path and sha256 of every file used
    tool_schemas_sha256: str | None


@dataclass
class _Seeker:
    env: SeekerEnv
    embedder: Embedder  # the live embedder behind the query cache
    corpus_file: Path
    store_dir: Path
    docs: list[str]
    query_cache: Path  # shared by the episodes and the calibration (each text embedded once)


def _open_seeker(config: RunConfig, query_cache: Path) -> _Seeker:
    from sgrgym.seeker.calibrate import open_embedder, prime_passage_vectors
    from sgrgym.seeker.make import make_env
    from sgrgym.seeker.paths import corpus_path, store_path

    cfg = config.seeker
    corpus_file, store_dir = corpus_path(cfg.corpus), store_path(cfg.corpus, cfg.model)
    # A text's vector depends on that text only (each is embedded alone, unpadded), so one
    # cache for every part changes no result, and a resumed run gets the same vectors.
    embedder = open_embedder(cfg.model, query_cache)
    env = make_env(
        cfg.corpus,
        model=cfg.model,
        theta=cfg.theta,
        horizon=cfg.steps,
        queries_per_step=cfg.queries_per_step,
        embedder=embedder,
    )
    prime_passage_vectors(embedder, env.corpus, env.store)  # passage-text queries: cached
    docs = cfg.docs or env.store.documents()
    unknown = sorted(set(docs) - set(env.store.documents()))
    if unknown:
        raise UserError(f"seeker.docs: no such documents in {store_dir}: {unknown[:5]}")
    return _Seeker(env, embedder, corpus_file, store_dir, list(docs), query_cache)


@dataclass
class _Sgr:
    world: SgrWorld
    setup: AgentSetup

    @property
    def env(self) -> SgrEnv:
        return self.world.env


def _open_sgr(config: RunConfig) -> _Sgr:
    from sgrgym.sgr.env import Budget
    from sgrgym.sgr.make import open_world
    from sgrgym.sgr.registry import AgentSetup, LLMAgentOptions

    cfg, llm = config.sgr, config.llm
    budget = Budget(
        max_tool_calls=cfg.max_tool_calls, max_wall_s=cfg.max_wall_s, stall_s=cfg.stall_s
    )
    world = open_world(
        cfg.pack, cfg.tasks, budget=budget, current_date=cfg.current_date, render=cfg.render
    )

    def llm_options() -> LLMAgentOptions:
        assert llm is not None
        return LLMAgentOptions(
            chat=_llm_options(llm),
            site_ops=llm.site_ops,
            max_turns=llm.max_turns,
            result_chars=llm.result_chars,
            keep_results=llm.keep_results,
        )

    setup = AgentSetup(
        references=world.references,
        task_ids=tuple(t.task_id for t in world.tasks),
        seed=cfg.seed,
        steps=cfg.random_steps,
        llm=llm_options if llm is not None else None,
    )
    return _Sgr(world, setup)


def _prompt_files() -> dict[str, Path]:
    root = Path(__file__).resolve().parents[1]
    files = sorted((root / "sgr" / "prompts").glob("*")) + sorted(
        (root / "seeker" / "prompts").glob("*")
    )
    return {f"prompt:{p.parent.parent.name}/{p.name}": p for p in files if p.is_file()}


def _manifests(seeker: _Seeker | None, sgr: _Sgr | None) -> dict[str, dict[str, str]]:
    """``{label: {"path", "sha256"}}`` of every manifest, task, prompt and schema file used."""
    files = _prompt_files()
    if seeker is not None:
        from sgrgym.seeker.embed import DEFAULT_MODELS_DIR, MODELS_MANIFEST

        files["corpus"] = seeker.corpus_file
        corpus_manifest = seeker.corpus_file.parent / "manifest.json"
        if corpus_manifest.is_file():
            files["corpus manifest"] = corpus_manifest
        files["passage store manifest"] = seeker.store_dir / "manifest.json"
        files["embedding models manifest"] = DEFAULT_MODELS_DIR / MODELS_MANIFEST
    if sgr is not None:
        files["pack manifest"] = sgr.env.snapshot.pack_dir / "manifest.json"
        for path in sgr.world.files:
            files[f"task file {path}"] = path
        task_manifest = home_path("tasks/sgr/manifest.json")
        if task_manifest.is_file():
            files["task manifest"] = task_manifest
    hashes = file_hashes(files)
    return {
        label: {"path": str(files[label]), "sha256": digest} for label, digest in hashes.items()
    }


def _tool_schemas_sha256() -> str:
    """The SGR tools offered to agents (their names: the schemas land with the LLM agents)."""
    from sgrgym.sgr.prompt import DEFAULT_TOOLS

    return sha256_bytes(canonical_json(list(DEFAULT_TOOLS)).encode())


def _card(config: RunConfig, seeker: _Seeker | None, sgr: _Sgr | None) -> TopCard:
    models = {}
    endpoints = []
    if seeker is not None:
        models["embedder"] = seeker.env.store.manifest.model_id
    if config.llm is not None:
        models["llm"] = config.llm.model
        endpoints.append(_llm_options(config.llm).base_url)
    return TopCard(
        config=config.card(),
        config_sha256=config.sha256(),
        seeds={
            "seeker": config.seeker.seeds,
            "calibration_split_seed": config.calibration.seed,
            "calibration_estimator_seeds": config.calibration.seeds,
            "sgr": config.sgr.seed,
        },
        models=models,
        endpoints=endpoints,
        manifests=_manifests(seeker, sgr),
        tool_schemas_sha256=_tool_schemas_sha256() if sgr is not None else None,
    )


def _check_names(config: RunConfig) -> None:
    """Every agent, belief and estimator named in the config exists (before anything runs)."""
    from sgrgym.seeker.agents import make_agent as seeker_agent
    from sgrgym.seeker.belief import belief_renderer
    from sgrgym.sgr.registry import AgentSetup, make_agent

    for key, names in (
        ("seeker.agents", config.seeker.agents),
        ("seeker.beliefs", config.seeker.beliefs),
        ("sgr.agents", config.sgr.agents),
        ("calibration.estimators", config.calibration.estimators),
    ):
        if len(set(names)) != len(names):
            raise UserError(f"{key}: a name is given twice ({names})")
    for key, check in (("seeker.agents", seeker_agent), ("seeker.beliefs", belief_renderer)):
        for name in getattr(config.seeker, key.split(".")[1]):
            try:
                check(name)
            except UserError as exc:
                raise UserError(f"{key}: {exc}") from None
    from sgrgym.seeker.estimators import ESTIMATORS

    for name in config.calibration.estimators:
        if name not in ESTIMATORS:
            raise UserError(f"calibration.estimators: {ESTIMATORS.unknown(name)}")
    for name in config.sgr.agents:  # each can be built (a model agent comes from [llm])
        try:
            make_agent(name, AgentSetup(seed=config.sgr.seed))
        except UserError as exc:
            raise UserError(f"sgr.agents: {exc}") from None


def _run_seeker(out: Path, config: RunConfig, seeker: _Seeker, bar: Progress | None) -> None:
    """Every SeekerGym agent (``[seeker] agents``, then ``llm`` with an ``[llm]`` table) over
    every belief (``seeker/<agent>__<belief>``)."""
    from sgrgym.seeker.agents import AgentSetup, make_agent
    from sgrgym.seeker.belief import belief_renderer
    from sgrgym.seeker.llm_agent import LLMAgentSettings, LLMSeekerOptions
    from sgrgym.seeker.run import RecordingAgent, run_agent

    cfg, llm = config.seeker, config.llm

    def llm_options() -> LLMSeekerOptions:
        assert llm is not None
        chat = _llm_options(llm)
        settings = LLMAgentSettings(
            queries_per_step=cfg.queries_per_step,
            seed=chat.seed,
            sampling=chat.sampling(),
        )
        return LLMSeekerOptions(chat=chat, settings=settings)

    for agent_name in config.seeker_agents():
        for belief in cfg.beliefs:
            render = belief_renderer(belief)
            setup = AgentSetup(
                per_step=cfg.queries_per_step,
                render=render,
                embedder=cfg.model,
                load_embedder=lambda: seeker.embedder,
                llm=llm_options if llm is not None else None,
            )
            agent = make_agent(agent_name, setup)
            model = f" ({llm.model})" if isinstance(agent, RecordingAgent) and llm else ""
            progress(f"SeekerGym: agent {agent_name}{model}, belief {belief}")
            part = out / seeker_part(agent_name, belief)
            run_agent(
                seeker.env,
                agent,
                render=render,
                belief=belief,
                doc_ids=seeker.docs,
                seeds=cfg.seeds,
                out_dir=part,
                progress=bar,
            )


def _llm_options(cfg: LLMConfig) -> LLMOptions:
    """The chat client's settings from the ``[llm]`` table (as ``--llm-*`` options give them)."""
    from sgrgym.llm.options import resolve_base_url
    from sgrgym.llm.settings import LLMOptions

    if cfg.cache is None:
        raise UserError("llm.cache: name the file where the model calls are recorded")
    base_url = resolve_base_url(cfg.model, cfg.base_url)
    if not base_url:
        raise UserError(f"llm.base_url: needed for the model {cfg.model!r} (not local:NAME)")
    return LLMOptions(
        model=cfg.model,
        base_url=base_url,
        api_key_env=cfg.api_key_env,
        cache=cfg.cache,
        mode=cfg.mode,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=cfg.max_tokens,
        seed=cfg.seed,
    )


def _run_calibration(out: Path, config: RunConfig, seeker: _Seeker, bar: Progress | None) -> None:
    from sgrgym.seeker.calibrate import CalibrateOptions, calibration_folder, run_calibration

    cfg = config.calibration
    progress(f"Calibration: {', '.join(cfg.estimators)}")
    options = CalibrateOptions(
        corpus_file=seeker.corpus_file,
        store_dir=seeker.store_dir,
        model=config.seeker.model,
        estimators=tuple(cfg.estimators),
        alpha=cfg.alpha,
        splits=cfg.splits,
        seeds=cfg.seeds,
        seed=cfg.seed,
        stopping=cfg.stopping,
        stop_deltas=tuple(cfg.stop_deltas),
        agent=cfg.agent,
        queries_per_step=config.seeker.queries_per_step,
        steps=cfg.steps,
        theta=config.seeker.theta,
        out=out / CALIBRATION,
        query_cache=seeker.query_cache,
    )
    with calibration_folder(options) as finish:
        run_calibration(options, bar)
        finish()


def _run_sgr(out: Path, config: RunConfig, sgr: _Sgr, bar: Progress | None) -> None:
    from sgrgym.sgr.registry import make_agent
    from sgrgym.sgr.run import ModelAgent, run_agent

    for name in config.sgr_agents():
        agent = make_agent(name, sgr.setup)
        model = f" ({config.llm.model})" if isinstance(agent, ModelAgent) and config.llm else ""
        progress(f"SGR: agent {name}{model}")
        run_agent(sgr.world, agent, out / sgr_part(name), seed=config.sgr.seed, progress=bar)


def _run_baseline(out: Path, config: RunConfig, run_command: RunCommand) -> None:
    """Replay the committed real-model baseline into ``OUT/baseline`` (seconds, no server),
    compare its results with the committed ones and record the outcome in
    ``OUT/baseline/replay.json``. A difference, or a replay that fails outright (a request
    missing from the recorded cache, a changed pin), is recorded, not raised: the results and
    the report are written all the same, and ``sgrgym run`` reports it at the end."""
    import shutil

    from sgrgym.suite.baseline import ReplayStatus, load, replay, replay_status

    folder = config.baseline.folder  # a relative folder is read in the data home
    folder = folder if folder.is_absolute() else home_path(folder)
    target, marker = out / BASELINE, out / BASELINE / REPLAY_JSON
    if marker.is_file():
        return  # replayed and compared before this run was resumed
    if target.exists():
        shutil.rmtree(target)  # a replay cut short: start it again
    progress(f"Baseline: replaying {folder} (recorded model calls, offline)")
    try:
        status = replay_status(folder, replay(folder, target, run_command))
    except UserError as exc:
        try:
            runs = [run.name for run in load(folder).runs]
        except UserError:
            runs = []
        status = ReplayStatus(baseline=str(folder), runs=runs, identical=False, error=str(exc))
    if not status.identical:
        what = "failed" if status.error is not None else "differs from the committed results"
        progress(
            f"Baseline: the replay {what}, recorded in {marker}; the results and the report "
            "are written first"
        )
    target.mkdir(parents=True, exist_ok=True)
    write_atomic(marker, canonical_json(status.model_dump(mode="json")))


def run_all(
    out: Path,
    config: RunConfig,
    run_command: RunCommand,
    show_progress: bool = True,
    report: bool = True,
) -> dict[str, Path]:
    """Run everything ``config`` names into ``out``; returns where each part is.
    ``run_command`` runs a recorded ``sgrgym`` command (the baseline replay's)."""
    from sgrgym.core.output import progress_bar
    from sgrgym.suite.results import write_results

    if report:
        from sgrgym.suite.report.html import require_report_extra

        require_report_extra()
    _check_names(config)
    bar = progress_bar if show_progress else None
    need_seeker = config.seeker.enabled or config.calibration.enabled
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sgrgym-run-")))
        seeker = _open_seeker(config, scratch / "query-cache.sqlite") if need_seeker else None
        sgr = _open_sgr(config) if config.sgr.enabled else None
        if sgr is not None:
            stack.enter_context(sgr.env.snapshot)
        card = _card(config, seeker, sgr)
        with open_run_folder(out, card, finals=(RESULTS, REPORT)) as folder:
            folder.begin()  # the parts, results and report are written into it directly
            if seeker is not None and config.seeker.enabled:
                _run_seeker(out, config, seeker, bar)
            if seeker is not None and config.calibration.enabled:
                _run_calibration(out, config, seeker, bar)
            if sgr is not None:
                _run_sgr(out, config, sgr, bar)
            if config.baseline.enabled:
                _run_baseline(out, config, run_command)
            progress("Results: summary tables from the records")
            write_results(out, config)
            if report:
                from sgrgym.suite.report.html import write_report

                progress("Report: HTML, Markdown and figures")
                write_report([out], out / REPORT)
            files, volatile = pinned_files(out)
            folder.write_final(COMPLETE, canonical_json({"files": files, "volatile": volatile}))
    return where(out, config, report)


def where(out: Path, config: RunConfig, report: bool) -> dict[str, Path]:
    """What the run folder holds, part by part."""
    places: dict[str, Path] = {"run card": out / "run.json"}
    if config.seeker.enabled:
        places["SeekerGym episodes"] = out / SEEKER
    if config.calibration.enabled:
        places["calibration"] = out / CALIBRATION
    if config.sgr.enabled:
        places["SGR answers and trajectories"] = out / SGR
    if config.baseline.enabled:
        places["real-model baseline, replayed"] = out / BASELINE
    places["summary tables"] = out / RESULTS
    if report:
        places["report (HTML)"] = out / REPORT / "index.html"
        places["report (Markdown)"] = out / REPORT / "report.md"
    places["completion marker"] = out / COMPLETE
    return places
