"""Replica of a weakness-enumeration site over the CWE catalogue shipped in the ``cwe2`` package.

The catalogue (an XML file inside the package) is read with the standard library. Pages show
only identifiers, names, categorical attributes, counts and dates of its entries; no
descriptive text of the catalogue is reproduced.

Routes and their state mechanisms:

- ``/``: an overview of the catalogue (the start page: counts per facet, nothing else);
- ``/weaknesses``: every weakness, with faceted filters (status, abstraction, likelihood of
  exploit, language), a submission-year window, sort and pages;
- ``/views``: the catalogue's views; selecting one lists its members in their listed order
  (for the Top-25 views that order is the rank);
- ``/categories``: categories, scoped to the view that groups them; opening one lists its
  members, which the status and abstraction filters narrow;
- ``/hierarchy``: the ChildOf hierarchy of the research view (pillars at the root); opening a
  weakness lists its children and shows its parents and the categories that hold it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sgrgym.sgr.sites.app import PAGE_SIZE, SiteApp, package_file, package_source, replica_model
from sgrgym.sgr.sites.model import Control, Route, SiteError, SiteModel, State
from sgrgym.sgr.sites.page import (
    Choice,
    ControlLinks,
    Table,
    descending,
    pager,
    paginate,
    render_page,
    render_text_page,
    sort_links,
    sort_rows,
)

PACKAGE = "cwe2"
NS = "{http://cwe.mitre.org/cwe-7}"
RESEARCH_VIEW = 1000  # the view whose ChildOf relations form the hierarchy
SOFTWARE_VIEW = 699  # the view whose categories are archived opened
MISSING = "-"
STATUSES = ("Stable", "Draft", "Incomplete", "Deprecated", "Obsolete")
ABSTRACTIONS = ("Pillar", "Class", "Base", "Variant", "Compound")
LIKELIHOODS = ("High", "Medium", "Low")
SORT_KEYS = ("id", "name", "submitted")

Row = dict[str, str]


# -- the catalogue ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One catalogue entry (a weakness, category or view) reduced to facts we may show."""

    id: int
    kind: str  # "Weakness", "Category" or "View"
    name: str
    status: str
    abstraction: str = MISSING
    likelihood: str = MISSING
    submitted: str = MISSING
    languages: tuple[str, ...] = ()
    view_type: str = MISSING
    members: tuple[int, ...] = ()  # categories and views: member ids in listed order
    member_views: tuple[int, ...] = ()  # categories: views their memberships belong to


@dataclass(frozen=True)
class Catalog:
    """The parsed catalogue: entries by id plus the relations the pages browse."""

    version: str
    date: str
    entries: dict[int, Entry]
    parents: dict[int, tuple[tuple[int, str], ...]]  # research-view ChildOf: child -> parents
    children: dict[int, tuple[int, ...]]  # parent -> children (ascending id)
    holders: dict[int, tuple[int, ...]]  # entry -> categories listing it (ascending id)
    by_kind: dict[str, tuple[Entry, ...]]  # kind -> entries by ascending id

    def of_kind(self, kind: str) -> list[Entry]:
        """Entries of one kind, by ascending id."""
        return list(self.by_kind.get(kind, ()))

    @property
    def roots(self) -> tuple[int, ...]:
        """The hierarchy's top level: the research view's members (the pillars)."""
        return self.entries[RESEARCH_VIEW].members


def catalog_file() -> Path:
    """The catalogue XML inside the installed ``cwe2`` package (UserError if missing)."""
    return package_file("cwe", PACKAGE, "database_v*/cwec_v*.xml")


def data_files() -> list[Path]:
    """The data files the app reads, located without reading them."""
    return [catalog_file()]


def _submitted(element: ET.Element) -> str:
    return element.findtext(f"{NS}Content_History/{NS}Submission/{NS}Submission_Date") or MISSING


