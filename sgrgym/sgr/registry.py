"""SGR agents by name: the one place ``sgr run`` and ``sgrgym run`` look agents up.

Each entry is a factory that builds the agent from :class:`AgentSetup` (the tasks' reference
paths, the seed, the random/explore step count, and what a model agent needs: its chat model,
or its agent CLI's endpoint). :func:`register_agent` adds a name; the built-in agents, the LLM
agent (``llm``) and the agent CLIs (the family ``cli:NAME``) are registered below exactly so.
:func:`make_agent` builds one or says which names exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sgrgym.core.errors import UserError
from sgrgym.core.registry import Registry
from sgrgym.sgr.llm_limits import DEFAULT_KEEP_RESULTS, DEFAULT_MAX_TURNS, DEFAULT_RESULT_CHARS

if TYPE_CHECKING:  # the agents are imported when built, so ``--help`` stays fast
    from sgrgym.llm.settings import LLMOptions
    from sgrgym.sgr.agents import Agent
    from sgrgym.sgr.cli_agents.agent import CliAgentOptions
    from sgrgym.sgr.run import TaskRunner
    from sgrgym.sgr.sites.reference import Reference


@dataclass(frozen=True)
class LLMAgentOptions:
    """The ``llm`` agent's chat model and its limits (``sgr run --llm-*``, ``[llm]``)."""

    chat: LLMOptions
    site_ops: bool = False
    max_turns: int = DEFAULT_MAX_TURNS
    result_chars: int = DEFAULT_RESULT_CHARS
    keep_results: int = DEFAULT_KEEP_RESULTS


@dataclass(frozen=True)
class AgentSetup:
    references: dict[str, Reference] = field(default_factory=dict)  # task id -> reference path
    task_ids: tuple[str, ...] = ()
    seed: int = 0
    steps: int = 4  # links the random agent follows / operations the explore agent makes
    argument: str = ""  # a family's argument: NAME of cli:NAME (set by make_agent)
    # What model agents need, asked for only by the agent that needs it (a command's options
    # are read then, so a missing flag is named only when it matters):
    llm: Callable[[], LLMAgentOptions] | None = None  # the llm agent's chat model
    cli: Callable[[], CliAgentOptions] | None = None  # an agent CLI's endpoint and sandbox


Factory = Callable[[AgentSetup], "Agent | TaskRunner"]


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


def _llm(setup: AgentSetup) -> Agent:
    from sgrgym.sgr.llm_agent import make_llm_agent

    if setup.llm is None:
        raise UserError(
            "the llm agent needs a chat model: `sgrgym sgr run --agent llm --model NAME "
            "--base-url URL --llm-cache FILE`; `sgrgym run` runs it from an [llm] table in "
            "--config (model, base_url, cache, mode; see docs/main-job.md)"
        )
    options = setup.llm()
    chat = options.chat
    return make_llm_agent(
        chat,
        seed=setup.seed if chat.seed is None else chat.seed,
        site_ops=options.site_ops,
        max_turns=options.max_turns,
        result_chars=options.result_chars,
        keep_results=options.keep_results,
    )


def _cli(setup: AgentSetup) -> TaskRunner:
    from sgrgym.sgr.cli_agents.agent import CliAgent

    if setup.cli is None:
        raise UserError(
            f"cli:{setup.argument}: an agent CLI runs through `sgrgym sgr run --agent "
            f"cli:{setup.argument} --base-url URL --model NAME`"
        )
    return CliAgent.load(setup.argument, setup.cli(), setup.seed)


AGENTS: Registry[Factory] = Registry("SGR agent")
AGENTS.register("oracle", _oracle, "follows the reference path")
AGENTS.register("default", _default, "start page only")
AGENTS.register("random", _random, "random links")
AGENTS.register("explore", _explore, "seeded random operations on every kind of control")
AGENTS.register("search-only", _search_only, "copies the best table among the top search hits")
AGENTS.register("llm", _llm, "a chat model calling the tools")
AGENTS.register("cli", _cli, "an agent CLI profile or profile file, over MCP", argument="NAME")


def register_agent(name: str, factory: Factory, help_text: str = "") -> None:
    """Make ``name`` available to ``sgr run --agent`` and ``sgrgym run --agent``."""
    AGENTS.register(name, factory, help_text)


def agent_names() -> list[str]:
    return AGENTS.names()


def agent_help() -> str:
    """One ``name (what it does)`` clause per agent, for ``--help``."""
    return AGENTS.help()


def make_agent(name: str, setup: AgentSetup) -> Agent | TaskRunner:
    """The agent ``name`` built for ``setup`` (``cli:NAME``: the family ``cli`` given NAME);
    an unknown name is a UserError listing them."""
    found = AGENTS.resolve(name)
    return found.entry(replace(setup, argument=found.argument))
