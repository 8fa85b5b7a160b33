"""SeekerGym as an Inspect AI task: ``inspect eval sgrgym/seeker_gym --model M``.

One sample per document of the corpus (default: the demo corpus and its pinned store; id: the
document id). Each sample is one episode of :class:`~sgrgym.seeker.env.SeekerEnv` (a copy of
the task's environment, so samples run side by side), played as the SeekerGym LLM agent plays
it (:mod:`sgrgym.seeker.llm_agent`): before every step the chosen belief (``trajectory``,
``dedup`` or ``oracle``, paper section 3.1) is rendered, the agent's prompt file
(``prompts/queries-v1.json``) is filled with it and the number of queries wanted, the model is
asked once, and :func:`~sgrgym.seeker.llm_agent.parse_queries` reads at most ``queries`` queries
from the reply (a reply without one is a step without queries, counted as malformed). The
model sees only the current step's prompt, as the agent's model does; the sample's messages
keep every step's prompt and reply.

The score is the final completeness c = retrieved / N; its metadata is the episode record a
``seeker run`` writes (``episodes.jsonl``: completeness after every step, queries, passages
retrieved, query diversity, belief tokens) with each reply's parse (``llm.replies``). The
record is kept in the sample's store after every step, so an episode cut short by a limit is
scored on the steps it took.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
import numpy as np
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.numbers import fixed
from sgrgym.core.version import __version__
from sgrgym.inspect.args import names
from sgrgym.inspect.scoring import SEEKER_SCORER
from sgrgym.seeker.belief import BELIEFS, Renderer
from sgrgym.seeker.corpus import Document, corpus_sha256
from sgrgym.seeker.env import EpisodeState, SeekerEnv
from sgrgym.seeker.estimators import PromptTemplate, load_prompt
from sgrgym.seeker.llm_agent import QUERIES_PROMPT_FILE, ParsedReply, parse_queries
from sgrgym.seeker.make import make_env
from sgrgym.seeker.records import EpisodeRecord, EpisodeStep
from sgrgym.seeker.retrieval import query_diversity

EPISODE_KEY = "sgrgym_seeker_episode"  # the sample store's episode record


def step_messages(
    template: PromptTemplate, belief: str, count: int
) -> tuple[ChatMessageSystem, ChatMessageUser]:
    """The prompt of a step: the agent's system message, the rendered ``belief`` and the number
    of queries wanted (:meth:`PromptTemplate.fill`, as the LLM agent fills it)."""
    system, user = template.fill(belief, {"count": str(count)})
    return ChatMessageSystem(content=system["content"]), ChatMessageUser(content=user["content"])


def episode_record(
    state: EpisodeState, belief_tokens: Sequence[int], replies: Sequence[ParsedReply]
) -> EpisodeRecord:
    """The episode so far as ``seeker run`` records it (``episodes.jsonl``)."""
    vectors = [v for v in state.query_vectors if len(v)]
    diversity = query_diversity(np.concatenate(vectors)) if vectors else []
    return EpisodeRecord(
        doc_id=state.document.id,
        topic=state.document.topic,
        seed=state.seed,
        passages=len(state.document.passages),
        completeness=[fixed(r.completeness, 6) for r in state.history],
        final_completeness=fixed(state.completeness, 6),
        retrieved=list(state.retrieved),
        steps=[
            EpisodeStep(queries=r.queries, per_query=r.per_query, new=r.new) for r in state.history
        ],
        query_diversity=[fixed(d, 6) for d in diversity],
        near_theta=state.near_theta,
        belief_tokens=list(belief_tokens),
        llm={
            "replies": [
                {"form": r.form, "queries": len(r.queries), "malformed": r.malformed}
                for r in replies
            ]
        },
    )


def _agent(env: SeekerEnv, render: Renderer, template: PromptTemplate, seed: int) -> Solver:
    @solver(name="seeker_agent")
    def seeker_agent() -> Solver:
        """The SeekerGym LLM agent: one model call a step with the rendered belief."""

        async def solve(state: TaskState, generate: Generate) -> TaskState:
            own = copy.copy(env)  # the episode state is per copy; store and embedder shared
            await anyio.to_thread.run_sync(own.reset, str(state.sample_id), seed)
            episode = own.state
            assert episode is not None
            model = get_model()
            count = own.queries_per_step
            belief_tokens: list[int] = []
            replies: list[ParsedReply] = []
            state.messages = []
            while not episode.done:
                belief = render(episode)
                belief_tokens.append(len(belief) // 4)
                system, user = step_messages(template, belief, count)
                output = await model.generate([system, user])
                if not state.messages:
                    state.messages.append(system)
                state.messages += [user, output.message]
                state.output = output
                reply = parse_queries(output.completion, count)
                replies.append(reply)
                await anyio.to_thread.run_sync(own.step, reply.queries)
                record = episode_record(episode, belief_tokens, replies)
                state.store.set(EPISODE_KEY, record.model_dump(mode="json"))
            return state

        return solve

    return seeker_agent()


def _scorer() -> Scorer:
    @scorer(name=SEEKER_SCORER, metrics=[mean(), stderr()])
    def seeker_score() -> Scorer:
        """Final completeness c = retrieved / N (section 2.3), each step's in the metadata."""

        async def score(state: TaskState, target: Target) -> Score:
            record = state.store.get(EPISODE_KEY)
            if record is None:
                return Score(value=0.0, explanation="no step was taken")
            steps = len(record["completeness"])
            return Score(
                value=record["final_completeness"],
                explanation=(
                    f"{len(record['retrieved'])} of {record['passages']} passages retrieved "
                    f"in {steps} steps"
                ),
                metadata=record,
            )

        return score

    return seeker_score()


