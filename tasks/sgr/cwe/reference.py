"""Reference answers of the cwe tasks, computed with DuckDB SQL straight from the CWE XML.

The catalogue file shipped in the ``cwe2`` package is read with the standard library into
in-memory DuckDB tables; each task's answer is one SQL query over them (no site code is
used). Run it to print ``{task_id: oracle_answer}`` as JSON for the constraint-guided ids.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import duckdb

sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
import refcommon

NS = "{http://cwe.mitre.org/cwe-7}"

SCHEMA = """
CREATE TABLE weakness (id INTEGER, name VARCHAR, abstraction VARCHAR, status VARCHAR,
                       likelihood VARCHAR, submitted DATE);
CREATE TABLE category (id INTEGER, name VARCHAR, status VARCHAR, submitted DATE);
CREATE TABLE category_member (category_id INTEGER, member_id INTEGER, view_id INTEGER);
CREATE TABLE cwe_view (id INTEGER, name VARCHAR, view_type VARCHAR, status VARCHAR);
CREATE TABLE view_member (view_id INTEGER, member_id INTEGER, rank INTEGER);
"""


def _category_members(ranks: tuple[int, ...], status: str) -> str:
    """Ranks ``ranks`` of the 2023 Top 25 (view 1425) -> the view-699 categories that hold
    them -> those categories' weaknesses with ``status``, rank by rank, each by id."""
    return f"""
        WITH target AS (
            SELECT rank, member_id FROM view_member
            WHERE view_id = 1425 AND rank IN ({", ".join(map(str, ranks))})
        ), holder AS (
            SELECT DISTINCT t.rank, cm.category_id
            FROM category_member cm JOIN target t ON cm.member_id = t.member_id
            WHERE cm.view_id = 699
        )
        SELECT 'CWE-' || w.id, w.name, strftime(w.submitted, '%Y-%m-%d')
        FROM category_member cm
        JOIN holder h ON cm.category_id = h.category_id
        JOIN weakness w ON w.id = cm.member_id
        WHERE w.status = '{status}'
        ORDER BY h.rank, w.id
    """


# Each query returns the answer's columns, in answer order, as text.
QUERIES: dict[str, str] = {
    # Rank 10 of the 2023 Top 25 -> its view-699 category -> Draft members.
    "cwe_001": _category_members((10,), "Draft"),
    # Rank 25 of the 2023 Top 25 -> its view-699 category -> Incomplete members.
    "cwe_002": _category_members((25,), "Incomplete"),
    # Rank 20 of the 2023 Top 25 -> its view-699 category -> Incomplete members.
    "cwe_003": _category_members((20,), "Incomplete"),
    # The most recently submitted entry of the 2023 Top 25 -> its submission year -> every
    # weakness submitted in that year, by id.
    "cwe_004": """
        WITH latest AS (
            SELECT max(w.submitted) AS day
            FROM view_member vm JOIN weakness w ON w.id = vm.member_id
            WHERE vm.view_id = 1425
        )
        SELECT 'CWE-' || id, name, abstraction, strftime(submitted, '%Y-%m-%d')
        FROM weakness, latest
        WHERE year(submitted) = year(latest.day)
        ORDER BY id
    """,
    # Ranks 12 and 14 of the 2023 Top 25 -> their view-699 categories -> Draft members, the
    # rank-12 category's first.
    "cwe_005": _category_members((12, 14), "Draft"),
}


def _submitted(element: ET.Element) -> str | None:
    return element.findtext(f"{NS}Content_History/{NS}Submission/{NS}Submission_Date")


def _rows(root: ET.Element) -> dict[str, list[tuple[Any, ...]]]:
    """Table name -> rows read from the catalogue."""
    tables: dict[str, list[tuple[Any, ...]]] = {
        "weakness": [],
        "category": [],
        "category_member": [],
        "cwe_view": [],
        "view_member": [],
    }
    for w in root.iterfind(f"{NS}Weaknesses/{NS}Weakness"):
        tables["weakness"].append(
            (
                int(w.get("ID", "0")),
                w.get("Name"),
                w.get("Abstraction"),
                w.get("Status"),
                w.findtext(f"{NS}Likelihood_Of_Exploit"),
                _submitted(w),
            )
        )
    for c in root.iterfind(f"{NS}Categories/{NS}Category"):
        cid = int(c.get("ID", "0"))
        tables["category"].append((cid, c.get("Name"), c.get("Status"), _submitted(c)))
        for m in c.iterfind(f"{NS}Relationships/{NS}Has_Member"):
            tables["category_member"].append(
                (cid, int(m.get("CWE_ID", "0")), int(m.get("View_ID", "0")))
            )
    for v in root.iterfind(f"{NS}Views/{NS}View"):
        vid = int(v.get("ID", "0"))
        tables["cwe_view"].append((vid, v.get("Name"), v.get("Type"), v.get("Status")))
        for rank, m in enumerate(v.iterfind(f"{NS}Members/{NS}Has_Member"), start=1):
            tables["view_member"].append((vid, int(m.get("CWE_ID", "0")), rank))
    return tables


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database holding the catalogue tables."""
    con = duckdb.connect(":memory:")
    con.execute(SCHEMA)
    catalog = ET.parse(refcommon.package_file("cwe2", "database_v*/cwec_v*.xml"))
    for table, rows in _rows(catalog.getroot()).items():
        columns = [list(column) for column in zip(*rows, strict=True)]
        # One statement per table: each column is bound as a list and unnested side by side.
        unnested = ", ".join(["unnest(?)"] * len(columns))
        con.execute(f"INSERT INTO {table} SELECT {unnested}", columns)
    return con


def answers() -> dict[str, str]:
    """Every cwe task's oracle answer: fields joined by "|", records by newlines."""
    con = connect()
    return {
        task_id: refcommon.answer_text(con.execute(query).fetchall())
        for task_id, query in QUERIES.items()
    }


if __name__ == "__main__":
    refcommon.print_answers(answers())
