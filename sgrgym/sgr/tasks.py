"""Load SGR-Bench task files (``constraint.jsonl`` / ``goal.jsonl`` and sgrgym's own JSONL).

Each line is one task variant. ``metadata`` and ``rubric`` may be JSON objects or JSON-encoded
strings. A file with any bad record is rejected whole, with every problem named by file, line,
task id and field: nothing is half-loaded.

Read as published:

- ``oracle_answer`` may start with a header row naming the schema (case-insensitive,
  whitespace-trimmed): it is dropped, as for predictions;
- ``oracle_output_cardinality`` that disagrees with the parsed answer is a *warning* (listed
  by ``sgrgym sgr tasks``), not an error: the parsed rows are scored;
- unknown top-level, ``metadata`` and ``rubric`` keys are kept (forward compatibility),
  except keys that would change scoring: unknown keys of a field rule
  (``rubric.fields.<column>``), an unknown ``comparison`` rule, and the rubric-level
  :data:`~sgrgym.sgr.rubric.SCORING_KEYS` are errors naming the task, field and key.

Canonicalization (section 3.4): a typed rubric keeps its declared rules (``typed``); a legacy
rubric gets the default canonicalization of :mod:`sgrgym.sgr.default_canon` (``default``),
or the text rules only with ``strict`` (``--strict``).

Row key (the columns that align predicted rows with reference rows, SGR-Bench appendix A),
first rule that applies:

1. the user's ``--row-keys`` file entry for the task id (or for its CG twin's id);
2. the typed rubric's ``row_key``;
3. the schema columns named by the key statement of the legacy ``normalization.dedup_key``
   text (:func:`dedup_key_columns`: the columns right after "dedup by", "unique on", "key:",
   ... or the whole text when it is only column names; later mentions such as "current_name
   may repeat" are not part of the key);
4. the shortest leading run of schema columns whose canonical values are unique over the
   reference rows.

Rules 1-3 must give unique keys over the reference rows, and rule 4 must find a unique run:
otherwise loading fails, because a duplicated reference key would silently merge rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from sgrgym.core.blocklines import jsonl_lines_blockwise
from sgrgym.core.errors import TaskFileError, UserError
from sgrgym.core.inputs import BadJson, json_value, read_json, shorten
from sgrgym.sgr.canon import FieldCanon
from sgrgym.sgr.default_canon import DefaultCanon, column_canons
from sgrgym.sgr.parse import _is_header, is_none_answer, split_records
from sgrgym.sgr.rubric import FieldRule, Rubric

Canon = FieldCanon | DefaultCanon

GO_SUFFIX = "-g"
VARIANTS = ("CG", "GO")
_TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


def _decode_json_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json_value(value)
        except BadJson as exc:
            raise ValueError(f"a JSON-encoded string that is {exc}") from None
    return value


class TaskMetadata(BaseModel):
    """The published ``metadata`` object; unknown keys are kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    state_gated_retrieval: list[str] = Field(default_factory=list, alias="State-Gated Retrieval")
    dependency_type: str | None = None
    intra_chain: bool | None = None
    inter_chain: bool | None = None
    data_dependency: list[str] = Field(default_factory=list)
    control_dependency: list[str] = Field(default_factory=list)
    freeze: Any = None
    answer_type: str | None = None

    @field_validator(
        "state_gated_retrieval", "data_dependency", "control_dependency", mode="before"
    )
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return [] if value is None else value


class SgrTask(BaseModel):
    """One SGR-Bench task variant, as published."""

    model_config = ConfigDict(extra="allow")

    task_id: str = Field(pattern=_TASK_ID)
    domain: str = Field(min_length=1)
    autonomy_type: str = "ordered table"
    oracle_output_cardinality: int = Field(ge=0)
    instruction: str
    output_format: str
    start_url: str | None = None
    oracle_answer: str
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    rubric: Rubric

    @field_validator("metadata", "rubric", mode="before")
    @classmethod
    def _decode(cls, value: Any, info: ValidationInfo) -> Any:
        # Published exports write these objects either inline or as JSON-encoded strings.
        if value is None and info.field_name == "metadata":
            return {}
        return _decode_json_text(value)

    @property
    def variant(self) -> str:
        """``GO`` for ids ending in ``-g``, else ``CG``."""
        return "GO" if self.task_id.endswith(GO_SUFFIX) else "CG"

    @property
    def pair_id(self) -> str:
        """The CG twin's id (the id without ``-g``)."""
        return self.task_id[: -len(GO_SUFFIX)] if self.variant == "GO" else self.task_id


