"""Compare several runs (systems) on SGR-Bench, one row each, as the paper's table 2 does.

A run folder (written by ``sgrgym sgr run``) holds ``run.json`` (the run card: agent and
``task_files``, path → sha256) and ``answers.jsonl`` (the raw answers). Each run is
**re-scored** here from its answers, against its task files, rather than read from its
``scores.json``: every system is then scored by the same scorer version with the same
canonicalization (``--strict``) and family map (``--families``), and a ``scores.json``
written by an older sgrgym cannot skew the table. The task files are checked against the
sha256 in ``run.json`` before use; ``--tasks`` scores every run against other files instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.home import locate
from sgrgym.runs.folder import COMPLETE, SHARD
from sgrgym.sgr.score import ScoreReport, load_predictions, score_tasks
from sgrgym.sgr.tasks import load_tasks


class SystemScore(BaseModel):
    system: str  # the run folder's name (the label in the table; "(unfinished)" added)
    run_dir: str
    agent: str | None
    finished: bool = True  # the folder has its completion marker (complete.json)
    task_files: list[str]
    report: ScoreReport


UNFINISHED = " (unfinished)"


class Comparison(BaseModel):
    systems: list[SystemScore]
    notes: list[str]


def _card(run_dir: Path) -> dict[str, object]:
    path = run_dir / "run.json"
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run folder (expected a folder written by sgr run)")
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no run card; is {run_dir} a folder written by sgr run?") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise UserError(f"{path}: not a JSON run card ({exc})") from None
    if not isinstance(card, dict) or not isinstance(card.get("task_files"), dict):
        raise UserError(f"{path}: field task_files: expected an object {{path: sha256}}")
    if SHARD in card:  # its answers cover a slice of the run's variants
        raise UserError(
            f"{run_dir}: holds one shard of a run; join the shard folders with `sgrgym merge` "
            "and use the merged folder"
        )
    return card


def task_files_of(run_dir: Path, recorded: Mapping[str, object]) -> list[Path]:
    """The run's task files, found as recorded or next to the run folder, sha256-checked."""
    files = []
    for name, digest in recorded.items():
        candidates = [locate(name), run_dir / name, run_dir.parent / name]
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            raise UserError(
                f"{run_dir / 'run.json'}: task file {name} not found; run compare from the "
                "folder the run was started in, or pass --tasks"
            )
        actual = sha256_file(path)[0]
        if actual != digest:
            raise UserError(
                f"{path}: sha256 {actual} differs from {digest} recorded in "
                f"{run_dir / 'run.json'}; the task file changed since the run (pass --tasks "
                "to score against it anyway)"
            )
        files.append(path)
    if not files:
        raise UserError(f"{run_dir / 'run.json'}: field task_files: no task files recorded")
    return files


def compare_runs(
    runs: Sequence[Path],
    families: Mapping[str, str],
    strict: bool = False,
    tasks: Sequence[Path] | None = None,
) -> Comparison:
    """Score each run's answers and collect the reports in the order given."""
    systems: list[SystemScore] = []
    task_sets: dict[str, frozenset[str]] = {}
    notes: list[str] = []
    for run_dir in runs:
        card = _card(run_dir)
        recorded = card["task_files"]
        assert isinstance(recorded, dict)
        files = list(tasks) if tasks else task_files_of(run_dir, recorded)
        answers_path = run_dir / "answers.jsonl"
        if not answers_path.is_file():
            raise UserError(f"{answers_path}: no answers in this run folder")
        loaded = load_tasks(files, strict=strict)
        selection = card.get("task_ids")
        if isinstance(selection, list):  # a run of some variants (sgr run --task/--limit)
            chosen = set(selection)
            loaded = [t for t in loaded if t.task_id in chosen]
        report = score_tasks(loaded, load_predictions(answers_path), families)
        label = run_dir.resolve().name if run_dir.name in ("", ".") else run_dir.name
        if any(s.system.removesuffix(UNFINISHED) == label for s in systems):
            label = str(run_dir)
        finished = (run_dir / COMPLETE).is_file()
        if not finished:  # never ranked as if it were done: its missing answers score 0
            answered = len(load_predictions(answers_path))
            notes.append(
                f"{label} is unfinished ({answered} of {len(loaded)} tasks answered, no "
                f"{COMPLETE}): its row counts the unanswered tasks as failures"
            )
            label += UNFINISHED
        agent = card.get("agent")
        systems.append(
            SystemScore(
                system=label,
                run_dir=str(run_dir),
                agent=agent if isinstance(agent, str) else None,
                task_files=[str(f) for f in files],
                finished=finished,
                report=report,
            )
        )
        task_sets[label] = frozenset(t.task_id for t in loaded)
    if len(set(task_sets.values())) > 1:
        sizes = ", ".join(f"{name} {len(ids)}" for name, ids in task_sets.items())
        notes.append(f"the systems were scored on different task sets (task variants: {sizes})")
    return Comparison(systems=systems, notes=notes)
