"""Reference answers of the cwe tasks, computed with DuckDB SQL straight from the CWE XML.

The catalogue file shipped in the ``cwe2`` package is read with the standard library into
in-memory DuckDB tables; each task's answer is one SQL query over them (no site code is
used). Run it to print ``{task_id: oracle_answer}`` as JSON for the constraint-guided ids.
"""

from __future__ import annotations

import importlib.util
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import duckdb

NS = "{http://cwe.mitre.org/cwe-7}"

SCHEMA = """
CREATE TABLE weakness (id INTEGER, name VARCHAR, abstraction VARCHAR, status VARCHAR,
                       likelihood VARCHAR, submitted DATE);
CREATE TABLE category (id INTEGER, name VARCHAR, status VARCHAR, submitted DATE);
CREATE TABLE category_member (category_id INTEGER, member_id INTEGER, view_id INTEGER);
CREATE TABLE cwe_view (id INTEGER, name VARCHAR, view_type VARCHAR, status VARCHAR);
CREATE TABLE view_member (view_id INTEGER, member_id INTEGER, rank INTEGER);
"""


# Each query returns the answer's columns, in answer order, as text.
def _category_members(rank: int, status: str) -> str:
    """Rank ``rank`` of the 2023 Top 25 (view 1425) -> the view-699 category that holds it ->
    that category's weaknesses with ``status``, by id."""
    return f"""
        WITH target AS (
            SELECT member_id FROM view_member WHERE view_id = 1425 AND rank = {rank}
        ), holder AS (
            SELECT DISTINCT cm.category_id
            FROM category_member cm JOIN target t ON cm.member_id = t.member_id
            WHERE cm.view_id = 699
        )
        SELECT 'CWE-' || w.id, w.name, strftime(w.submitted, '%Y-%m-%d')
        FROM category_member cm
        JOIN holder h ON cm.category_id = h.category_id
        JOIN weakness w ON w.id = cm.member_id
        WHERE w.status = '{status}'
        ORDER BY w.id
    """


# Each query returns the answer's columns, in answer order, as text.
QUERIES: dict[str, str] = {
    # Rank 10 of the 2023 Top 25 -> its view-699 category -> Draft members.
    "cwe_001": _category_members(10, "Draft"),
    # Rank 25 of the 2023 Top 25 -> its view-699 category -> Incomplete members.
    "cwe_002": _category_members(25, "Incomplete"),
    # Rank 20 of the 2023 Top 25 -> its view-699 category -> Incomplete members.
    "cwe_003": _category_members(20, "Incomplete"),
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
    "cwe_005": """
        WITH target AS (
            SELECT rank, member_id FROM view_member WHERE view_id = 1425 AND rank IN (12, 14)
        ), holder AS (
            SELECT DISTINCT t.rank, cm.category_id
            FROM category_member cm JOIN target t ON cm.member_id = t.member_id
            WHERE cm.view_id = 699
        )
        SELECT 'CWE-' || w.id, w.name, strftime(w.submitted, '%Y-%m-%d')
        FROM category_member cm
        JOIN holder h ON cm.category_id = h.category_id
        JOIN weakness w ON w.id = cm.member_id
        WHERE w.status = 'Draft'
        ORDER BY h.rank, w.id
    """,
}


def catalog_file() -> Path:
    """The CWE XML file inside the installed cwe2 package."""
    spec = importlib.util.find_spec("cwe2")
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).glob("database_v*/cwec_v*.xml"))
        if found:
            return found[-1]
    raise SystemExit("the cwe2 package (with its CWE XML file) is not installed")


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
    for table, rows in _rows(ET.parse(catalog_file()).getroot()).items():
        columns = [list(column) for column in zip(*rows, strict=True)]
        # One statement per table: each column is bound as a list and unnested side by side.
        unnested = ", ".join(["unnest(?)"] * len(columns))
        con.execute(f"INSERT INTO {table} SELECT {unnested}", columns)
    return con


def answers() -> dict[str, str]:
    """Every cwe task's oracle answer: fields joined by "|", records by newlines."""
    con = connect()
    out = {}
    for task_id, query in QUERIES.items():
        rows = con.execute(query).fetchall()
        out[task_id] = "\n".join("|".join(str(v) for v in row) for row in rows)
    return out


if __name__ == "__main__":
    print(json.dumps(answers(), indent=2, ensure_ascii=False))
