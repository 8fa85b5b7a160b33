"""Elements portal: a replica reference-data site over the ``elements.db`` of mendeleev.

The data (elements, series and isotopes) is read with :mod:`sqlite3` straight from the
database file that ships inside the installed ``mendeleev`` package; the package itself is
never imported (it pulls in pandas). Three routes:

- ``/`` — the periodic browser, a hierarchy ``block -> period -> element`` (control ``node``,
  values such as ``d``, ``d.4`` and ``d.4.Fe``); the root lists the blocks;
- ``/elements`` — the element list with faceted filters (``group``, ``series``, ``block``,
  ``period``), a sort (``sort``/``order``) and pages of 20 rows;
- ``/isotopes`` — the isotope list, optionally scoped to one element (``element``), with a kind
  filter (``kind``: stable, radioactive, natural), a discovery-year window (``from``/``to``),
  a sort and pages.

Every page has one ``results`` table; all text around it is written here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

from sgrgym.sgr.sites.app import PAGE_SIZE, SiteApp, package_file, replica_model
from sgrgym.sgr.sites.model import Control, NotFound, Route, SiteError, SiteModel, State
from sgrgym.sgr.sites.page import (
    ORDERS,
    Choice,
    ControlLinks,
    Table,
    descending,
    pager,
    paginate,
    render_page,
    render_text_page,
    sort_rows,
)

PACKAGE = "mendeleev"
LICENCE = "MIT"
ISOTOPE_KINDS = ("stable", "radioactive", "natural")
KIND_LABELS = {"stable": "stable", "radioactive": "radioactive", "natural": "naturally occurring"}
ELEMENT_SORTS = {
    "number": "atomic number",
    "name": "name",
    "symbol": "symbol",
    "weight": "atomic weight",
    "year": "discovery year",
}
ISOTOPE_SORTS = {
    "mass_number": "mass number",
    "year": "discovery year",
    "half_life": "half-life",
    "abundance": "natural abundance",
}
# Seconds per half-life unit as the data writes them (a year is 365.25 days).
_YEAR = 31_557_600.0
UNIT_SECONDS = {
    "ysec": 1e-24,
    "zsec": 1e-21,
    "asec": 1e-18,
    "psec": 1e-12,
    "nsec": 1e-9,
    "usec": 1e-6,
    "msec": 1e-3,
    "sec": 1.0,
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
    "year": _YEAR,
    "kyear": 1e3 * _YEAR,
    "Myear": 1e6 * _YEAR,
    "Gyear": 1e9 * _YEAR,
    "Tyear": 1e12 * _YEAR,
    "Pyear": 1e15 * _YEAR,
    "Eyear": 1e18 * _YEAR,
    "Zyear": 1e21 * _YEAR,
    "Yyear": 1e24 * _YEAR,
}
_YEAR_TEXT = re.compile(r"^\d{1,4}$")

ELEMENT_COLUMNS = (
    ("atomic_number", "Z"),
    ("symbol", "Symbol"),
    ("name", "Name"),
    ("block", "Block"),
    ("period", "Period"),
    ("group", "Group"),
    ("series", "Series"),
    ("atomic_weight", "Atomic weight"),
    ("discovery_year", "Discovered"),
    ("radioactive", "Radioactive"),
)
ISOTOPE_COLUMNS = (
    ("isotope", "Isotope"),
    ("element", "Element"),
    ("mass_number", "A"),
    ("mass", "Atomic mass (u)"),
    ("abundance", "Abundance (%)"),
    ("radioactive", "Radioactive"),
    ("half_life", "Half-life"),
    ("half_life_unit", "Unit"),
    ("discovery_year", "Discovered"),
)


# -- data -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Element:
    """One element row, with its series resolved to a name and a URL slug."""

    number: int
    symbol: str
    name: str
    block: str
    period: int
    group: int | None
    series: str
    series_slug: str
    weight: float | None
    year: int | None
    radioactive: bool


@dataclass(frozen=True)
class Isotope:
    """One isotope row; ``seconds`` is the half-life in seconds (None when not given)."""

    id: int
    number: int
    symbol: str
    mass_number: int
    mass: float | None
    abundance: float | None
    radioactive: bool
    half_life: float | None
    unit: str
    year: int | None

    @property
    def seconds(self) -> float | None:
        if not self.radioactive:
            return math.inf
        if self.half_life is None or self.unit not in UNIT_SECONDS:
            return None
        return self.half_life * UNIT_SECONDS[self.unit]


@dataclass(frozen=True)
class Data:
    """Everything the site shows, loaded once."""

    elements: tuple[Element, ...]
    isotopes: tuple[Isotope, ...]
    series: tuple[tuple[str, str], ...]  # (slug, name) in the data's order
    version: str

    def element(self, symbol: str) -> Element:
        for element in self.elements:
            if element.symbol == symbol:
                return element
        raise NotFound(f"no element {symbol!r}")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def database_path() -> Path:
    """The ``elements.db`` file of the installed mendeleev package (UserError when absent)."""
    return package_file("elements", PACKAGE, "elements.db")


def data_files() -> list[Path]:
    """The data files the app reads, located without reading them."""
    return [database_path()]


def load_data(path: Path | None = None) -> Data:
    """Read elements, series and isotopes from the package's SQLite file (read-only)."""
    path = path or database_path()
    version = importlib.metadata.version(PACKAGE)
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        series_rows = conn.execute("SELECT id, name FROM series ORDER BY id").fetchall()
        series = {int(i): str(n) for i, n in series_rows}
        elements = tuple(
            Element(
                number=int(r[0]),
                symbol=str(r[1]),
                name=str(r[2]),
                block=str(r[3]),
                period=int(r[4]),
                group=None if r[5] is None else int(r[5]),
                series=series.get(int(r[6]), "") if r[6] is not None else "",
                series_slug=_slug(series.get(int(r[6]), "")) if r[6] is not None else "",
                weight=None if r[7] is None else float(r[7]),
                year=None if r[8] is None else int(r[8]),
                radioactive=bool(r[9]),
            )
            for r in conn.execute(
                "SELECT atomic_number, symbol, name, block, period, group_id, series_id, "
                "atomic_weight, discovery_year, is_radioactive FROM elements "
                "ORDER BY atomic_number"
            )
        )
        symbols = {e.number: e.symbol for e in elements}
        isotopes = tuple(
            Isotope(
                id=int(r[0]),
                number=int(r[1]),
                symbol=symbols[int(r[1])],
                mass_number=int(r[2]),
                mass=None if r[3] is None else float(r[3]),
                abundance=None if r[4] is None else float(r[4]),
                radioactive=bool(r[5]),
                half_life=None if r[6] is None else float(r[6]),
                unit=str(r[7] or ""),
                year=None if r[8] is None else int(r[8]),
            )
            for r in conn.execute(
                "SELECT id, atomic_number, mass_number, mass, abundance, is_radioactive, "
                "half_life, half_life_unit, discovery_year FROM isotopes ORDER BY id"
            )
        )
    conn.close()
    slugs = tuple((_slug(n), n) for n in series.values())
    return Data(elements, isotopes, slugs, version)


