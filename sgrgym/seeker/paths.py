"""Where SeekerGym's built corpora and passage stores live, by name (no heavy import: the
command line reads these at start-up)."""

from __future__ import annotations

from pathlib import Path

from sgrgym.core import defaults
from sgrgym.core.home import home_path

DEMO = "demo"
DEMO_CORPUS = "djangodocs"
DEFAULT_MODEL = defaults.EMBEDDER
DEFAULT_THETA = (
    0.65  # paper section 2.2; sgrgym.seeker.store.DEFAULT_THETA (not imported: lazy CLI)
)


def corpus_path(name: str) -> Path:
    """Where a named corpus is built (its text is never committed)."""
    return home_path("tasks/seeker") / (DEMO_CORPUS if name == DEMO else name) / "corpus.jsonl"


def store_path(corpus: str, model: str) -> Path:
    name = DEMO_CORPUS if corpus == DEMO else corpus
    return home_path("embeddings") / f"{name}__{model.replace(':', '-')}"
