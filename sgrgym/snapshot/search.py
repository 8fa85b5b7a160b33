"""Full-text search over a pack's archived pages (DuckDB FTS, BM25), deterministic order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgrgym.snapshot.index import connect, index_path
from sgrgym.snapshot.replay import Snapshot

if TYPE_CHECKING:
    import duckdb

WORD = re.compile(r"\w+", re.UNICODE)  # a query without one finds nothing


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
    terms = [t.lower() for t in WORD.findall(query)]
    lowered = flat.lower()
    positions = [p for p in (lowered.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    window = flat[start : start + width]
    return ("..." if start else "") + window + ("..." if start + width < len(flat) else "")


def search(snapshot: Snapshot, query: str, limit: int = 10) -> list[SearchHit]:
    """Ranked pages for ``query``: BM25 score descending, then URL, so ties never reorder."""
    if not WORD.search(query):
        return []
    con = connect(index_path(snapshot.pack_dir, snapshot.pin), fts=True)
    try:
        return ranked_hits(con, "pages", query, limit)
    finally:
        con.close()


def ranked_hits(
    con: duckdb.DuckDBPyConnection, table: str, query: str, limit: int
) -> list[SearchHit]:
    """The ``limit`` best rows of ``table`` (url, title, text, with a DuckDB FTS index keyed
    by url) for ``query``: BM25 score descending, then URL, so ties never reorder."""
    rows = con.execute(
        "SELECT url, title, text, score FROM ("
        f"  SELECT *, fts_main_{table}.match_bm25(url, ?) AS score FROM {table}"
        ") WHERE score IS NOT NULL ORDER BY score DESC, url LIMIT ?",
        [query, limit],
    ).fetchall()
    return [
        SearchHit(rank, url, title, round(float(score), 6), snippet(text, query))
        for rank, (url, title, text, score) in enumerate(rows, start=1)
    ]