@dataclass(frozen=True)
class ScoringTask:
    """A validated task with its parsed, canonical reference rows and resolved row key."""

    task: SgrTask
    source: str
    line: int
    columns: tuple[str, ...]
    canons: tuple[Canon, ...]
    key_columns: tuple[int, ...]
    key_rule: str
    gold_rows: tuple[tuple[str, ...], ...]
    gold_canon: tuple[tuple[str, ...], ...]
    canonicalization: str = "typed"  # typed | default | strict
    column_kinds: tuple[str, ...] = ()  # per column: declared type, or the inferred kind
    key_statement: str | None = None  # the dedup_key text the row key was read from
    warnings: tuple[str, ...] = ()  # slips in the record (e.g. a wrong cardinality)
    notes: tuple[str, ...] = ()  # columns compared strictly under the default, and why

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def variant(self) -> str:
        return self.task.variant

    @property
    def domain(self) -> str:
        return self.task.domain

    @property
    def field_sep(self) -> str:
        return self.task.rubric.field_sep

    @property
    def record_sep(self) -> str:
        return self.task.rubric.record_sep

    @property
    def key_names(self) -> list[str]:
        return [self.columns[i] for i in self.key_columns]


_KEY_TRIGGER = re.compile(
    r"\b(?:de-?dup\w*|unique|distinct|keyed|(?:row|primary|composite)?\s*key|"
    r"identified|one\s+row\s+(?:per|for\s+each)|per)\b"
    r"(?:\s*(?:is|are|by|on|over|of|per|using|=|:)\b|\s*[:=])*",
    re.I,
)
_KEY_CONNECTOR = re.compile(
    r"\s*(?:,|\+|&|/|\(|\)|\band\b|\bthe\b|\bcolumns?\b|\bfields?\b|\bpairs?\b|"
    r"\bcombination\b|\bof\b|\btuple\b|`|\"|')\s*|\s+",
    re.I,
)


def _column_patterns(columns: Sequence[str]) -> list[tuple[re.Pattern[str], int]]:
    """Patterns for each column name (``_`` also read as a space), longest name first."""
    out = []
    for index, name in enumerate(columns):
        for variant in {name.casefold(), name.casefold().replace("_", " ")}:
            pattern = re.compile(r"(?<![\w])" + re.escape(variant) + r"(?![\w])", re.I)
            out.append((pattern, index, len(variant)))
    return [(p, i) for p, i, _ in sorted(out, key=lambda t: -t[2])]


def _walk_key(text: str, start: int, patterns: list[tuple[re.Pattern[str], int]]) -> list[int]:
    """Column names listed from ``start`` (joined by commas, "and", "+", ...), in order.

    The list ends at the first other word; a column that follows a comma and is itself
    followed by another word starts the next clause ("name, current_name may repeat") and is
    not part of the list.
    """
    found: list[tuple[int, bool]] = []  # (column, came after a comma)
    position, after_comma = start, False
    while position < len(text):
        connector = _KEY_CONNECTOR.match(text, position)
        if connector and connector.end() > position:
            after_comma = after_comma or "," in connector.group(0)
            position = connector.end()
            continue
        for pattern, index in patterns:
            match = pattern.match(text, position)
            if match:
                found.append((index, after_comma))
                position, after_comma = match.end(), False
                break
        else:
            rest = text[position:].lstrip()
            if found and found[-1][1] and rest and rest[0] not in ";.":
                found.pop()
            break
    out: list[int] = []
    for index, _ in found:
        if index not in out:
            out.append(index)
    return out


