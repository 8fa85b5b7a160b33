"""A task's reference: the state path that exposes the evidence, and where the answer sits.

sgrgym's own SGR task files carry, beside the published fields, a ``reference`` object::

    "reference": {
      "site": "elements",
      "path": [{"op": "set_filter", "control": "group", "value": "18", "type": "control"},
               {"op": "sort", "control": "sort", "value": "number", "end": "asc"}],
      "answer": {"table": "results", "states": [-1]}
    }

``path`` starts from the site's default state; ``answer.states`` indexes the visited states
(0 = the default state, i = the state after the i-th operation, -1 = the last). The answer is
the rows of ``answer.table`` on those pages, in order, projected onto the task's schema
columns (a page's ``data-col`` keys are the schema's column names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.inputs import field_problem
from sgrgym.sgr.sites.model import Op, SiteError, SiteModel, State
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.tasks import ScoringTask


class AnswerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: str = "results"
    states: list[int] = Field(default_factory=lambda: [-1])


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    site: str
    path: list[Op]
    answer: AnswerSpec = Field(default_factory=AnswerSpec)


def walk(model: SiteModel, path: Sequence[Op]) -> list[State]:
    """The states visited from the default state by ``path`` (start included)."""
    states = [model.default_state()]
    for op in path:
        states.append(model.apply(states[-1], op))
    return states


def check_references(
    models: Mapping[str, SiteModel], references: Mapping[str, Reference], manifest: str
) -> None:
    """Every task's reference path is allowed by the pack's site model (a UserError naming the
    manifest and the task otherwise: the manifest was edited or built for other tasks)."""
    for task_id, reference in sorted(references.items()):
        model = models.get(reference.site)
        if model is None:
            continue
        try:
            walk(model, reference.path)
        except SiteError as exc:
            raise UserError(
                f"{manifest}: the site model of {reference.site!r} does not allow the reference "
                f"path of task {task_id} ({exc}); the manifest was edited or the pack was "
                "built for other tasks: rebuild it with `sgrgym sgr build-packs`"
            ) from None


def answer_states(reference: Reference, states: Sequence[State]) -> list[State]:
    return [states[i] for i in reference.answer.states]


def _escape(value: str, field_sep: str) -> str:
    return value.replace(field_sep, "\\" + field_sep)


def rows_as_answer(
    pages: Sequence[bytes],
    table: str,
    columns: Sequence[str],
    field_sep: str = "|",
    record_sep: str = "\n",
) -> str:
    """The answer text made of ``table``'s rows on ``pages``, projected onto ``columns``."""
    lines = []
    for page in pages:
        for row in extract_tables(page).get(table, []):
            lines.append(field_sep.join(_escape(row.get(c, ""), field_sep) for c in columns))
    return record_sep.join(lines) if lines else "NONE"


def reference_of(task: ScoringTask) -> Reference | None:
    """The task's ``reference`` object, validated (None when the task has none)."""
    raw = (task.task.model_extra or {}).get("reference")
    if raw is None:
        return None
    try:
        return Reference.model_validate(raw)
    except ValidationError as exc:
        problem = field_problem(exc).replace("field ", "field reference.", 1)
        raise UserError(f"{task.source}:{task.line}: task {task.task_id}: {problem}") from None
