"""Curation closer to appendix B.1: survey filters and in/out link thresholds at their edges,
filter counts over a page graph, and UMAP + DBSCAN topic clusters (the cluster extra)."""

from __future__ import annotations

import numpy as np
import pytest
from test_seeker_corpus import doc_with, words

from sgrgym.core.errors import UserError
from sgrgym.seeker.corpus import CorpusFilter, Document, LinkCounts, caption_ratio, make_document
from sgrgym.seeker.pydocs import FILTER_SETS, DocPage, filter_counts, link_counts, stage_stats

SURVEY = CorpusFilter.ml_surveys()
LINKS = CorpusFilter(min_inbound=16, min_outbound=4)


def sectioned(n_passages: int, sections: int, short: int = 0, captions: int = 0) -> Document:
    long_text = words(48 * 4)
    texts = [f"Figure {i + 1}: {words(200)}" for i in range(captions)]
    texts += [words(47 * 4 + 3)] * short + [long_text] * (n_passages - short - captions)
    return make_document(
        "s", "T", words(400), "t", (((f"S{i % sections}",), t) for i, t in enumerate(texts))
    )


@pytest.mark.parametrize(
    ("doc", "ok"),
    [
        (sectioned(31, 8), True),  # 30 < 31
        (sectioned(30, 8), False),
        (sectioned(236, 8), True),  # 236 < 237
        (sectioned(237, 8), False),
        (sectioned(40, 7), False),  # fewer than 8 sections
        (sectioned(200, 8, short=83), True),  # 83/200 = 0.415 <= 0.4195
        (sectioned(200, 8, short=84), False),  # 0.42 > 0.4195
        (sectioned(40, 8, captions=1), True),  # 1/40 = 0.025 < 0.05
        (sectioned(40, 8, captions=2), False),  # 2/40 = 0.05 is not below 0.05
    ],
)
def test_survey_filter_edges(doc: Document, ok: bool) -> None:
    assert SURVEY.passes(doc) is ok, SURVEY.problems(doc)


def test_short_ratio_bound_is_inclusive_only_for_surveys() -> None:
    exact = sectioned(200, 8)
    assert caption_ratio(sectioned(40, 8, captions=4)) == 0.1 and caption_ratio(exact) == 0.0
    at_bound = CorpusFilter(max_short_ratio=0.25, min_passages=4, short_ratio_inclusive=True)
    strict = CorpusFilter(max_short_ratio=0.25, min_passages=4)
    quarter = doc_with(n_passages=4, short=1)
    assert at_bound.passes(quarter) and not strict.passes(quarter)


def test_link_thresholds_need_a_link_graph() -> None:
    doc = doc_with()
    assert LINKS.passes(doc, LinkCounts(16, 4))
    assert LINKS.problems(doc, LinkCounts(15, 4)) == ["15 in-corpus pages link to it (minimum 16)"]
    assert LINKS.problems(doc, LinkCounts(16, 3)) == ["links to 3 in-corpus pages (minimum 4)"]
    with pytest.raises(UserError, match="link graph"):
        LINKS.passes(doc)
    assert CorpusFilter().passes(doc)  # the default set needs no links
    assert FILTER_SETS["encyclopedic"] == CorpusFilter()  # the pinned demo's filters


def test_filter_counts_over_a_page_graph() -> None:
    hub = doc_with(doc_id="hub")
    pages = [DocPage(hub, frozenset({f"leaf{i}" for i in range(4)}))]
    for i in range(17):  # 17 leaves link to the hub; the first four are linked from it
        leaf = doc_with(doc_id=f"leaf{i}", n_passages=12 if i % 2 else 5)
        pages.append(DocPage(leaf, frozenset({"hub", "elsewhere"})))
    links = link_counts(pages)
    assert links["hub"] == LinkCounts(17, 4) and links["leaf0"] == LinkCounts(1, 1)
    counts, passing = filter_counts(pages, LINKS)
    by_name = {c.filter: (c.failing, c.remaining) for c in counts}
    assert by_name["min passages"] == (9, 9)  # the 9 even leaves are short of passages
    assert by_name["min inbound"] == (17, 1) and by_name["min outbound"] == (17, 1)
    assert [d.id for d in passing] == ["hub"]
    stats = stage_stats("kept", passing)
    assert stats.documents == 1 and stats.passages_per_document == (12.0, 12.0, 12.0)


@pytest.mark.slow
def test_umap_dbscan_finds_separated_topics_and_drops_outliers() -> None:
    pytest.importorskip("umap")
    from sgrgym.seeker.topics import TopicClustering, cluster_labels, regroup

    rng = np.random.default_rng(0)
    centers = np.eye(16, dtype=np.float32)[:3] * 4
    blobs = np.concatenate([c + rng.normal(0, 0.05, (20, 16)) for c in centers])
    settings = TopicClustering(eps=0.5, min_samples=5, umap_components=2)
    labels = cluster_labels(blobs.astype(np.float32), settings)
    assert len(set(labels) - {-1}) == 3
    assert all(len({labels[i] for i in range(k * 20, k * 20 + 20)} - {-1}) == 1 for k in range(3))
    assert cluster_labels(blobs.astype(np.float32), settings) == labels  # seeded
    assert set(cluster_labels(blobs.astype(np.float32), TopicClustering())) == {-1}  # 60 < 160
    docs = [make_document(f"d{i}", "T", str(i), "source", [(("S",), "text")]) for i in range(60)]
    grouped = regroup(docs, blobs.astype(np.float32), settings)
    assert len(grouped) == 3 and all(d.topic == name for name, ds in grouped.items() for d in ds)
