"""Trajectory diagnostics: the failure categories of SGR-Bench appendix G, computed.

The paper audits failed runs by hand and gives each one primary label, the earliest
non-recoverable root cause, upstream causes before answer-writing ones (appendix G). Here
the label is computed from what the episode left behind: the set of states of the task's site
the agent reached (pages served with status 200), the task's reference path and the answer's
score. States are compared as parameter sets, so the order of operations does not matter and
commuting operations (two filters set either way round) reach the same state; a state counts
as off the path only when no reference state extends it (same page, a superset of its
settings).

The reference path's *required* states are its answer-bearing states and, for every
data-dependent operation, the state whose evidence decides it (the last state before it that
an operation other than a plain switch of page kind produced). Walking them in path order, the
first one the agent never reached is the root cause:

- ``retrieval dependency error``: the data-dependent step was taken with another intermediate
  value (the agent reached the same page with only that operation's parameters different);
- ``criterion mismatch``: the agent reached the state's page with the same scope but set a
  filter or sort control that the state uses to a different value (right control, wrong value);
- ``retrieval-scope drift``: anything else (wrong view, scope, hierarchy node, time window or
  page, or a required control never set: the wrong slice of the source).

Before that, ``site never reached`` (no page of the task's site at all). When every required
state was reached: ``final answer composition`` when the answer has the right rows but in the
wrong order (P.O.A. below 1) or in an unparsable format that still holds every reference value,
else ``in-page evidence misreading`` (the evidence was on screen, the answer differs from it);
``no answer`` when the episode ended without any. ``solved``: Item-F1, Row-F1 and P.O.A. all 1.

Not detectable automatically: *intent rewriting* (replacing the task by an easier surrogate is
a property of the agent's reasoning; in states and answers it shows up as scope drift or a
criterion mismatch, so it needs the transcript and a human or model judge), and the paper's
finer splits inside a label (a wrong field definition read off the right page is counted as a
misreading, a wrong denominator in a computed value as composition or misreading).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from sgrgym.sgr.score import TaskScore
from sgrgym.sgr.simulator import TrajectoryStep
from sgrgym.sgr.sites.model import SiteError, SiteModel, State
from sgrgym.sgr.sites.reference import Reference, walk
from sgrgym.sgr.tasks import ScoringTask

# Appendix G's labels in precedence order (upstream first), then the outcomes around them.
CATEGORIES = (
    "site never reached",
    "retrieval-scope drift",
    "criterion mismatch",
    "retrieval dependency error",
    "in-page evidence misreading",
    "final answer composition",
    "no answer",
)
SOLVED = "solved"
NOT_DETECTED = ("intent rewriting",)
CRITERION_KINDS = ("filter", "sort")  # the decision rule; everything else is the scope/view


class Diagnostics(BaseModel):
    category: str  # one of CATEGORIES, "solved", or "no reference"
    reference_states: int
    required_states: int
    required_states_reached: int
    reached_answer_states: bool
    first_missed_state: str | None  # URL of the first required state never reached
    first_divergence_step: int | None  # first step on a state off the reference path
    steps_outside_reference: int  # steps on states that no reference state contains


def _effective(
    model: SiteModel, state: State, kinds: Iterable[str], within: bool
) -> dict[str, str]:
    """The values of the route's controls of ``kinds`` (or of all others), defaults filled."""
    wanted = set(kinds)
    values = {}
    for control in model.route_controls(state.path):
        if (control.kind in wanted) == within:
            for param in control.params:
                values[param] = state.get(param, control.default_of(param))
    return values


def _differs(a: State, b: State) -> set[str]:
    pa, pb = dict(a.params), dict(b.params)
    return {k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k)}


def _reached(model: SiteModel, trajectory: list[TrajectoryStep]) -> list[tuple[int, State]]:
    out = []
    for step in trajectory:
        if step.site != model.name or step.status != 200 or not step.state:
            continue
        try:
            out.append((step.step, model.parse_url(step.state)))
        except SiteError:
            continue
    return out


