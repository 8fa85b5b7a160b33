"""Belief states rendered as text for the agent (paper section 3.1, figure 2b).

- ``trajectory``: the verbatim query-observation history (repeats included);
- ``dedup``: the unique retrieved passages, in the order they were first retrieved;
- ``oracle``: the document's section structure with retrieved passages in place and every
  unretrieved one marked ``<missing id=pN>`` (privileged: it reveals where the gaps are,
  appendix C.2).

Only the oracle belief shows passage ids. A passage id is its position in the document, so
``[p47]`` would tell a reader that the document has at least 47 passages and, next to ``[p45]``,
that ``p46`` is missing: the positional gap information the paper keeps for the oracle belief.
``trajectory`` and ``dedup`` number passages ``[1]``, ``[2]``, ... in the order they were first
retrieved (the same number for a passage wherever it appears), which says nothing about
where they sit. Completeness estimation sees ``dedup`` too.

New renderers plug in with :func:`register_belief`.
"""

from __future__ import annotations

from collections.abc import Callable

from sgrgym.core.registry import Registry
from sgrgym.seeker.env import EpisodeState

Renderer = Callable[[EpisodeState], str]


def _head(state: EpisodeState) -> list[str]:
    return [f"Title: {state.document.title}", f"Abstract: {state.document.abstract}", ""]


def _numbers(state: EpisodeState) -> dict[str, int]:
    """Each retrieved passage's number: 1, 2, ... in the order first retrieved."""
    return {pid: number for number, pid in enumerate(state.retrieved, 1)}


def trajectory_belief(state: EpisodeState) -> str:
    texts = {p.id: p.text for p in state.document.passages}
    numbers = _numbers(state)
    lines = _head(state)
    for record in state.history:
        lines.append(f"Step {record.step}")
        for query, hits in zip(record.queries, record.per_query, strict=True):
            lines.append(f"Query: {query}")
            lines += [f"[{numbers[pid]}] {texts[pid]}" for pid in hits] or ["(nothing retrieved)"]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def dedup_belief(state: EpisodeState) -> str:
    texts = {p.id: p.text for p in state.document.passages}
    lines = [*_head(state), "Retrieved passages:"]
    lines += [f"[{i}] {texts[pid]}" for i, pid in enumerate(state.retrieved, 1)] or ["(none yet)"]
    return "\n".join(lines) + "\n"


def oracle_belief(state: EpisodeState) -> str:
    retrieved = set(state.retrieved)
    lines = _head(state)
    section: tuple[str, ...] | None = None
    for passage in state.document.passages:
        if tuple(passage.section) != section:
            section = tuple(passage.section)
            lines.append("#" * max(1, len(section)) + " " + " > ".join(section))
        if passage.id in retrieved:
            lines.append(f"[{passage.id}] {passage.text}")
        else:
            lines.append(f"<missing id={passage.id}>")
    return "\n".join(lines) + "\n"


BELIEFS: Registry[Renderer] = Registry("belief")
BELIEFS.register("trajectory", trajectory_belief, "every step's queries and hits (3.1)")
BELIEFS.register("dedup", dedup_belief, "the retrieved passages, once each (3.1)")
BELIEFS.register("oracle", oracle_belief, "the document's outline with the gaps marked (3.1)")


def register_belief(name: str, renderer: Renderer, help_text: str = "") -> None:
    """Add a belief renderer under ``name`` (usable as ``--belief name``)."""
    BELIEFS.register(name, renderer, help_text)


def belief_renderer(name: str) -> Renderer:
    return BELIEFS.get(name)
