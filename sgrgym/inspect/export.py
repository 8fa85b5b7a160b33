"""A finished SGR run folder as an Inspect AI log (``sgrgym export-inspect RUN_DIR --out FILE``).

Any ``sgr run`` folder (built-in agents, ``--agent llm``, ``cli:NAME``) or ``sgrgym mcp``
episode folder that has its completion marker becomes one log, written with Inspect's own
writer (``.eval`` or ``.json`` by the file's extension):

- the eval: task ``sgrgym/sgr_bench``, the agent as the solver, the model (the LLM's or CLI's
  model; ``sgrgym/AGENT`` for a built-in agent), and the run card in the metadata
  (``sgrgym``: pack and its sha256, task files and theirs, prompt template, tool schema,
  rendered sites' apps and data files, budget, date, agent settings, environment);
- one sample per task variant run: the task prompt as the agent got it, the oracle answer as
  target, and the transcript as far as the folder records it: each tool call from
  ``trajectories.jsonl`` (name and arguments; its result as the trajectory describes it: the
  page's address, status, size and match, as page texts are not kept), grouped by model call
  for an LLM run (its calls' models and tokens give the model usage), with the submitted
  answers' texts an agent CLI's live log keeps, and the final answer;
- each sample's score as the ``sgr_bench`` task's scorer gives it (Item-F1, Row-F1, P.O.A.,
  the per-row comparison, appendix G's category), taken from ``scores.json`` and
  ``trajectories.jsonl``; the results' metrics are ``scores.json``'s overall means, and its
  other aggregates (by variant, domain, family, cardinality) are in the results' metadata.

Nothing is written unless the whole log could be made; the file appears at once (written
beside it, then renamed).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolCall

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.home import locate
from sgrgym.core.inputs import BadJson, json_value
from sgrgym.core.version import __version__
from sgrgym.inspect.scoring import SGR_METRICS, SGR_SCORER, sgr_inspect_score
from sgrgym.runs.folder import CARD, COMPLETE, read_log
from sgrgym.sgr.cli_agents.episode import STEPS
from sgrgym.sgr.cli_agents.tools import tool_names
from sgrgym.sgr.prompt import DEFAULT_TOOLS, task_prompt
from sgrgym.sgr.records import TrajectoryRecord, read_answers, read_trajectories
from sgrgym.sgr.run import ANSWERS, SCORES, TRAJECTORIES
from sgrgym.sgr.score import ScoreReport
from sgrgym.sgr.tasks import ScoringTask, load_tasks

TASK = "sgrgym/sgr_bench"
FORMATS = (".eval", ".json")
NOT_RECORDED = "[not recorded in the run folder]"


@dataclass(frozen=True)
class Exported:
    """What was written: the log file, the agent and model, the samples and overall means."""

    out: Path
    agent: str
    model: str
    samples: int
    overall: dict[str, float | None]
    prompts: bool  # the task files were found, so the samples' inputs are the prompts


def _check_out(out: Path) -> None:
    if out.suffix not in FORMATS:
        raise UserError(f"--out {out}: name a .eval or .json file (Inspect's log formats)")
    if out.is_dir():
        raise UserError(f"--out {out}: is a folder; name the log file to write")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: no folder {out.parent} to write it in")


def read_card(run_dir: Path) -> dict[str, Any]:
    """The run card of a finished SGR run folder (a UserError for anything else)."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run folder (no such folder)")
    path = run_dir / CARD
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run folder (no {CARD}); name a folder sgr run wrote")
    try:
        card = json_value(path.read_text(encoding="utf-8"))
    except (BadJson, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a run card ({exc})") from None
    if not isinstance(card, dict):
        raise UserError(f"{path}: not a run card (not a JSON object)")
    if "corpus" in card and "task_files" not in card:
        raise UserError(f"{run_dir}: a SeekerGym run folder; export-inspect takes SGR runs")
    if not isinstance(card.get("task_files"), dict) or not isinstance(card.get("agent"), str):
        raise UserError(f"{run_dir}: not an SGR run folder ({CARD} has no agent and task_files)")
    if not (run_dir / COMPLETE).is_file():
        raise UserError(
            f"{run_dir}: the run is unfinished (no {COMPLETE}); run the same command again "
            "to finish it, then export"
        )
    for name in (ANSWERS, TRAJECTORIES, SCORES):
        if not (run_dir / name).is_file():
            raise UserError(f"{run_dir}: not an SGR run folder (no {name})")
    return card


def _tasks(run_dir: Path, card: dict[str, Any]) -> dict[str, ScoringTask]:
    """The run's task variants from its task files, found as the card names them (or beside
    the run folder) with the recorded sha256; none when they cannot be found."""
    files = []
    for name, digest in card["task_files"].items():
        candidates = [locate(name), run_dir / name, run_dir.parent / name]
        path = next((c for c in candidates if c.is_file()), None)
        if path is None or sha256_file(path)[0] != digest:
            return {}
        files.append(path)
    try:
        return {t.task_id: t for t in load_tasks(files)}
    except UserError:
        return {}


def _model(card: dict[str, Any]) -> str:
    llm = card.get("llm")
    if isinstance(llm, dict) and isinstance(llm.get("model"), str):
        return str(llm["model"])
    if isinstance(card.get("model"), str):  # an agent CLI's model
        return str(card["model"])
    return f"sgrgym/{card['agent']}"


def _tools(card: dict[str, Any]) -> tuple[str, ...]:
    """The tools the prompt named: the external agents' (LLM, CLI, MCP), or the built-in
    agents' (every tool)."""
    llm = card.get("llm")
    if isinstance(llm, dict):
        return tool_names(bool(llm.get("site_ops")))
    if "site_ops" in card:
        return tool_names(bool(card["site_ops"]))
    return DEFAULT_TOOLS


def _result(step: dict[str, Any]) -> str:
    """A tool call's result as the trajectory describes it (the page text is not kept)."""
    parts = []
    if step.get("state"):
        parts.append(f"state {step['state']}")
    if step.get("status"):
        parts.append(f"HTTP status {step['status']}")
    if step.get("bytes"):
        parts.append(f"{step['bytes']} bytes")
    if step.get("match"):
        parts.append(f"match {step['match']}")
    if step.get("note"):
        parts.append(str(step["note"]))
    summary = "; ".join(parts) or "no result recorded"
    return f"{summary} (the result text is not recorded in the run folder)"


def _submitted_texts(run_dir: Path, task_id: str) -> dict[int, str]:
    """Step number -> answer text of each submit_answer an agent CLI's live log kept."""
    path = run_dir / "episodes" / task_id / "mcp" / STEPS
    if not path.is_file():
        return {}
    texts = {}
    for _, record in read_log(path, "live log", repair=False):
        if isinstance(record, dict) and "answer" in record and isinstance(record.get("step"), dict):
            texts[int(record["step"]["step"])] = str(record["answer"])
    return texts


def _calls(steps: list[dict[str, Any]], texts: dict[int, str]) -> list[ToolCall]:
    calls = []
    for step in steps:
        arguments = dict(step.get("args") or {})
        if step["tool"] == "submit_answer" and step["step"] in texts:
            arguments["answer"] = texts[step["step"]]
        call_id = f"step_{step['step']}"
        calls.append(ToolCall(id=call_id, function=step["tool"], arguments=arguments))
    return calls


def _turn(
    steps: list[dict[str, Any]], texts: dict[int, str], model: str | None, content: str = ""
) -> list[ChatMessage]:
    calls = _calls(steps, texts)
    messages: list[ChatMessage] = [
        ChatMessageAssistant(content=content, tool_calls=calls or None, model=model)
    ]
    for step, call in zip(steps, calls, strict=True):
        messages.append(
            ChatMessageTool(
                content=_result(step),
                tool_call_id=call.id,
                function=call.function,
            )
        )
    return messages


def transcript(
    prompt: str, record: TrajectoryRecord, answer: str | None, model: str, texts: dict[int, str]
) -> list[ChatMessage]:
    """The conversation as far as the folder records it."""
    messages: list[ChatMessage] = [ChatMessageUser(content=prompt)]
    steps = [s for s in record.steps if s.get("tool") != "answer"]
    final = answer if record.answer_from == "final" else None
    llm = record.data().get("llm")
    if isinstance(llm, dict) and isinstance(llm.get("calls"), list):
        calls = llm["calls"]
        last_message = llm.get("answer_source") == "last message"
        for number, call in enumerate(calls, start=1):
            count = int(call.get("tool_calls", 0))
            group, steps = steps[:count], steps[count:]
            if count:
                messages += _turn(group, texts, call.get("model"))
            elif number == len(calls) and last_message and final is not None:
                messages.append(ChatMessageAssistant(content=final, model=call.get("model")))
                final = None
            else:
                messages.append(ChatMessageAssistant(content=NOT_RECORDED, model=call.get("model")))
        for step in steps:  # calls the folder records but no model call accounts for
            messages += _turn([step], texts, model)
        return messages
    for step in steps:
        messages += _turn([step], texts, model)
    if final is not None:
        messages.append(ChatMessageAssistant(content=final, model=model))
    return messages


def _usage(record: TrajectoryRecord) -> dict[str, ModelUsage]:
    """An LLM episode's tokens per model (from its call records)."""
    llm = record.data().get("llm")
    usage: dict[str, ModelUsage] = {}
    if not isinstance(llm, dict):
        return usage
    for call in llm.get("calls", []):
        name = str(call.get("model") or call.get("requested_model") or "model")
        before = usage.get(name, ModelUsage())
        prompt, completion = int(call["prompt_tokens"]), int(call["completion_tokens"])
        usage[name] = ModelUsage(
            input_tokens=before.input_tokens + prompt,
            output_tokens=before.output_tokens + completion,
            total_tokens=before.total_tokens + prompt + completion,
            reasoning_tokens=(before.reasoning_tokens or 0) + int(call["reasoning_tokens"]),
            total_cost=None,
        )
    return usage


def _add_usage(total: dict[str, ModelUsage], more: dict[str, ModelUsage]) -> None:
    for name, usage in more.items():
        before = total.get(name)
        total[name] = usage if before is None else before + usage


def _when(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat()


def _episode(record: TrajectoryRecord, answer: str | None) -> dict[str, Any]:
    """The sample store's episode record (as the sgr_bench task keeps it)."""
    return {
        "answer": answer,
        "answer_from": record.answer_from,
        "ended_by": record.ended_by,
        "error": record.error,
        "tool_calls": record.tool_calls,
        "submitted_answers": record.submitted_answers,
        "target_site_rank": record.target_site_rank,
        "steps": record.steps,
    }


def build_log(run_dir: Path) -> tuple[EvalLog, Exported]:
    """The Inspect log of the finished SGR run in ``run_dir``."""
    card = read_card(run_dir)
    try:
        report = ScoreReport.model_validate_json((run_dir / SCORES).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{run_dir / SCORES}: not an SGR score report ({exc})") from None
    answers = {a.task_id: a.answer for a in read_answers(run_dir / ANSWERS)}
    records = {r.task_id: r for r in read_trajectories(run_dir / TRAJECTORIES)}
    missing = [s.task_id for s in report.tasks if s.task_id not in records]
    if missing:
        raise UserError(f"{run_dir / TRAJECTORIES}: no record of task {missing[0]}")
    tasks = _tasks(run_dir, card)
    agent, model = str(card["agent"]), _model(card)
    tools = _tools(card)
    when = _when(run_dir / COMPLETE)
    samples: list[EvalSample] = []
    usage: dict[str, ModelUsage] = {}
    for score in report.tasks:
        record, answer = records[score.task_id], answers.get(score.task_id)
        task = tasks.get(score.task_id)
        prompt = (
            task_prompt(
                str(card.get("current_date", "")),
                task.task.instruction,
                task.task.output_format,
                task.columns,
                task.field_sep,
                task.record_sep,
                tools,
            )
            if task
            else f"SGR-Bench task {score.task_id} (task prompt: the task file was not found)"
        )
        texts = _submitted_texts(run_dir, score.task_id)
        sample_usage = _usage(record)
        _add_usage(usage, sample_usage)
        extras = {k: v for k, v in record.data().items() if k not in TrajectoryRecord.model_fields}
        samples.append(
            EvalSample(
                id=score.task_id,
                epoch=1,
                input=prompt,
                target=task.task.oracle_answer if task else "",
                messages=transcript(prompt, record, answer, model, texts),
                output=ModelOutput.from_content(model, answer or ""),
                scores={SGR_SCORER: sgr_inspect_score(score, record.diagnostics, answer)},
                metadata={
                    "task_id": score.task_id,
                    "variant": score.variant,
                    "domain": score.domain,
                    "cardinality": score.cardinality,
                    "ended_by": record.ended_by,
                    "answer_from": record.answer_from,
                    **extras,
                },
                store={"sgrgym_episode": _episode(record, answer)},
                model_usage=sample_usage,
            )
        )
    overall = report.overall.model_dump()
    metrics = [
        EvalScore(
            name=name,
            scorer=SGR_SCORER,
            scored_samples=len(samples),
            unscored_samples=0,
            metrics={"mean": EvalMetric(name="mean", value=overall[name])},
        )
        for name in SGR_METRICS
        if overall[name] is not None
    ]
    aggregates = json.loads(report.model_dump_json(exclude={"tasks"}))
    pack = str(card.get("pack", ""))
    log = EvalLog(
        status="success",
        eval=EvalSpec(
            created=when,
            task=TASK,
            task_display_name=f"SGR-Bench, sgr run ({agent})",
            dataset=EvalDataset(
                name=f"sgr-bench-{pack}",
                samples=len(samples),
                sample_ids=[s.id for s in samples],
            ),
            solver=f"sgrgym/{agent}",
            model=model,
            config=EvalConfig(),
            packages={"sgrgym": __version__, "inspect_ai": package_version("inspect_ai")},
            metadata={"sgrgym": card, "sgrgym_export": {"run_folder": run_dir.name}},
        ),
        plan=EvalPlan(steps=[EvalPlanStep(solver=f"sgrgym/{agent}")]),
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=metrics,
            metadata={"sgrgym_scores": aggregates},
        ),
        stats=EvalStats(started_at=when, completed_at=when, model_usage=usage),
        samples=samples,
    )
    means = {name: overall[name] for name in SGR_METRICS}
    return log, Exported(Path(), agent, model, len(samples), means, bool(tasks))


def export_run(run_dir: Path, out: Path) -> Exported:
    """Write the Inspect log of the finished SGR run in ``run_dir`` to ``out`` (nothing is
    written on bad input)."""
    _check_out(out)
    log, exported = build_log(run_dir)
    partial = out.with_name(f".{out.stem}.partial{out.suffix}")
    try:
        write_eval_log(log, partial)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return replace(exported, out=out)
