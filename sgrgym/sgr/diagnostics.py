"""Trajectory diagnostics (the audit data SGR-Bench leaves to future work, section 5).

Per episode, against the task's reference path: the share of reference states the agent
reached, the first step where its sequence of states leaves the reference path, how many
steps it spent in states outside the reference path (a retrieval-scope-drift hint), and
whether it reached the answer-bearing states yet answered wrong (a criterion-mismatch hint).
These are data for an audit (appendix G's categories), not a verdict.
"""

from __future__ import annotations

from pydantic import BaseModel

from sgrgym.sgr.simulator import TrajectoryStep
from sgrgym.sgr.sites.model import SiteModel
from sgrgym.sgr.sites.reference import Reference, answer_states, walk


class Diagnostics(BaseModel):
    reference_states: int
    reference_states_reached: float  # share in [0, 1]
    first_divergence_step: int | None  # trajectory step number; None: never left the path
    steps_outside_reference: int
    reached_answer_states: bool
    hint: str  # "solved" | "drift" | "criterion" | "no reference"


def diagnose(
    reference: Reference | None,
    model: SiteModel | None,
    trajectory: list[TrajectoryStep],
    item_f1: float,
) -> Diagnostics:
    """Compare a trajectory with the reference path (see the module docstring)."""
    if reference is None or model is None:
        return Diagnostics(
            reference_states=0, reference_states_reached=0.0, first_divergence_step=None,
            steps_outside_reference=0, reached_answer_states=False, hint="no reference",
        )  # fmt: skip
    path_states = walk(model, reference.path)
    path = [model.url(s) for s in path_states]
    wanted = set(path)
    answers = {model.url(s) for s in answer_states(reference, path_states)}
    reached = [(step.step, step.state) for step in trajectory if step.state and step.match in
               ("exact", "rule")]  # fmt: skip
    seen = {url for _, url in reached}
    distinct: list[tuple[int, str]] = []
    for number, url in reached:
        if not distinct or distinct[-1][1] != url:
            distinct.append((number, url))
    divergence = next(
        (number for i, (number, url) in enumerate(distinct) if i >= len(path) or url != path[i]),
        None,
    )
    outside = sum(1 for step in trajectory if step.state and step.state not in wanted)
    reached_answers = answers <= seen
    if item_f1 == 1.0:
        hint = "solved"
    elif reached_answers:
        hint = "criterion"
    else:
        hint = "drift"
    return Diagnostics(
        reference_states=len(wanted),
        reference_states_reached=len(wanted & seen) / len(wanted),
        first_divergence_step=divergence,
        steps_outside_reference=outside,
        reached_answer_states=reached_answers,
        hint=hint,
    )
