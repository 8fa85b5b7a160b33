"""A Gymnasium wrapper: ``gymnasium.make("sgrgym/Seeker-v0", corpus=..., store=...)``.

Observation: the rendered belief state (text). Action: one query (text). Reward: the
completeness at the last step (γ = 1), 0 before; ``terminated`` at the horizon. The document
of an episode is ``options["doc_id"]`` or, without it, drawn with the reset seed. Needs the
optional ``gym`` extra (gymnasium).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from sgrgym.seeker.belief import belief_renderer
from sgrgym.seeker.env import Embed, SeekerEnv

ENV_ID = "sgrgym/Seeker-v0"
MAX_TEXT = 200_000
CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n"


class SeekerGymEnv(gymnasium.Env[str, str]):
    metadata = {"render_modes": []}  # noqa: RUF012 - Gymnasium's own class attribute

    def __init__(
        self,
        env: SeekerEnv | None = None,
        corpus: str | Path | None = None,
        store: str | Path | None = None,
        embedder: str = "minilm-l6-onnx",
        belief: str = "dedup",
        horizon: int = 10,
    ) -> None:
        if env is None:
            env = _load_env(corpus, store, embedder, horizon)
        self.env = env
        self.render_belief = belief_renderer(belief)
        self.observation_space = spaces.Text(max_length=MAX_TEXT, charset=CHARSET)
        self.action_space = spaces.Text(min_length=1, max_length=512, charset=CHARSET)
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

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.env.step([action])
        info = {"completeness": result.completeness, "new": [p.id for p in result.new_passages]}
        return self._observe(), float(result.reward), result.done, False, info

    def _observe(self) -> str:
        state = self.env.state
        assert state is not None
        text = self.render_belief(state)
        return "".join(c if c in CHARSET else "?" for c in text)[:MAX_TEXT]


def _load_env(
    corpus: str | Path | None, store: str | Path | None, embedder: str, horizon: int
) -> SeekerEnv:
    from sgrgym.seeker.corpus import load_corpus
    from sgrgym.seeker.embed import load_embedder
    from sgrgym.seeker.store import PassageStore

    if corpus is None or store is None:
        raise ValueError("pass env=SeekerEnv(...) or corpus= and store= paths")
    embed: Embed = load_embedder(embedder).embed
    return SeekerEnv(
        load_corpus(Path(corpus)), PassageStore.open(Path(store)), embed, None, horizon
    )


def register() -> None:
    """Register ``sgrgym/Seeker-v0`` with Gymnasium (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="sgrgym.seeker.gym:SeekerGymEnv")


register()
