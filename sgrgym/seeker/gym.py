"""A Gymnasium wrapper: ``gymnasium.make("sgrgym/Seeker-v0")`` (the demo corpus, from the
repository root), or with ``corpus=`` and ``store=`` paths, or ``env=`` a built environment.

- **Observation**: the rendered belief state (text, Unicode kept as it is).
- **Action**: a sequence of at most ``queries_per_step`` queries (paper section 2.2: "one or
  more natural language queries" a step, within the fixed query budget of section 2.3); a
  single string is taken as one query. Queries may hold any Unicode text. The action space
  is a :class:`QueryBudget` (a Gymnasium ``Sequence`` whose length is bounded by the budget);
  a longer action is refused (:class:`~sgrgym.seeker.env.QueryBudgetExceeded`).
- **Reward**: the completeness at the episode's last step (γ = 1), 0 before.
- **terminated** is for the calibrated stop (``stop_rule``, e.g.
  :class:`~sgrgym.seeker.calibrate.CalibratedStop`: the agent is done when ĉ - q̂ >= δ);
  reaching the horizon M is a time limit: ``truncated=True, terminated=False`` (Gymnasium's
  convention).

The document of an episode is ``options["doc_id"]`` or, without it, drawn with the reset seed.
Needs the optional ``gym`` extra (gymnasium).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from sgrgym.core import defaults
from sgrgym.seeker.belief import belief_renderer
from sgrgym.seeker.env import SeekerEnv, StopRule

ENV_ID = "sgrgym/Seeker-v0"
MAX_TEXT = 200_000
MAX_QUERY = 2_000
# What random queries are drawn from (any Unicode text is accepted): printable ASCII, a line
# break and a few accented letters, dashes, quotes and symbols.
SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\nàäçéèêíñöøüßåæœ–—‘’“”…°±×→≤≥πλμ∞€"


def _allowed(char: str) -> bool:
    """Any character but surrogates and control characters other than tab and line breaks."""
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return False
    return (code >= 32 and not 0x7F <= code < 0xA0) or char in "\t\n\r"


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains any Unicode text of its length range
    (not only its charset, which is what ``sample`` draws from)."""

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, str)
            and self.min_length <= len(x) <= self.max_length
            and all(_allowed(c) for c in x)
        )


class QueryBudget(spaces.Sequence):
    """A sequence of 0 to ``max_length`` queries: what one step may send."""

    def __init__(self, query: spaces.Space[Any], max_length: int) -> None:
        super().__init__(query)
        self.max_length = max_length

    def sample(self, mask: Any = None, probability: Any = None) -> tuple[Any, ...]:
        if mask is None and probability is None:
            length = int(self.np_random.integers(0, self.max_length + 1))
            return tuple(self.feature_space.sample() for _ in range(length))
        drawn: tuple[Any, ...] = super().sample(mask, probability)
        return drawn[: self.max_length]

    def contains(self, x: Any) -> bool:
        return isinstance(x, tuple) and len(x) <= self.max_length and super().contains(x)

    def __repr__(self) -> str:
        return f"QueryBudget({self.feature_space!r}, max_length={self.max_length})"


class SeekerGymEnv(gymnasium.Env[str, tuple[str, ...]]):
    metadata = {"render_modes": []}  # noqa: RUF012 - Gymnasium's own class attribute

    def __init__(
        self,
        env: SeekerEnv | None = None,
        corpus: str | Path | None = None,
        store: str | Path | None = None,
        embedder: str = defaults.EMBEDDER,
        belief: str = "dedup",
        horizon: int = defaults.HORIZON,
        stop_rule: StopRule | None = None,
        queries_per_step: int = defaults.QUERIES_PER_STEP,
    ) -> None:
        if env is None:
            env = _load_env(corpus, store, embedder, horizon, queries_per_step)
        if stop_rule is not None:
            env.stop_rule = stop_rule
        self.env = env
        self.render_belief = belief_renderer(belief)
        self.observation_space = UnicodeText(
            max_length=MAX_TEXT, min_length=0, charset=SAMPLE_CHARSET
        )
        self.action_space = QueryBudget(
            UnicodeText(min_length=1, max_length=MAX_QUERY, charset=SAMPLE_CHARSET),
            env.queries_per_step,
        )
        self._docs = env.store.documents()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        doc_id = (options or {}).get("doc_id") or self._docs[
            int(self.np_random.integers(len(self._docs)))
        ]
        self.env.reset(str(doc_id), seed or 0)
        return self._observe(), {"doc_id": doc_id}

    def step(self, action: Sequence[str] | str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        queries = [action] if isinstance(action, str) else list(action)
        if not all(isinstance(q, str) for q in queries):
            raise TypeError("an action is a sequence of query strings")
        result = self.env.step(queries)
        state = self.env.state
        assert state is not None
        info = {
            "completeness": result.completeness,
            "new": [p.id for p in result.new_passages],
            "per_query": result.per_query,
            "step": len(state.history),
            "queries_per_step": self.env.queries_per_step,
        }
        return self._observe(), float(result.reward), result.terminated, result.truncated, info

    def _observe(self) -> str:
        state = self.env.state
        assert state is not None
        return self.render_belief(state)[:MAX_TEXT]


def _load_env(
    corpus: str | Path | None,
    store: str | Path | None,
    embedder: str,
    horizon: int,
    queries_per_step: int,
) -> SeekerEnv:
    """The environment of :func:`sgrgym.seeker.make.make_env`: the demo corpus and its store
    when neither path is given."""
    from sgrgym.core.errors import UserError
    from sgrgym.seeker.make import make_env

    if (corpus is None) != (store is None):
        raise UserError("pass both corpus= and store= paths, or neither (the demo corpus)")
    return make_env(
        corpus_file=None if corpus is None else Path(corpus),
        store=None if store is None else Path(store),
        model=embedder,
        horizon=horizon,
        queries_per_step=queries_per_step,
    )


def register() -> None:
    """Register ``sgrgym/Seeker-v0`` with Gymnasium (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="sgrgym.seeker.gym:SeekerGymEnv")


register()
