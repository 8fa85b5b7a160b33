"""SGR agents by name: the one place ``sgr run`` and ``sgrgym run`` look agents up.

Each entry is a factory that builds the agent from :class:`AgentSetup` (the tasks' reference
paths, the seed, the random/explore step count). :func:`register_agent` adds a name (LLM or
command-line agents register theirs the same way); :func:`make_agent` builds one or says which
names exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sgrgym.core.errors import UserError
from sgrgym.core.registry import Registry

if TYPE_CHECKING:  # the agents are imported when built, so ``--help`` stays fast
    from sgrgym.sgr.agents import Agent


@dataclass(frozen=True)
class AgentSetup:
    references: dict[str, Any] = field(default_factory=dict)  # task id -> reference path
    task_ids: tuple[str, ...] = ()
    seed: int = 0
    steps: int = 4  # links the random agent follows / operations the explore agent makes


Factory = Callable[[AgentSetup], "Agent"]


def _oracle(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.agents import OracleAgent

    missing = [t for t in setup.task_ids if t not in setup.references]
    if missing:
        raise UserError(f"the oracle needs a reference path; these tasks have none: {missing}")
    return OracleAgent(setup.references)


def _default(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.agents import DefaultStateAgent

    return DefaultStateAgent()


def _random(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.agents import RandomAgent

    return RandomAgent(seed=setup.seed, steps=setup.steps)


def _explore(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.agents import ExploreAgent

    return ExploreAgent(seed=setup.seed, steps=setup.steps)


def _search_only(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.search_only import SearchOnlyAgent

    return SearchOnlyAgent()


AGENTS: Registry[Factory] = Registry("SGR agent")
AGENTS.register("oracle", _oracle, "follows the reference path")
AGENTS.register("default", _default, "start page only")
AGENTS.register("random", _random, "random links")
AGENTS.register("explore", _explore, "seeded random operations on every kind of control")
AGENTS.register("search-only", _search_only, "copies the best table among the top search hits")


def register_agent(name: str, factory: Factory, help_text: str = "") -> None:
    """Make ``name`` available to ``sgr run --agent`` and ``sgrgym run --agent``."""
    AGENTS.register(name, factory, help_text)


def agent_names() -> list[str]:
    return AGENTS.names()


def agent_help() -> str:
    """One ``name (what it does)`` clause per agent, for ``--help``."""
    return AGENTS.help()


def make_agent(name: str, setup: AgentSetup) -> Agent:
    """The agent ``name`` built for ``setup``; an unknown name is a UserError listing them."""
    return AGENTS.get(name)(setup)
