"""Reference answers of the elements portal's tasks, computed with DuckDB SQL.

The rows come straight from the ``elements.db`` SQLite file inside the installed ``mendeleev``
package (read with :mod:`sqlite3`, loaded into in-memory DuckDB tables); nothing of the replica
site's code is used. Run as a script it prints ``{task_id: oracle_answer}`` as one JSON object.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import duckdb

sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
import refcommon

PACKAGE = "mendeleev"
TABLES: dict[str, tuple[str, ...]] = {
    "series": ("id", "name"),
    "elements": (
        "atomic_number", "symbol", "name", "block", "period", "group_id", "series_id",
        "atomic_weight", "discovery_year", "is_radioactive",
    ),
    "isotopes": (
        "id", "atomic_number", "mass_number", "abundance", "is_radioactive", "half_life",
        "half_life_unit", "discovery_year",
    ),
}  # fmt: skip
# Seconds per half-life unit of the data (year = 365.25 days); used to order half-lives.
UNIT_SECONDS_SQL = """
    SELECT * FROM (VALUES
        ('ysec', 1e-24), ('zsec', 1e-21), ('asec', 1e-18), ('psec', 1e-12), ('nsec', 1e-9),
        ('usec', 1e-6), ('msec', 1e-3), ('sec', 1.0), ('minute', 60.0), ('hour', 3600.0),
        ('day', 86400.0), ('year', 31557600.0), ('kyear', 31557600.0e3),
        ('Myear', 31557600.0e6), ('Gyear', 31557600.0e9), ('Tyear', 31557600.0e12),
        ('Pyear', 31557600.0e15), ('Eyear', 31557600.0e18), ('Zyear', 31557600.0e21),
        ('Yyear', 31557600.0e24)
    ) AS u(unit, seconds)
"""
NL = "chr(10)"


def _latest_in_series(series: str, low: int, high: int, radioactive_only: bool = False) -> str:
    """The most recently discovered element of ``series`` -> its isotopes discovered in
    [low, high] (optionally radioactive ones only), by mass number."""
    extra = " AND i.is_radioactive = 1" if radioactive_only else ""
    return f"""
        WITH target AS (
            SELECT e.atomic_number, e.symbol
            FROM elements e JOIN series s ON s.id = e.series_id
            WHERE s.name = '{series}' AND e.discovery_year IS NOT NULL
            ORDER BY e.discovery_year DESC, e.atomic_number
            LIMIT 1
        )
        SELECT string_agg(
            t.symbol || '-' || i.mass_number || '|' || i.mass_number || '|'
            || coalesce(CAST(i.half_life AS VARCHAR), '') || '|' || coalesce(i.half_life_unit, '')
            || '|' || i.discovery_year,
            {NL} ORDER BY i.mass_number, i.id)
        FROM isotopes i JOIN target t ON t.atomic_number = i.atomic_number
        WHERE i.discovery_year BETWEEN {low} AND {high}{extra}
    """


QUERIES: dict[str, str] = {
    # The most recently discovered metalloid: its isotopes found 2000-2009.
    "elements_001": _latest_in_series("Metalloids", 2000, 2009),
    # The earliest-discovered halogen decides whose isotopes are listed (1930-1949).
    "elements_002": f"""
        WITH target AS (
            SELECT e.atomic_number, e.symbol
            FROM elements e JOIN series s ON s.id = e.series_id
            WHERE s.name = 'Halogens'
            ORDER BY e.discovery_year NULLS LAST, e.atomic_number
            LIMIT 1
        )
        SELECT string_agg(
            t.symbol || '-' || i.mass_number || '|' || i.mass_number || '|'
            || CAST(i.half_life AS VARCHAR) || '|' || i.half_life_unit || '|' || i.discovery_year,
            {NL} ORDER BY i.mass_number, i.id)
        FROM isotopes i JOIN target t ON t.atomic_number = i.atomic_number
        WHERE i.discovery_year BETWEEN 1930 AND 1949
    """,
    # The radioactive d-block element of period 5: isotopes found 1930-1959, longest-lived first.
    "elements_004": f"""
        WITH target AS (
            SELECT atomic_number, symbol FROM elements
            WHERE block = 'd' AND period = 5 AND is_radioactive = 1
        ), units AS ({UNIT_SECONDS_SQL})
        SELECT string_agg(
            t.symbol || '-' || i.mass_number || '|' || CAST(i.half_life AS VARCHAR) || '|'
            || i.half_life_unit || '|' || i.discovery_year,
            {NL} ORDER BY i.half_life * u.seconds DESC, i.id)
        FROM isotopes i
        JOIN target t ON t.atomic_number = i.atomic_number
        JOIN units u ON u.unit = i.half_life_unit
        WHERE i.discovery_year BETWEEN 1930 AND 1959 AND i.is_radioactive = 1
    """,
    # The most recently discovered alkali metal: its isotopes found 1960-1969.
    "elements_003": _latest_in_series("Alkali metals", 1960, 1969),
    # The most recently discovered alkaline earth metal: radioactive isotopes found 1970-1979.
    "elements_005": _latest_in_series("Alkaline earth metals", 1970, 1979, radioactive_only=True),
}
# Checks that the intermediate evidence is unique: one latest element per series, and one
# radioactive d-block element in period 5.
_LATEST = """
    SELECT count(*) FROM elements e JOIN series s ON s.id = e.series_id
    WHERE s.name = '{}' AND e.discovery_year = (
        SELECT max(e2.discovery_year) FROM elements e2 JOIN series s2 ON s2.id = e2.series_id
        WHERE s2.name = '{}')
"""
CHECKS: dict[str, str] = {
    "elements_001": _LATEST.format("Metalloids", "Metalloids"),
    "elements_003": _LATEST.format("Alkali metals", "Alkali metals"),
    "elements_004": (
        "SELECT count(*) FROM elements WHERE block = 'd' AND period = 5 AND is_radioactive = 1"
    ),
    "elements_005": _LATEST.format("Alkaline earth metals", "Alkaline earth metals"),
}
EXPECTED_COUNTS = {"elements_001": 1, "elements_003": 1, "elements_004": 1, "elements_005": 1}


def database_path() -> Path:
    """The ``elements.db`` of the installed mendeleev package."""
    return refcommon.package_file(PACKAGE, "elements.db")


def connect(path: Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database holding the source tables (columns in ``TABLES``)."""
    con = duckdb.connect(":memory:")
    source = sqlite3.connect(f"{(path or database_path()).as_uri()}?mode=ro", uri=True)
    try:
        for table, columns in TABLES.items():
            rows = source.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            params: dict[str, Any] = {c: [r[k] for r in rows] for k, c in enumerate(columns)}
            select = ", ".join(f"unnest(${c}) AS {c}" for c in columns)
            con.execute(f"CREATE TABLE {table} AS SELECT {select}", params)
    finally:
        source.close()
    return con


def answers() -> dict[str, str]:
    """Every CG task id with its oracle answer."""
    con = connect()
    try:
        for task_id, sql in CHECKS.items():
            row = con.execute(sql).fetchone()
            if row is None or row[0] != EXPECTED_COUNTS[task_id]:
                raise SystemExit(f"{task_id}: unexpected intermediate evidence ({row})")
        out = {}
        for task_id, sql in QUERIES.items():
            row = con.execute(sql).fetchone()
            out[task_id] = "NONE" if row is None or row[0] is None else str(row[0])
        return out
    finally:
        con.close()


if __name__ == "__main__":
    refcommon.print_answers(answers())
