"""Score agent answers against SGR-Bench tasks: per task, then aggregated as in the paper.

Per task (appendix A): parse, canonicalize, align rows by the row key, then Item-F1, Row-F1
and P.O.A. (:mod:`sgrgym.sgr.metrics`). Edge cases:

- a predicted row counts ``max(schema width, its own width)`` field slots: missing columns
  score 0 but count, extra columns count;
- a row counts for Row-F1 only with every schema field correct and no extra field;
- a duplicated predicted key: the first occurrence is aligned and scored, every copy counts in
  N_pred and |R_pred|;
- ``NONE`` or empty text is zero rows; a task with no prediction is scored as an empty answer
  and flagged ``missing``; text from which no row can be read is a ``parse_failure``: it
  scores 0 on every metric and is flagged, even when the reference is ``NONE`` (an answer
  that cannot be read is not a correct "no rows") -- never an exception;
- several tables in one answer: the last complete one is scored (see
  :func:`~sgrgym.sgr.parse.parse_prediction`) and the task is flagged ``multiple_tables``;
- a field with ``comparison: numeric_tolerance`` matches within its tolerance; every other
  field matches when the canonical values are equal.

Aggregates (section 4.1 and table 2, appendix E table 3, figure 3, appendix K): mean
Item-F1 / Row-F1 / P.O.A. per variant (CG, GO), per domain, per source family
(:mod:`sgrgym.sgr.families`) and per reference-cardinality bin; Overall = mean Item-F1 over
all task variants (table 2), with the overall Row-F1 and P.O.A. beside it (table 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from sgrgym.core.blocklines import jsonl_lines_blockwise
from sgrgym.core.errors import UserError
from sgrgym.core.inputs import BadJson, json_value, read_text, shorten
from sgrgym.sgr.canon import clean_text
from sgrgym.sgr.families import load_families, paper_families
from sgrgym.sgr.metrics import f1, pairwise_order_accuracy
from sgrgym.sgr.parse import MULTIPLE_TABLES, ParseStatus, Row, parse_prediction
from sgrgym.sgr.tasks import VARIANTS, ScoringTask

CARDINALITY_BINS: tuple[tuple[str, int, int | None], ...] = (
    ("1-2", 0, 2),
    ("3-5", 3, 5),
    ("6-10", 6, 10),
    ("11+", 11, None),
)


class FieldDiagnostic(BaseModel):
    column: str
    gold: str | None
    pred: str | None
    correct: bool


class RowDiagnostic(BaseModel):
    """One reference row (with its aligned prediction, if any) or one unaligned predicted row."""

    key: list[str | None]
    matched: bool
    gold_index: int | None
    pred_index: int | None
    duplicate: bool = False
    fields: list[FieldDiagnostic]


class TaskScore(BaseModel):
    task_id: str
    variant: str
    domain: str
    cardinality: int
    item_f1: float
    row_f1: float
    poa: float
    parse_failure: bool
    missing: bool
    format: str
    n_pred_rows: int
    canonicalization: str  # typed | default | strict
    flags: list[str]  # e.g. multiple_tables
    rows: list[RowDiagnostic]


class GroupScore(BaseModel):
    """Mean metrics over ``n`` task variants (``None`` when the group is empty)."""

    item_f1: float | None
    row_f1: float | None
    poa: float | None
    n: int


class OverallScore(BaseModel):
    """Means over every task variant: Item-F1 is table 2's Overall; all three are table 3."""

    item_f1: float | None
    row_f1: float | None = None
    poa: float | None = None
    n: int


class ScoreReport(BaseModel):
    overall: OverallScore
    by_variant: dict[str, GroupScore]
    by_domain: dict[str, GroupScore]
    by_family: dict[str, GroupScore] = {}
    by_cardinality: dict[str, GroupScore]
    canonicalization: dict[str, int] = {}  # task variants per mode (typed/default/strict)
    tasks: list[TaskScore]
    missing: list[str]
    parse_failures: list[str]
    multiple_tables: list[str] = []
    unmapped_domains: list[str] = []  # domains with no source family
    unknown_predictions: list[str]


def _pred_canon(task: ScoringTask, row: Row) -> tuple[str | None, ...]:
    width = len(task.columns)
    return tuple(
        None if v is None else (task.canons[i](v) if i < width else clean_text(v))
        for i, v in enumerate(row)
    )