def dedup_key_columns(text: str | list[str], columns: Sequence[str]) -> tuple[list[int], str]:
    """The schema columns a legacy ``dedup_key`` declares as the key, and the statement used.

    A list names columns directly. A text is read at its key statement: the column names
    listed right after the first trigger ("dedup by", "deduplicate on", "unique by", "key:",
    "one row per", ...) that lists any; else the column names the text starts with (a text
    that is just ``symbol`` or ``cwe_id + year``); else the columns named in the first
    clause (up to ``;``, ``.`` or a line break) that names any. Returns ``([], "")`` when
    the text names no column. A list naming a column not in the schema raises ``ValueError``.
    """
    folded = [c.casefold() for c in columns]
    if isinstance(text, list):
        unknown = [t for t in text if t.casefold() not in folded]
        if unknown:
            raise ValueError(
                f"normalization.dedup_key names columns {unknown} not in the schema {list(columns)}"
            )
        picked = [folded.index(t.casefold()) for t in text]
        return list(dict.fromkeys(picked)), ", ".join(text)
    patterns = _column_patterns(columns)
    for trigger in _KEY_TRIGGER.finditer(text):
        named = _walk_key(text, trigger.end(), patterns)
        if named:
            return named, text[trigger.start() :].split(";")[0].strip()
    named = _walk_key(text, 0, patterns)
    if named:
        return named, text.split(";")[0].strip()
    for clause in re.split(r";|\n|\.(?:\s|$)", text):
        hits = sorted(
            (m.start(), index) for pattern, index in patterns for m in pattern.finditer(clause)
        )
        if hits:
            return list(dict.fromkeys(index for _, index in hits)), clause.strip()
    return [], ""


def _first_duplicate(rows: Sequence[tuple[str, ...]], key: Sequence[int]) -> tuple[int, int] | None:
    seen: dict[tuple[str, ...], int] = {}
    for i, row in enumerate(rows):
        k = tuple(row[j] for j in key)
        if k in seen:
            return seen[k], i
        seen[k] = i
    return None


def resolve_row_key(
    columns: Sequence[str],
    gold_canon: Sequence[tuple[str, ...]],
    rubric: Rubric,
    override: Sequence[str] | None = None,
) -> tuple[tuple[int, ...], str, str | None]:
    """Pick the row key by the rule in this module's docstring.

    Returns (indices, rule name, the ``dedup_key`` statement read, if any). Raises
    ``ValueError`` when the chosen key is not unique over the reference rows.
    """
    declared: tuple[list[int], str] | None = None
    statement: str | None = None
    if override is not None:
        missing = [c for c in override if c not in columns]
        if missing:
            raise ValueError(
                f"--row-keys names columns {missing} not in the schema {list(columns)}"
            )
        declared = ([columns.index(c) for c in override], "row-keys file")
    elif rubric.row_key:
        declared = ([columns.index(c) for c in rubric.row_key], "rubric.row_key")
    elif rubric.normalization is not None and rubric.normalization.dedup_key:
        named, said = dedup_key_columns(rubric.normalization.dedup_key, columns)
        if named:
            declared, statement = (named, "normalization.dedup_key"), said
    if declared is not None:
        key, rule = declared
        duplicate = _first_duplicate(gold_canon, key)
        if duplicate is not None:
            a, b = duplicate
            names = [columns[i] for i in key]
            raise ValueError(
                f"reference rows {a + 1} and {b + 1} share the row key {names} "
                f"(from {rule}); declare a unique key with rubric.row_key or --row-keys"
            )
        return tuple(key), rule, statement
    for width in range(1, len(columns) + 1):
        key = list(range(width))
        if _first_duplicate(gold_canon, key) is None:
            return tuple(key), "unique leading columns", None
    a, b = _first_duplicate(gold_canon, list(range(len(columns)))) or (0, 0)
    raise ValueError(
        f"reference rows {a + 1} and {b + 1} are identical, so no row key can tell them apart"
    )


