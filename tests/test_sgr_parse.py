"""Prediction formats the scorer reads (see the task-format spec: what the scorer must survive)."""

from __future__ import annotations

import pytest

from sgrgym.sgr.canon import clean_text
from sgrgym.sgr.parse import ParseStatus, parse_prediction, split_fields, split_records

COLS = ("name", "count", "tag")
ROWS = (("a", "1", "x"), ("b", "2", "y"))


def rows_of(text: str, columns: tuple[str, ...] = COLS, record_sep: str = "\n") -> tuple:
    parsed = parse_prediction(text, columns, "|", record_sep)
    assert parsed.status is ParseStatus.ok, parsed
    return tuple(tuple(clean_text(c) if c is not None else None for c in r) for r in parsed.rows)


@pytest.mark.parametrize(
    "text",
    [
        "a|1|x\nb|2|y",
        "a | 1 | x\r\nb | 2 | y\n",
        "| a | 1 | x |\n| b | 2 | y |",
        "| name | count | tag |\n|---|---:|:---:|\n| a | 1 | x |\n| b | 2 | y |",
        "| Name | Count | Tag |\n| --- | --- | --- |\n| a | 1 | x |\n| b | 2 | y |",
        "| Anything | else | here |\n|-|-|-|\n| a | 1 | x |\n| b | 2 | y |",
        "Here is the table:\n\n```markdown\n| a | 1 | x |\n| b | 2 | y |\n```\nHope it helps.",
        "~~~\nname|count|tag\na|1|x\nb|2|y\n~~~",
        "NAME|COUNT|TAG\na|1|x\nb|2|y",
        "a\t1\tx\nb\t2\ty",
        "name\tcount\ttag\na\t1\tx\nb\t2\ty",
        "name,count,tag\na,1,x\nb,2,y",
        '[["a", 1, "x"], ["b", 2, "y"]]',
        '[{"name": "a", "count": 1, "tag": "x"}, {"Tag": "y", "name": "b", "count": 2}]',
        '{"rows": [["a", "1", "x"], ["b", "2", "y"]]}',
        '{"name": "a", "count": 1, "tag": "x"}\n{"name": "b", "count": 2, "tag": "y"}',
        '```json\n[["a", 1, "x"], ["b", 2, "y"]]\n```',
        "**a**|`1`|x\nb|2|[y](http://example.org/y)",
        "ａ|１|ｘ\nb|2|y",
        "a|1|x|\nb|2|y|",
    ],
)
def test_formats(text: str) -> None:
    assert rows_of(text) == ROWS


def test_escaped_pipe_stays_in_field() -> None:
    assert rows_of("a\\|b|1|x") == (("a|b", "1", "x"),)
    assert split_fields("p\\|q|r", "|") == ["p|q", "r"]


def test_record_separator_inside_one_line() -> None:
    assert rows_of("a|1|x;b|2|y", record_sep=";") == ROWS
    # Commas inside fields do not split records when the width tells the boundary.
    got = rows_of("a|1,5|x,b|2|y", record_sep=",")
    assert got == (("a", "1,5", "x"), ("b", "2", "y"))


def test_split_records_rejects_ambiguous_boundaries() -> None:
    assert split_records("a|b,c,d|e", "|", ",", 2) is None
    assert split_records("a|b|c", "|", ",", 2) is None
    assert split_records("a|b\nc|d", "|", "\n", 2) == [["a", "b"], ["c", "d"]]


def test_json_object_missing_column_is_none() -> None:
    parsed = parse_prediction('[{"name": "a", "tag": "x", "note": "n"}]', COLS)
    assert parsed.rows == (("a", None, "x", "n"),)


@pytest.mark.parametrize("text", ["", "   ", "NONE", "none.", "**NONE**", "```\nNONE\n```"])
def test_none_is_empty(text: str) -> None:
    parsed = parse_prediction(text, COLS)
    assert parsed.status is ParseStatus.empty and parsed.rows == ()


@pytest.mark.parametrize(
    "text", ["I could not find it.", "{not json", "name|count|tag", "|---|---|", "[1, 2"]
)
def test_unreadable_text_is_a_parse_failure(text: str) -> None:
    assert parse_prediction(text, COLS).status is ParseStatus.parse_failure


def test_single_column_lines() -> None:
    assert rows_of("name\nalpha\nbeta", columns=("name",)) == (("alpha",), ("beta",))
    assert rows_of("alpha;beta", columns=("name",), record_sep=";") == (("alpha",), ("beta",))


def test_nul_characters_do_not_raise() -> None:
    # Python 3.10's csv module raises on NUL; the reader must turn that into "not CSV".
    parsed = parse_prediction("name,count,tag\na,\x00,x", COLS)
    assert parsed.status in (ParseStatus.ok, ParseStatus.parse_failure)


def test_dash_values_outside_markdown_are_data() -> None:
    assert rows_of("a|-|x\nb|2|-") == (("a", "-", "x"), ("b", "2", "-"))
    assert rows_of("name|count|tag\n---|---|---\na|1|x\nb|2|y") == ROWS