def sample_of(
    document: Document, template: PromptTemplate, render: Renderer, horizon: int, count: int
) -> Sample:
    system, user = step_messages(template, render(EpisodeState(document, 0, horizon)), count)
    return Sample(
        id=document.id,
        input=[system, user],
        metadata={
            "doc_id": document.id,
            "title": document.title,
            "topic": document.topic,
            "passages": len(document.passages),
        },
    )


def seeker_card(
    env: SeekerEnv, belief: str, template: PromptTemplate, docs: Sequence[str], seed: int
) -> dict[str, Any]:
    """The task's pins: corpus and its sha256, the store's vectors and index, the embedder, θ,
    the horizon and query budget, the belief, the agent's prompt file."""
    manifest = env.store.manifest
    return {
        "corpus": env.corpus.name,
        "corpus_sha256": corpus_sha256(env.corpus),
        "store_vectors_sha256": manifest.vectors_sha256,
        "store_index_sha256": manifest.index_sha256,
        "model_id": manifest.model_id,
        "theta": env.theta,
        "store_theta": manifest.theta,
        "steps": env.horizon,
        "queries_per_step": env.queries_per_step,
        "belief": belief,
        "seed": seed,
        "prompt": {template.version: template.file_sha256},
        "docs": list(docs),
        "agent": "inspect",
        "sgrgym_version": __version__,
    }


@task
def seeker_gym(
    corpus: str = defaults.SEEKER_CORPUS,
    documents: str | list[str] | None = None,
    belief: str = "dedup",
    steps: int = defaults.HORIZON,
    queries: int = defaults.QUERIES_PER_STEP,
    seed: int = 0,
    theta: float | None = None,
    corpus_file: str | None = None,
    store: str | None = None,
    prompt: str | None = None,
) -> Task:
    """SeekerGym on a built corpus and its passage store (default: the demo corpus).

    Args:
        corpus: the corpus name (default: demo, Django's docs).
        documents: only these documents (a list or comma-separated), default every one.
        belief: what the model is shown each step: trajectory, dedup or oracle (section 3.1).
        steps: the horizon M (default 10).
        queries: queries per step, the budget of every agent (default 2).
        seed: the episodes' seed.
        theta: override the store's pinned θ.
        corpus_file: a corpus file (JSONL) instead of the named corpus'.
        store: a passage store folder instead of the named corpus'.
        prompt: a prompt file (JSON: version, system, user) instead of queries-v1.
    """
    render = BELIEFS.get(belief)
    env = make_env(
        corpus,
        corpus_file=Path(corpus_file) if corpus_file else None,
        store=Path(store) if store else None,
        theta=theta,
        horizon=steps,
        queries_per_step=queries,
    )
    template = load_prompt(Path(prompt) if prompt else QUERIES_PROMPT_FILE)
    chosen = names(documents)
    docs = [env.document(d).id for d in chosen] if chosen else env.store.documents()
    if not docs:
        raise UserError("seeker_gym: no documents selected")
    samples = [sample_of(env.document(d), template, render, steps, queries) for d in docs]
    return Task(
        dataset=MemoryDataset(samples, name=f"seekergym-{env.corpus.name}"),
        solver=_agent(env, render, template, seed),
        scorer=_scorer(),
        metadata={"sgrgym": seeker_card(env, belief, template, docs, seed)},
    )
