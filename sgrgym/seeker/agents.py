"""Non-LLM SeekerGym agents.

Every agent sends at most ``per_step`` queries a step, the environment's query budget
(``SeekerEnv.queries_per_step``, the same for all agents: section 2.3). Two honest baselines
use only what an agent may see (the abstract): ``sentences`` issues the abstract's sentences,
``phrases`` its noun-phrase-like word runs, in an order shuffled by the episode's seed.
``belief-phrases`` reads the rendered belief (the oracle belief's gaps, or the passages found
so far), so its completeness depends on the belief representation as an LLM agent's does.
``oracle-text`` is privileged: its queries are
the texts of gold passages not retrieved yet (cos = 1 > θ), so it reaches the most the budget
allows (completeness 1.0 once ``per_step`` × M covers N): the ceiling of a run, and with a
large budget a check of the environment, store and embedder together.
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

    def candidates(self, abstract: str) -> list[str]:
        return noun_phrases(abstract)


_PASSAGE_LINE = re.compile(r"^\[p?\d+\] (.+)$")
_GAP_LINE = re.compile(r"^<missing id=p?\d+>$")
_HEADING_LINE = re.compile(r"^#+ (.+)$")
BELIEF_WINDOW = 6000  # characters of the belief the belief-phrases agent reads (its tail)


def belief_candidates(belief: str) -> list[str]:
    """Queries a reader draws from a rendered belief, most promising first.

    Where the belief marks gaps (``<missing id=pN>``, the oracle belief), one query per gap:
    the heading of its section and the first noun phrase of the passage found just before it
    in that section. Otherwise, the noun phrases of the passages the belief shows, the most
    recently shown first (what was just found points to what sits next to it).
    """
    gaps: list[str] = []
    shown: list[str] = []
    heading, previous = "", ""
    for line in belief.splitlines():
        line = line.strip()
        if match := _HEADING_LINE.match(line):
            heading, previous = match.group(1).split(" > ")[-1], ""
        elif match := _PASSAGE_LINE.match(line):
            previous = match.group(1)
            shown.append(previous)
        elif _GAP_LINE.match(line):
            phrases = noun_phrases(previous)[:1]
            gaps.append(" ".join([heading, *phrases]).strip())
    if gaps:
        return [g for g in dict.fromkeys(gaps) if g]
    found: list[str] = []
    for text in reversed(list(dict.fromkeys(shown))):
        found += noun_phrases(text)[:3]
    return list(dict.fromkeys(found))


class BeliefPhrasesAgent:
    """Queries from what the rendered belief shows (the only built-in agent that reads it).

    It reads the last :data:`BELIEF_WINDOW` characters of the belief, as a reader with a
    bounded context does, and asks :func:`belief_candidates` for queries it has not sent yet,
    ``per_step`` a step; when the belief offers none, it falls back on the abstract's noun
    phrases in a seeded order. Beliefs therefore differ by what they show this agent: the
    oracle belief's gaps name the sections still missing, the deduplicated passages point
    to their neighbours, and the raw trajectory's repeats crowd its window.
    """

    name = "belief-phrases"

    def __init__(self, per_step: int, window: int = BELIEF_WINDOW) -> None:
        self.per_step = per_step
        self.window = window
        self._fallback: dict[tuple[str, int], list[str]] = {}

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        key = (state.document.id, state.seed)
        if key not in self._fallback:
            self._fallback[key] = _shuffled(noun_phrases(state.document.abstract), rng)
        sent = {q for record in state.history for q in record.queries}
        read = belief[-self.window :]
        picked: list[str] = []
        for query in [*belief_candidates(read), *self._fallback[key]]:
            if query not in sent and query not in picked:
                picked.append(query)
            if len(picked) == self.per_step:
                break
        return picked


# Agents with privileged access to the gold passages: a ceiling, never pooled with the others.
PRIVILEGED_AGENTS = frozenset({"oracle-text"})


class OracleTextAgent:
    name = "oracle-text"

    def __init__(self, per_step: int) -> None:
        self.per_step = per_step

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        found = set(state.retrieved)
        missing = [p.text for p in state.document.passages if p.id not in found]
        return missing[: self.per_step]


@dataclass(frozen=True)
class AgentSetup:
    """What a SeekerGym agent is built from."""

    per_step: int = defaults.QUERIES_PER_STEP  # the environment's query budget a step
    render: Renderer | None = None  # the belief renderer (a model agent prompts with it)
    embedder: str = defaults.EMBEDDER  # the pinned embedder a model agent records vectors of
    load_embedder: Callable[[], Embedder] | None = None  # loaded only to fill a recording
    # The llm agent's chat model, asked for only by that agent (a missing flag is named then):
    llm: Callable[[], LLMSeekerOptions] | None = None


def _sentences(setup: AgentSetup) -> SeekerAgent:
    return SentencesAgent(setup.per_step)


def _phrases(setup: AgentSetup) -> SeekerAgent:
    return PhrasesAgent(setup.per_step)


def _belief_phrases(setup: AgentSetup) -> SeekerAgent:
    return BeliefPhrasesAgent(setup.per_step)


def _llm(setup: AgentSetup) -> SeekerAgent:
    from sgrgym.seeker.llm_agent import make_llm_agent

    if setup.llm is None or setup.render is None or setup.load_embedder is None:
        raise UserError(
            "the llm agent needs a chat model: `sgrgym seeker run --agent llm --model NAME "
            "--base-url URL --llm-cache FILE`; `sgrgym run` runs it from an [llm] table in "
            "--config (model, base_url, cache, mode; see docs/main-job.md)"
        )
    return make_llm_agent(setup.llm(), setup.render, setup.embedder, setup.load_embedder)


AgentFactory = Callable[[AgentSetup], SeekerAgent]
AGENTS: Registry[AgentFactory] = Registry("SeekerGym agent")
AGENTS.register("sentences", _sentences, "the abstract's sentences, in order")
AGENTS.register("phrases", _phrases, "the abstract's noun phrases, in order")
AGENTS.register(
    "belief-phrases", _belief_phrases, "noun phrases of what the belief shows (its gaps first)"
)
AGENTS.register(
    "oracle-text",
    lambda setup: OracleTextAgent(setup.per_step),
    "the missing passages' own texts (a ceiling)",
)
AGENTS.register("llm", _llm, "a chat model's queries from the rendered belief")


def register_agent(name: str, factory: AgentFactory, help_text: str = "") -> None:
    """Make ``name`` available to ``seeker run --agent`` and ``[seeker] agents``."""
    AGENTS.register(name, factory, help_text)


def make_agent(name: str, setup: AgentSetup | None = None) -> SeekerAgent:
    """An agent by name, sending at most ``setup.per_step`` queries a step (the environment's
    budget; default :data:`~sgrgym.core.defaults.QUERIES_PER_STEP`)."""
    setup = setup or AgentSetup()
    if setup.per_step < 1:
        raise UserError(f"queries per step must be at least 1, got {setup.per_step}")
    return AGENTS.get(name)(setup)
