"""Full-text search over a pack's archived pages (DuckDB FTS, BM25), deterministic order."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sgrgym.sgr.archive.index import connect, index_path
from sgrgym.sgr.archive.replay import Snapshot

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class SearchHit:
    rank: int
    url: str
    title: str
    score: float
    snippet: str


def snippet(text: str, query: str, width: int = 160) -> str:
    """A one-line window of ``text`` around the first query term it contains."""
    flat = " ".join(text.split())
    terms = [t.lower() for t in _WORD.findall(query)]
    lowered = flat.lower()
    positions = [p for p in (lowered.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    window = flat[start : start + width]
    return ("..." if start else "") + window + ("..." if start + width < len(flat) else "")


def search(snapshot: Snapshot, query: str, limit: int = 10) -> list[SearchHit]:
    """Ranked pages for ``query``: BM25 score descending, then URL, so ties never reorder."""
    if not _WORD.search(query):
        return []
    con = connect(index_path(snapshot.pack_dir, snapshot.pin))
    try:
        rows = con.execute(
            "SELECT url, title, text, score FROM ("
            "  SELECT *, fts_main_pages.match_bm25(url, ?) AS score FROM pages"
            ") WHERE score IS NOT NULL ORDER BY score DESC, url LIMIT ?",
            [query, limit],
        ).fetchall()
    finally:
        con.close()
    return [
        SearchHit(rank, url, title, round(float(score), 6), snippet(text, query))
        for rank, (url, title, text, score) in enumerate(rows, start=1)
    ]