def _reference_rows(task: SgrTask, columns: tuple[str, ...]) -> list[list[str]]:
    rubric = task.rubric
    if is_none_answer(task.oracle_answer):
        return []
    records = split_records(task.oracle_answer, rubric.field_sep, rubric.record_sep, len(columns))
    first = task.oracle_answer.strip().split(rubric.record_sep)[0]
    if records is None and _is_header([c.strip() for c in first.split(rubric.field_sep)], columns):
        # A header row whose own record separator does not fit the width trick: split the
        # rest on its own.
        _, _, rest = task.oracle_answer.strip().partition(rubric.record_sep)
        body = split_records(rest, rubric.field_sep, rubric.record_sep, len(columns))
        records = None if body is None else [list(columns), *body]
    if records and _is_header(records[0], columns):
        records = records[1:]  # newer records start with a header row equal to the schema
    if records is None or any(len(r) != len(columns) for r in records):
        widths = sorted({len(r) for r in records or []})
        raise ValueError(
            f"oracle_answer: cannot split into rows of {len(columns)} fields "
            f"(schema {list(columns)}, field separator {rubric.field_sep!r}, "
            f"record separator {rubric.record_sep!r}; row widths seen: {widths or 'none'})"
        )
    return records


def _build(
    task: SgrTask, source: str, line: int, override: Sequence[str] | None, strict: bool = False
) -> ScoringTask:
    rubric = task.rubric
    columns = tuple(rubric.schema_columns)
    records = _reference_rows(task, columns)
    warnings: list[str] = []
    if len(records) != task.oracle_output_cardinality:
        warnings.append(
            f"oracle_output_cardinality says {task.oracle_output_cardinality} rows but "
            f"oracle_answer has {len(records)}; the {len(records)} rows are scored"
        )
    gold_rows = tuple(tuple(f.strip(" \t") for f in r) for r in records)
    canons: tuple[Canon, ...]
    notes: tuple[str, ...] = ()
    if rubric.typed:
        mode = "typed"
        canons = tuple(FieldCanon(rubric.rule_for(c)) for c in columns)
        kinds = tuple(rubric.rule_for(c).type.value for c in columns)
    else:
        mode = "strict" if strict else "default"
        column_notes = rubric.normalization.model_extra if rubric.normalization else None
        chosen = column_canons(columns, gold_rows, strict, column_notes)
        canons = tuple(c.canon() for c in chosen)
        kinds = tuple(c.kind.value for c in chosen)
        notes = tuple(f"column {c.column}: {c.note}" for c in chosen if c.note)
    gold_canon = tuple(tuple(c(v) for c, v in zip(canons, row, strict=True)) for row in gold_rows)
    try:
        key, rule, statement = resolve_row_key(columns, gold_canon, rubric, override)
    except ValueError as exc:
        raise ValueError(f"row key: {exc}") from None
    return ScoringTask(
        task=task,
        source=source,
        line=line,
        columns=columns,
        canons=canons,
        key_columns=key,
        key_rule=rule,
        gold_rows=gold_rows,
        gold_canon=gold_canon,
        canonicalization=mode,
        column_kinds=kinds,
        key_statement=statement,
        warnings=tuple(warnings),
        notes=notes,
    )


def build_task(
    record: dict[str, Any],
    source: str = "<memory>",
    row_key: Sequence[str] | None = None,
    strict: bool = False,
) -> ScoringTask:
    """Validate one task record held in memory (the same checks as :func:`load_tasks`)."""
    task_id = record.get("task_id", "?")
    try:
        task = SgrTask.model_validate(record)
        return _build(task, source, 0, row_key, strict)
    except ValidationError as exc:
        raise TaskFileError(
            [f"{source}: task {task_id}: {m}" for m in _format_validation(exc)]
        ) from None
    except ValueError as exc:
        raise TaskFileError([f"{source}: task {task_id}: field {exc}"]) from None


def _format_validation(error: ValidationError) -> list[str]:
    out = []
    for e in error.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "record"
        message = e["msg"]
        if e["type"] == "extra_forbidden" and "fields" in e["loc"]:
            message = (
                "unknown key in a field rule; every field-rule key changes scoring, so it "
                f"must be one of: {', '.join(FieldRule.model_fields)}"
            )
        out.append(f"field {loc}: {message}")
    return out