# -- formatting ---------------------------------------------------------------------------------
def number_text(value: float | int | None) -> str:
    """A number as plain decimal text (no exponent); empty for a missing value."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value)), "f")


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def element_row(element: Element) -> dict[str, str]:
    """The cells of one element in the element tables."""
    return {
        "atomic_number": str(element.number),
        "symbol": element.symbol,
        "name": element.name,
        "block": element.block,
        "period": str(element.period),
        "group": "" if element.group is None else str(element.group),
        "series": element.series,
        "atomic_weight": number_text(element.weight),
        "discovery_year": "" if element.year is None else str(element.year),
        "radioactive": _yes_no(element.radioactive),
    }


def isotope_row(isotope: Isotope) -> dict[str, str]:
    """The cells of one isotope in the isotope table."""
    return {
        "isotope": f"{isotope.symbol}-{isotope.mass_number}",
        "element": isotope.symbol,
        "mass_number": str(isotope.mass_number),
        "mass": number_text(isotope.mass),
        "abundance": number_text(isotope.abundance),
        "radioactive": _yes_no(isotope.radioactive),
        "half_life": number_text(isotope.half_life) if isotope.radioactive else "",
        "half_life_unit": isotope.unit if isotope.radioactive else "",
        "discovery_year": "" if isotope.year is None else str(isotope.year),
    }


# -- sorting ------------------------------------------------------------------------------------
SortValue = float | str
_Row = TypeVar("_Row", Element, Isotope)


def sort_missing_last(
    rows: Iterable[_Row],
    key: Callable[[_Row], SortValue | None],
    tie: Callable[[_Row], int],
    reverse: bool,
) -> list[_Row]:
    """Rows ordered by ``key``, ties by ``tie`` ascending; missing values last in either order.

    Site-specific on top of the shared :func:`~sgrgym.sgr.sites.page.sort_rows`: weights,
    discovery years, half-lives and abundances can be missing (None, which does not compare),
    and this site lists such rows after all the others, by ``tie``, whichever the order.
    """
    rows = list(rows)
    present = [row for row in rows if key(row) is not None]
    missing = [row for row in rows if key(row) is None]
    return sort_rows(present, key, tie, reverse) + sorted(missing, key=tie)


ELEMENT_KEYS: dict[str, Callable[[Element], SortValue | None]] = {
    "number": lambda e: e.number,
    "name": lambda e: e.name,
    "symbol": lambda e: e.symbol,
    "weight": lambda e: e.weight,
    "year": lambda e: e.year,
}
ISOTOPE_KEYS: dict[str, Callable[[Isotope], SortValue | None]] = {
    "mass_number": lambda i: i.mass_number * 1000 + i.number,
    "year": lambda i: i.year,
    "half_life": lambda i: i.seconds,
    "abundance": lambda i: i.abundance,
}
FACETS = ("group", "series", "block", "period")


def facet_value(element: Element, facet: str) -> str:
    """The value an element has for one of the element list's filters."""
    if facet == "group":
        return "" if element.group is None else str(element.group)
    if facet == "series":
        return element.series_slug
    if facet == "block":
        return element.block
    return str(element.period)


