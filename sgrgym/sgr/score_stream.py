"""Scoring whole task files in bounded memory: what ``sgrgym sgr score`` runs.

:func:`score_files` reads the task files a line at a time and scores each task as soon as it
is read (:func:`~sgrgym.sgr.tasks.iter_tasks`, :func:`~sgrgym.sgr.score.score_answer`). Of a
scored task only a :class:`TaskSummary` stays in memory (what the aggregates and the per-task
table read); its full JSON record, row diagnostics included, goes at once to an anonymous
temporary file, one per JSON layout asked for. The report is then written as
:meth:`ScoreReport.model_dump_json` writes it, the records spliced in where ``tasks`` goes:
byte for byte what ``score_tasks(load_tasks(...), load_predictions(...))`` serialized gives.
:class:`~sgrgym.sgr.score.ScoreReport` stays the schema of the JSON.

The inputs are checked in the order the whole-file loaders check them: the task files first
(every problem listed, nothing scored after the first one), then the families file, then the
predictions; a refused command writes nothing, and the temporary files vanish with it.
"""

from __future__ import annotations

import codecs
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from sgrgym.core.errors import TaskFileError, UserError
from sgrgym.core.io import TMP_SUFFIX
from sgrgym.sgr.families import load_families
from sgrgym.sgr.score import ScoreReport, TaskScore, load_predictions, score_answer, summarize
from sgrgym.sgr.task_pins import check_demo_task_files
from sgrgym.sgr.tasks import iter_tasks

INDENTED = 2  # the --out file's layout (model_dump_json(indent=2))
COMPACT = None  # the --json layout on stdout (model_dump_json())
_COPY_BYTES = 1 << 20


@dataclass(slots=True)
class TaskSummary:
    """A task's score without its row diagnostics (what :class:`TaskScore` holds besides)."""

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
    canonicalization: str
    flags: tuple[str, ...]

    @classmethod
    def of(cls, score: TaskScore) -> TaskSummary:
        return cls(
            task_id=score.task_id,
            variant=score.variant,
            domain=score.domain,
            cardinality=score.cardinality,
            item_f1=score.item_f1,
            row_f1=score.row_f1,
            poa=score.poa,
            parse_failure=score.parse_failure,
            missing=score.missing,
            format=score.format,
            n_pred_rows=score.n_pred_rows,
            canonicalization=score.canonicalization,
            flags=tuple(score.flags),
        )


class _Records:
    """The task records of one JSON layout, as the report's ``tasks`` list lays them out
    (items at depth 2), joined by that layout's separator, in an anonymous temporary file."""

    def __init__(self, indent: int | None, folder: Path | None) -> None:
        self.indent = indent
        self.count = 0
        self.file: IO[bytes]
        try:
            self.file = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (closed by ScoredFiles)
        except OSError:  # a folder this user cannot write to: its error comes at the write
            self.file = tempfile.TemporaryFile()  # noqa: SIM115
        item = "\n" + " " * (2 * indent) if indent else ""
        self._item = item  # what starts a line of an item at depth 2
        self._separator = ("," + item).encode()

    def add(self, score: TaskScore) -> None:
        text = score.model_dump_json(indent=self.indent)
        if self.indent:
            text = text.replace("\n", self._item)
        if self.count:
            self.file.write(self._separator)
        self.file.write(text.encode())
        self.count += 1

    def splice(self, report: ScoreReport) -> tuple[str, str]:
        """The report's JSON before and after its records (the report holds no tasks)."""
        text = report.model_dump_json(indent=self.indent)
        if self.indent:
            pad = " " * self.indent
            key, rest, end = f'\n{pad}"tasks": ', ",\n", f"\n{pad}]"
        else:
            key, rest, end = ',"tasks":', ",", "]"
        marker = key + "[]" + rest
        before, found, after = text.partition(marker)
        if not found or marker in after:
            raise ValueError("the report's tasks list is not where its JSON layout puts it")
        if self.count:
            return before + key + "[" + self._item, end + rest + after
        return before + key + "[", "]" + rest + after

    def chunks(self) -> Iterator[bytes]:
        self.file.seek(0)
        while chunk := self.file.read(_COPY_BYTES):
            yield chunk


@dataclass
class ScoredFiles:
    """The aggregates, the per-task summaries and the JSON records of a scored set; a context
    manager that closes (and so removes) the records' temporary files."""

    report: ScoreReport  # every aggregate; ``tasks`` is empty (see :attr:`tasks`)
    tasks: list[TaskSummary]
    warnings: int  # task file warnings, over all tasks
    _records: dict[int | None, _Records]

    def write_json(self, out: Path | None, indent: int | None) -> None:
        """The report in ``indent``'s layout plus a newline: to stdout (``out`` None), or
        atomically to ``out`` (``NAME.tmp`` renamed over it, removed on any failure), as
        :func:`~sgrgym.core.output.write_json` writes it."""
        records = self._records[indent]
        before, after = records.splice(self.report)
        if out is None:
            sys.stdout.write(before)
            decoder = codecs.getincrementaldecoder("utf-8")()
            for chunk in records.chunks():
                sys.stdout.write(decoder.decode(chunk))
            sys.stdout.write(decoder.decode(b"", final=True) + after + "\n")
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + TMP_SUFFIX)
        try:
            with tmp.open("wb") as handle:
                handle.write(before.encode())
                records.file.seek(0)
                shutil.copyfileobj(records.file, handle, _COPY_BYTES)
                handle.write((after + "\n").encode())
            os.replace(tmp, out)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def close(self) -> None:
        for records in self._records.values():
            records.file.close()

    def __enter__(self) -> ScoredFiles:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def score_files(
    task_files: Sequence[Path],
    predictions: Path,
    *,
    row_keys: dict[str, list[str]] | None = None,
    strict: bool = False,
    families: Path | None = None,
    layouts: Iterable[int | None] = (),
    folder: Path | None = None,
) -> ScoredFiles:
    """Score ``predictions`` against ``task_files`` a task at a time.

    ``layouts``: the JSON indents (:data:`INDENTED`, :data:`COMPACT`) to keep the task
    records for; ``folder``: where their temporary files go (default: the system's).
    Raises what ``load_tasks``, ``load_families`` and ``load_predictions`` raise, in that
    order of precedence.
    """
    check_demo_task_files(task_files)
    failure: UserError | OSError | None = None
    answers: dict[str, str | None] = {}
    try:
        family_map = load_families(families)
        answers = load_predictions(predictions)
    except (UserError, OSError) as exc:
        failure, family_map = exc, {}  # raised once the task files are checked
    records = {indent: _Records(indent, folder) for indent in dict.fromkeys(layouts)}
    try:
        problems: list[str] = []
        summaries: list[TaskSummary] = []
        warnings = 0
        for task in iter_tasks(task_files, problems, row_keys, strict):
            if problems or failure is not None:
                continue  # the command fails: the rest is only checked
            score = score_answer(task, answers.get(task.task_id))
            for kept in records.values():
                kept.add(score)
            summaries.append(TaskSummary.of(score))
            warnings += len(task.warnings)
        if problems:
            raise TaskFileError(problems)
        if failure is not None:
            raise failure
        known = {s.task_id for s in summaries}
        report = summarize(summaries, (k for k in answers if k not in known), family_map)
        return ScoredFiles(report, summaries, warnings, records)
    except BaseException:
        for kept in records.values():
            kept.file.close()
        raise
