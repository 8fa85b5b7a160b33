"""The agent's ``search`` tool: a model of a web search engine over a pack's sites.

A search engine finds sites, not the answers behind their controls (SGR-Bench section 3.2.2,
shortcut resistance). So the index holds only pages a crawler would find without operating a
site: each modelled site's start page and the routes its model declares ``indexable`` (about
and help pages, articles), each in its default state; a state with any non-default control is
never indexed. Hosts of the pack without a site model contribute their archived root page.
A page is indexed by its title and the text of its ``main`` content, as search engines skip
a site's header, navigation and footer, so snippets quote what the page is about.
The pack's distractor sites (text sites sharing the task sites' vocabulary) are modelled sites
like any other, so they are indexed the same way and compete in the ranking.

Ranking is DuckDB full-text search (BM25, English stemmer and stop words) over title and text,
in its own in-memory table, ties broken by URL: the same query always gives the same list.
The archive's own full-text search over every archived page (``sgrgym snapshot search``) is a
different tool for researchers, not the agent's.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sgrgym.sgr.simulator import Simulator
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.snapshot.index import connect, fts_extension
from sgrgym.snapshot.reading import main_text
from sgrgym.snapshot.search import WORD, SearchHit, ranked_hits
from sgrgym.snapshot.text import html_title

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class WebDocument:
    url: str
    title: str
    text: str


def web_documents(sim: Simulator) -> list[WebDocument]:
    """The pages the search engine indexes (see the module docstring), in URL order."""
    docs: dict[str, WebDocument] = {}
    modelled = {model.host for model in sim.sites.values()}
    urls = [
        (model.url(state), model.name)
        for model in sim.sites.values()
        for state in model.indexable_states()
    ]
    for url in sim.snapshot.urls():
        parts = urlsplit(url)
        if parts.netloc.lower() not in modelled and parts.path in ("", "/") and not parts.query:
            urls.append((url, ""))
    for url, site in urls:
        page = sim.serve(url, site)
        if page.status != 200 or "html" not in page.content_type:
            continue
        text = main_text(page.body, page.content_type)
        docs[url] = WebDocument(url, html_title(page.body), text)
    return [docs[url] for url in sorted(docs)]


class WebSearch:
    """A BM25 index over web documents (:func:`web_documents`); one instance serves many
    threads. The documents and their index are made when first needed, so that opening an
    environment does not pay for a search engine its agent may never query."""

    def __init__(self, documents: list[WebDocument] | Callable[[], list[WebDocument]]) -> None:
        self._make = documents if callable(documents) else None
        self._documents = None if callable(documents) else documents
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        fts_extension()  # a DuckDB without the pinned FTS extension is refused now, not later

    @classmethod
    def for_simulator(cls, sim: Simulator) -> WebSearch:
        """The search engine over ``sim``'s pages (read when it is first searched)."""
        return cls(lambda: web_documents(sim))

    @property
    def documents(self) -> list[WebDocument]:
        with self._lock:
            return self._read()

    def _read(self) -> list[WebDocument]:
        if self._documents is None:
            assert self._make is not None
            self._documents = self._make()
        return self._documents

    def _index(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = connect(Path(":memory:"), read_only=False, fts=True)
            con.execute("CREATE TABLE docs (url VARCHAR, title VARCHAR, text VARCHAR)")
            rows = [(d.url, d.title, d.text) for d in self._read()]
            con.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
            con.execute(
                "PRAGMA create_fts_index('docs', 'url', 'title', 'text', "
                "stemmer = 'porter', stopwords = 'english', overwrite = 1)"
            )
            self._con = con
        return self._con

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Ranked pages for ``query``: BM25 score descending, then URL."""
        if not WORD.search(query) or limit < 1:
            return []
        with self._lock:
            return ranked_hits(self._index(), "docs", query, limit)

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()


def first_rank(hits: list[SearchHit], host: str) -> int | None:
    """The rank of the first hit on ``host`` (None when none of the hits is on it)."""
    return next((h.rank for h in hits if urlsplit(h.url).netloc.lower() == host), None)


_SENTENCE = re.compile(r"(?<=[.?!;:])\s+")


def queries_of(instruction: str) -> list[str]:
    """The instruction, then each of its sentences (what an agent would paste into search)."""
    sentences = [s.strip() for s in _SENTENCE.split(instruction) if WORD.search(s)]
    return list(dict.fromkeys([instruction, *sentences]))


def rows_held(body: bytes, gold_rows: Sequence[Sequence[str]]) -> int:
    """How many of ``gold_rows`` a page shows: a table row whose cells include all of a
    reference row's non-empty values."""
    cells = [set(row.values()) for rows in extract_tables(body).values() for row in rows]
    return sum(1 for gold in gold_rows if any({v for v in gold if v} <= shown for shown in cells))


@dataclass(frozen=True)
class Findability:
    """One task's search check: where its site ranks, and answer rows in the top results."""

    task_id: str
    target_rank: int | None  # rank of the first hit on the task's site, instruction as query
    answer_rows_in_top: int  # reference rows shown by pages in the top ``depth``, any query
    leaking_urls: tuple[str, ...]


def findability(
    web: WebSearch,
    sim: Simulator,
    task_id: str,
    instruction: str,
    host: str,
    gold_rows: Sequence[Sequence[str]],
    depth: int = 50,
) -> Findability:
    """Search ``instruction`` and each sentence; count reference rows in the top ``depth``."""
    rank = first_rank(web.search(instruction, depth), host)
    leaks: dict[str, int] = {}
    for query in queries_of(instruction):
        for hit in web.search(query, depth):
            if hit.url not in leaks:
                model = sim.site_of_url(hit.url)
                page = sim.serve(hit.url, model.name if model else "")
                html = "html" in page.content_type
                leaks[hit.url] = rows_held(page.body, gold_rows) if html else 0
    leaking = tuple(sorted(url for url, n in leaks.items() if n))
    return Findability(task_id, rank, sum(leaks.values()), leaking)
