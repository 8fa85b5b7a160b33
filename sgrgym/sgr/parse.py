"""Turn answer text into rows of raw field values.

SGR-Bench section 3.4: after canonicalization, prediction and reference "are parsed into
structured rows and fields according to the task schema"; appendix A then aligns the rows.
This module is that parse: it decides what is a row (a line that fits the schema), which
column each cell belongs to (a header naming the columns), and which table is the answer.

Reference answers (``oracle_answer``) are one string in the task's declared format: fields
joined by the field separator, records by the record separator, no header. Predictions are
whatever an agent wrote; the formats read are listed in :func:`parse_prediction`.
A row is a tuple of raw field values; ``None`` marks a field the prediction did not give
(a JSON object without that column).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any

from sgrgym.sgr.canon import clean_text

Row = tuple[str | None, ...]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,}).*$", re.M)
# A Markdown rule cell; outside a Markdown table a lone "-" is more likely a value (n/a).
_RULE_CELL = {True: re.compile(r"^:?-+:?$"), False: re.compile(r"^:?-{3,}:?$")}
_JSON_CONTAINERS = ("rows", "answer", "data", "table", "results", "records")
_PAD = " \t"
_PLACEHOLDERS = frozenset({"", "...", "\u2026", "etc", "etc."})
_NAME_SPACE = re.compile(r"[\s_-]+")
MULTIPLE_TABLES = "multiple_tables"


class ParseStatus(str, Enum):
    ok = "ok"
    empty = "empty"  # empty text or "NONE": zero rows, by definition
    parse_failure = "parse_failure"  # text present but no rows could be read from it


@dataclass(frozen=True)
class ParsedAnswer:
    rows: tuple[Row, ...]
    status: ParseStatus
    format: str  # which reader produced the rows (for diagnostics)
    flags: tuple[str, ...] = ()  # e.g. ``multiple_tables``


def split_fields(line: str, sep: str) -> list[str]:
    """Split ``line`` on ``sep``, honouring a backslash-escaped separator (``\\|``)."""
    if "\\" + sep not in line:
        return line.split(sep)
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(line):
        if line.startswith("\\" + sep, i):
            current.append(sep)
            i += 1 + len(sep)
        elif line.startswith(sep, i):
            parts.append("".join(current))
            current = []
            i += len(sep)
        else:
            current.append(line[i])
            i += 1
    parts.append("".join(current))
    return parts


def is_none_answer(text: str) -> bool:
    """True when the whole answer says "no rows": empty, or NONE (any case, any decoration)."""
    return clean_text(text).upper().rstrip(".") in ("", "NONE")


def split_records(text: str, field_sep: str, record_sep: str, width: int) -> list[list[str]] | None:
    """Split a one-string answer into ``width``-field records, or ``None`` when impossible.

    A newline record separator splits on lines. Any other record separator may also occur
    inside fields (``2160/3531|583,137|197`` with ``,``), so when a plain split does not give
    rows of ``width`` fields the text is split on fields first and every ``width - 1``-th
    field must hold exactly one record separator: the record boundary.
    """
    text = text.strip()
    if record_sep == "\n":
        return [split_fields(line.strip(), field_sep) for line in text.split("\n") if line.strip()]
    plain = [split_fields(r.strip(), field_sep) for r in text.split(record_sep) if r.strip()]
    if all(len(r) == width for r in plain):
        return plain
    if width < 2:
        return None
    tokens = split_fields(text, field_sep)
    if (len(tokens) - 1) % (width - 1):
        return None
    n_rows = (len(tokens) - 1) // (width - 1)
    rows: list[list[str]] = []
    current = [tokens[0]]
    for i in range(1, len(tokens)):
        if i % (width - 1) == 0 and i // (width - 1) < n_rows:
            parts = tokens[i].split(record_sep)
            if len(parts) != 2:
                return None
            current.append(parts[0])
            rows.append(current)
            current = [parts[1]]
        else:
            current.append(tokens[i])
    rows.append(current)
    return rows


def _trim(row: Sequence[str | None], width: int) -> Row:
    """Drop empty cells at the edges of a row that is wider than the schema (formatting).

    Only the padding around separators (spaces and tabs) is removed from a cell: that belongs
    to the answer's layout. Any other whitespace is left for the field's comparison rule
    (``exact`` keeps it, ``exact_after_outer_whitespace_trim`` and the text rules drop it).
    """
    cells = [c.strip(_PAD) if c is not None else None for c in row]
    while len(cells) > width and cells[-1] == "":
        cells.pop()
    while len(cells) > width and cells[0] == "":
        cells.pop(0)
    return tuple(cells)


@lru_cache(maxsize=65536)
def _header_name(cell: str) -> str:
    return _NAME_SPACE.sub(" ", clean_text(cell).casefold()).strip()


@lru_cache(maxsize=4096)
def _schema_names(columns: tuple[str, ...]) -> dict[str, int]:
    return {_header_name(c): i for i, c in enumerate(columns)}


def header_map(
    cells: Sequence[str | None], columns: Sequence[str]
) -> tuple[int | None, ...] | None:
    """Where each cell of a header row goes in the schema, or ``None`` if it is no header.

    A header names schema columns (case, spaces, ``_`` and ``-`` ignored), each at most once,
    in any order. It either names every schema column (other cells are extra columns) or
    names only schema columns (the columns it leaves out are missing from every row).
    A line that echoes the format in prose (``Format: name|count|tag, one per line``) is a
    header too: every cell holds one schema column name as a word, each column once.
    """
    names = _schema_names(tuple(columns))
    width = len(columns)
    if any(c is None for c in cells):
        return None
    texts = [_header_name(c) for c in cells[:1]]  # most rows are data: decide on cell 0 first
    first = names.get(texts[0]) if texts else None
    if first is not None or len(cells) > width:
        labels = [_header_name(c or "") for c in cells]
        mapping = [first] + [names.get(t) for t in labels[1:]]
        found = [m for m in mapping if m is not None]
        distinct = bool(found) and len(set(found)) == len(found)
        covers = len(found) == width
        # Every cell a column name, or a placeholder ("...", empty) standing for the rest.
        named = sum(
            m is not None or t in _PLACEHOLDERS for m, t in zip(mapping, labels, strict=True)
        )
        only_names = named == len(mapping) and len(found) >= min(2, width)
        if distinct and covers:
            return tuple(mapping)
        if distinct and only_names:
            if len(found) == len(mapping):
                return tuple(mapping)
            # An echo with placeholders ("name|count|..."): the schema in its own order.
            in_place = all(m is None or m == j for j, m in enumerate(mapping))
            return tuple(range(width)) if in_place and len(cells) == width else None
    if width < 2 or len(cells) != width:
        return None
    echoed: list[int | None] = []
    for cell in cells:
        index = _named_in(_header_name(cell or ""), names)
        if index is None or index in echoed:
            return None
        echoed.append(index)
    return tuple(echoed)


def _named_in(cell: str, names: dict[str, int]) -> int | None:
    """The one schema column named as a word inside ``cell``, else ``None``."""
    hits = {
        i
        for name, i in names.items()
        if name in cell and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", cell)
    }
    return hits.pop() if len(hits) == 1 else None


def _is_header(cells: Sequence[str | None], columns: Sequence[str]) -> bool:
    """A header row equal to the schema, in schema order."""
    if len(cells) != len(columns):
        return False
    names = _schema_names(tuple(columns))
    return all(c is not None and names.get(_header_name(c)) == i for i, c in enumerate(cells))


def _remap(cells: Sequence[str | None], mapping: Sequence[int | None], width: int) -> Row:
    """Put the cells of a row read under a header into schema order (extras at the end)."""
    row: list[str | None] = [None] * width
    extra: list[str | None] = []
    for cell, index in zip(cells, mapping, strict=True):
        if index is None:
            extra.append(cell)
        else:
            row[index] = cell
    return tuple(row + extra)


def _json_scalar(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return "; ".join(s for s in (_json_scalar(v) for v in value) if s is not None)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_rows(data: Any, columns: Sequence[str]) -> list[Row] | None:
    if isinstance(data, dict):
        for key in _JSON_CONTAINERS:
            if isinstance(data.get(key), list):
                return _json_rows(data[key], columns)
        data = [data]
    if not isinstance(data, list):
        return None
    by_name = {c.casefold(): i for i, c in enumerate(columns)}
    rows: list[Row] = []
    for item in data:
        if isinstance(item, list):
            rows.append(tuple(_json_scalar(v) for v in item))
        elif isinstance(item, dict):
            cells: list[str | None] = [None] * len(columns)
            extra: list[str | None] = []
            for key, value in item.items():
                index = by_name.get(clean_text(str(key)).casefold())
                if index is None:
                    extra.append(_json_scalar(value))
                else:
                    cells[index] = _json_scalar(value)
            rows.append(tuple(cells + extra))
        elif len(columns) == 1 and not isinstance(item, dict):
            rows.append((_json_scalar(item),))
        else:
            return None
    return rows


def _read_json(text: str, columns: Sequence[str]) -> list[Row] | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return _json_rows(json.loads(stripped), columns)
    except (json.JSONDecodeError, RecursionError):
        pass
    rows: list[Row] = []
    for line in stripped.split("\n"):
        if not line.strip():
            continue
        try:
            part = _json_rows(json.loads(line), columns)
        except (json.JSONDecodeError, RecursionError):
            return None
        if part is None:
            return None
        rows.extend(part)
    return rows


def _read_csv(lines: list[str]) -> list[list[str]] | None:
    """CSV rows, or ``None`` when the csv module rejects the text (e.g. a NUL on Python 3.10)."""
    try:
        return list(csv.reader(lines))
    except csv.Error:
        return None


def _is_markdown_row(line: str) -> bool:
    return len(line) >= 2 and line[0] == "|" == line[-1]


def _is_rule(cells: Sequence[str], markdown: bool) -> bool:
    values = [c.strip() for c in cells if c.strip()]
    return bool(values) and all(_RULE_CELL[markdown].match(c) for c in values)


def _pipe_cells(lines: list[str], sep: str, record_sep: str, width: int) -> list[list[str]]:
    """Split lines holding the separator into cells (a Markdown row loses its outer pipes)."""
    raw: list[list[str]] = []
    for line in lines:
        stripped = line.strip()
        if _is_markdown_row(stripped):
            # A Markdown table row: one pipe at each end.
            stripped = stripped[1:-1]
            if stripped.endswith("\\"):  # "\|" at the end was an escaped pipe, keep it
                stripped += "|"
        elif sep == "|" and stripped.startswith("|"):
            stripped = stripped[1:]  # a Markdown row without its closing pipe (or cut short)
        cells = split_fields(stripped, sep)
        if len(cells) > width and record_sep != "\n" and record_sep in stripped:
            records = split_records(stripped, sep, record_sep, width)
            if records is not None and len(records) > 1:
                raw.extend(records)
                continue
        raw.append(cells)
    return raw


@dataclass
class _Table:
    """Rows read under one header (or from the start of a block), in schema order."""

    rows: list[Row] = field(default_factory=list)
    complete: bool = True  # its last line fitted the schema (not cut short)


def _read_tables(
    raw: Sequence[Sequence[str]], columns: Sequence[str], markdown: bool
) -> list[_Table]:
    """Group rows of cells into tables; keep only the lines that fit the schema.

    A header row (one naming schema columns, see :func:`header_map`, or the row above a
    Markdown ``---`` rule) starts a new table; rows after a header naming the columns are
    put into schema order by it. A line is a row only when it fits: as many cells as the
    header names, or, with no header naming the columns, as many as the schema has. Other
    lines (prose holding the separator, an echoed format line) are dropped.
    """
    width = len(columns)
    tables: list[_Table] = []
    mapping: tuple[int | None, ...] | None = None
    current: _Table | None = None
    for i, cells in enumerate(raw):
        if _is_rule(cells, markdown):
            continue  # a Markdown "---" rule row
        trimmed = _trim(cells, width)
        found = header_map(trimmed, columns)
        if found is not None or (i + 1 < len(raw) and _is_rule(raw[i + 1], markdown)):
            mapping = found  # a header that names no schema column: rows stay positional
            current = _Table()
            tables.append(current)
            continue
        expected = width if mapping is None else len(mapping)
        row = trimmed if mapping is None else _trim(cells, expected)
        fits = len(row) == expected
        if current is None:
            current = _Table()
            tables.append(current)
        if current.rows or fits:
            current.complete = fits
        if fits:
            current.rows.append(row if mapping is None else _remap(row, mapping, width))
    return tables


def _block_tables(
    body: str, columns: Sequence[str], field_sep: str, record_sep: str
) -> tuple[list[_Table], str] | None:
    """The tables of one block of answer text and the reader that found them."""
    width = len(columns)
    json_rows = _read_json(body, columns)
    if json_rows is not None:
        return [_Table(json_rows)], "json"
    lines = [line for line in body.split("\n") if line.strip()]
    markdown = [line for line in lines if _is_markdown_row(line.strip())]
    if markdown:  # rows of the table(s) that lost their closing pipe belong to it too
        markdown = [line for line in lines if line.strip().startswith("|")]
    sep_lines = [line for line in lines if field_sep in line]
    if markdown:
        raw = _pipe_cells(markdown, "|", record_sep, width)
        return _read_tables(raw, columns, True), "markdown"
    if sep_lines and (width > 1 or len(sep_lines) == len(lines)):
        raw = _pipe_cells(sep_lines, field_sep, record_sep, width)
        return _read_tables(raw, columns, False), "separated"
    if any("\t" in line for line in lines):
        raw = [line.split("\t") for line in lines if "\t" in line]
        return _read_tables(raw, columns, False), "tsv"
    if width > 1 and (table := _read_csv(lines)) and header_map(table[0], columns) is not None:
        return _read_tables([c for c in table if c], columns, False), "csv"
    if width == 1:
        if len(lines) == 1 and record_sep != "\n":
            rows: list[Row] = [(r,) for r in lines[0].split(record_sep) if r.strip()]
        else:
            rows = [(line.strip(_PAD),) for line in lines]
        return [_Table(rows)], "lines"
    return None


def parse_prediction(
    text: str, columns: Sequence[str], field_sep: str = "|", record_sep: str = "\n"
) -> ParsedAnswer:
    """Read an agent's raw answer into rows under the task's ``columns``.

    Formats read, in this order: empty text or ``NONE`` (zero rows); the contents of fenced
    code blocks when there are any (each block on its own); JSON (an array of arrays or of
    objects keyed by column name, an object holding such an array under ``rows``/``answer``/
    ``data``/``table``/``results``/``records``, or JSON lines); lines holding the field
    separator (raw pipe lines, Markdown tables with or without header and ``---`` rows, or the
    reference's own one-string format); TSV; CSV after a header row naming the columns; for
    one-column tasks, one value per line.

    Header rows naming the schema columns, in any order, are dropped and put the rows under
    them into schema order; a line is a row only when it fits the schema (see
    :func:`_read_tables`). When the answer holds several tables (a draft, then the final
    one), the last complete table with at least one row is scored and the answer is
    flagged ``multiple_tables``; a table is complete unless its last line does not fit (cut
    short). Text that yields no row is a parse failure.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if is_none_answer(text):
        return ParsedAnswer((), ParseStatus.empty, "none")
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if blocks and is_none_answer("\n".join(blocks)):
        return ParsedAnswer((), ParseStatus.empty, "none")
    tables: list[tuple[_Table, str]] = []
    formats: list[str] = []
    for body in blocks or [_FENCE_LINE.sub("", text)]:
        found = _block_tables(body, columns, field_sep, record_sep)
        if found is not None:
            formats.append(found[1])
            tables.extend((t, found[1]) for t in found[0])
    for table, _ in tables:
        table.rows = [r for r in table.rows if not _is_header(r, columns)]
    filled = [(t, f) for t, f in tables if t.rows]
    if not filled:
        return ParsedAnswer((), ParseStatus.parse_failure, formats[-1] if formats else "none")
    chosen, fmt = next(((t, f) for t, f in reversed(filled) if t.complete), filled[-1])
    flags = (MULTIPLE_TABLES,) if len(filled) > 1 else ()
    return ParsedAnswer(tuple(chosen.rows), ParseStatus.ok, fmt, flags)
