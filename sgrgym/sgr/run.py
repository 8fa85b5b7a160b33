"""Run an agent over SGR tasks on a pack: answers, trajectories, scores; resumable, deterministic.

Output folder:

- ``run.json``: the run card (pack pin, agent, seed, budget, date, task files with sha256,
  sgrgym version); a folder holding another run's card is refused, and so is a resume after a
  task file changed (its sha256 is in the card);
- ``answers.jsonl``: the scorer's predictions (``{"task_id", "answer"}``), one line per
  episode, appended as episodes end, so an interrupted run resumes where it stopped;
- ``trajectories.jsonl``: per episode, how it ended (``ended_by``: answer, budget: wall,
  budget: stall, budget: tool calls, budget: model turns (LLM agent), agent error) and which
  answer was scored (``answer_from``: final, submitted, none), tool calls, the rank of the
  task's site in the first search, every step (``match``: exact, rule, rendered, miss,
  error) and the appendix G diagnostics;
- ``scores.json``: the scorer's report over all tasks;
- an agent's own results (:class:`ReportingAgent`): the LLM agent adds each episode's model
  calls, tokens and cost to its trajectory record (``llm``) and writes the run's totals
  (``llm_totals.json``), both results like the others (identical on a replay);
- ``timings.jsonl``: wall seconds per episode (the only file that differs between two runs);
- ``complete.json``: written last, the sha256 of the results; absent while the run is going.

The folder is locked while the run goes (a second process is refused). A shard of a run
(``shard``: :mod:`sgrgym.core.shard`) runs its slice of the task variants into a folder of
its own, whose card records the shard; ``sgrgym merge`` joins the finished shards
(:mod:`sgrgym.sgr.merge`).
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.home import recorded
from sgrgym.core.output import Progress
from sgrgym.core.shard import Shard
from sgrgym.core.version import __version__
from sgrgym.runs.folder import RunFolder, open_run_folder
from sgrgym.runs.parallel import RayExecutor, ordered_map, remote_map
from sgrgym.sgr.agents import Agent
from sgrgym.sgr.diagnostics import diagnose
from sgrgym.sgr.env import Budget, Episode, SgrEnv, TaskObservation
from sgrgym.sgr.prompt import PROMPT_TEMPLATE, template_sha256
from sgrgym.sgr.records import AnswerRecord, TrajectoryRecord
from sgrgym.sgr.render import RenderedSite
from sgrgym.sgr.score import (
    ScoreReport,
    TaskScore,
    load_predictions,
    score_answer,
    score_tasks,
)
from sgrgym.sgr.sites.model import SiteModel
from sgrgym.sgr.sites.reference import reference_of
from sgrgym.sgr.tasks import ScoringTask
from sgrgym.sgr.watchdog import watch_episode

if TYPE_CHECKING:
    from sgrgym.sgr.make import SgrWorld

ANSWERS = "answers.jsonl"
TRAJECTORIES = "trajectories.jsonl"
TIMINGS = "timings.jsonl"
SCORES = "scores.json"


class RunCard(BaseModel):
    pack: str
    pack_sha256: str
    agent: str
    seed: int
    budget: Budget
    current_date: str
    task_files: dict[str, str]  # path -> sha256
    task_ids: list[str] | None = None  # the variants run (--task/--limit); None: every one
    sgrgym_version: str = __version__
    prompt_template: str = PROMPT_TEMPLATE
    prompt_sha256: str = ""
    rendered_sites: dict[str, RenderedSite] = {}  # site -> app version, data file sha256s


def run_card(
    env: SgrEnv,
    agent: Agent | str,
    seed: int,
    task_files: Sequence[Path],
    task_ids: Sequence[str] | None = None,
) -> RunCard:
    return RunCard(
        pack=env.snapshot.manifest.pack,
        pack_sha256=env.snapshot.pin,
        agent=agent if isinstance(agent, str) else agent.name,
        seed=seed,
        budget=env.budget,
        current_date=env.current_date,
        task_files={recorded(p): sha256_file(p)[0] for p in task_files},
        task_ids=None if task_ids is None else list(task_ids),
        prompt_sha256=template_sha256(),
        rendered_sites=env.renderer.card() if env.renderer else {},
    )


def answered(folder: RunFolder) -> set[str]:
    """The task ids answered in ``folder``; the other files keep only their records."""
    done = {r["task_id"] for r in folder.records(ANSWERS) if isinstance(r, dict)}
    for name in (TRAJECTORIES, TIMINGS):
        folder.keep(name, lambda r: isinstance(r, dict) and r.get("task_id") in done)
    return done


def record_episode(
    folder: RunFolder,
    task: ScoringTask,
    sites: dict[str, SiteModel],
    episode: Episode,
    extra: dict[str, object] | None = None,
) -> TaskScore:
    """Score one episode, label it (appendix G) and append its records (answer last)."""
    reference = reference_of(task)
    model = sites.get(reference.site) if reference else None
    score = score_answer(task, episode.answer)
    diagnostics = diagnose(task, reference, model, episode.trajectory, score, episode.answer)
    trajectory = TrajectoryRecord(
        task_id=task.task_id,
        ended_by=episode.ended_by,
        answer_from=episode.answer_from,
        error=episode.error,
        tool_calls=episode.tool_calls,
        submitted_answers=episode.submitted_answers,
        target_site_rank=episode.target_site_rank,
        steps=[asdict(step) for step in episode.trajectory],
        diagnostics=diagnostics.model_dump(),
        **(extra or {}),
    )
    folder.append(TRAJECTORIES, trajectory.data())
    folder.append(TIMINGS, {"task_id": task.task_id, "wall_s": episode.wall_s})
    folder.append(ANSWERS, AnswerRecord(task_id=task.task_id, answer=episode.answer).model_dump())
    return score


def shard_tasks(tasks: Sequence[ScoringTask], shard: Shard | None) -> list[ScoringTask]:
    """The task variants of ``shard`` of a run of ``tasks`` (all of them without a shard); a
    shard with no variant is refused."""
    if shard is None:
        return list(tasks)
    if len(tasks) < shard.count:
        raise UserError(
            f"--shard {shard}: the run has {len(tasks)} task variant(s), fewer than "
            f"{shard.count} shards; split it in at most {len(tasks)}"
        )
    return shard.select(tasks)


def finish_run(
    folder: RunFolder, tasks: Sequence[ScoringTask], extra_finals: Sequence[str] = ()
) -> ScoreReport:
    """Score every task from the folder's answers and mark the run complete (the results:
    answers, trajectories, scores and ``extra_finals``, already written)."""
    report = score_tasks(tasks, load_predictions(folder.path / ANSWERS))
    folder.write_final(SCORES, report.model_dump_json(indent=2) + "\n")
    folder.complete((ANSWERS, TRAJECTORIES, SCORES, *extra_finals))
    return report


@runtime_checkable
class ReportingAgent(Protocol):
    """An agent with records of its own: per episode (added to the trajectory record) and per
    run (final results files, e.g. the LLM agent's token and cost totals)."""

    name: str
    final_files: tuple[str, ...]

    def act(self, env: SgrEnv, obs: TaskObservation) -> str: ...

    def episode_extra(self, task_id: str) -> dict[str, object]: ...

    def finals(self, trajectories: list[Any]) -> dict[str, str]: ...


@runtime_checkable
class ModelAgent(Protocol):
    """An agent with a model behind it: its settings go into the run card, it writes a log of
    its calls (the cache mode and hits: a log, not a result) and holds a client to close."""

    name: str

    def act(self, env: SgrEnv, obs: TaskObservation) -> str: ...

    def run_card(self, card: RunCard) -> RunCard: ...

    def write_log(self, out_dir: Path) -> None: ...

    def close(self) -> None: ...

    def summary(self, out_dir: Path) -> str:
        """One line on what the model did in the run in ``out_dir`` (calls, tokens, cost)."""
        ...


@runtime_checkable
class TaskRunner(Protocol):
    """An agent that runs whole tasks itself, such as an agent CLI in its own process: it is
    given the world, not the tools."""

    @property
    def name(self) -> str: ...

    def run_world(
        self, world: SgrWorld, out_dir: Path, *, progress: Progress | None, jobs: int
    ) -> ScoreReport: ...


def run_agent(
    world: SgrWorld,
    agent: Agent | TaskRunner,
    out_dir: Path,
    *,
    seed: int,
    progress: Progress | None = None,
    jobs: int = 1,
    shard: Shard | None = None,
    remote: RemoteSgr | None = None,
) -> ScoreReport:
    """Run any registered agent on every task of ``world`` (of its ``shard``, if one is
    given) not yet answered in ``out_dir``: a task runner runs them itself; a model agent's
    settings go into the card and its log is written and its client closed however the run
    ends. The world stays open (the caller's). With ``remote``, the episodes run on a Ray
    cluster (:func:`run_tasks`)."""
    if isinstance(agent, TaskRunner):
        if remote is not None:
            raise UserError(
                f"--executor ray: {agent.name} runs its task variants itself, in processes of "
                "its own; run it with --executor local (--jobs for sessions at once)"
            )
        if shard is not None:
            raise UserError(
                f"--shard: {agent.name} runs its task variants itself and cannot be sharded; "
                "split its runs with --task instead"
            )
        return agent.run_world(world, out_dir, progress=progress, jobs=jobs)
    card = run_card(world.env, agent, seed, world.files, world.selection)
    model = agent if isinstance(agent, ModelAgent) else None
    try:
        tasks = shard_tasks(world.tasks, shard)
        if model is not None:
            card = model.run_card(card)
        return run_tasks(
            world.env,
            agent,
            tasks,
            out_dir,
            card,
            progress=progress,
            jobs=jobs,
            shard=shard,
            remote=remote,
        )
    finally:
        if model is not None:
            if out_dir.is_dir():
                model.write_log(out_dir)
            model.close()


def _episode(env: SgrEnv, agent: Agent, task: ScoringTask) -> tuple[Episode, dict[str, object]]:
    reference = reference_of(task)
    model = env.sites.get(reference.site) if reference else None
    obs = env.reset(task, model.host if model else "")
    episode = watch_episode(env, agent, obs)
    extra = agent.episode_extra(task.task_id) if isinstance(agent, ReportingAgent) else {}
    return episode, extra


WorkerState = tuple[SgrEnv, Agent]


class RemoteSgr(NamedTuple):
    """How a run's episodes go to a Ray cluster: the ``executor`` and the ``setup`` each
    worker process runs once to open the same world and make the same agent (picklable; from
    the data home, the files verified as on the driver)."""

    executor: RayExecutor
    setup: Callable[[], WorkerState]


def remote_episode(state: WorkerState, task: ScoringTask) -> tuple[Episode, dict[str, object]]:
    """One episode on a Ray worker, in the environment and with the agent of its ``state``."""
    env, agent = state
    return _episode(env, agent, task)


def run_tasks(
    env: SgrEnv,
    agent: Agent,
    tasks: Sequence[ScoringTask],
    out_dir: Path,
    card: RunCard,
    *,
    progress: Progress | None = None,
    jobs: int = 1,
    shard: Shard | None = None,
    remote: RemoteSgr | None = None,
) -> ScoreReport:
    """Run ``agent`` on every task not yet answered in ``out_dir``, then score them all
    (``tasks``: the shard's, for a ``shard`` of the run ``card``).

    The folder is locked, its card compared and its records repaired by
    :func:`sgrgym.runs.folder.open_run_folder`; answers are written last for each episode, so
    the answered task ids decide what is done and the other files keep only those.

    ``jobs`` episodes run at once, each in its own environment (:meth:`SgrEnv.twin`); records
    are appended in task order, so the results files do not depend on ``jobs`` (only
    ``timings.jsonl`` does). With ``remote``, the episodes are Ray tasks instead, each worker
    process with its own environment and agent (``remote.setup``), their results appended by
    this process in the same order: the same files (an agent's call log aside: the workers'
    calls are in the trajectory records, the driver's log has none).
    """
    extra_finals = agent.final_files if isinstance(agent, ReportingAgent) else ()
    with open_run_folder(out_dir, card, finals=(SCORES, *extra_finals), shard=shard) as folder:
        done = answered(folder)
        pending = [(n, t) for n, t in enumerate(tasks, start=1) if t.task_id not in done]
        envs: queue.SimpleQueue[SgrEnv] = queue.SimpleQueue()
        twins = [env.twin() for _ in range(min(jobs, len(pending)) - 1)] if remote is None else []
        for each in (env, *twins):
            envs.put(each)

        def job(task: ScoringTask) -> tuple[Episode, dict[str, object]]:
            own = envs.get()
            try:
                return _episode(own, agent, task)
            finally:
                envs.put(own)

        todo = [t for _, t in pending]
        try:
            with closing(
                ordered_map(job, todo, jobs)
                if remote is None
                else remote_map(remote.executor, remote.setup, remote_episode, todo)
            ) as results:
                for (number, task), (episode, extra) in zip(pending, results, strict=True):
                    score = record_episode(folder, task, env.sites, episode, extra)
                    if progress:
                        progress(number, len(tasks), f"{task.task_id} item_f1={score.item_f1:.2f}")
        finally:
            for twin in twins:
                twin.close()
        if isinstance(agent, ReportingAgent):
            for name, text in agent.finals(folder.records(TRAJECTORIES)).items():
                folder.write_final(name, text)
        report = finish_run(folder, tasks, extra_finals)
    return report
