"""Run a SeekerGym agent over a corpus: episodes, completeness metrics, JSON summary.

Metrics (paper sections 2.3, 3.1 and C.4): completeness per step and final, mean final
completeness overall and per topic cluster, query diversity (1 - max cosine to the
episode's earlier queries) and the belief's context length per step (tokens ≈ chars / 4).
``episodes.jsonl`` gets one line per (document, seed) as episodes end; ``summary.json``
the aggregates; ``run.json`` the run card and ``complete.json`` the end marker. An interrupted
run resumes. Same inputs and seeds give byte-identical files, with any ``jobs``: episodes run
in parallel threads (each on its own copy of the env's episode state) and are written in the
order a single job writes them.

An agent that keeps facts about its episodes (:class:`RecordingAgent`: the LLM agent's calls,
tokens and cost) adds them to each episode record (``llm``), its own part to the run card and
the run's totals (the sum of the episodes') to the summary. An episode that stops early
(calibrated stopping) keeps its final completeness for the remaining steps of the curves.

A shard of a run (``shard``: :mod:`sgrgym.core.shard`) runs its slice of the episodes
(:func:`episode_order`) into a folder of its own, whose card records the shard; ``sgrgym
merge`` joins the finished shards (:mod:`sgrgym.seeker.merge`).
"""

from __future__ import annotations

import copy
import hashlib
import random
import threading
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.numbers import fixed
from sgrgym.core.output import Progress
from sgrgym.core.shard import Shard
from sgrgym.core.version import __version__
from sgrgym.llm.usage import LLMTotals, add_totals
from sgrgym.runs.folder import RunFolder, open_run_folder
from sgrgym.runs.parallel import RayExecutor, ordered_map, remote_map
from sgrgym.seeker.agents import SeekerAgent
from sgrgym.seeker.belief import Renderer
from sgrgym.seeker.corpus import corpus_sha256
from sgrgym.seeker.env import EpisodeState, SeekerEnv
from sgrgym.seeker.records import EpisodeRecord, EpisodeStep, episode_record
from sgrgym.seeker.retrieval import query_diversity
from sgrgym.seeker.store import theta_note

if TYPE_CHECKING:
    from sgrgym.seeker.embed import Embedder


class SeekerSummary(BaseModel):
    corpus: str
    agent: str
    belief: str
    steps: int
    seeds: int
    theta: float
    theta_note: str = ""  # whether θ is the store's pinned (selected) θ or an override
    episodes: int
    final_completeness: float
    final_completeness_by_topic: dict[str, float]
    completeness_by_step: list[float]
    query_diversity: float
    near_theta: int = 0  # retrieval decisions within 1e-5 of θ (may flip on another processor)
    belief_tokens_by_step: list[float]
    llm: LLMTotals | None = None  # an LLM agent's run totals (the sum of its episodes')


@runtime_checkable
class RecordingAgent(Protocol):
    """An agent with its own run-card part and a record of each episode (an LLM agent)."""

    name: str

    @property
    def embedder(self) -> Embedder | None:
        """Its query vectors, recorded beside its model calls."""
        ...

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]: ...

    def card(self) -> dict[str, Any]: ...

    def episode_llm(self, state: EpisodeState) -> dict[str, Any]: ...

    def attach(self, env: SeekerEnv) -> SeekerEnv:
        """The env this agent runs in: ``env`` embedding through the agent's recorded query
        vectors (a replay embeds nothing), with its stop rule if it has one."""
        ...

    def write_log(self, out_dir: Path) -> None: ...

    def close(self) -> None: ...