def isotope_kind_matches(isotope: Isotope, kind: str) -> bool:
    """Whether an isotope belongs to a value of the kind filter ("" matches all)."""
    if kind == "stable":
        return not isotope.radioactive
    if kind == "radioactive":
        return isotope.radioactive
    if kind == "natural":
        return isotope.abundance is not None
    return True


def block_order(blocks: Iterable[str]) -> list[str]:
    """Blocks in the usual s, p, d, f order (others after them, alphabetically)."""
    return sorted(set(blocks), key=lambda b: ("spdf".find(b) % 5 if b in "spdf" else 9, b))


# -- the site model -------------------------------------------------------------------------------
def node_values(data: Data) -> tuple[str, ...]:
    """The hierarchy's node ids in tree order: ``b``, ``b.p``, ``b.p.Symbol``."""
    values: list[str] = []
    for block in block_order(e.block for e in data.elements):
        values.append(block)
        in_block = [e for e in data.elements if e.block == block]
        for period in sorted({e.period for e in in_block}):
            values.append(f"{block}.{period}")
            values += [f"{block}.{period}.{e.symbol}" for e in in_block if e.period == period]
    return tuple(values)


def build_model(data: Data) -> SiteModel:
    """The elements portal's routes and controls (value sets taken from the data)."""
    elements = data.elements
    groups = sorted({e.group for e in elements if e.group is not None})
    controls = (
        Control(
            name="node",
            kind="hierarchy",
            params=("node",),
            values=node_values(data),
            label="Browse",
        ),
        Control(
            name="group",
            kind="filter",
            params=("group",),
            values=tuple(str(g) for g in groups),
            label="Group",
        ),
        Control(
            name="series",
            kind="filter",
            params=("series",),
            values=tuple(slug for slug, _ in data.series),
            label="Series",
        ),
        Control(
            name="block",
            kind="filter",
            params=("block",),
            values=tuple(block_order(e.block for e in elements)),
            label="Block",
        ),
        Control(
            name="period",
            kind="filter",
            params=("period",),
            values=tuple(str(p) for p in sorted({e.period for e in elements})),
            label="Period",
        ),
        Control(
            name="element_sort",
            kind="sort",
            params=("sort", "order"),
            values=tuple(ELEMENT_SORTS),
            default=("number", "asc"),
            label="Sort",
        ),
        Control(
            name="element",
            kind="scope",
            params=("element",),
            values=tuple(e.symbol for e in elements),
            label="Element",
        ),
        Control(
            name="isotope_kind", kind="filter", params=("kind",), values=ISOTOPE_KINDS, label="Kind"
        ),
        Control(name="discovered", kind="window", params=("from", "to"), label="Discovery year"),
        Control(
            name="isotope_sort",
            kind="sort",
            params=("sort", "order"),
            values=tuple(ISOTOPE_SORTS),
            default=("mass_number", "asc"),
            label="Sort",
        ),
        Control(name="page", kind="page", params=("page",), default=("1",), label="Page"),
    )
    routes = (
        Route(path="/", title="Periodic browser", controls=("node",), tables=("results",)),
        Route(
            path="/elements",
            title="Element list",
            controls=("group", "series", "block", "period", "element_sort", "page"),
            tables=("results",),
        ),
        Route(
            path="/isotopes",
            title="Isotopes",
            controls=("element", "isotope_kind", "discovered", "isotope_sort", "page"),
            tables=("results",),
        ),
        Route(path="/about", title="About"),
    )
    return replica_model(
        "elements",
        "Elements reference portal",
        routes,
        controls,
        source=f"{PACKAGE} {data.version}",  # the version read with the data
        licence=LICENCE,
    )