def _on_track(state: State, path: list[State]) -> bool:
    """Whether a reference state extends ``state`` (same page, its settings a subset): a
    step towards the path in any order, so commuting operations are no divergence."""
    return any(state.path == p.path and set(state.params) <= set(p.params) for p in path)


def evidence(reference: Reference, k: int) -> int:
    """The index of the state whose evidence decides the path's ``k``-th operation (1-based)."""
    e = k - 1
    while e > 0 and reference.path[e - 1].op == "select_view" and not reference.path[e - 1].control:
        e -= 1
    return e


def _root_cause(
    model: SiteModel,
    reference: Reference,
    path: list[State],
    required: list[int],
    reached: set[State],
) -> tuple[str, int] | None:
    """(category, state index) of the first required state not reached, None if all were."""
    on_path = set(path)
    previous = 0
    for index in required:
        target = path[index]
        if target in reached:
            previous = index
            continue
        for k in range(previous + 1, index + 1):
            if reference.path[k - 1].type != "data" or path[evidence(reference, k)] not in reached:
                continue
            changed = _differs(path[k - 1], path[k])
            for j in range(k, index + 1):
                want = path[j]
                for state in reached:
                    if state in on_path:  # a state of the path itself is no wrong value
                        continue
                    diff = _differs(state, want)
                    taken = all(state.get(param) for param in diff)  # set, to another value
                    if state.path == want.path and diff and diff <= changed and taken:
                        return "retrieval dependency error", index
        scope = _effective(model, target, CRITERION_KINDS, within=False)
        rule = _effective(model, target, CRITERION_KINDS, within=True)
        for state in reached:
            if state.path != target.path:
                continue
            if _effective(model, state, CRITERION_KINDS, within=False) != scope:
                continue
            theirs = _effective(model, state, CRITERION_KINDS, within=True)
            if theirs != rule and all(theirs[p] for p, v in rule.items() if v):
                return "criterion mismatch", index
        return "retrieval-scope drift", index
    return None


def _composed_wrong(task: ScoringTask, score: TaskScore, answer: str) -> bool:
    """Right rows, wrong order; or a format the parser cannot read that holds every value."""
    if score.row_f1 == 1.0 and score.poa < 1.0:
        return True
    if score.parse_failure:
        return all(value in answer for row in task.gold_rows for value in row if value)
    return False


def diagnose(
    task: ScoringTask,
    reference: Reference | None,
    model: SiteModel | None,
    trajectory: list[TrajectoryStep],
    score: TaskScore,
    answer: str | None,
) -> Diagnostics:
    """Label one episode (see the module docstring)."""
    if reference is None or model is None:
        return Diagnostics(
            category="no reference",
            reference_states=0,
            required_states=0,
            required_states_reached=0,
            reached_answer_states=False,
            first_missed_state=None,
            first_divergence_step=None,
            steps_outside_reference=0,
        )
    path = walk(model, reference.path)
    n = len(path)
    answers = sorted({i % n for i in reference.answer.states})
    data_before = {
        evidence(reference, k) for k, op in enumerate(reference.path, start=1) if op.type == "data"
    }
    required = sorted(set(answers) | data_before)
    steps = _reached(model, trajectory)
    reached = {state for _, state in steps}
    on_path = set(path)
    outside = [number for number, state in steps if not _on_track(state, path)]
    cause = _root_cause(model, reference, path, required, reached)
    solved = (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0)
    if solved:
        category = SOLVED
    elif not steps:
        category = "site never reached"
    elif cause is not None:
        category = cause[0]
    elif answer is None:
        category = "no answer"
    elif _composed_wrong(task, score, answer):
        category = "final answer composition"
    else:
        category = "in-page evidence misreading"
    return Diagnostics(
        category=category,
        reference_states=len(on_path),
        required_states=len(required),
        required_states_reached=sum(1 for i in required if path[i] in reached),
        reached_answer_states=all(path[i] in reached for i in answers),
        first_missed_state=model.url(path[cause[1]]) if cause else None,
        first_divergence_step=outside[0] if outside else None,
        steps_outside_reference=len(outside),
    )
