"""The replica sites' page template, and reading data tables back out of a page.

Every page is plain HTML written here: a navigation bar, a heading, a line of our own text,
the route's controls rendered as links to the states they lead to (so an agent that only
fetches pages can discover them), data tables marked ``data-table`` / ``data-col``, and a
pager. :func:`extract_tables` reads those tables back (agents and tests use it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser

from sgrgym.sgr.sites.model import SiteModel, State


@dataclass
class Table:
    """A data table: ``columns`` are (key, label) pairs; rows map keys to text."""

    name: str
    columns: Sequence[tuple[str, str]]
    rows: Sequence[dict[str, str]]
    caption: str = ""


@dataclass
class Choice:
    """One link of a control: the label shown and the state it leads to."""

    label: str
    state: State
    selected: bool = False


@dataclass
class ControlLinks:
    label: str
    choices: list[Choice] = field(default_factory=list)


def _link(site: SiteModel, state: State, label: str, selected: bool = False) -> str:
    text = f"<b>{escape(label)}</b>" if selected else escape(label)
    return f'<a href="{escape(site.url(state))}">{text}</a>'


def render_page(
    site: SiteModel,
    state: State,
    title: str,
    intro: str,
    tables: Sequence[Table] = (),
    controls: Sequence[ControlLinks] = (),
    pager: Sequence[Choice] = (),
    notes: Sequence[str] = (),
) -> bytes:
    """The HTML of one state's page (deterministic: same inputs, same bytes)."""
    nav = " | ".join(_link(site, site.state(r.path), r.title) for r in site.routes)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)} - {escape(site.title)}</title></head><body>",
        f'<nav class="site">{nav}</nav>',
        f"<h1>{escape(title)}</h1>",
        f'<p class="intro">{escape(intro)}</p>',
    ]
    for group in controls:
        links = " ".join(_link(site, c.state, c.label, c.selected) for c in group.choices)
        parts.append(f'<p class="control"><span>{escape(group.label)}:</span> {links}</p>')
    for table in tables:
        head = "".join(
            f'<th data-col="{escape(key)}">{escape(label)}</th>' for key, label in table.columns
        )
        body = "".join(
            "<tr>"
            + "".join(
                f'<td data-col="{escape(key)}">{escape(row.get(key, ""))}</td>'
                for key, _ in table.columns
            )
            + "</tr>"
            for row in table.rows
        )
        caption = f"<caption>{escape(table.caption)}</caption>" if table.caption else ""
        parts.append(
            f'<table data-table="{escape(table.name)}">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        )
    if pager:
        links = " ".join(_link(site, c.state, c.label, c.selected) for c in pager)
        parts.append(f'<p class="pager">Pages: {links}</p>')
    parts += [f'<p class="note">{escape(n)}</p>' for n in notes]
    parts.append("</body></html>")
    return "\n".join(parts).encode("utf-8")


class _TableReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[dict[str, str]]] = {}
        self._table: str | None = None
        self._row: dict[str, str] | None = None
        self._col: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "table" and named.get("data-table"):
            self._table = named["data-table"] or ""
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None and named.get("data-col"):
            self._col = named["data-col"]
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._col is not None:
            self._row[self._col] = " ".join("".join(self._text).split())
            self._col = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row:
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._col is not None:
            self._text.append(data)


def extract_tables(html: bytes | str) -> dict[str, list[dict[str, str]]]:
    """The ``data-table`` tables of a page: name -> rows (column key -> cell text)."""
    reader = _TableReader()
    reader.feed(html.decode("utf-8", "replace") if isinstance(html, bytes) else html)
    reader.close()
    return reader.tables
