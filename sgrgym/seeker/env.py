"""The SeekerGym environment (paper section 2.2): one document per episode.

``reset(doc_id, seed)`` shows the abstract; ``step(queries)`` (at most ``queries_per_step``
queries: one fixed budget for every agent, section 2.3; more is a
:class:`QueryBudgetExceeded`, never a silent cut) returns the goal passages newly
retrieved by O(s, a) (cosine > θ, per query and in union), the monotone retrieved set, the
completeness c = retrieved / N, and ends at the horizon M (``truncated``) or earlier when the
optional stop rule fires after a step (``terminated``: calibrated stopping, sections 2.2 and
2.4), with terminal reward c (γ = 1).
The document's passage matrix is loaded once at reset; queries are embedded by the pinned
embedder (through the persistent query cache when one is given).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.registry import close_hint
from sgrgym.seeker.corpus import Corpus, Document, Passage
from sgrgym.seeker.retrieval import Matrix, Scores, observe
from sgrgym.seeker.store import PassageStore

Embed = Callable[[Sequence[str]], Matrix]
StopRule = Callable[["EpisodeState"], bool]  # checked after every step; True ends the episode


class QueryBudgetExceeded(UserError):
    """A step with more queries than the environment's budget allows."""


@dataclass(frozen=True)
class Observation:
    doc_id: str
    title: str
    abstract: str


@dataclass
class StepRecord:
    """One step: the queries, what each retrieved, what was new, completeness after it."""

    step: int
    queries: list[str]
    per_query: list[list[str]]
    new: list[str]
    completeness: float


@dataclass
class EpisodeState:
    document: Document
    seed: int
    horizon: int
    retrieved: list[str] = field(default_factory=list)  # passage ids, first retrieval order
    history: list[StepRecord] = field(default_factory=list)
    query_vectors: list[Matrix] = field(default_factory=list)
    stopped: bool = False  # the stop rule fired (section 2.2: early termination)
    near_theta: int = 0  # retrieval decisions within NEAR_THETA of θ (processor-sensitive live)

    @property
    def completeness(self) -> float:
        return len(self.retrieved) / len(self.document.passages)

    @property
    def truncated(self) -> bool:
        """The horizon M was reached without the stop rule firing (a time limit)."""
        return len(self.history) >= self.horizon and not self.stopped

    @property
    def done(self) -> bool:
        return self.stopped or len(self.history) >= self.horizon


@dataclass(frozen=True)
class StepResult:
    new_passages: list[Passage]
    per_query: list[list[str]]
    completeness: float
    done: bool
    reward: float  # c at the last step (γ = 1), else 0
    terminated: bool = False  # the stop rule fired after this step
    truncated: bool = False  # the horizon was reached (without the stop rule firing)


class SeekerEnv:
    """Episodes over a corpus whose passage vectors sit in a verified store."""

    def __init__(
        self,
        corpus: Corpus,
        store: PassageStore,
        embed: Embed,
        theta: float | None = None,
        horizon: int = defaults.HORIZON,
        stop_rule: StopRule | None = None,
        queries_per_step: int = defaults.QUERIES_PER_STEP,
    ) -> None:
        if store.manifest.corpus != corpus.name:
            raise UserError(
                f"store {store.path} was built for corpus {store.manifest.corpus!r}, "
                f"not {corpus.name!r}"
            )
        self.corpus = corpus
        self.store = store
        self.embed = embed
        self.theta = store.manifest.theta if theta is None else theta
        if horizon < 1:
            raise UserError(f"the horizon M must be at least 1 step, got {horizon}")
        self.horizon = horizon
        if queries_per_step < 1:
            raise UserError(f"the query budget must be at least 1 a step, got {queries_per_step}")
        self.queries_per_step = queries_per_step
        self.stop_rule = stop_rule
        self._documents = {d.id: d for d in corpus.documents}
        self._ids: list[str] = []
        # The document's passage vectors, widened to float64 once (exactly) for every step.
        self._matrix: Scores = np.zeros((0, store.manifest.dims), np.float64)
        self.state: EpisodeState | None = None

    def document(self, doc_id: str) -> Document:
        """The corpus' document ``doc_id`` (a UserError naming the closest id when none is)."""
        document = self._documents.get(doc_id)
        if document is None:
            hint = close_hint(doc_id, sorted(self._documents), n=1)
            raise UserError(f"no document {doc_id!r} in corpus {self.corpus.name}{hint}")
        return document

    def reset(self, doc_id: str, seed: int = 0) -> Observation:
        document = self.document(doc_id)
        ids, matrix = self.store.matrix(doc_id)
        if ids != [p.id for p in document.passages]:
            raise UserError(f"{doc_id}: the store's passages differ from the corpus' passages")
        self._ids, self._matrix = ids, matrix.astype(np.float64)
        self.state = EpisodeState(document, seed, self.horizon)
        return Observation(document.id, document.title, document.abstract)

    def step(self, queries: Sequence[str]) -> StepResult:
        state = self.state
        if state is None or state.done:
            raise RuntimeError("call reset() first (or the episode has ended)")
        if len(queries) > self.queries_per_step:
            raise QueryBudgetExceeded(
                f"step {len(state.history) + 1} of {state.document.id}: {len(queries)} queries, "
                f"over the budget of {self.queries_per_step} a step (every agent gets the same "
                "budget: --queries-per-step)"
            )
        vectors = (
            self.embed(list(queries)) if queries else np.zeros((0, self._matrix.shape[1]), "f4")
        )
        observed = observe(self._matrix, vectors, self.theta)
        per_query = [[self._ids[i] for i in hit] for hit in observed.hits]
        state.near_theta += observed.near_theta
        seen = set(state.retrieved)
        new = [pid for pid in self._ids if pid not in seen and any(pid in h for h in per_query)]
        state.retrieved.extend(new)
        state.query_vectors.append(vectors)
        state.history.append(
            StepRecord(len(state.history) + 1, list(queries), per_query, new, state.completeness)
        )
        if self.stop_rule is not None and self.stop_rule(state):
            state.stopped = True
        by_id = {p.id: p for p in state.document.passages}
        done = state.done
        return StepResult(
            [by_id[pid] for pid in new],
            per_query,
            state.completeness,
            done,
            state.completeness if done else 0.0,
            state.stopped,
            state.truncated,
        )