# -- the app ------------------------------------------------------------------------------------
class ElementsApp(SiteApp):
    """The elements portal: periodic browser, element list and isotope list."""

    def __init__(self, data: Data) -> None:
        self.data = data
        self.model = build_model(data)
        years = [i.year for i in data.isotopes if i.year is not None]
        self.decades = tuple(range(min(years) // 10 * 10, max(years) // 10 * 10 + 1, 10))
        self._isotope_counts: dict[str, tuple[int, int, int]] = {}
        for element in data.elements:
            own = [i for i in data.isotopes if i.number == element.number]
            self._isotope_counts[element.symbol] = (
                len(own),
                sum(1 for i in own if not i.radioactive),
                sum(1 for i in own if i.abundance is not None),
            )

    # -- shared helpers ---------------------------------------------------------------------
    def _with(self, state: State, changes: dict[str, str]) -> State:
        """``state`` with parameters changed ("" removes one), back on its first page."""
        params = dict(state.params)
        params.pop("page", None)
        for param, value in changes.items():
            if value:
                params[param] = value
            else:
                params.pop(param, None)
        return self.model.state(state.path, params)

    def _sort(self, state: State, labels: dict[str, str], default: str) -> tuple[str, bool]:
        key = state.get("sort", default)
        reverse = descending(state)
        if key not in labels:
            raise SiteError(f"{self.model.name}{state.path}: sort={key!r} is not offered")
        return key, reverse

    def _sort_links(
        self, state: State, labels: dict[str, str], key: str, descending: bool
    ) -> list[ControlLinks]:
        order = "desc" if descending else "asc"
        return [
            ControlLinks(
                "Sort by",
                [
                    Choice(label, self._with(state, {"sort": name, "order": order}), name == key)
                    for name, label in labels.items()
                ],
            ),
            ControlLinks(
                "Order",
                [
                    Choice(
                        "ascending",
                        self._with(state, {"sort": key, "order": "asc"}),
                        not descending,
                    ),
                    Choice(
                        "descending", self._with(state, {"sort": key, "order": "desc"}), descending
                    ),
                ],
            ),
        ]

    def _notes(self, *extra: str) -> list[str]:
        return [*extra, f"Data: {self.model.source} ({self.model.licence} licence)."]

    # -- pages ------------------------------------------------------------------------------
    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {
            "/": self._browser,
            "/elements": self._element_list,
            "/isotopes": self._isotope_list,
            "/about": self._about,
        }

    def data_files(self) -> list[Path]:
        return data_files()

    def _about(self, state: State) -> bytes:
        return render_text_page(
            self.model,
            state,
            "About this portal",
            [
                f"This portal lists the {len(self.data.elements)} chemical elements and "
                f"{len(self.data.isotopes)} of their isotopes as recorded in the database of "
                "the mendeleev package; no value here is typed in by hand.",
                "The periodic browser walks from a block to its periods and on to single "
                "elements, each with a short summary. The element list can be narrowed by "
                "group, series, block and period, and ordered by atomic number, name, symbol, "
                "atomic weight or year of discovery.",
                "The isotope list covers every element or just one, can be limited to stable, "
                "radioactive or naturally occurring isotopes and to a span of discovery years, "
                "and can be ordered by mass number, discovery year, half-life or abundance.",
                "Lists show twenty rows a page. The settings of a list are part of its address, "
                "so a filtered and sorted list can be bookmarked and shared.",
                f"Data: {self.model.source} ({self.model.licence} licence).",
            ],
        )

    def _browser(self, state: State) -> bytes:
        node = state.get("node")
        parts = node.split(".") if node else []
        crumbs = [Choice("all blocks", self.model.state("/"), not parts)]
        for depth in range(1, len(parts) + 1):
            label = ("block ", "period ", "")[depth - 1] + parts[depth - 1]
            target = self.model.state("/", {"node": ".".join(parts[:depth])})
            crumbs.append(Choice(label, target, depth == len(parts)))
        controls = [ControlLinks("Path", crumbs)]
        if len(parts) == 0:
            title, intro, table, children = self._browser_root()
        elif len(parts) == 1:
            title, intro, table, children = self._browser_block(parts[0])
        elif len(parts) == 2:
            title, intro, table, children = self._browser_period(parts[0], int(parts[1]))
        else:
            element = self.data.element(parts[2])
            title, intro, table = self._browser_element(element)
            children = ControlLinks(
                "See also",
                [
                    Choice(
                        f"isotopes of {element.name}",
                        self.model.state("/isotopes", {"element": element.symbol}),
                    ),
                    Choice(
                        f"block {element.block}, period {element.period} in the element list",
                        self.model.state(
                            "/elements", {"block": element.block, "period": str(element.period)}
                        ),
                    ),
                ],
            )
        controls.append(children)
        return render_page(
            self.model,
            state,
            title,
            intro,
            tables=[table],
            controls=controls,
            notes=self._notes(),
        )

    def _browser_root(self) -> tuple[str, str, Table, ControlLinks]:
        rows, children = [], []
        for block in block_order(e.block for e in self.data.elements):
            members = [e for e in self.data.elements if e.block == block]
            periods = sorted({e.period for e in members})
            rows.append(
                {
                    "block": block,
                    "periods": f"{periods[0]}-{periods[-1]}",
                    "element_count": str(len(members)),
                }
            )
            children.append(Choice(f"{block} block", self.model.state("/", {"node": block})))
        table = Table(
            "results",
            [("block", "Block"), ("periods", "Periods"), ("element_count", "Elements")],
            rows,
        )
        intro = (
            f"The {len(self.data.elements)} elements arranged by block. Open a block to see "
            "its periods, then a period to see its elements."
        )
        return "Periodic browser", intro, table, ControlLinks("Open", children)

    def _browser_block(self, block: str) -> tuple[str, str, Table, ControlLinks]:
        members = [e for e in self.data.elements if e.block == block]
        if not members:
            raise NotFound(f"no block {block!r}")
        rows, children = [], []
        for period in sorted({e.period for e in members}):
            row = [e for e in members if e.period == period]
            rows.append(
                {
                    "block": block,
                    "period": str(period),
                    "element_count": str(len(row)),
                    "first_element": row[0].symbol,
                    "last_element": row[-1].symbol,
                }
            )
            children.append(
                Choice(f"period {period}", self.model.state("/", {"node": f"{block}.{period}"}))
            )
        table = Table(
            "results",
            [
                ("block", "Block"),
                ("period", "Period"),
                ("element_count", "Elements"),
                ("first_element", "First"),
                ("last_element", "Last"),
            ],
            rows,
        )
        intro = f"Block {block} holds {len(members)} elements in {len(rows)} periods."
        return f"Block {block}", intro, table, ControlLinks("Open", children)

    def _browser_period(self, block: str, period: int) -> tuple[str, str, Table, ControlLinks]:
        members = [e for e in self.data.elements if e.block == block and e.period == period]
        if not members:
            raise NotFound(f"no elements in block {block}, period {period}")
        children = [
            Choice(e.symbol, self.model.state("/", {"node": f"{block}.{period}.{e.symbol}"}))
            for e in members
        ]
        table = Table("results", ELEMENT_COLUMNS, [element_row(e) for e in members])
        intro = (
            f"Block {block}, period {period}: {len(members)} elements, by atomic number. "
            "Open an element for its summary and isotope list."
        )
        return f"Block {block}, period {period}", intro, table, ControlLinks("Open", children)

    def _browser_element(self, element: Element) -> tuple[str, str, Table]:
        listed, stable, natural = self._isotope_counts[element.symbol]
        cells = element_row(element)
        facts = [
            ("Atomic number", cells["atomic_number"]),
            ("Symbol", cells["symbol"]),
            ("Name", cells["name"]),
            ("Block", cells["block"]),
            ("Period", cells["period"]),
            ("Group", cells["group"]),
            ("Series", cells["series"]),
            ("Atomic weight", cells["atomic_weight"]),
            ("Discovery year", cells["discovery_year"]),
            ("Radioactive", cells["radioactive"]),
            ("Isotopes listed", str(listed)),
            ("Stable isotopes", str(stable)),
            ("Naturally occurring isotopes", str(natural)),
        ]
        table = Table(
            "results",
            [("property", "Property"), ("value", "Value")],
            [{"property": p, "value": v} for p, v in facts],
        )
        intro = f"Summary of {element.name} ({element.symbol}), element {element.number}."
        return f"{element.name} ({element.symbol})", intro, table

    def _element_list(self, state: State) -> bytes:
        selected = {f: state.get(f) for f in FACETS if state.get(f)}
        key, descending = self._sort(state, ELEMENT_SORTS, "number")
        matching = [
            e
            for e in self.data.elements
            if all(facet_value(e, f) == v for f, v in selected.items())
        ]
        ordered = sort_missing_last(matching, ELEMENT_KEYS[key], lambda e: e.number, descending)
        on_page, page, pages = paginate(ordered, state, PAGE_SIZE)
        controls = [self._facet_links(state, facet, selected) for facet in FACETS]
        controls += self._sort_links(state, ELEMENT_SORTS, key, descending)
        names = dict(self.data.series)
        shown = ", ".join(
            f"{f} {names.get(v, v) if f == 'series' else v}" for f, v in selected.items()
        )
        intro = (
            f"{len(ordered)} of {len(self.data.elements)} elements"
            + (f" with {shown}" if shown else "")
            + f", sorted by {ELEMENT_SORTS[key]} ({'descending' if descending else 'ascending'})"
            + f"; page {page} of {pages}."
        )
        table = Table("results", ELEMENT_COLUMNS, [element_row(e) for e in on_page])
        return render_page(
            self.model,
            state,
            "Element list",
            intro,
            tables=[table],
            controls=controls,
            pager=pager(self.model, state, page, pages),
            notes=self._notes(),
        )

    def _facet_links(self, state: State, facet: str, selected: dict[str, str]) -> ControlLinks:
        """One filter's links, each with the number of elements it would leave."""
        others = {f: v for f, v in selected.items() if f != facet}
        pool = [
            e for e in self.data.elements if all(facet_value(e, f) == v for f, v in others.items())
        ]
        names = dict(self.data.series)
        control = self.model.control(facet)
        choices = [Choice("any", self._with(state, {facet: ""}), facet not in selected)]
        for value in control.values:
            count = sum(1 for e in pool if facet_value(e, facet) == value)
            label = names.get(value, value) if facet == "series" else value
            choices.append(
                Choice(
                    f"{label} ({count})",
                    self._with(state, {facet: value}),
                    selected.get(facet) == value,
                )
            )
        return ControlLinks(control.label, choices)

    def _window(self, state: State) -> tuple[int | None, int | None]:
        bounds: list[int | None] = []
        for param in ("from", "to"):
            text = state.get(param)
            if text and not _YEAR_TEXT.match(text):
                raise SiteError(f"{self.model.name}{state.path}: {param}={text!r} is not a year")
            bounds.append(int(text) if text else None)
        start, end = bounds
        if start is not None and end is not None and start > end:
            raise SiteError(f"{self.model.name}{state.path}: from={start} is after to={end}")
        return start, end

    def _isotope_list(self, state: State) -> bytes:
        scope = state.get("element")
        kind = state.get("kind")
        start, end = self._window(state)
        key, descending = self._sort(state, ISOTOPE_SORTS, "mass_number")
        element = self.data.element(scope) if scope else None

        def in_window(isotope: Isotope) -> bool:
            if start is None and end is None:
                return True
            if isotope.year is None:
                return False
            return (start is None or isotope.year >= start) and (end is None or isotope.year <= end)

        matching = [
            i
            for i in self.data.isotopes
            if (element is None or i.number == element.number)
            and isotope_kind_matches(i, kind)
            and in_window(i)
        ]
        ordered = sort_missing_last(matching, ISOTOPE_KEYS[key], lambda i: i.id, descending)
        shown, page, pages = paginate(ordered, state, PAGE_SIZE)
        controls = self._isotope_controls(state, scope, kind, start, end)
        controls += self._sort_links(state, ISOTOPE_SORTS, key, descending)
        title = f"Isotopes of {element.name}" if element else "Isotopes"
        scope_text = f"of {element.name} ({element.symbol})" if element else "of all elements"
        parts = [f"{len(ordered)} {KIND_LABELS[kind] + ' ' if kind else ''}isotopes {scope_text}"]
        if start is not None or end is not None:
            parts.append(
                f"discovered {start if start is not None else '...'}-"
                f"{end if end is not None else '...'}"
            )
        intro = (
            ", ".join(parts)
            + f", sorted by {ISOTOPE_SORTS[key]} ({'descending' if descending else 'ascending'})"
            + f"; page {page} of {pages}."
        )
        table = Table("results", ISOTOPE_COLUMNS, [isotope_row(i) for i in shown])
        notes = self._notes(
            "Any discovery-year window can be set with this page's from and to URL parameters "
            "(years, both ends included); isotopes without a discovery year are left out of "
            "every window. Half-lives are given in the unit of the Unit column."
        )
        return render_page(
            self.model,
            state,
            title,
            intro,
            tables=[table],
            controls=controls,
            pager=pager(self.model, state, page, pages),
            notes=notes,
        )

    def _isotope_controls(
        self, state: State, scope: str, kind: str, start: int | None, end: int | None
    ) -> list[ControlLinks]:
        elements = [Choice("all elements", self._with(state, {"element": ""}), not scope)]
        elements += [
            Choice(e.symbol, self._with(state, {"element": e.symbol}), e.symbol == scope)
            for e in self.data.elements
        ]
        kinds = [Choice("any", self._with(state, {"kind": ""}), not kind)]
        kinds += [
            Choice(KIND_LABELS[k], self._with(state, {"kind": k}), k == kind) for k in ISOTOPE_KINDS
        ]
        starts = [Choice("any", self._with(state, {"from": ""}), start is None)]
        starts += [
            Choice(str(d), self._with(state, {"from": str(d)}), start == d)
            for d in self.decades
            if end is None or d <= end
        ]
        ends = [Choice("any", self._with(state, {"to": ""}), end is None)]
        ends += [
            Choice(str(d + 9), self._with(state, {"to": str(d + 9)}), end == d + 9)
            for d in self.decades
            if start is None or d + 9 >= start
        ]
        return [
            ControlLinks("Element", elements),
            ControlLinks("Kind", kinds),
            ControlLinks("Discovered from", starts),
            ControlLinks("Discovered until", ends),
        ]

    # -- archive ----------------------------------------------------------------------------
    def states(self) -> Iterable[State]:
        """Browser nodes, element list facets/sorts/pages, isotope kinds and element scopes."""
        model = self.model
        yield model.default_state()
        for node in model.control("node").values:
            yield model.state("/", {"node": node})
        base = model.state("/elements")
        yield base
        pages = math.ceil(len(self.data.elements) / PAGE_SIZE)
        for page in range(2, pages + 1):
            yield model.state("/elements", {"page": str(page)})
        for facet in FACETS:
            for value in model.control(facet).values:
                yield model.state("/elements", {facet: value})
        for key in ELEMENT_SORTS:
            for order in ORDERS:
                if (key, order) != ("number", "asc"):
                    yield model.state("/elements", {"sort": key, "order": order})
        yield model.state("/isotopes")
        for kind in ISOTOPE_KINDS:
            yield model.state("/isotopes", {"kind": kind})
        for element in self.data.elements:
            yield model.state("/isotopes", {"element": element.symbol})
        yield model.state("/about")


def make_app() -> ElementsApp:
    """The elements portal over the installed mendeleev package's database."""
    return ElementsApp(load_data())