def _weakness(element: ET.Element) -> Entry:
    langs = {
        lang.get("Name") or lang.get("Class") or ""
        for lang in element.iterfind(f"{NS}Applicable_Platforms/{NS}Language")
    }
    return Entry(
        id=int(element.get("ID", "0")),
        kind="Weakness",
        name=element.get("Name", ""),
        status=element.get("Status", MISSING),
        abstraction=element.get("Abstraction", MISSING),
        likelihood=element.findtext(f"{NS}Likelihood_Of_Exploit") or MISSING,
        submitted=_submitted(element),
        languages=tuple(sorted(lang for lang in langs if lang)),
    )


def _category(element: ET.Element) -> Entry:
    members = element.findall(f"{NS}Relationships/{NS}Has_Member")
    return Entry(
        id=int(element.get("ID", "0")),
        kind="Category",
        name=element.get("Name", ""),
        status=element.get("Status", MISSING),
        submitted=_submitted(element),
        members=tuple(int(m.get("CWE_ID", "0")) for m in members),
        member_views=tuple(sorted({int(m.get("View_ID", "0")) for m in members})),
    )


def _view(element: ET.Element) -> Entry:
    members = element.findall(f"{NS}Members/{NS}Has_Member")
    return Entry(
        id=int(element.get("ID", "0")),
        kind="View",
        name=element.get("Name", ""),
        status=element.get("Status", MISSING),
        submitted=_submitted(element),
        view_type=element.get("Type", MISSING),
        members=tuple(int(m.get("CWE_ID", "0")) for m in members),
    )


