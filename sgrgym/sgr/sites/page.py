"""The replica sites' page template, and reading data tables back out of a page.

Every page is plain HTML written here: a navigation bar, a heading, a line of our own text,
the route's controls rendered as links to the states they lead to (so an agent that only
fetches pages can discover them), data tables marked ``data-table`` / ``data-col``, and a
pager. :func:`extract_tables` reads those tables back (agents and tests use it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from typing import Any, TypeVar

from sgrgym.sgr.sites.model import NotFound, Op, SiteError, SiteModel, State

T = TypeVar("T")
ORDERS = ("asc", "desc")


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


FORM_MIN_CHOICES = 8  # a group of this many choices of one parameter is a drop-down list


def _link(site: SiteModel, state: State, label: str, selected: bool = False) -> str:
    text = f"<b>{escape(label)}</b>" if selected else escape(label)
    return f'<a href="{escape(site.url(state))}">{text}</a>'


def _dropdown_param(state: State, group: ControlLinks, paging: set[str]) -> str | None:
    """The one URL parameter all of a group's choices set on this page (the page number,
    ``paging``, aside), when the group is long enough to be a drop-down list; else None."""
    if len(group.choices) < FORM_MIN_CHOICES:
        return None
    now = {k: v for k, v in state.params if k not in paging}
    changed: set[str] = set()
    for choice in group.choices:
        if choice.state.path != state.path:
            return None
        then = {k: v for k, v in choice.state.params if k not in paging}
        changed |= {k for k in now.keys() | then.keys() if now.get(k) != then.get(k)}
    return changed.pop() if len(changed) == 1 else None


def _paging(site: SiteModel, state: State) -> set[str]:
    return {c.params[0] for c in site.route_controls(state.path) if c.kind == "page"}


def _form(
    site: SiteModel,
    state: State,
    groups: Sequence[tuple[ControlLinks, str]],
    paging: set[str],
) -> str:
    """One GET form for the drop-down groups: a ``select`` per group (its choices' values of
    the parameter, "" for the default; the current one selected), the state's other settings
    as hidden fields (not its page: a new selection starts at page 1) and a Show button, as
    a real site's filter form."""
    shown = {param for _, param in groups}
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
        for k, v in state.params
        if k not in shown and k not in paging
    )
    selects = []
    for group, param in groups:
        options = "".join(
            f'<option value="{escape(c.state.get(param))}"'
            f"{' selected' if c.state.get(param) == state.get(param) else ''}>"
            f"{escape(c.label)}</option>"
            for c in group.choices
        )
        selects.append(
            f'<label>{escape(group.label)}: <select name="{escape(param)}">{options}</select>'
            "</label>"
        )
    action = escape(f"{site.base}{state.path}")
    return (
        f'<form class="filters" method="get" action="{action}">{" ".join(selects)}{hidden}'
        '<button type="submit">Show</button></form>'
    )


def render_page(
    site: SiteModel,
    state: State,
    title: str,
    intro: str,
    tables: Sequence[Table] = (),
    controls: Sequence[ControlLinks] = (),
    pager: Sequence[Choice] = (),
    notes: Sequence[str] = (),
    paragraphs: Sequence[str] = (),
) -> bytes:
    """The HTML of one state's page (deterministic: same inputs, same bytes).

    The page has the furniture of a real site: a header with the site's name and navigation,
    the ``main`` content (heading, text, the controls, the data tables, the pager, the
    page's notes) and a footer. Controls are links to the states they lead to; a group of
    many values of one parameter is a drop-down list of a GET form instead.
    """
    nav = " | ".join(_link(site, site.state(r.path), r.title) for r in site.routes)
    home = site.url(site.default_state())
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)} - {escape(site.title)}</title></head><body>",
        f'<header><p class="brand"><a href="{escape(home)}">{escape(site.title)}</a></p>'
        f'<nav class="site">{nav}</nav></header>',
        "<main>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="intro">{escape(intro)}</p>',
    ]
    parts += [f"<p>{escape(p)}</p>" for p in paragraphs]
    dropdowns = []
    paging = _paging(site, state)
    for group in controls:
        param = _dropdown_param(state, group, paging)
        if param is not None:
            dropdowns.append((group, param))
            continue
        links = " ".join(_link(site, c.state, c.label, c.selected) for c in group.choices)
        parts.append(f'<p class="control"><span>{escape(group.label)}:</span> {links}</p>')
    if dropdowns:
        parts.append(_form(site, state, dropdowns, paging))
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
    parts += [f'<p class="note">{escape(n)}</p>' for n in notes if n]
    footer = " | ".join(_link(site, s, site.route(s.path).title) for s in site.indexable_states())
    parts += ["</main>", f"<footer>{footer}</footer>", "</body></html>"]
    return "\n".join(parts).encode("utf-8")


