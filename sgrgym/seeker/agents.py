"""Non-LLM SeekerGym agents.

Two honest baselines use only what an agent may see (the abstract): ``sentences`` issues the
abstract's sentences, ``phrases`` its noun-phrase-like word runs, ``per_step`` queries a step,
in an order shuffled by the episode's seed. ``oracle-text`` is privileged: its queries are
the gold passages' own texts, so it must reach completeness 1.0 in one step (cos = 1 > θ):
it validates the environment, store and embedder together.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.registry import Registry
from sgrgym.seeker.env import EpisodeState

if TYPE_CHECKING:
    from sgrgym.seeker.belief import Renderer
    from sgrgym.seeker.embed import Embedder
    from sgrgym.seeker.llm_agent import LLMSeekerOptions

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")
_STOPWORD_TEXT = """
a all also an and any are as at be been both but by can do does each for from has have how if
in into is it its may more most not of on only or other over some such than that the their
then there these this those to use used using very was were what when which while who will
with you your
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


class SeekerAgent(Protocol):
    name: str

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        """The next step's queries (``belief`` is the rendered belief state)."""


def _next(pool: list[str], state: EpisodeState, per_step: int) -> list[str]:
    start = len(state.history) * per_step
    return pool[start : start + per_step]


def _shuffled(items: list[str], rng: random.Random) -> list[str]:
    items = list(dict.fromkeys(items))
    rng.shuffle(items)
    return items


class _AbstractQueries:
    """Queries drawn from the abstract only: candidates in a seeded order, ``per_step`` a step."""

    name = ""

    def __init__(self, per_step: int) -> None:
        self.per_step = per_step
        self._pool: dict[tuple[str, int], list[str]] = {}

    def candidates(self, abstract: str) -> list[str]:
        raise NotImplementedError

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        key = (state.document.id, state.seed)
        if key not in self._pool:
            self._pool[key] = _shuffled(self.candidates(state.document.abstract), rng)
        return _next(self._pool[key], state, self.per_step)


class SentencesAgent(_AbstractQueries):
    name = "sentences"

    def __init__(self, per_step: int = 2) -> None:
        super().__init__(per_step)

    def candidates(self, abstract: str) -> list[str]:
        return [s.strip() for s in _SENTENCE.split(abstract) if s.strip()]


def noun_phrases(text: str, max_words: int = 4) -> list[str]:
    """Runs of non-stopwords (at most ``max_words``), in order of first appearance."""
    phrases: list[str] = []
    run: list[str] = []
    for word in [*_WORD.findall(text), "the"]:
        if word.lower() in STOPWORDS:
            if run:
                phrases.append(" ".join(run[:max_words]))
            run = []
        else:
            run.append(word)
    return [p for p in dict.fromkeys(phrases) if len(p) > 3]


class PhrasesAgent(_AbstractQueries):
    name = "phrases"

    def __init__(self, per_step: int = 4) -> None:
        super().__init__(per_step)

    def candidates(self, abstract: str) -> list[str]:
        return noun_phrases(abstract)


class OracleTextAgent:
    name = "oracle-text"

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        if state.history:
            return []
        return [p.text for p in state.document.passages]


@dataclass(frozen=True)
class AgentSetup:
    """What a SeekerGym agent is built from."""

    per_step: int | None = None  # queries a step (None: the agent's own)
    render: Renderer | None = None  # the belief renderer (a model agent prompts with it)
    embedder: str = defaults.EMBEDDER  # the pinned embedder a model agent records vectors of
    load_embedder: Callable[[], Embedder] | None = None  # loaded only to fill a recording
    # The llm agent's chat model, asked for only by that agent (a missing flag is named then):
    llm: Callable[[], LLMSeekerOptions] | None = None


def _sentences(setup: AgentSetup) -> SeekerAgent:
    return SentencesAgent() if setup.per_step is None else SentencesAgent(setup.per_step)


def _phrases(setup: AgentSetup) -> SeekerAgent:
    return PhrasesAgent() if setup.per_step is None else PhrasesAgent(setup.per_step)


def _llm(setup: AgentSetup) -> SeekerAgent:
    from sgrgym.seeker.llm_agent import make_llm_agent

    if setup.llm is None or setup.render is None or setup.load_embedder is None:
        raise UserError(
            "the llm agent needs a chat model: `sgrgym seeker run --agent llm --llm-model NAME "
            "--base-url URL --llm-cache FILE`; `sgrgym run` runs it from an [llm] table in "
            "--config (model, base_url, cache, mode; see README)"
        )
    return make_llm_agent(setup.llm(), setup.render, setup.embedder, setup.load_embedder)


AgentFactory = Callable[[AgentSetup], SeekerAgent]
AGENTS: Registry[AgentFactory] = Registry("SeekerGym agent")
AGENTS.register("sentences", _sentences, "the abstract's sentences, in order")
AGENTS.register("phrases", _phrases, "the abstract's noun phrases, in order")
AGENTS.register("oracle-text", lambda _: OracleTextAgent(), "every passage's own text at once")
AGENTS.register("llm", _llm, "a chat model's queries from the rendered belief")


def register_agent(name: str, factory: AgentFactory, help_text: str = "") -> None:
    """Make ``name`` available to ``seeker run --agent`` and ``[seeker] agents``."""
    AGENTS.register(name, factory, help_text)


def make_agent(name: str, setup: AgentSetup | None = None) -> SeekerAgent:
    """An agent by name; ``setup.per_step`` queries a step (default: 2 sentences or 4 phrases,
    ours: the paper lets an agent issue one or more queries a step and gives no number)."""
    setup = setup or AgentSetup()
    if setup.per_step is not None and setup.per_step < 1:
        raise UserError(f"queries per step must be at least 1, got {setup.per_step}")
    return AGENTS.get(name)(setup)