def _child_links(weaknesses: Iterable[ET.Element]) -> list[tuple[int, int, str]]:
    """(child, parent, ordinal) for every research-view ChildOf relation."""
    links = []
    for element in weaknesses:
        child = int(element.get("ID", "0"))
        for rel in element.iterfind(f"{NS}Related_Weaknesses/{NS}Related_Weakness"):
            if rel.get("Nature") == "ChildOf" and rel.get("View_ID") == str(RESEARCH_VIEW):
                links.append((child, int(rel.get("CWE_ID", "0")), rel.get("Ordinal", MISSING)))
    return links


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Parse the catalogue once per process."""
    root = ET.parse(catalog_file()).getroot()
    weaknesses = root.findall(f"{NS}Weaknesses/{NS}Weakness")
    entries: dict[int, Entry] = {}
    for entry in (
        [_weakness(w) for w in weaknesses]
        + [_category(c) for c in root.iterfind(f"{NS}Categories/{NS}Category")]
        + [_view(v) for v in root.iterfind(f"{NS}Views/{NS}View")]
    ):
        entries[entry.id] = entry
    parents: dict[int, list[tuple[int, str]]] = {}
    children: dict[int, list[int]] = {}
    for child, parent, ordinal in _child_links(weaknesses):
        parents.setdefault(child, []).append((parent, ordinal))
        children.setdefault(parent, []).append(child)
    holders: dict[int, list[int]] = {}
    for entry in entries.values():
        if entry.kind == "Category":
            for member in entry.members:
                holders.setdefault(member, []).append(entry.id)
    return Catalog(
        version=root.get("Version", ""),
        date=root.get("Date", ""),
        entries=entries,
        parents={k: tuple(sorted(v)) for k, v in parents.items()},
        children={k: tuple(sorted(set(v))) for k, v in children.items()},
        holders={k: tuple(sorted(set(v))) for k, v in holders.items()},
        by_kind={
            kind: tuple(e for _, e in sorted(entries.items()) if e.kind == kind)
            for kind in ("Weakness", "Category", "View")
        },
    )


# -- the site model --------------------------------------------------------------------------
def _years(catalog: Catalog) -> tuple[str, ...]:
    return tuple(sorted({e.submitted[:4] for e in catalog.of_kind("Weakness")}))


def languages(catalog: Catalog) -> tuple[str, ...]:
    """Language facet values, by name."""
    return tuple(sorted({lang for e in catalog.of_kind("Weakness") for lang in e.languages}))


def member_views(catalog: Catalog) -> tuple[int, ...]:
    """Views that can be selected: those that list their members explicitly."""
    return tuple(e.id for e in catalog.of_kind("View") if e.members)


def scope_views(catalog: Catalog) -> tuple[int, ...]:
    """Views under which categories group entries (the category list's scopes)."""
    return tuple(sorted({v for e in catalog.of_kind("Category") for v in e.member_views}))


def build_model(catalog: Catalog) -> SiteModel:
    """The site model; control values come from the catalogue."""
    ids = {k: tuple(str(e.id) for e in catalog.of_kind(k)) for k in ("Weakness", "Category")}
    listed = ("status", "abstraction", "sort", "page")
    controls = (
        Control(name="status", kind="filter", params=("status",), values=STATUSES, label="Status"),
        Control(
            name="abstraction",
            kind="filter",
            params=("abstraction",),
            values=ABSTRACTIONS,
            label="Abstraction",
        ),
        Control(
            name="likelihood",
            kind="filter",
            params=("likelihood",),
            values=LIKELIHOODS,
            label="Likelihood of exploit",
        ),
        Control(
            name="language",
            kind="filter",
            params=("language",),
            values=languages(catalog),
            label="Language",
        ),
        Control(
            name="submitted",
            kind="window",
            params=("from", "to"),
            values=_years(catalog),
            label="Submitted (years)",
        ),
        Control(
            name="sort",
            kind="sort",
            params=("sort", "order"),
            values=SORT_KEYS,
            default=("id", "asc"),
            label="Sort",
        ),
        Control(name="page", kind="page", params=("page",), default=("1",), label="Page"),
        Control(
            name="view",
            kind="view",
            params=("view",),
            values=tuple(map(str, member_views(catalog))),
            label="View",
        ),
        Control(
            name="scope",
            kind="scope",
            params=("view",),
            values=tuple(map(str, scope_views(catalog))),
            label="Grouped under view",
        ),
        Control(
            name="category",
            kind="hierarchy",
            params=("id",),
            values=ids["Category"],
            label="Category",
        ),
        Control(
            name="node", kind="hierarchy", params=("id",), values=ids["Weakness"], label="Weakness"
        ),
    )
    routes = (
        Route(path="/", title="Overview", tables=("results",)),
        Route(
            path="/weaknesses",
            title="Weaknesses",
            controls=(
                "status",
                "abstraction",
                "likelihood",
                "language",
                "submitted",
                "sort",
                "page",
            ),
            tables=("results",),
        ),
        Route(path="/views", title="Views", controls=("view", "page"), tables=("results",)),
        Route(
            path="/categories",
            title="Categories",
            controls=("scope", "category", *listed),
            tables=("results", "entry"),
        ),
        Route(
            path="/hierarchy",
            title="Hierarchy",
            controls=("node", *listed),
            tables=("results", "entry", "parents", "categories"),
        ),
        Route(path="/about", title="About"),
    )
    return replica_model(
        "cwe",
        "CWE weakness catalogue (replica)",
        routes,
        controls,
        source=f"{package_source(PACKAGE)} (CWE {catalog.version}, {catalog.date})",
        licence="cwe2: MIT; CWE content: CWE Terms of Use (The MITRE Corporation)",
    )


# -- page helpers ----------------------------------------------------------------------------
ENTRY_COLUMNS = (
    ("cwe_id", "CWE ID"),
    ("name", "Name"),
    ("entry_type", "Entry type"),
    ("abstraction", "Abstraction"),
    ("status", "Status"),
    ("likelihood", "Likelihood of exploit"),
    ("submitted", "Submitted"),
)
WEAKNESS_COLUMNS = tuple(c for c in ENTRY_COLUMNS if c[0] != "entry_type")


def cwe_label(entry_id: int) -> str:
    return f"CWE-{entry_id}"


def entry_row(entry: Entry) -> Row:
    """The facts of one entry as a table row."""
    return {
        "cwe_id": cwe_label(entry.id),
        "name": entry.name,
        "entry_type": entry.kind,
        "abstraction": entry.abstraction,
        "status": entry.status,
        "likelihood": entry.likelihood,
        "submitted": entry.submitted,
    }


SORT_GETTERS: dict[str, Callable[[Entry], str | int]] = {
    "id": lambda e: e.id,
    "name": lambda e: e.name,
    "submitted": lambda e: e.submitted,
}


def sort_entries(items: Iterable[Entry], state: State) -> list[Entry]:
    """Sort by the state's key and order; ties keep ascending id."""
    reverse = descending(state)
    return sort_rows(items, SORT_GETTERS[state.get("sort", "id")], lambda e: e.id, reverse)


def facet_test(state: State) -> Callable[[Entry], bool]:
    """A test of whether an entry passes the state's facet filters."""
    params = dict(state.params)
    status, abstraction = params.get("status"), params.get("abstraction")
    likelihood, language = params.get("likelihood"), params.get("language")

    def passes(entry: Entry) -> bool:
        return (
            (not status or entry.status == status)
            and (not abstraction or entry.abstraction == abstraction)
            and (not likelihood or entry.likelihood == likelihood)
            and (not language or language in entry.languages)
        )

    return passes


def window(state: State) -> tuple[str, str]:
    """The state's submission-year window (start, end; empty: open), validated."""
    start, end = state.get("from"), state.get("to")
    if end and not (end.isdigit() and len(end) == 4):
        raise SiteError(f"cwe{state.path}: to must be a year such as 2020, not {end!r}")
    if start and end and start > end:
        raise SiteError(f"cwe{state.path}: the window starts ({start}) after it ends ({end})")
    return start, end


def in_window(entry: Entry, start: str, end: str) -> bool:
    """Whether the entry's submission year lies in [start, end] (empty bounds are open)."""
    year = entry.submitted[:4]
    return (not start or year >= start) and (not end or year <= end)


# -- the app ---------------------------------------------------------------------------------
class CweApp(SiteApp):
    """The CWE replica: renders every state of its model from the parsed catalogue."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.model = build_model(catalog)

    # small helpers ---------------------------------------------------------------------------
    def _state(self, path: str, **params: str) -> State:
        return self.model.state(path, params)

    def _entry(self, entry_id: int) -> Entry:
        return self.catalog.entries[entry_id]

    def _facet(self, state: State, control: str, label: str) -> ControlLinks:
        """Links that set one filter to each of its values, and one that clears it."""
        return ControlLinks(label, self._value_links(state, "set_filter", control, "All"))

    def _sorts(self, state: State) -> ControlLinks:
        """Links to every sort key in both orders."""
        keys = {key: key for key in SORT_KEYS}
        return sort_links(
            self.model, state, "sort", keys, ("id", "asc"), "Sort by", "{name} ({order})"
        )

    def _open_links(self, label: str, ids: Iterable[int]) -> ControlLinks:
        """Links opening entries: weaknesses in the hierarchy, categories in the category list."""
        choices = []
        for entry_id in ids:
            entry = self.catalog.entries.get(entry_id)
            if entry is None or entry.kind == "View":
                continue
            path = "/hierarchy" if entry.kind == "Weakness" else "/categories"
            choices.append(Choice(cwe_label(entry_id), self._state(path, id=str(entry_id))))
        return ControlLinks(label, choices)

    def _page(
        self,
        state: State,
        title: str,
        intro: str,
        tables: Sequence[Table],
        controls: Sequence[ControlLinks],
        pager_links: Sequence[Choice],
    ) -> bytes:
        """One page in the site's template, with the catalogue note at the bottom."""
        return render_page(
            self.model, state, title, intro, tables, controls, pager_links, self.notes()
        )

    def notes(self) -> list[str]:
        return [
            f"CWE catalogue version {self.catalog.version} ({self.catalog.date}); source: "
            f"{self.model.source}; licence: {self.model.licence}. Lists show {PAGE_SIZE} rows "
            "per page.",
        ]

    # routes ---------------------------------------------------------------------------------
    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {
            "/": self._overview,
            "/weaknesses": self._weaknesses,
            "/views": self._views,
            "/categories": self._categories,
            "/hierarchy": self._hierarchy,
            "/about": self._about,
        }

    def data_files(self) -> list[Path]:
        return data_files()

    def _about(self, state: State) -> bytes:
        return render_text_page(
            self.model,
            state,
            "About this catalogue",
            [
                "A browsable copy of the Common Weakness Enumeration: software and hardware "
                "weakness types, the categories that group them and the views that arrange "
                "them, read from the catalogue file shipped with the cwe2 package.",
                "The weakness list can be narrowed by status, abstraction level, likelihood of "
                "exploit, applicable language and a span of submission years, and ordered by "
                "identifier, name or submission date. Views list their members; categories "
                "and the research hierarchy show parents and children of each entry.",
                "Each list shows a fixed number of rows a page, and the address of a page "
                "carries its settings.",
                f"Data: {self.model.source}. Licence: {self.model.licence}.",
            ],
        )

    def _overview(self, state: State) -> bytes:
        """The start page: entry totals and weakness counts per facet value."""
        weaknesses = self.catalog.of_kind("Weakness")
        rows = [
            {"facet": "Catalogue", "value": plural, "entries": str(len(self.catalog.of_kind(kind)))}
            for kind, plural in (
                ("Weakness", "Weaknesses"),
                ("Category", "Categories"),
                ("View", "Views"),
            )
        ]
        facets: tuple[tuple[str, tuple[str, ...], Callable[[Entry], str]], ...] = (
            ("Status", STATUSES, lambda e: e.status),
            ("Abstraction", ABSTRACTIONS, lambda e: e.abstraction),
            ("Likelihood of exploit", LIKELIHOODS, lambda e: e.likelihood),
        )
        for facet, values, get in facets:
            counts = Counter(get(e) for e in weaknesses)
            rows += [
                {"facet": facet, "value": v, "entries": str(counts[v])} for v in values if counts[v]
            ]
        weak = self._state("/weaknesses")
        shortcuts = [
            ControlLinks(
                f"Weaknesses by {name}",
                [
                    Choice(v, self._apply(weak, "set_filter", name, v))
                    for v in self.model.control(name).values
                ],
            )
            for name in ("status", "abstraction", "likelihood")
        ]
        columns = [("facet", "Facet"), ("value", "Value"), ("entries", "Entries")]
        table = Table("results", columns, rows, caption="Entry totals and weakness counts")
        intro = (
            f"A browsable copy of the CWE catalogue, version {self.catalog.version}: "
            f"{len(weaknesses)} weaknesses with their categories, views and hierarchy."
        )
        return self._page(state, "Overview", intro, [table], shortcuts, [])

    def _weaknesses(self, state: State) -> bytes:
        """The weakness list: facets, a submission-year window, sort and pages."""
        start, end = window(state)
        passes = facet_test(state)
        found = [
            e for e in self.catalog.of_kind("Weakness") if passes(e) and in_window(e, start, end)
        ]
        shown, page, pages = paginate(sort_entries(found, state), state, PAGE_SIZE)
        controls = [
            self._facet(state, "status", "Status"),
            self._facet(state, "abstraction", "Abstraction"),
            self._facet(state, "likelihood", "Likelihood of exploit"),
            self._facet(state, "language", "Language"),
            *self._window_links(state),
            self._sorts(state),
            self._open_links("Open in the hierarchy", (e.id for e in shown)),
        ]
        caption = f"{len(found)} weaknesses match; page {page} of {pages}"
        table = Table("results", WEAKNESS_COLUMNS, [entry_row(e) for e in shown], caption)
        intro = f"Weakness entries of CWE {self.catalog.version}; {len(found)} match the settings."
        return self._page(
            state, "Weaknesses", intro, [table], controls, pager(self.model, state, page, pages)
        )

    def _with_window_end(self, state: State, param: str, year: str) -> State:
        """``state`` with one end of the year window set (or cleared), on the first page.

        An end that would cross the other end clears the other end.
        """
        params = dict(state.params)
        params.pop("page", None)
        params[param] = year
        start, end = params.get("from", ""), params.get("to", "")
        if start and end and start > end:
            params["to" if param == "from" else "from"] = ""
        return self.model.state(state.path, params)

    def _window_links(self, state: State) -> list[ControlLinks]:
        """Two rows of links: the window's first year and its last year."""
        years = self.model.control("submitted").values
        out = []
        for param, label in (("from", "Submitted from"), ("to", "Submitted until")):
            current = state.get(param)
            choices = [Choice("Any", self._with_window_end(state, param, ""), not current)]
            choices += [
                Choice(y, self._with_window_end(state, param, y), y == current) for y in years
            ]
            out.append(ControlLinks(label, choices))
        return out

    def _view_links(self, state: State) -> ControlLinks:
        current = state.get("view")
        choices = [Choice("All views", self._state("/views"), not current)]
        for view_id in member_views(self.catalog):
            label = f"{view_id}: {self._entry(view_id).name}"
            chosen = self._apply(state, "select_view", "view", str(view_id))
            choices.append(Choice(label, chosen, str(view_id) == current))
        return ControlLinks("View", choices)

    def _views(self, state: State) -> bytes:
        """The view list, or one view's members in their listed order with their rank."""
        if not state.get("view"):
            return self._view_list(state)
        view = self._entry(int(state.get("view")))
        members, page, pages = paginate(view.members, state, PAGE_SIZE)
        rows = []
        for rank, member in enumerate(members, start=(page - 1) * PAGE_SIZE + 1):
            entry = self.catalog.entries.get(member)
            row = entry_row(entry) if entry else {"cwe_id": cwe_label(member), "name": MISSING}
            rows.append({"rank": str(rank), **row})
        columns = [("rank", "Rank"), *(c for c in ENTRY_COLUMNS if c[0] != "likelihood")]
        caption = f"View {view.id}: {len(view.members)} members; page {page} of {pages}"
        table = Table("results", columns, rows, caption)
        controls = [self._view_links(state), self._open_links("Open a member", members)]
        intro = (
            f"Members of view {view.id} ({view.view_type}, {view.status}) in the order the view "
            "lists them; rank 1 comes first."
        )
        title = f"View {view.id}: {view.name}"
        return self._page(
            state, title, intro, [table], controls, pager(self.model, state, page, pages)
        )

    def _view_list(self, state: State) -> bytes:
        views = self.catalog.of_kind("View")
        shown, page, pages = paginate(views, state, PAGE_SIZE)
        rows = [
            {
                "view_id": str(v.id),
                "name": v.name,
                "view_type": v.view_type,
                "status": v.status,
                "members": str(len(v.members)),
            }
            for v in shown
        ]
        columns = [
            ("view_id", "View ID"),
            ("name", "Name"),
            ("view_type", "Type"),
            ("status", "Status"),
            ("members", "Listed members"),
        ]
        table = Table("results", columns, rows, f"{len(views)} views; page {page} of {pages}")
        intro = "Views of the catalogue; choose one that lists its members to see them in order."
        links = pager(self.model, state, page, pages)
        return self._page(state, "Views", intro, [table], [self._view_links(state)], links)

    def _categories(self, state: State) -> bytes:
        """The category list (scoped to a view, filtered by status), or one category."""
        if state.get("id"):
            return self._category(state)
        scope, passes = state.get("view"), facet_test(state)
        found = [
            c
            for c in self.catalog.of_kind("Category")
            if (not scope or int(scope) in c.member_views) and passes(c)
        ]
        shown, page, pages = paginate(sort_entries(found, state), state, PAGE_SIZE)
        rows = [
            {
                "cwe_id": cwe_label(c.id),
                "name": c.name,
                "status": c.status,
                "members": str(len(c.members)),
                "view_id": ", ".join(map(str, c.member_views)),
                "submitted": c.submitted,
            }
            for c in shown
        ]
        columns = [
            ("cwe_id", "CWE ID"),
            ("name", "Name"),
            ("status", "Status"),
            ("members", "Members"),
            ("view_id", "Grouped under view"),
            ("submitted", "Submitted"),
        ]
        views = ((str(v), f"{v}: {self._entry(v).name}") for v in scope_views(self.catalog))
        scopes = self._value_links(state, "set_scope", "scope", "All", views)
        controls = [
            ControlLinks("Grouped under view", scopes),
            self._facet(state, "status", "Status"),
            self._sorts(state),
            self._open_links("Open a category", (c.id for c in shown)),
        ]
        caption = f"{len(found)} categories match; page {page} of {pages}"
        table = Table("results", columns, rows, caption)
        intro = (
            f"Categories of CWE {self.catalog.version}; {len(found)} match the settings. "
            "Open a category to list its members."
        )
        links = pager(self.model, state, page, pages)
        return self._page(state, "Categories", intro, [table], controls, links)

    def _category(self, state: State) -> bytes:
        """One category: its own facts and its members (filtered, sorted, paged)."""
        category = self._entry(int(state.get("id")))
        members = [self.catalog.entries[m] for m in category.members if m in self.catalog.entries]
        found = list(filter(facet_test(state), members))
        shown, page, pages = paginate(sort_entries(found, state), state, PAGE_SIZE)
        about = {
            **entry_row(category),
            "members": str(len(members)),
            "view_id": ", ".join(map(str, category.member_views)),
        }
        about_columns = [
            *(c for c in ENTRY_COLUMNS if c[0] in ("cwe_id", "name", "status", "submitted")),
            ("members", "Members"),
            ("view_id", "Grouped under view"),
        ]
        caption = f"{len(found)} of {len(members)} members match; page {page} of {pages}"
        tables = [
            Table("entry", about_columns, [about], "This category"),
            Table("results", ENTRY_COLUMNS, [entry_row(m) for m in shown], caption),
        ]
        controls = [
            ControlLinks("Back", [Choice("All categories", self._state("/categories"))]),
            self._facet(state, "status", "Member status"),
            self._facet(state, "abstraction", "Member abstraction"),
            self._sorts(state),
            self._open_links("Open a member", (m.id for m in shown)),
        ]
        title = f"Category {cwe_label(category.id)}: {category.name}"
        intro = f"Members of category {cwe_label(category.id)}; {len(found)} match the settings."
        return self._page(
            state, title, intro, tables, controls, pager(self.model, state, page, pages)
        )

    def _hierarchy(self, state: State) -> bytes:
        """The pillars, or one weakness with its children, parents and categories."""
        node_id = int(state.get("id") or 0)
        below = self.catalog.children.get(node_id, ()) if node_id else self.catalog.roots
        kids = [self._entry(k) for k in below]
        found = list(filter(facet_test(state), kids))
        shown, page, pages = paginate(sort_entries(found, state), state, PAGE_SIZE)
        columns = [*WEAKNESS_COLUMNS[:5], ("children", "Children"), WEAKNESS_COLUMNS[5]]
        rows = [
            {**entry_row(k), "children": str(len(self.catalog.children.get(k.id, ())))}
            for k in shown
        ]
        caption = f"{len(found)} of {len(kids)} children match; page {page} of {pages}"
        tables = [Table("results", columns, rows, caption)]
        top = Choice("Pillars", self._state("/hierarchy"), not node_id)
        controls = [ControlLinks("Top", [top])]
        title = f"Pillars of view {RESEARCH_VIEW}"
        if node_id:
            node = self._entry(node_id)
            title = f"{cwe_label(node_id)}: {node.name}"
            tables += self._node_tables(node)
            parents = (p for p, _ in self.catalog.parents.get(node_id, ()))
            controls.append(self._open_links("Up to a parent", parents))
            holders = self.catalog.holders.get(node_id, ())
            controls.append(self._open_links("Open a category that holds it", holders))
        controls += [
            self._facet(state, "status", "Child status"),
            self._facet(state, "abstraction", "Child abstraction"),
            self._sorts(state),
            self._open_links("Open a child", (k.id for k in shown)),
        ]
        intro = (
            f"The ChildOf hierarchy of view {RESEARCH_VIEW}: pillars, classes, bases and "
            "variants. Opening a weakness lists its children."
        )
        return self._page(
            state, title, intro, tables, controls, pager(self.model, state, page, pages)
        )

    def _node_tables(self, node: Entry) -> list[Table]:
        """The opened weakness's own facts, its parents and the categories that hold it."""
        entries = self.catalog.entries
        parents = [
            {**entry_row(entries[p]), "ordinal": ordinal}
            for p, ordinal in self.catalog.parents.get(node.id, ())
        ]
        holders = [
            {
                "cwe_id": cwe_label(c),
                "name": entries[c].name,
                "status": entries[c].status,
                "view_id": str(v),
                "view": entries[v].name if v in entries else MISSING,
            }
            for c in self.catalog.holders.get(node.id, ())
            for v in entries[c].member_views
        ]
        holder_columns = [
            ("cwe_id", "CWE ID"),
            ("name", "Category"),
            ("status", "Status"),
            ("view_id", "View ID"),
            ("view", "View"),
        ]
        return [
            Table("entry", WEAKNESS_COLUMNS, [entry_row(node)], "This weakness"),
            Table("parents", [*WEAKNESS_COLUMNS[:3], ("ordinal", "Ordinal")], parents, "Parents"),
            Table("categories", holder_columns, holders, "Categories that hold this weakness"),
        ]

    # archive list ---------------------------------------------------------------------------
    def states(self) -> Iterable[State]:
        """Route defaults, list pages, single-facet states, views, categories, hierarchy."""
        out = [self.model.default_state()]
        out += self._weakness_states()
        out += self._view_states()
        out += self._category_states()
        out += self._hierarchy_states()
        out += self.model.indexable_states()
        return list(dict.fromkeys(out))

    def _filter_states(self, base: State, filters: Sequence[str]) -> list[State]:
        return [s for name in filters for s in self._value_states(base, "set_filter", name)]

    def _weakness_states(self) -> list[State]:
        base = self._state("/weaknesses")
        out = self._with_pages(base, len(self.catalog.of_kind("Weakness")))
        out += self._filter_states(base, ("status", "abstraction", "likelihood", "language"))
        out += self._sort_states(base, "sort")
        years = self.model.control("submitted").values
        out += [self._with_window_end(base, "from", y) for y in years]
        return out

    def _view_states(self) -> list[State]:
        base = self._state("/views")
        out = self._with_pages(base, len(self.catalog.of_kind("View")))
        for view_id in member_views(self.catalog):
            chosen = self._apply(base, "select_view", "view", str(view_id))
            out += self._with_pages(chosen, len(self._entry(view_id).members))
        return out

    def _category_states(self) -> list[State]:
        base = self._state("/categories")
        out = self._with_pages(base, len(self.catalog.of_kind("Category")))
        out += self._filter_states(base, ("status",))
        out += self._value_states(base, "set_scope", "scope")
        for category in self.catalog.of_kind("Category"):
            if SOFTWARE_VIEW in category.member_views:
                opened = self._apply(base, "open_node", "category", str(category.id))
                out += self._with_pages(opened, len(category.members))
        return out

    def _hierarchy_states(self) -> list[State]:
        base = self._state("/hierarchy")
        out = [base]
        for pillar in self.catalog.roots:
            below = self.catalog.children.get(pillar, ())
            out += self._with_pages(self._apply(base, "open_node", "node", str(pillar)), len(below))
            out += [
                self._apply(base, "open_node", "node", str(child))
                for child in below
                if self._entry(child).abstraction == "Class"
            ]
        return out


def make_app() -> CweApp:
    """The CWE replica site with its catalogue loaded."""
    return CweApp(load_catalog())
