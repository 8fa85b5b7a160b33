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
from sgrgym.sgr.registry import AGENTS as SGR_AGENTS
from sgrgym.sgr.registry import AgentSetup, make_agent, register_agent
from sgrgym.sgr.sites.app import SITES, load_site


def test_one_type_for_every_kind() -> None:
    for registry in (SEEKER_AGENTS, BELIEFS, ESTIMATORS, SGR_AGENTS, SITES):
        assert isinstance(registry, Registry) and registry.names() == sorted(registry)
    assert SEEKER_AGENTS.names() == ["oracle-text", "phrases", "sentences"]
    assert BELIEFS.names() == ["dedup", "dedup-hidden-ids", "oracle", "trajectory"]
    assert ESTIMATORS.names() == ["abstract-coverage", "constant", "visible-count"]
    assert SGR_AGENTS.names() == ["default", "explore", "oracle", "random", "search-only"]
    assert {"cwe", "elements", "places", "diseases", "weather"} <= set(SITES)


@pytest.mark.parametrize(
    ("look_up", "wrong", "message"),
    [
        (
            lambda n: make_seeker_agent(n),
            "sentense",
            "no SeekerGym agent 'sentense' (did you "
            "mean 'sentences'?); SeekerGym agents: oracle-text, phrases, sentences",
        ),
        (belief_renderer, "dedupe", "did you mean 'dedup'"),
        (
            lambda n: make_estimator(n),
            "constnt",
            "did you mean 'constant'?); estimators: "
            "abstract-coverage, constant, visible-count, llm",
        ),
        (lambda n: make_agent(n, AgentSetup()), "orcale", "did you mean 'oracle'"),
        (load_site, "wether", "no replica site 'wether' (did you mean 'weather'?)"),
        (belief_renderer, "zzz", "no belief 'zzz'; beliefs: dedup, dedup-hidden-ids, oracle,"),
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
