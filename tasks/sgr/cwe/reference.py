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
QUERIES: dict[str, str] = {
    # Stable weaknesses rated High for likelihood of exploit, by name.
    "cwe_001": """
        SELECT 'CWE-' || id, name, abstraction, strftime(submitted, '%Y-%m-%d')
        FROM weakness
        WHERE status = 'Stable' AND likelihood = 'High'
        ORDER BY name, id
    """,
    # Rank 3 of the 2023 Top 25 -> its Software Development (view 699) category ->
    # that category's Draft members, by id.
    "cwe_002": """
        WITH target AS (
            SELECT member_id FROM view_member WHERE view_id = 1425 AND rank = 3
        ), holder AS (
            SELECT DISTINCT cm.category_id
            FROM category_member cm JOIN target t ON cm.member_id = t.member_id
            WHERE cm.view_id = 699
        )
        SELECT 'CWE-' || w.id, w.name, strftime(w.submitted, '%Y-%m-%d')
        FROM category_member cm
        JOIN holder h ON cm.category_id = h.category_id
        JOIN weakness w ON w.id = cm.member_id
        WHERE w.status = 'Draft'
        ORDER BY w.id
    """,
    # Ranks 21-25 of the 2020 Top 25.
    "cwe_003": """
        SELECT CAST(vm.rank AS VARCHAR), 'CWE-' || w.id, w.name
        FROM view_member vm JOIN weakness w ON w.id = vm.member_id
        WHERE vm.view_id = 1350 AND vm.rank BETWEEN 21 AND 25
        ORDER BY vm.rank
    """,
    # Base weaknesses submitted from 2021 through 2023, oldest first (ties by id).
    "cwe_004": """
        SELECT 'CWE-' || id, name, status, strftime(submitted, '%Y-%m-%d')
        FROM weakness
        WHERE abstraction = 'Base' AND year(submitted) BETWEEN 2021 AND 2023
        ORDER BY submitted, id
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
