"""Choosing the retrieval threshold θ for an (embedder, corpus) pair (paper appendix A.2).

A.2 picks θ by running one agent with the deduplicated belief over a grid of thresholds and
balancing two failures: a low θ makes retrieval trivial (passages match whatever the query),
a high θ makes the task unsolvable (well-crafted queries retrieve nothing). The paper's grid is
{0.60, 0.65, 0.70} for text-embedding-3-large and it chose 0.65; another embedder has another
cosine scale, so ``sgrgym seeker select-theta`` redoes the procedure with measured failures:

- **completeness curves** (figure 5a): mean completeness after each step of the chosen agent,
  per θ on the grid;
- **off-topic hits** (retrieval becoming trivial): for every document, the abstract sentences
  of :data:`OFF_TOPIC_DOCS` documents drawn (seeded) from *other* topic clusters are issued as
  queries against it; the rate is the share of them that retrieve anything;
- **targeted misses** (the task becoming unsolvable): for every goal passage, a keyword query
  written from the passage itself (its section heading and its first
  :data:`TARGET_PHRASES` noun-phrase runs, :func:`~sgrgym.seeker.agents.noun_phrases`); the rate
  is the share of them that retrieve nothing;
- **robustness**: the choice recomputed with other probe settings (1 or 5 off-topic documents,
  2 or 4 phrases), recorded beside it;
- **balance point**: the θ where the two rates cross (linear interpolation between grid
  points), and the chosen θ: the grid value with the smallest worse-of-the-two rate (ties: the
  larger θ, the stricter retrieval). The probe sets and the minimax rule are ours: A.2 gives the
  criterion in words, not as numbers.

The evidence (every number above, the probe sets' sha256, the embedder, corpus and vectors it
was computed for) is written as JSON beside the store's manifest, and ``--pin`` records the
chosen θ in the manifest with the evidence file's sha256 (verified when the store is opened).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from statistics import fmean

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.io import write_atomic
from sgrgym.core.numbers import fixed
from sgrgym.core.output import Progress
from sgrgym.seeker.agents import AgentSetup, make_agent, noun_phrases
from sgrgym.seeker.belief import belief_renderer
from sgrgym.seeker.corpus import Corpus
from sgrgym.seeker.embed import Embedder
from sgrgym.seeker.env import SeekerEnv
from sgrgym.seeker.estimators import abstract_sentences
from sgrgym.seeker.retrieval import NEAR_THETA
from sgrgym.seeker.retrieval import best_cosines as exact_best
from sgrgym.seeker.run import run_episode
from sgrgym.seeker.store import MANIFEST, THETA_EVIDENCE, PassageStore, ThetaSelection

PAPER_GRID = (0.60, 0.65, 0.70)  # appendix A.2 (text-embedding-3-large)
PAPER_THETA = 0.65  # appendix A.2's choice, section 2.2
DEFAULT_GRID = (0.45, 0.50, 0.55, 0.60, 0.65, 0.70)  # ours: A.2's grid extended downwards
OFF_TOPIC_DOCS = 3  # ours: other-cluster documents whose abstracts probe each document
TARGET_PHRASES = 3  # ours: noun-phrase runs of a passage in its keyword query
ROBUSTNESS = ((1, 3), (5, 3), (3, 2), (3, 4))  # other probe settings the choice is checked on
RULE = "minimax: the grid θ with the smallest max(off-topic hit rate, targeted miss rate)"
ROUND = 6


class ProbeQuery(BaseModel):
    """One probe: a query issued against one document."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    query: str
    source: str  # the document (off-topic) or passage (targeted) it was written from


class ThetaPoint(BaseModel):
    """The measurements at one θ."""

    model_config = ConfigDict(extra="forbid")

    theta: float
    off_topic_hit_rate: float  # off-topic queries that retrieve at least one passage
    targeted_miss_rate: float  # passage keyword queries that retrieve nothing
    abstract_miss_rate: float  # the document's own abstract sentences that retrieve nothing
    completeness_by_step: list[float]  # figure 5a
    final_completeness: float


class ThetaEvidence(BaseModel):
    """What ``select-theta`` measured and chose, with what it was computed from."""

    model_config = ConfigDict(extra="forbid")

    format: str = "sgrgym-theta-selection/1"
    corpus: str
    corpus_sha256: str
    model_id: str
    vectors_sha256: str
    agent: str
    belief: str
    horizon: int
    queries_per_step: int  # the query budget of every step
    grid: list[float]
    paper_grid: list[float]
    paper_theta: float
    off_topic_docs: int
    target_phrases: int
    off_topic_probes: int
    off_topic_sha256: str
    targeted_probes: int
    targeted_sha256: str
    abstract_probes: int
    points: list[ThetaPoint]
    robustness: list[dict[str, float | int | None]]  # the choice with other probe settings
    crossing: float | None  # where the two rates cross (None: they do not on this grid)
    rule: str
    chosen: float
    # Decisions within NEAR_THETA of a grid θ (probes' best cosines and episodes' retrievals):
    # what live embedding on another processor could flip. Measured, not part of the file.
    _near_theta: int = PrivateAttr(default=0)

    @property
    def near_theta(self) -> int:
        return self._near_theta


