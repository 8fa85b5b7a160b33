"""Embedding-based topic clusters for a corpus (paper appendix B.1, "Topic curation").

B.1 embeds each article's abstract, projects the vectors with UMAP and finds dense topic regions
with DBSCAN; points DBSCAN leaves as noise are outliers and leave the pool. The paper's
settings: UMAP to 1536 dimensions (from text-embedding-3-large's 3072), then DBSCAN with
ε = 0.16 and min_samples = 160, Euclidean, for Wikipedia (B.1.1); cosine UMAP, ε = 0.16 and
min_samples = 64 for the ML surveys (B.1.2). Here the abstracts are embedded with the pinned
embedder; the UMAP width defaults to half the embedding width (the paper's ratio; capped below
the number of documents, which UMAP's spectral start needs: ours). ``min_samples`` keeps the
paper's value by default: a pool smaller than it forms no cluster at all, which is reported,
not hidden. Needs the ``cluster`` extra (umap-learn, scikit-learn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from sgrgym.core.errors import UserError
from sgrgym.seeker.corpus import Document
from sgrgym.seeker.embed import Embedder

WIKIPEDIA_MIN_SAMPLES = 160  # appendix B.1.1
SURVEY_MIN_SAMPLES = 64  # appendix B.1.2
EPSILON = 0.16  # appendix B.1.1 and B.1.2
NOISE = -1


class TopicClustering(BaseModel):
    """UMAP + DBSCAN settings (defaults: appendix B.1.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eps: float = Field(default=EPSILON, gt=0.0)
    min_samples: int = Field(default=WIKIPEDIA_MIN_SAMPLES, ge=1)
    dbscan_metric: str = "euclidean"
    umap_metric: str = "euclidean"  # B.1.2 uses cosine
    umap_components: int | None = Field(default=None, ge=1)  # None: half the embedding width
    umap_neighbors: int = Field(default=15, ge=2)  # umap-learn's default (B.1 gives none)
    seed: int = 0


def cluster_labels(vectors: np.ndarray, settings: TopicClustering) -> list[int]:
    """DBSCAN labels (``NOISE`` = -1 for outliers) of the UMAP projection of ``vectors``."""
    try:
        import umap
        from sklearn.cluster import DBSCAN
    except ImportError as exc:
        raise UserError(
            f"embedding topic clusters need the cluster extra ({exc.name} is missing): "
            "pip install 'sgrgym[cluster]'"
        ) from None
    n, dims = vectors.shape
    if n < 4:
        raise UserError(f"topic clustering needs at least 4 documents, got {n}")
    components = settings.umap_components or max(2, dims // 2)
    components = min(components, n - 2)
    reducer = umap.UMAP(
        n_components=components,
        metric=settings.umap_metric,
        n_neighbors=min(settings.umap_neighbors, n - 1),
        random_state=settings.seed,
        n_jobs=1,
    )
    projected = reducer.fit_transform(np.asarray(vectors, dtype=np.float32))
    labels = DBSCAN(
        eps=settings.eps, min_samples=settings.min_samples, metric=settings.dbscan_metric
    ).fit_predict(projected)
    return [int(x) for x in labels]


def regroup(
    documents: Sequence[Document], vectors: np.ndarray, settings: TopicClustering
) -> dict[str, list[Document]]:
    """The documents by the cluster of their abstract's vector (``cluster-<k>``, in order of
    first member), noise dropped; document order kept within a cluster."""
    labels = cluster_labels(vectors, settings)
    names: dict[int, str] = {}
    out: dict[str, list[Document]] = {}
    for doc, label in zip(documents, labels, strict=True):
        if label == NOISE:
            continue
        name = names.setdefault(label, f"cluster-{len(names)}")
        out.setdefault(name, []).append(doc.model_copy(update={"topic": name}))
    return out


Regroup = Callable[[dict[str, list[Document]]], dict[str, list[Document]]]


def make_regroup(embedder: Embedder, settings: TopicClustering) -> Regroup:
    """A corpus builder hook: the passing documents (in id order) regrouped by cluster."""

    def apply(by_topic: dict[str, list[Document]]) -> dict[str, list[Document]]:
        documents = sorted((d for docs in by_topic.values() for d in docs), key=lambda d: d.id)
        vectors = np.asarray(embedder.embed([d.abstract for d in documents]), dtype=np.float32)
        grouped = regroup(documents, vectors, settings)
        if not grouped:
            raise UserError(
                f"UMAP + DBSCAN (ε = {settings.eps}, min_samples = {settings.min_samples}) "
                f"found no topic cluster among the {len(documents)} passing documents: lower "
                "--min-samples (it cannot exceed the pool) or raise --eps"
            )
        return grouped

    return apply
