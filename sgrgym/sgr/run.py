"""Run an agent over SGR tasks on a pack: answers, trajectories, scores; resumable, deterministic.

Output folder:

- ``run.json``: the run card (pack pin, agent, seed, budget, date, task files with sha256,
  sgrgym version); a folder holding another run's card is refused;
- ``answers.jsonl``: the scorer's predictions (``{"task_id", "answer"}``), one line per
  episode, appended as episodes end, so an interrupted run resumes where it stopped;
- ``trajectories.jsonl``: per episode, how it ended (``ended_by``: answer, budget: wall,
  budget: stall, budget: tool calls, agent error) and which answer was scored
  (``answer_from``: final, submitted, none), tool calls, the rank of the task's site in the
  first search, every step (``match``: exact, rule, rendered, miss, error) and the appendix G
  diagnostics;
- ``scores.json``: the scorer's report over all tasks;
- ``timings.jsonl``: wall seconds per episode (the only file that differs between two runs).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from pydantic import BaseModel

from sgrgym import __version__
from sgrgym.errors import UserError
from sgrgym.hashing import sha256_file
from sgrgym.report.output import append_jsonl
from sgrgym.sgr.agents import Agent
from sgrgym.sgr.diagnostics import diagnose
from sgrgym.sgr.env import Budget, SgrEnv
from sgrgym.sgr.prompt import PROMPT_TEMPLATE, template_sha256
from sgrgym.sgr.render import RenderedSite
from sgrgym.sgr.score import ScoreReport, load_predictions, score_answer, score_tasks
from sgrgym.sgr.sites.reference import reference_of
from sgrgym.sgr.tasks import ScoringTask
from sgrgym.sgr.watchdog import run_episode

Progress = Callable[[int, int, str], None]


class RunCard(BaseModel):
    pack: str
    pack_sha256: str
    agent: str
    seed: int
    budget: Budget
    current_date: str
    task_files: dict[str, str]  # path -> sha256
    sgrgym_version: str = __version__
    prompt_template: str = PROMPT_TEMPLATE
    prompt_sha256: str = ""
    rendered_sites: dict[str, RenderedSite] = {}  # site -> app version, data file sha256s


def run_card(
    env: SgrEnv, agent: Agent, seed: int, task_files: Sequence[Path]
) -> RunCard:  # fmt: skip
    return RunCard(
        pack=env.snapshot.manifest.pack,
        pack_sha256=env.snapshot.pin,
        agent=agent.name,
        seed=seed,
        budget=env.budget,
        current_date=env.current_date,
        task_files={str(p): sha256_file(p)[0] for p in task_files},
        prompt_sha256=template_sha256(),
        rendered_sites=env.renderer.card() if env.renderer else {},
    )


def _done(path: Path) -> set[str]:
    """Task ids already answered; a last line cut short by a crash is dropped."""
    if not path.is_file():
        return set()
    done: set[str] = set()
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = []
    for line in lines:
        try:
            done.add(json.loads(line)["task_id"])
            kept.append(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            break
    if len(kept) != len(lines):
        path.write_text("".join(kept), encoding="utf-8")
    return done


def _keep_only(path: Path, task_ids: set[str]) -> None:
    """Drop lines of episodes that did not finish (their answer was never written)."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            if json.loads(line)["task_id"] in task_ids:
                kept.append(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    path.write_text("".join(kept), encoding="utf-8")


def run_tasks(
    env: SgrEnv,
    agent: Agent,
    tasks: Sequence[ScoringTask],
    out_dir: Path,
    card: RunCard,
    progress: Progress | None = None,
) -> ScoreReport:
    """Run ``agent`` on every task not yet answered in ``out_dir``, then score them all."""
    out_dir.mkdir(parents=True, exist_ok=True)
    card_path = out_dir / "run.json"
    card_text = card.model_dump_json(indent=2) + "\n"
    if card_path.is_file() and card_path.read_text(encoding="utf-8") != card_text:
        raise UserError(
            f"{out_dir}: holds another run (its run.json differs: agent, seed, pack or tasks); "
            "use a new --out folder"
        )
    card_path.write_text(card_text, encoding="utf-8")
    answers_path = out_dir / "answers.jsonl"
    done = _done(answers_path)
    for name in ("trajectories.jsonl", "timings.jsonl"):
        _keep_only(out_dir / name, done)
    for number, task in enumerate(tasks, start=1):
        if task.task_id in done:
            continue
        reference = reference_of(task)
        model = env.sites.get(reference.site) if reference else None
        obs = env.reset(task, model.host if model else "")
        episode = run_episode(env, agent, obs)
        score = score_answer(task, episode.answer)
        diagnostics = diagnose(
            task, reference, model, episode.trajectory, score, episode.answer
        )  # fmt: skip
        append_jsonl(
            out_dir / "trajectories.jsonl",
            {
                "task_id": task.task_id,
                "ended_by": episode.ended_by,
                "answer_from": episode.answer_from,
                "error": episode.error,
                "tool_calls": episode.tool_calls,
                "submitted_answers": episode.submitted_answers,
                "target_site_rank": episode.target_site_rank,
                "steps": [asdict(step) for step in episode.trajectory],
                "diagnostics": diagnostics.model_dump(),
            },
        )
        append_jsonl(out_dir / "timings.jsonl", {"task_id": task.task_id, "wall_s": episode.wall_s})
        append_jsonl(answers_path, {"task_id": task.task_id, "answer": episode.answer})
        if progress:
            progress(number, len(tasks), f"{task.task_id} item_f1={score.item_f1:.2f}")
    report = score_tasks(tasks, load_predictions(answers_path))
    (out_dir / "scores.json").write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    return report