def _draw_others(corpus: Corpus, doc_index: int, k: int) -> list[int]:
    """``k`` documents of other topic clusters, drawn with a seed per document."""
    from sgrgym.seeker.calibrate import Draws

    doc = corpus.documents[doc_index]
    others = [i for i, d in enumerate(corpus.documents) if d.topic != doc.topic]
    if not others:
        return []
    picks = Draws("sgrgym-seeker-theta-off-topic", doc.id).prefix_shuffle(
        len(others), min(k, len(others))
    )
    return [others[i] for i in picks]


def off_topic_probes(corpus: Corpus, per_doc: int = OFF_TOPIC_DOCS) -> list[ProbeQuery]:
    """For each document, the abstract sentences of ``per_doc`` other-cluster documents."""
    probes = []
    for i, doc in enumerate(corpus.documents):
        for j in _draw_others(corpus, i, per_doc):
            other = corpus.documents[j]
            probes += [
                ProbeQuery(doc_id=doc.id, query=s, source=other.id)
                for s in abstract_sentences(other.abstract)
            ]
    return probes


def targeted_query(section: Sequence[str], text: str, phrases: int = TARGET_PHRASES) -> str:
    """A keyword query for one passage: its heading and its first noun-phrase runs."""
    heading = section[-1] if section else ""
    parts = [heading, *noun_phrases(text)[:phrases]]
    return " ".join(p for p in parts if p).strip() or text[:80]


def targeted_probes(corpus: Corpus, phrases: int = TARGET_PHRASES) -> list[ProbeQuery]:
    """One keyword query per goal passage, written from that passage."""
    return [
        ProbeQuery(
            doc_id=d.id, query=targeted_query(p.section, p.text, phrases), source=f"{d.id}/{p.id}"
        )
        for d in corpus.documents
        for p in d.passages
    ]


def abstract_probes(corpus: Corpus) -> list[ProbeQuery]:
    """Each document's own abstract sentences (what the ``sentences`` agent issues)."""
    return [
        ProbeQuery(doc_id=d.id, query=s, source=d.id)
        for d in corpus.documents
        for s in abstract_sentences(d.abstract)
    ]


def probes_sha256(probes: Sequence[ProbeQuery]) -> str:
    lines = "".join(json.dumps(p.model_dump(), sort_keys=True) + "\n" for p in probes)
    return sha256_bytes(lines.encode("utf-8"))


def best_cosines(store: PassageStore, embed: Embedder, probes: Sequence[ProbeQuery]) -> list[float]:
    """Each probe's highest cosine with a passage of its document (exact, as retrieval)."""
    vectors = embed.embed([p.query for p in probes]) if probes else np.zeros((0, 1), "f4")
    return [
        exact_best(store.matrix(probe.doc_id)[1], vector[None, :])[0]
        for probe, vector in zip(probes, vectors, strict=True)
    ]


def _rate(values: Sequence[bool]) -> float:
    return fixed(fmean(values), ROUND) if values else 0.0


def crossing_point(points: Sequence[ThetaPoint]) -> float | None:
    """Where off-topic hits minus targeted misses changes sign (linear interpolation)."""
    gaps = [(p.theta, p.off_topic_hit_rate - p.targeted_miss_rate) for p in points]
    for (t0, g0), (t1, g1) in pairwise(gaps):
        if g0 == 0:
            return t0
        if g0 * g1 < 0:
            return fixed(t0 + (t1 - t0) * g0 / (g0 - g1), 4)
    return gaps[-1][0] if gaps and gaps[-1][1] == 0 else None


def choose(points: Sequence[ThetaPoint]) -> float:
    """:data:`RULE`: the smallest worse-of-the-two rate; ties go to the larger θ."""
    return min(
        points, key=lambda p: (max(p.off_topic_hit_rate, p.targeted_miss_rate), -p.theta)
    ).theta


def _failure_rates(
    store: PassageStore,
    embedder: Embedder,
    corpus: Corpus,
    off_topic_docs: int,
    target_phrases: int,
    thetas: Sequence[float],
) -> list[tuple[float, float]]:
    """(off-topic hit rate, targeted miss rate) per θ."""
    off = best_cosines(store, embedder, off_topic_probes(corpus, off_topic_docs))
    target = best_cosines(store, embedder, targeted_probes(corpus, target_phrases))
    return [(_rate([b > t for b in off]), _rate([not b > t for b in target])) for t in thetas]


