"""One registry type for agents, beliefs, estimators and sites: built-in entries registered as a
user's would be, an unknown name answered with the closest names and the whole list."""

from __future__ import annotations

import pytest

from sgrgym.core.errors import UnknownName, UserError
from sgrgym.core.registry import Registry
from sgrgym.seeker.agents import AGENTS as SEEKER_AGENTS
from sgrgym.seeker.agents import make_agent as make_seeker_agent
from sgrgym.seeker.belief import BELIEFS, belief_renderer, register_belief
from sgrgym.seeker.estimators import ESTIMATORS, make_estimator
from sgrgym.sgr.cli_agents.agent import CliAgentOptions
from sgrgym.sgr.registry import AGENTS as SGR_AGENTS
from sgrgym.sgr.registry import AgentSetup, make_agent, register_agent
from sgrgym.sgr.run import TaskRunner
from sgrgym.sgr.sites.app import SITES, load_site


def test_one_type_for_every_kind() -> None:
    for registry in (SEEKER_AGENTS, BELIEFS, ESTIMATORS, SGR_AGENTS, SITES):
        assert isinstance(registry, Registry) and registry.names() == sorted(registry)
    assert SEEKER_AGENTS.names() == ["belief-phrases", "llm", "oracle-text", "phrases", "sentences"]
    assert BELIEFS.names() == ["dedup", "oracle", "trajectory"]
    assert ESTIMATORS.names() == ["abstract-coverage", "constant", "llm", "visible-count"]
    assert SGR_AGENTS.names() == [
        "cli",
        "default",
        "explore",
        "llm",
        "oracle",
        "random",
        "search-only",
    ]
    assert {"cwe", "elements", "places", "diseases", "weather"} <= set(SITES)


@pytest.mark.parametrize(
    ("look_up", "wrong", "message"),
    [
        (
            lambda n: make_seeker_agent(n),
            "sentense",
            "no SeekerGym agent 'sentense' (did you "
            "mean 'sentences'?); SeekerGym agents: belief-phrases, llm, oracle-text, phrases, "
            "sentences",
        ),
        (belief_renderer, "dedupe", "did you mean 'dedup'"),
        (
            lambda n: make_estimator(n),
            "constnt",
            "did you mean 'constant'?); estimators: "
            "abstract-coverage, constant, llm, visible-count",
        ),
        (lambda n: make_agent(n, AgentSetup()), "orcale", "did you mean 'oracle'"),
        (lambda n: make_agent(n, AgentSetup()), "cli", "SGR agents: cli:NAME, default,"),
        (lambda n: make_agent(n, AgentSetup()), "cli:", "no SGR agent 'cli:'"),
        (lambda n: make_agent(n, AgentSetup()), "oracle:x", "no SGR agent 'oracle:x'"),
        (load_site, "wether", "no replica site 'wether' (did you mean 'weather'?)"),
        (belief_renderer, "zzz", "no belief 'zzz'; beliefs: dedup, oracle, trajectory"),
    ],
)
def test_an_unknown_name_suggests_the_closest(look_up: object, wrong: str, message: str) -> None:
    with pytest.raises(UnknownName) as caught:  # a UserError: exit 2 at the command line
        look_up(wrong)  # type: ignore[operator]
    assert isinstance(caught.value, UserError)
    assert message in str(caught.value)


def test_a_users_entries_register_like_the_built_in_ones() -> None:
    register_belief("shout", lambda state: "ALL CAPS\n", "for a test")
    register_agent("idle", lambda setup: make_agent("default", setup), "for a test")
    try:
        assert belief_renderer("shout")(None) == "ALL CAPS\n"  # type: ignore[arg-type]
        assert "shout (for a test)" in BELIEFS.help()
        assert type(make_agent("idle", AgentSetup())).__name__ == "DefaultStateAgent"
    finally:
        BELIEFS.unregister("shout")
        SGR_AGENTS.unregister("idle")
    assert "shout" not in BELIEFS and "idle" not in SGR_AGENTS


def test_a_family_takes_its_argument_after_the_colon() -> None:
    registry: Registry[str] = Registry("thing")
    registry.register("plain", "p", "a plain entry")
    registry.register("fam", "f", "a family", argument="NAME")
    assert "plain" in registry and "fam:x" in registry
    assert "fam" not in registry and "fam:" not in registry and "plain:x" not in registry
    found = registry.resolve("fam:a:b")  # the argument is everything after the first colon
    assert (found.entry, found.argument, found.registered.name) == ("f", "a:b", "fam")
    assert registry.help() == "fam:NAME (a family), plain (a plain entry)"
    with pytest.raises(ValueError, match="non-empty word"):
        registry.register("a:b", "x")


def test_model_agents_are_registered_and_ask_for_their_options() -> None:
    """The LLM and CLI agents are built through the registry like the others; without their
    options they say where the options come from (before anything runs)."""
    with pytest.raises(UserError, match=r"llm agent needs a chat model.*\[llm\] table"):
        make_agent("llm", AgentSetup())
    with pytest.raises(UserError, match=r"sgrgym sgr run --agent cli:codex --base-url"):
        make_agent("cli:codex", AgentSetup())
    with pytest.raises(UserError, match=r"llm agent needs a chat model"):
        make_seeker_agent("llm")
    asked: list[str] = []

    def no_endpoint() -> CliAgentOptions:
        asked.append("cli")
        return CliAgentOptions(base_url="", model="")

    setup = AgentSetup(cli=no_endpoint)
    make_agent("default", setup)
    assert asked == []  # only the agent that needs its options reads them
    with pytest.raises(UserError, match="give the model endpoint"):
        make_agent("cli:codex", setup)
    assert asked == ["cli"]
    with pytest.raises(UserError, match="no such agent CLI profile"):
        make_agent("cli:nobody", AgentSetup(cli=lambda: CliAgentOptions("http://h/v1", "m")))
    agent = make_agent("cli:codex", AgentSetup(cli=lambda: CliAgentOptions("http://h:9/v1", "m")))
    assert isinstance(agent, TaskRunner) and agent.name == "cli:codex"
