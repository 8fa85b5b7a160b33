"""Difficulty calibration of a task set over several runs of one baseline agent (SGR-Bench
section 3.2.4).

The paper calibrates difficulty "using a search-enabled baseline model": it excludes tasks the
baseline solves reliably, and tasks on which it makes no meaningful progress, and keeps those
with "partial but incomplete progress". Given several run folders of the same agent (other
seeds, or repeated runs), each task variant is labelled over its runs:

- ``solved reliably``: Item-F1 at least ``solved`` (default 1.0, a perfect answer) in every run;
- ``no progress``: Item-F1 at most ``progress`` (default 0.0) in every run;
- ``partial progress``: anything else (the tasks a benchmark keeps).

Each run is re-scored from its answers against its task files (as ``sgr compare`` does), so
every run is scored alike. The set-level numbers are the ones issue-level targets are stated
in: mean Item-F1 and Row-F1 over variants and runs, the share of perfect variant-runs, and the
CG and GO means (the paper's Table 2 reports all of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Literal

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.sgr.compare import UNFINISHED, compare_runs

Label = Literal["solved reliably", "partial progress", "no progress"]
LABELS: tuple[Label, ...] = ("solved reliably", "partial progress", "no progress")


class TaskDifficulty(BaseModel):
    task_id: str
    variant: str
    item_f1: list[float]  # per run, in the order the runs were given
    row_f1: list[float]
    label: Label


class Target(BaseModel):
    """One set-level target (as a benchmark at the paper's difficulty would meet it)."""

    name: str
    value: float | None
    wanted: str
    met: bool | None  # None: not measurable on this set (e.g. no GO variants)


class DifficultyReport(BaseModel):
    runs: list[str]
    agents: list[str | None]
    solved: float
    progress: float
    tasks: list[TaskDifficulty]
    counts: dict[str, int]
    mean_item_f1: float
    mean_row_f1: float
    perfect_share: float  # share of (variant, run) pairs with Item-F1 = 1
    cg_item_f1: float | None
    go_item_f1: float | None
    targets: list[Target]
    notes: list[str]


def label_of(item_f1: Sequence[float], solved: float, progress: float) -> Label:
    """The section 3.2.4 label of one task variant from its Item-F1 in each run."""
    if all(f >= solved for f in item_f1):
        return "solved reliably"
    if all(f <= progress for f in item_f1):
        return "no progress"
    return "partial progress"


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


def _targets(report: DifficultyReport) -> list[Target]:
    cg, go = report.cg_item_f1, report.go_item_f1
    return [
        Target(
            name="mean Item-F1",
            value=report.mean_item_f1,
            wanted="0.30 to 0.70",
            met=0.30 <= report.mean_item_f1 <= 0.70,
        ),
        Target(
            name="mean Row-F1",
            value=report.mean_row_f1,
            wanted="below mean Item-F1",
            met=report.mean_row_f1 < report.mean_item_f1,
        ),
        Target(
            name="perfect variant-runs",
            value=report.perfect_share,
            wanted="at most 0.25",
            met=report.perfect_share <= 0.25,
        ),
        Target(
            name="CG minus GO Item-F1",
            value=None if cg is None or go is None else cg - go,
            wanted="above 0 (CG easier)",
            met=None if cg is None or go is None else cg > go,
        ),
    ]


def calibrate(
    runs: Sequence[Path],
    families: Mapping[str, str],
    *,
    solved: float = 1.0,
    progress: float = 0.0,
    strict: bool = False,
    tasks: Sequence[Path] | None = None,
) -> DifficultyReport:
    """Label every task variant of ``runs`` (all finished, all on the same task set)."""
    if progress >= solved:
        raise UserError(
            f"--progress {progress:g} must be below --solved {solved:g} (a task cannot be "
            "both solved and without progress)"
        )
    comparison = compare_runs(runs, families, strict=strict, tasks=tasks)
    unfinished = [s.run_dir for s in comparison.systems if s.system.endswith(UNFINISHED)]
    if unfinished:
        raise UserError(
            f"{unfinished[0]}: the run is unfinished (no completion marker); finish it with "
            "the same command and --resume before calibrating on it"
        )
    per_run = [{t.task_id: t for t in s.report.tasks} for s in comparison.systems]
    ids = [list(scores) for scores in per_run]
    if any(set(i) != set(ids[0]) for i in ids[1:]):
        raise UserError(
            "the runs were made on different task sets; calibrate runs of the same tasks "
            "(or score them all against one set with --tasks)"
        )
    labelled = []
    for task_id in ids[0]:
        scores = [run[task_id] for run in per_run]
        item = [s.item_f1 for s in scores]
        labelled.append(
            TaskDifficulty(
                task_id=task_id,
                variant=scores[0].variant,
                item_f1=item,
                row_f1=[s.row_f1 for s in scores],
                label=label_of(item, solved, progress),
            )
        )
    every_item = [f for t in labelled for f in t.item_f1]
    every_row = [f for t in labelled for f in t.row_f1]
    report = DifficultyReport(
        runs=[s.run_dir for s in comparison.systems],
        agents=[s.agent for s in comparison.systems],
        solved=solved,
        progress=progress,
        tasks=labelled,
        counts={label: sum(t.label == label for t in labelled) for label in LABELS},
        mean_item_f1=fmean(every_item) if every_item else 0.0,
        mean_row_f1=fmean(every_row) if every_row else 0.0,
        perfect_share=(sum(f >= 1.0 for f in every_item) / len(every_item)) if every_item else 0.0,
        cg_item_f1=_mean([f for t in labelled if t.variant == "CG" for f in t.item_f1]),
        go_item_f1=_mean([f for t in labelled if t.variant == "GO" for f in t.item_f1]),
        targets=[],
        notes=list(comparison.notes),
    )
    agents = set(report.agents)
    if len(agents) > 1:
        report.notes.append(
            "the runs are of different agents ("
            + ", ".join(sorted(str(a) for a in agents))
            + "); section 3.2.4 calibrates on runs of one baseline agent"
        )
    if len(runs) == 1:
        report.notes.append(
            "one run only: 'reliably' and 'no progress' need several runs (other seeds) to mean "
            "what they say"
        )
    report.targets = _targets(report)
    return report


def render(report: DifficultyReport) -> str:
    """The report as text: one line per task variant, the counts, then the set targets."""
    from sgrgym.core.table import format_table

    rows = [
        [
            t.task_id,
            t.variant,
            " ".join(f"{f:.2f}" for f in t.item_f1),
            f"{fmean(t.item_f1):.2f}",
            f"{fmean(t.row_f1):.2f}",
            t.label,
        ]
        for t in report.tasks
    ]
    lines = [
        format_table(["Task", "Var", "Item-F1 per run", "Item-F1", "Row-F1", "Label"], rows),
        "",
        f"{len(report.tasks)} task variants over {len(report.runs)} run(s): "
        + ", ".join(f"{report.counts[label]} {label}" for label in LABELS),
        "",
        "Set-level targets:",
    ]
    for target in report.targets:
        value = "n/a" if target.value is None else f"{target.value:.3f}"
        verdict = {True: "met", False: "NOT met", None: "not measurable"}[target.met]
        lines.append(f"  {target.name}: {value} (wanted {target.wanted}): {verdict}")
    lines += [f"\nnote: {note}" for note in report.notes]
    return "\n".join(lines)