def score_answer(task: ScoringTask, answer: str | None) -> TaskScore:
    """Score one raw answer (``None``: no prediction was given) against ``task``."""
    width = len(task.columns)
    parsed = parse_prediction(answer or "", task.columns, task.field_sep, task.record_sep)
    pred_rows = [_pred_canon(task, row) for row in parsed.rows]
    gold_index: dict[tuple[str | None, ...], int] = {
        tuple(row[k] for k in task.key_columns): i for i, row in enumerate(task.gold_canon)
    }

    aligned: dict[int, int] = {}  # gold row index -> predicted row index
    pred_position: dict[tuple[str | None, ...], int] = {}
    unaligned: list[tuple[int, bool]] = []  # (predicted row index, is a duplicate key)
    for p, row in enumerate(pred_rows):
        key = tuple(row[k] if k < len(row) else None for k in task.key_columns)
        g = gold_index.get(key)
        if g is None or key in pred_position:
            unaligned.append((p, key in pred_position))
            continue
        pred_position[key] = p
        aligned[g] = p

    c_item = c_row = 0
    diagnostics: list[RowDiagnostic] = []
    for g, gold in enumerate(task.gold_canon):
        p_index = aligned.get(g)
        pred = pred_rows[p_index] if p_index is not None else ()
        fields = []
        for i, column in enumerate(task.columns):
            value = pred[i] if i < len(pred) else None
            correct = value == gold[i] or (
                value is not None
                and not task.canons[i].exact_match
                and task.canons[i].matches(value, gold[i])
            )
            fields.append(FieldDiagnostic(column=column, gold=gold[i], pred=value, correct=correct))
        n_correct = sum(f.correct for f in fields)
        if p_index is not None:
            c_item += n_correct
            c_row += n_correct == width and len(pred) == width
        diagnostics.append(
            RowDiagnostic(
                key=[gold[k] for k in task.key_columns],
                matched=p_index is not None,
                gold_index=g,
                pred_index=p_index,
                fields=fields,
            )
        )
    for p, duplicate in unaligned:
        row = pred_rows[p]
        diagnostics.append(
            RowDiagnostic(
                key=[row[k] if k < len(row) else None for k in task.key_columns],
                matched=False,
                gold_index=None,
                pred_index=p,
                duplicate=duplicate,
                fields=[
                    FieldDiagnostic(
                        column=task.columns[i] if i < width else f"extra_{i - width + 1}",
                        gold=None,
                        pred=v,
                        correct=False,
                    )
                    for i, v in enumerate(row)
                ],
            )
        )

    n_gold = width * len(task.gold_canon)
    n_pred = sum(max(width, len(row)) for row in pred_rows)
    gold_keys: list[tuple[str | None, ...]] = [
        tuple(row[k] for k in task.key_columns) for row in task.gold_canon
    ]
    failed = parsed.status is ParseStatus.parse_failure
    return TaskScore(
        task_id=task.task_id,
        variant=task.variant,
        domain=task.domain,
        cardinality=len(task.gold_canon),
        item_f1=0.0 if failed else f1(c_item, n_gold, n_pred),
        row_f1=0.0 if failed else f1(c_row, len(task.gold_canon), len(pred_rows)),
        poa=pairwise_order_accuracy(gold_keys, pred_position),
        parse_failure=failed,
        missing=answer is None,
        format=parsed.format,
        n_pred_rows=len(pred_rows),
        canonicalization=task.canonicalization,
        flags=list(parsed.flags),
        rows=diagnostics,
    )


def cardinality_bin(rows: int) -> str:
    """The appendix-K bin of a reference with ``rows`` rows (1-2, 3-5, 6-10, 11+)."""
    for name, low, high in CARDINALITY_BINS:
        if rows >= low and (high is None or rows <= high):
            return name
    raise ValueError(f"negative row count {rows}")


