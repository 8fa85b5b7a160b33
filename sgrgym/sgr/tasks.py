"""Load SGR-Bench task files (``constraint.jsonl`` / ``goal.jsonl`` and sgrgym's own JSONL).

Each line is one task variant. ``metadata`` and ``rubric`` may be JSON objects or JSON-encoded
strings. A file with any bad record is rejected whole, with every problem named by file, line,
task id and field: nothing is half-loaded.

Row key (the columns that align predicted rows with reference rows, SGR-Bench appendix A),
first rule that applies:

1. the user's ``--row-keys`` file entry for the task id (or for its CG twin's id);
2. the typed rubric's ``row_key``;
3. the schema columns named in the legacy ``normalization.dedup_key`` text;
4. the shortest leading run of schema columns whose canonical values are unique over the
   reference rows.

Rules 1-3 must give unique keys over the reference rows, and rule 4 must find a unique run:
otherwise loading fails, because a duplicated reference key would silently merge rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
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

from sgrgym.errors import TaskFileError, UserError
from sgrgym.inputs import BadJson, json_value, jsonl_lines, read_json, shorten
from sgrgym.sgr.canon import FieldCanon
from sgrgym.sgr.parse import is_none_answer, split_records
from sgrgym.sgr.rubric import Rubric

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
    canons: tuple[FieldCanon, ...]
    key_columns: tuple[int, ...]
    key_rule: str
    gold_rows: tuple[tuple[str, ...], ...]
    gold_canon: tuple[tuple[str, ...], ...]

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


def _named_columns(text: str | list[str], columns: Sequence[str]) -> list[int]:
    """Indices of the schema columns that a ``dedup_key`` names (longest names win)."""
    folded = [c.casefold() for c in columns]
    if isinstance(text, list):
        return sorted({folded.index(t.casefold()) for t in text if t.casefold() in folded})
    spans: list[tuple[int, int, int]] = []
    lowered = text.casefold()
    for index, name in enumerate(folded):
        for variant in {name, name.replace("_", " ")}:
            pattern = r"(?<![\w])" + re.escape(variant) + r"(?![\w])"
            spans.extend((m.start(), m.end(), index) for m in re.finditer(pattern, lowered))
    taken: list[tuple[int, int]] = []
    chosen: set[int] = set()
    for start, end, index in sorted(spans, key=lambda s: (s[0] - s[1], s[0])):
        if all(end <= a or start >= b for a, b in taken):
            taken.append((start, end))
            chosen.add(index)
    return sorted(chosen)


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
) -> tuple[tuple[int, ...], str]:
    """Pick the row key by the rule in this module's docstring; returns (indices, rule name).

    Raises ``ValueError`` when the chosen key is not unique over the reference rows.
    """
    declared: tuple[list[int], str] | None = None
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
        named = _named_columns(rubric.normalization.dedup_key, columns)
        if named:
            declared = (named, "normalization.dedup_key")
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
        return tuple(key), rule
    for width in range(1, len(columns) + 1):
        key = list(range(width))
        if _first_duplicate(gold_canon, key) is None:
            return tuple(key), "unique leading columns"
    a, b = _first_duplicate(gold_canon, list(range(len(columns)))) or (0, 0)
    raise ValueError(
        f"reference rows {a + 1} and {b + 1} are identical, so no row key can tell them apart"
    )


def _build(task: SgrTask, source: str, line: int, override: Sequence[str] | None) -> ScoringTask:
    rubric = task.rubric
    columns = tuple(rubric.schema_columns)
    canons = tuple(FieldCanon(rubric.rule_for(c)) for c in columns)
    if is_none_answer(task.oracle_answer):
        records: list[list[str]] | None = []
    else:
        records = split_records(
            task.oracle_answer, rubric.field_sep, rubric.record_sep, len(columns)
        )
    if records is None or any(len(r) != len(columns) for r in records):
        widths = sorted({len(r) for r in records or []})
        raise ValueError(
            f"oracle_answer: cannot split into rows of {len(columns)} fields "
            f"(schema {list(columns)}, field separator {rubric.field_sep!r}, "
            f"record separator {rubric.record_sep!r}; row widths seen: {widths or 'none'})"
        )
    if len(records) != task.oracle_output_cardinality:
        raise ValueError(
            f"oracle_output_cardinality: says {task.oracle_output_cardinality} rows but "
            f"oracle_answer has {len(records)}"
        )
    gold_rows = tuple(tuple(f.strip() for f in r) for r in records)
    gold_canon = tuple(tuple(c(v) for c, v in zip(canons, row, strict=True)) for row in gold_rows)
    try:
        key, rule = resolve_row_key(columns, gold_canon, rubric, override)
    except ValueError as exc:
        raise ValueError(f"row key: {exc}") from None
    return ScoringTask(task, source, line, columns, canons, key, rule, gold_rows, gold_canon)


def build_task(
    record: dict[str, Any], source: str = "<memory>", row_key: Sequence[str] | None = None
) -> ScoringTask:
    """Validate one task record held in memory (the same checks as :func:`load_tasks`)."""
    task_id = record.get("task_id", "?")
    try:
        task = SgrTask.model_validate(record)
        return _build(task, source, 0, row_key)
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
        out.append(f"field {loc}: {e['msg']}")
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
    for number, line in jsonl_lines(path, "task file", allow_empty=True):
        try:
            yield number, json_value(line), None
        except BadJson as exc:
            yield number, None, str(exc)


def load_tasks(
    paths: Sequence[str | Path], row_keys: dict[str, list[str]] | None = None
) -> list[ScoringTask]:
    """Load and validate task files; raise :class:`TaskFileError` listing every problem."""
    row_keys = dict(row_keys or {})
    problems: list[str] = []
    tasks: list[ScoringTask] = []
    where: dict[str, str] = {}
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
            override = row_keys.get(task.task_id, row_keys.get(task.pair_id))
            try:
                tasks.append(_build(task, str(path), number, override))
            except ValueError as exc:
                problems.append(f"{prefix}: field {exc}")
        if count == 0:
            problems.append(f"{path}: no task records (empty file)")
    known = set(where) | {t.task.pair_id for t in tasks}
    unknown = sorted(k for k in row_keys if k not in known)
    if unknown:
        problems.append(f"--row-keys names task ids not in the task files: {shorten(str(unknown))}")
    if problems:
        raise TaskFileError(problems)
    return tasks