def select_theta(
    corpus: Corpus,
    store: PassageStore,
    embedder: Embedder,
    *,
    grid: Sequence[float] = DEFAULT_GRID,
    agent: str = "sentences",
    belief: str = "dedup",
    horizon: int = 10,
    queries_per_step: int = defaults.QUERIES_PER_STEP,
    off_topic_docs: int = OFF_TOPIC_DOCS,
    target_phrases: int = TARGET_PHRASES,
    progress: Progress | None = None,
) -> ThetaEvidence:
    """Appendix A.2 over ``grid``: curves, the two failure rates, the balance point."""
    thetas = sorted({round(float(t), 4) for t in grid})
    if not thetas or not all(-1.0 < t < 1.0 for t in thetas):
        raise UserError(f"the θ grid needs values in (-1, 1), got {list(grid)}")
    off = off_topic_probes(corpus, off_topic_docs)
    target = targeted_probes(corpus, target_phrases)
    own = abstract_probes(corpus)
    if not off:
        raise UserError(f"corpus {corpus.name!r} has one topic cluster: no off-topic probes")
    off_best = best_cosines(store, embedder, off)
    target_best = best_cosines(store, embedder, target)
    own_best = best_cosines(store, embedder, own)
    render = belief_renderer(belief)
    docs = [d.id for d in corpus.documents]
    points = []
    near = sum(abs(b - t) < NEAR_THETA for b in off_best + target_best + own_best for t in thetas)
    for n, theta in enumerate(thetas, 1):
        env = SeekerEnv(
            corpus, store, embedder.embed, theta, horizon, queries_per_step=queries_per_step
        )
        player = make_agent(agent, AgentSetup(per_step=queries_per_step))
        episodes = [run_episode(env, player, render, doc_id, 0) for doc_id in docs]
        near += sum(e.near_theta for e in episodes)
        curve = [fixed(fmean(e.completeness[i] for e in episodes), ROUND) for i in range(horizon)]
        points.append(
            ThetaPoint(
                theta=theta,
                off_topic_hit_rate=_rate([b > theta for b in off_best]),
                targeted_miss_rate=_rate([not b > theta for b in target_best]),
                abstract_miss_rate=_rate([not b > theta for b in own_best]),
                completeness_by_step=curve,
                final_completeness=curve[-1],
            )
        )
        if progress:
            progress(n, len(thetas), f"θ = {theta:.2f}")
    robustness: list[dict[str, float | int | None]] = []
    for docs_k, phrases_k in ROBUSTNESS:
        rates = _failure_rates(store, embedder, corpus, docs_k, phrases_k, thetas)
        alt = [
            p.model_copy(update={"off_topic_hit_rate": o, "targeted_miss_rate": m})
            for p, (o, m) in zip(points, rates, strict=True)
        ]
        robustness.append(
            {
                "off_topic_docs": docs_k,
                "target_phrases": phrases_k,
                "crossing": crossing_point(alt),
                "chosen": choose(alt),
            }
        )
    evidence = ThetaEvidence(
        corpus=corpus.name,
        corpus_sha256=store.manifest.corpus_sha256,
        model_id=store.manifest.model_id,
        vectors_sha256=store.manifest.vectors_sha256,
        agent=agent,
        belief=belief,
        horizon=horizon,
        queries_per_step=queries_per_step,
        grid=thetas,
        paper_grid=list(PAPER_GRID),
        paper_theta=PAPER_THETA,
        off_topic_docs=off_topic_docs,
        target_phrases=target_phrases,
        off_topic_probes=len(off),
        off_topic_sha256=probes_sha256(off),
        targeted_probes=len(target),
        targeted_sha256=probes_sha256(target),
        abstract_probes=len(own),
        points=points,
        robustness=robustness,
        crossing=crossing_point(points),
        rule=RULE,
        chosen=choose(points),
    )
    evidence._near_theta = near
    return evidence


def evidence_bytes(evidence: ThetaEvidence) -> bytes:
    return canonical_json(evidence.model_dump(mode="json")).encode("utf-8")


def write_evidence(evidence: ThetaEvidence, path: Path) -> str:
    """Write the evidence file (canonical JSON); returns its sha256."""
    data = evidence_bytes(evidence)
    write_atomic(path, data, parents=True)
    return sha256_bytes(data)


def pin_theta(store_dir: Path, evidence: ThetaEvidence) -> ThetaSelection:
    """Write the evidence beside the store's manifest and pin the chosen θ in the manifest."""
    manifest_path = store_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if (manifest.get("model_id"), manifest.get("vectors_sha256")) != (
        evidence.model_id,
        evidence.vectors_sha256,
    ):
        raise UserError(f"{manifest_path}: the evidence was computed for another store")
    digest = write_evidence(evidence, store_dir / THETA_EVIDENCE)
    selection = ThetaSelection(
        file=THETA_EVIDENCE, sha256=digest, rule=RULE, paper_theta=PAPER_THETA
    )
    manifest["theta"] = evidence.chosen
    manifest["theta_selection"] = selection.model_dump(mode="json")
    write_atomic(manifest_path, canonical_json(manifest))
    return selection
