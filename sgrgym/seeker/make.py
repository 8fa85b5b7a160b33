"""Building a SeekerGym environment: the one way every command, the main job, the Gymnasium
wrapper and users' scripts do it.

Heavy modules are imported inside the function (the command line imports this module at
start-up).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.core import defaults
from sgrgym.seeker.paths import corpus_path, store_path

if TYPE_CHECKING:
    from sgrgym.seeker.embed import Embedder
    from sgrgym.seeker.env import SeekerEnv, StopRule


def make_env(
    corpus: str = defaults.SEEKER_CORPUS,
    *,
    corpus_file: Path | None = None,
    store: Path | None = None,
    model: str = defaults.EMBEDDER,
    theta: float | None = None,
    horizon: int = 10,
    query_cache: Path | None = None,
    embedder: Embedder | None = None,
    stop_rule: StopRule | None = None,
    queries_per_step: int = defaults.QUERIES_PER_STEP,
) -> SeekerEnv:
    """The SeekerGym environment over a built corpus and its passage store (default: the demo
    corpus, ``tasks/seeker/djangodocs/``, and its store under ``embeddings/``, from the
    repository root), both checked against their pins.

    ``theta`` overrides the store's pinned θ; ``horizon`` is M (section 2.2);
    ``queries_per_step`` the query budget of every step (section 2.3). Queries are
    embedded by ``model`` (through the SQLite ``query_cache`` when given), or by ``embedder``
    (e.g. the recorded vectors of a model agent), which must be the store's embedder.
    """
    from sgrgym.core.errors import UserError
    from sgrgym.seeker.embed import load_embedder
    from sgrgym.seeker.env import SeekerEnv
    from sgrgym.seeker.pinned import load_pinned_corpus
    from sgrgym.seeker.store import PassageStore

    store_dir = store or store_path(corpus, model)
    corpus_data = load_pinned_corpus(corpus_file or corpus_path(corpus), store_dir, True)
    passages = PassageStore.open(store_dir)
    if embedder is None:
        embedder = load_embedder(model, query_cache=query_cache)
    if embedder.model_id != passages.manifest.model_id:
        raise UserError(
            f"the store holds {passages.manifest.model_id} vectors, the embedder is "
            f"{embedder.model_id}"
        )
    return SeekerEnv(
        corpus_data, passages, embedder.embed, theta, horizon, stop_rule, queries_per_step
    )