def episode_seed(seed: int, doc_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def run_episode(
    env: SeekerEnv, agent: SeekerAgent, render: Renderer, doc_id: str, seed: int
) -> EpisodeRecord:
    """One episode to the horizon; returns its record (steps, completeness, diversity)."""
    env.reset(doc_id, seed)
    state = env.state
    assert state is not None
    rng = random.Random(episode_seed(seed, doc_id))
    belief_tokens: list[int] = []
    while not state.done:
        belief = render(state)
        belief_tokens.append(len(belief) // 4)
        env.step(agent.queries(state, belief, rng))
    vectors = [v for v in state.query_vectors if len(v)]
    diversity = query_diversity(np.concatenate(vectors)) if vectors else []
    return EpisodeRecord(
        doc_id=doc_id,
        topic=state.document.topic,
        seed=seed,
        passages=len(state.document.passages),
        completeness=[fixed(r.completeness, 6) for r in state.history],
        final_completeness=fixed(state.completeness, 6),
        retrieved=state.retrieved,
        steps=[
            EpisodeStep(queries=r.queries, per_query=r.per_query, new=r.new) for r in state.history
        ],
        query_diversity=[fixed(d, 6) for d in diversity],
        near_theta=state.near_theta,
        belief_tokens=belief_tokens,
        llm=agent.episode_llm(state) if isinstance(agent, RecordingAgent) else None,
    )


def _at(values: Sequence[Any], step: int) -> Any:
    """The value at ``step``, or the last one for an episode that stopped before it."""
    return values[min(step, len(values) - 1)]


def summary_text(summary: SeekerSummary) -> str:
    """The bytes of ``summary.json`` (no ``"llm": null`` for agents without a model)."""
    return summary.model_dump_json(indent=2, exclude_none=True) + "\n"


def summarize(
    episodes: Sequence[EpisodeRecord],
    *,
    corpus: str,
    agent: str,
    belief: str,
    steps: int,
    seeds: int,
    theta: float,
) -> SeekerSummary:
    topics: dict[str, list[float]] = {}
    for episode in episodes:
        topics.setdefault(episode.topic, []).append(episode.final_completeness)
    diversity = [d for e in episodes for d in e.query_diversity[1:]]
    return SeekerSummary(
        corpus=corpus,
        agent=agent,
        belief=belief,
        steps=steps,
        seeds=seeds,
        theta=theta,
        episodes=len(episodes),
        final_completeness=fixed(mean(e.final_completeness for e in episodes), 6),
        final_completeness_by_topic={t: fixed(mean(v), 6) for t, v in sorted(topics.items())},
        completeness_by_step=[
            fixed(mean(_at(e.completeness, i) for e in episodes), 6) for i in range(steps)
        ],
        query_diversity=fixed(mean(diversity), 6) if diversity else 1.0,
        near_theta=sum(e.near_theta for e in episodes),
        belief_tokens_by_step=[
            fixed(mean(_at(e.belief_tokens, i) for e in episodes), 3) for i in range(steps)
        ],
        llm=add_totals([LLMTotals(**e.llm["totals"]) for e in episodes if e.llm is not None])
        if any(e.llm is not None for e in episodes)
        else None,
    )


class SeekerRunCard(BaseModel):
    """What a ``seeker run`` folder holds: the same card on a resume, or the folder is refused."""

    corpus: str
    corpus_sha256: str
    store_vectors_sha256: str
    model_id: str
    agent: str
    belief: str
    steps: int
    seeds: int
    theta: float
    docs: list[str]
    sgrgym_version: str = __version__


class SeekerLLMRunCard(SeekerRunCard):
    """The card of a run whose agent records its episodes: the agent's part (model, sampling,
    seed rule, prompt and price sha256), never the cache mode or the cache's path."""

    llm: dict[str, Any]


EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"


def seeker_run_card(
    env: SeekerEnv, agent: SeekerAgent, belief: str, doc_ids: Sequence[str], seeds: int
) -> SeekerRunCard:
    card = SeekerRunCard(
        corpus=env.corpus.name,
        corpus_sha256=corpus_sha256(env.corpus),
        store_vectors_sha256=env.store.manifest.vectors_sha256,
        model_id=env.store.manifest.model_id,
        agent=agent.name,
        belief=belief,
        steps=env.horizon,
        seeds=seeds,
        theta=env.theta,
        docs=list(doc_ids),
    )
    if isinstance(agent, RecordingAgent):
        return SeekerLLMRunCard(**card.model_dump(), llm=agent.card())
    return card


def episode_order(doc_ids: Sequence[str], seeds: int) -> list[tuple[int, str]]:
    """The (seed, document) of every episode of a run, in the order the run takes them: seed
    by seed, each over every document in the given order."""
    return [(s, d) for s in range(seeds) for d in doc_ids]


def finish_seeker(
    folder: RunFolder, episodes: Sequence[EpisodeRecord], card: SeekerRunCard, note: str
) -> SeekerSummary:
    """The run's summary from its ``episodes`` (``note``: the θ note), written with the
    completion marker: how every run of ``card`` ends, and a run joined from its shards."""
    summary = summarize(
        episodes,
        corpus=card.corpus,
        agent=card.agent,
        belief=card.belief,
        steps=card.steps,
        seeds=card.seeds,
        theta=card.theta,
    ).model_copy(update={"theta_note": note})
    folder.write_final(SUMMARY, summary_text(summary))
    folder.complete((EPISODES, SUMMARY))
    return summary


WorkerState = tuple[SeekerEnv, SeekerAgent, Renderer]


class RemoteSeeker(NamedTuple):
    """How a run's episodes go to a Ray cluster: the ``executor`` and the ``setup`` each
    worker process runs once to open the same env (attached to the agent, for an agent with a
    model) and make the same agent and belief renderer (picklable; from the data home, the
    files verified as on the driver)."""

    executor: RayExecutor
    setup: Callable[[], WorkerState]


def remote_episode(state: WorkerState, item: tuple[int, str]) -> EpisodeRecord:
    """One (seed, document) episode on a Ray worker, with the env, agent and renderer of its
    ``state``."""
    env, agent, render = state
    return run_episode(env, agent, render, item[1], item[0])


def _episodes(
    env: SeekerEnv,
    agent: SeekerAgent,
    render: Renderer,
    todo: list[tuple[int, str]],
    jobs: int,
    remote: RemoteSeeker | None = None,
) -> Generator[EpisodeRecord, None, None]:
    """The episodes of ``todo`` in order, run by ``jobs`` threads, each on its own shallow copy
    of ``env`` (the corpus, store, embedder and stop rule are shared and thread-safe; only the
    episode state is per copy); with ``remote``, as Ray tasks."""
    if remote is not None:
        return remote_map(remote.executor, remote.setup, remote_episode, todo)
    local = threading.local()

    def one(item: tuple[int, str]) -> EpisodeRecord:
        if not hasattr(local, "env"):
            local.env = copy.copy(env)
        return run_episode(local.env, agent, render, item[1], item[0])

    return ordered_map(one, todo, jobs)


def run_agent(
    env: SeekerEnv,
    agent: SeekerAgent,
    *,
    render: Renderer,
    belief: str,
    doc_ids: Sequence[str],
    seeds: int,
    out_dir: Path,
    progress: Progress | None = None,
    jobs: int = 1,
    shard: Shard | None = None,
    remote: RemoteSeeker | None = None,
) -> SeekerSummary:
    """:func:`run_seeker` for any registered agent: an agent with a model runs in the env it
    attaches to, writes its call log (a log, not a result: under ``remote``, the workers'
    calls are in the episode records, not in the driver's log) and is closed however the run
    ends."""
    try:
        return run_seeker(
            agent.attach(env) if isinstance(agent, RecordingAgent) else env,
            agent,
            render=render,
            belief=belief,
            doc_ids=doc_ids,
            seeds=seeds,
            out_dir=out_dir,
            progress=progress,
            jobs=jobs,
            shard=shard,
            remote=remote,
        )
    finally:
        if isinstance(agent, RecordingAgent):
            if out_dir.is_dir():
                agent.write_log(out_dir)
            agent.close()


def run_seeker(
    env: SeekerEnv,
    agent: SeekerAgent,
    *,
    render: Renderer,
    belief: str,
    doc_ids: Sequence[str],
    seeds: int,
    out_dir: Path,
    progress: Progress | None = None,
    jobs: int = 1,
    shard: Shard | None = None,
    remote: RemoteSeeker | None = None,
) -> SeekerSummary:
    """Every (document, seed) episode (of the ``shard`` of the run, if one is given); writes
    episodes.jsonl and summary.json to ``out_dir``.

    The folder is a run folder (:mod:`sgrgym.runs.folder`): card, lock, resume after the
    episodes already written, ``complete.json`` once the summary is written. A document the
    corpus does not hold, or a shard with no episode, is refused before the folder is touched.
    With ``remote``, the episodes run as Ray tasks (:func:`sgrgym.runs.parallel.remote_map`)
    and are written here in the same order.
    """
    for doc_id in doc_ids:  # a typo costs nothing and leaves nothing behind
        env.document(doc_id)
    card = seeker_run_card(env, agent, belief, doc_ids, seeds)
    mine = episode_order(doc_ids, seeds)
    if shard is not None:
        if len(mine) < shard.count:
            raise UserError(
                f"--shard {shard}: the run has {len(mine)} episode(s), fewer than "
                f"{shard.count} shards; split it in at most {len(mine)}"
            )
        mine = shard.select(mine)
    total = len(mine)
    with open_run_folder(out_dir, card, finals=(SUMMARY,), shard=shard) as folder:
        episodes = [
            episode_record(data, f"{out_dir / EPISODES} line {number}")
            for number, data in enumerate(folder.records(EPISODES), start=1)
        ]
        done = {(e.seed, e.doc_id) for e in episodes}
        todo = [(s, d) for s, d in mine if (s, d) not in done]
        with closing(_episodes(env, agent, render, todo, jobs, remote)) as episodes_run:
            for episode in episodes_run:
                folder.append(EPISODES, episode.data())
                episodes.append(episode)
                if progress:
                    doc_id, final = episode.doc_id, episode.final_completeness
                    progress(len(episodes), total, f"{doc_id} c={final:.2f}")
        summary = finish_seeker(folder, episodes, card, theta_note(env.theta, env.store))
    return summary