def render_text_page(site: SiteModel, state: State, title: str, paragraphs: Sequence[str]) -> bytes:
    """A page of running text only (about/help pages, articles): no tables, no controls."""
    return render_page(site, state, title, paragraphs[0], paragraphs=paragraphs[1:])


def paginate(
    rows: Sequence[T], state: State, page_size: int, param: str = "page"
) -> tuple[list[T], int, int]:
    """(rows on the state's page, page number, number of pages).

    A page that is not a positive whole number is a SiteError (400); a page past the last one
    is NotFound (404). An empty list has one (empty) page.
    """
    text = state.get(param, "1")
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SiteError(f"{state.path}: {param}={text!r} is not a page number (pages start at 1)")
    page = int(text)
    pages = max(1, -(-len(rows) // page_size))
    if page > pages:
        raise NotFound(f"{state.path}: page {page} does not exist (the list has {pages} page(s))")
    return list(rows[(page - 1) * page_size : page * page_size]), page, pages


def pager(
    site: SiteModel, state: State, page: int, pages: int, param: str = "page", around: int = 2
) -> list[Choice]:
    """Links to the previous, first, nearby, last and next pages (none for a single page)."""
    if pages <= 1:
        return []

    def at(number: int) -> State:
        return site.state(state.path, {**dict(state.params), param: str(number)})

    shown = sorted({1, pages, *range(max(1, page - around), min(pages, page + around) + 1)})
    choices = [Choice("previous", at(page - 1))] if page > 1 else []
    choices += [Choice(str(n), at(n), n == page) for n in shown]
    if page < pages:
        choices.append(Choice("next", at(page + 1)))
    return choices


def window_bound(state: State, param: str, valid: Callable[[str], bool], rule: str) -> str | None:
    """One end ``param`` of a window as the state writes it (None when unset); a SiteError
    that says ``rule`` when ``valid`` rejects it."""
    text = state.get(param)
    if not text:
        return None
    if not valid(text):
        raise SiteError(f"{param}={text!r}: {rule}")
    return text


def descending(state: State, param: str = "order", default: str = "asc") -> bool:
    """True when the state asks for a descending order (SiteError for anything but asc/desc)."""
    order = state.get(param, default)
    if order not in ORDERS:
        raise SiteError(f"{state.path}: {param}={order!r} (use asc or desc)")
    return order == "desc"


def sort_rows(
    rows: Iterable[T], key: Callable[[T], Any], ident: Callable[[T], Any], reverse: bool
) -> list[T]:
    """Rows sorted by ``key``; equal keys keep ascending ``ident`` order in both directions."""
    return sorted(sorted(rows, key=ident), key=key, reverse=reverse)


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


def sort_links(
    site: SiteModel,
    state: State,
    control: str,
    keys: Mapping[str, str],
    default: tuple[str, str],
    label: str = "Sort",
    choice: str = "{name} {order}",
) -> ControlLinks:
    """Links for every sort key (key -> label) in both orders; the current one is marked.

    Each link reads ``choice`` with the key's label as ``name`` and ``ascending`` or
    ``descending`` as ``order``.
    """
    sort = site.control(control)
    current = tuple(state.get(p, d) for p, d in zip(sort.params, default, strict=True))
    choices = [
        Choice(
            choice.format(name=name, order="ascending" if order == "asc" else "descending"),
            site.apply(state, Op(op="sort", control=control, value=key, end=order)),
            (key, order) == current,
        )
        for key, name in keys.items()
        for order in ORDERS
    ]
    return ControlLinks(label, choices)


def csv_body(columns: Sequence[tuple[str, str]], rows: Iterable[Mapping[str, str]]) -> bytes:
    """A CSV export: a header of column keys, then one line per row (RFC 4180 quoting)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([key for key, _ in columns])
    for row in rows:
        writer.writerow([row.get(key, "") for key, _ in columns])
    return out.getvalue().encode("utf-8")