class ScoredTask(Protocol):
    """What the aggregates and the per-task table read of a task's score: a :class:`TaskScore`
    or a summary of one without its row diagnostics."""

    @property
    def task_id(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def cardinality(self) -> int: ...
    @property
    def item_f1(self) -> float: ...
    @property
    def row_f1(self) -> float: ...
    @property
    def poa(self) -> float: ...
    @property
    def parse_failure(self) -> bool: ...
    @property
    def missing(self) -> bool: ...
    @property
    def format(self) -> str: ...
    @property
    def n_pred_rows(self) -> int: ...
    @property
    def canonicalization(self) -> str: ...
    @property
    def flags(self) -> Sequence[str]: ...


def _group(scores: Sequence[ScoredTask]) -> GroupScore:
    n = len(scores)
    if n == 0:
        return GroupScore(item_f1=None, row_f1=None, poa=None, n=0)
    return GroupScore(
        item_f1=sum(s.item_f1 for s in scores) / n,
        row_f1=sum(s.row_f1 for s in scores) / n,
        poa=sum(s.poa for s in scores) / n,
        n=n,
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(
    scores: Sequence[ScoredTask],
    unknown_predictions: Iterable[str] = (),
    families: Mapping[str, str] | None = None,
) -> ScoreReport:
    """The report :func:`aggregate` builds, with ``tasks`` left empty: every mean, breakdown
    and id list, from the tasks' scores without their row diagnostics."""
    families = load_families() if families is None else families
    domains = sorted({s.domain for s in scores})
    present = {families[d] for d in domains if d in families}
    order = [f for f in paper_families() if f in present] + sorted(present - set(paper_families()))
    modes: dict[str, int] = {}
    for s in scores:
        modes[s.canonicalization] = modes.get(s.canonicalization, 0) + 1
    return ScoreReport(
        overall=OverallScore(
            item_f1=_mean([s.item_f1 for s in scores]),
            row_f1=_mean([s.row_f1 for s in scores]),
            poa=_mean([s.poa for s in scores]),
            n=len(scores),
        ),
        by_variant={v: _group([s for s in scores if s.variant == v]) for v in VARIANTS},
        by_domain={d: _group([s for s in scores if s.domain == d]) for d in domains},
        by_family={f: _group([s for s in scores if families.get(s.domain) == f]) for f in order},
        by_cardinality={
            name: _group([s for s in scores if cardinality_bin(s.cardinality) == name])
            for name, _, _ in CARDINALITY_BINS
        },
        canonicalization=dict(sorted(modes.items())),
        tasks=[],
        missing=[s.task_id for s in scores if s.missing],
        parse_failures=[s.task_id for s in scores if s.parse_failure],
        multiple_tables=[s.task_id for s in scores if MULTIPLE_TABLES in s.flags],
        unmapped_domains=[d for d in domains if d not in families],
        unknown_predictions=sorted(unknown_predictions),
    )


def aggregate(
    scores: Sequence[TaskScore],
    unknown_predictions: Iterable[str] = (),
    families: Mapping[str, str] | None = None,
) -> ScoreReport:
    """Build the report: per-variant, per-domain, per-family and per-cardinality means, Overall.

    ``families`` maps domains to source families (default: the shipped map); a domain with
    no family is listed in ``unmapped_domains`` and left out of ``by_family``.
    """
    report = summarize(scores, unknown_predictions, families)
    return report.model_copy(update={"tasks": list(scores)})


def score_tasks(
    tasks: Sequence[ScoringTask],
    answers: Mapping[str, str | None],
    families: Mapping[str, str] | None = None,
) -> ScoreReport:
    """Score every task; tasks without an answer are scored empty and listed as missing."""
    known = {t.task_id for t in tasks}
    scores = [score_answer(t, answers.get(t.task_id)) for t in tasks]
    return aggregate(scores, (k for k in answers if k not in known), families)


def load_predictions(path: str | Path) -> dict[str, str | None]:
    """Read predictions: JSONL ``{"task_id": ..., "answer": ...}`` or a folder of ``<id>.txt``.

    ``"answer": null`` means the agent gave no answer: the task is reported as missing.
    Malformed lines and duplicate task ids are errors naming the file and line.
    """
    path = Path(path)
    if path.is_dir():
        answers: dict[str, str | None] = {}
        for file in sorted(path.glob("*.txt")):
            answers[file.stem] = read_text(file, "answer file", allow_empty=True)
        if not answers:
            raise UserError(f"{path}: no <task_id>.txt files in this folder")
        return answers
    answers = {}
    lines: dict[str, int] = {}
    for number, line in jsonl_lines_blockwise(path, "predictions file"):
        where = f"{path}:{number}"
        try:
            record = json_value(line)
        except BadJson as exc:
            raise UserError(f"{where}: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
            raise UserError(f'{where}: expected an object {{"task_id": "...", "answer": "..."}}')
        task_id = record["task_id"]
        shown = shorten(task_id)
        if "answer" not in record:
            raise UserError(f"{where}: task {shown}: no 'answer' field")
        answer = record["answer"]
        if answer is not None and not isinstance(answer, str):
            raise UserError(
                f"{where}: task {shown}: 'answer' must be the agent's raw text (a string) "
                f"or null, not {type(answer).__name__}"
            )
        if task_id in lines:
            raise UserError(
                f"{where}: task {shown}: a second answer (the first is on line "
                f"{lines[task_id]}); keep one answer per task"
            )
        lines[task_id] = number
        answers[task_id] = answer
    return answers