def load_row_keys(path: str | Path) -> dict[str, list[str]]:
    """Read a ``--row-keys`` file: a JSON object ``{task_id: [column, ...]}``.

    An entry for a CG id also applies to its GO twin unless the GO id has its own entry.
    """
    path = Path(path)
    data = read_json(path, "row-keys file")
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and v and all(isinstance(c, str) for c in v) for v in data.values()
    ):
        raise UserError(
            f"{path}: expected a JSON object mapping task ids to column lists, "
            f'e.g. {{"reptile_001": ["species"]}}'
        )
    return {str(k): list(v) for k, v in data.items()}


def _read_records(path: Path) -> Iterable[tuple[int, Any, str | None]]:
    """Yield (line number, decoded JSON or None, error) for each non-blank line."""
    for number, line in jsonl_lines_blockwise(path, "task file", allow_empty=True):
        try:
            yield number, json_value(line), None
        except BadJson as exc:
            yield number, None, str(exc)


def iter_tasks(
    paths: Sequence[str | Path],
    problems: list[str],
    row_keys: dict[str, list[str]] | None = None,
    strict: bool = False,
) -> Iterator[ScoringTask]:
    """Yield each valid task as its line is read, appending every problem to ``problems``.

    The checks and messages of :func:`load_tasks`, which is this generator run to the end:
    a caller must treat the tasks as loaded only when ``problems`` is still empty then (a
    later line can be a duplicate of an earlier one, or a ``--row-keys`` id never seen). Only
    the task ids seen (and the ``--row-keys`` ids matched) are held between lines.
    """
    row_keys = dict(row_keys or {})
    where: dict[str, str] = {}
    named: set[str] = set()  # --row-keys ids that name a task id or a built task's CG twin
    for path in map(Path, paths):
        count = 0
        for number, record, error in _read_records(path):
            count += 1
            task_id = record.get("task_id", "?") if isinstance(record, dict) else "?"
            prefix = f"{path}:{number}: task {shorten(str(task_id))}"
            if error is not None:
                problems.append(f"{prefix}: {error}")
                continue
            if not isinstance(record, dict):
                problems.append(f"{prefix}: a task record must be a JSON object")
                continue
            if "answer" in record and set(record) <= {"task_id", "answer"}:
                problems.append(
                    f"{prefix}: this is a predictions line (task_id, answer), not a task; "
                    "pass predictions with --predictions"
                )
                continue
            try:
                task = SgrTask.model_validate(record)
            except ValidationError as exc:
                problems.extend(f"{prefix}: {msg}" for msg in _format_validation(exc))
                continue
            if path.name == "goal.jsonl" and task.variant != "GO":
                problems.append(f"{prefix}: field task_id: in goal.jsonl but has no '-g' suffix")
                continue
            if path.name == "constraint.jsonl" and task.variant != "CG":
                problems.append(f"{prefix}: field task_id: in constraint.jsonl but ends in '-g'")
                continue
            if task.task_id in where:
                problems.append(
                    f"{prefix}: field task_id: duplicate, first seen at {where[task.task_id]}"
                )
                continue
            where[task.task_id] = f"{path}:{number}"
            if task.task_id in row_keys:
                named.add(task.task_id)
            override = row_keys.get(task.task_id, row_keys.get(task.pair_id))
            try:
                built = _build(task, str(path), number, override, strict)
            except ValueError as exc:
                problems.append(f"{prefix}: field {exc}")
                continue
            if task.pair_id in row_keys:
                named.add(task.pair_id)
            yield built
        if count == 0:
            problems.append(f"{path}: no task records (empty file)")
    unknown = sorted(k for k in row_keys if k not in named)
    if unknown:
        problems.append(f"--row-keys names task ids not in the task files: {shorten(str(unknown))}")


def load_tasks(
    paths: Sequence[str | Path],
    row_keys: dict[str, list[str]] | None = None,
    strict: bool = False,
) -> list[ScoringTask]:
    """Load and validate task files; raise :class:`TaskFileError` listing every problem.

    ``strict``: legacy rubrics are compared with the text rules only (no default
    canonicalization); typed rubrics are unaffected.
    """
    problems: list[str] = []
    tasks = list(iter_tasks(paths, problems, row_keys, strict))
    if problems:
        raise TaskFileError(problems)
    return tasks
