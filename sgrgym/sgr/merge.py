"""Joining the finished shards of an ``sgr run`` (``sgrgym merge``) into the folder the single
run writes, byte for byte.

The run's task variants are those of its card (the task files, checked against their sha256,
then ``task_ids``), in the order the run takes them; shard ``I/N`` ran every N-th of them
(:mod:`sgrgym.core.shard`). ``answers.jsonl``, ``trajectories.jsonl`` and ``timings.jsonl``
are the shards' lines in that order (:meth:`sgrgym.runs.merge.ShardSet.join`); an agent's own
final results (the LLM agent's ``llm_totals.json``) and ``scores.json`` are computed from
them by the code a single run ends with (:func:`sgrgym.sgr.run.finish_run`); the LLM call
logs are joined (:func:`sgrgym.llm.usage.joined_log`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sgrgym.core.errors import UserError
from sgrgym.core.io import write_atomic
from sgrgym.llm.usage import LOG, joined_log
from sgrgym.runs.folder import new_run_folder
from sgrgym.runs.merge import ShardSet
from sgrgym.sgr.compare import task_files_of
from sgrgym.sgr.llm_agent import LLM_TOTALS, totals_finals
from sgrgym.sgr.make import load_tasks, select_tasks
from sgrgym.sgr.run import ANSWERS, SCORES, TIMINGS, TRAJECTORIES, finish_run
from sgrgym.sgr.score import ScoreReport
from sgrgym.sgr.tasks import ScoringTask

# An agent's own final results (ReportingAgent.final_files), by name: how its run computes
# them from the trajectory records.
AGENT_FINALS: dict[str, Callable[[list[Any]], dict[str, str]]] = {LLM_TOTALS: totals_finals}
RECORDS = (ANSWERS, TRAJECTORIES, TIMINGS)  # a line per episode, keyed by task_id


def is_sgr_card(card: dict[str, Any]) -> bool:
    """Whether ``card`` is the card of an ``sgr run`` folder."""
    return isinstance(card.get("task_files"), dict) and "pack" in card and "agent" in card


def run_tasks_of(card: dict[str, Any], folder: Path) -> list[ScoringTask]:
    """The task variants of the run ``card`` (of ``folder``), in the order it runs them."""
    tasks = load_tasks(task_files_of(folder, card["task_files"]))
    selection = card.get("task_ids")
    return tasks if selection is None else select_tasks(tasks, selection, None)


def merge_sgr(shards: ShardSet, out: Path) -> ScoreReport:
    """Write the run of ``shards`` to ``out`` as its single run would; return its scores."""
    first = shards.first
    tasks = run_tasks_of(shards.card, first.path)
    extra = sorted(set(first.finals) - {ANSWERS, TRAJECTORIES, SCORES})
    for folder in shards.shards:
        if set(folder.finals) != set(first.finals):
            raise UserError(
                f"{folder.path}: its results ({', '.join(sorted(folder.finals))}) are not "
                f"those of {first.path}"
            )
    unknown = [name for name in extra if name not in AGENT_FINALS]
    if unknown:
        raise UserError(f"{first.path}: cannot join the results {', '.join(unknown)}")
    order = [t.task_id for t in tasks]
    joined = {name: shards.join(name, lambda r: r["task_id"], order) for name in RECORDS}
    log = joined_log([f.path for f in shards.shards])
    with new_run_folder(out, shards.card_text, finals=(SCORES, *extra)) as merged:
        for name, text in joined.items():
            merged.write_final(name, text)
        trajectories = merged.records(TRAJECTORIES)
        for name in extra:
            for final, text in AGENT_FINALS[name](trajectories).items():
                merged.write_final(final, text)
        report = finish_run(merged, tasks, extra)
        if log is not None:
            write_atomic(out / LOG, log)
    return report
