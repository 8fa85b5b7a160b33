"""sgrgym inside Inspect AI: the ``sgrgym/sgr_bench`` and ``sgrgym/seeker_gym`` tasks run with
Inspect's mock model (scripted outputs, no network: the network guard of conftest is on), and
``sgrgym export-inspect`` of an oracle run read back with Inspect's reader.

Scripted outputs carry their token usage: without it, Inspect's mock model counts tokens with
tiktoken, whose encoding would be downloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "inspect_ai",
    reason='Inspect AI is not installed (pip install -c constraints.txt -e ".[inspect]")',
)

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, resolve_sample_attachments
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.numbers import fixed
from sgrgym.sgr.cli_agents.episode import episode_prompt
from sgrgym.sgr.cli_agents.tools import tool_specs, tools_sha256
from sgrgym.sgr.make import SgrWorld, open_world
from sgrgym.sgr.prompt import template_sha256
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.reference import reference_of, walk

# Inspect's own retry policy still passes tenacity a deprecated argument.
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated")

MOCK = "mockllm/model"
USAGE = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)


def scripted(*outputs: ModelOutput) -> Any:
    """Inspect's mock model playing ``outputs`` in turn (each with its token usage)."""
    for output in outputs:
        output.usage = USAGE
    return get_model(MOCK, custom_outputs=list(outputs))


def call(tool: str, **arguments: str) -> ModelOutput:
    return ModelOutput.for_tool_call(MOCK, tool, arguments)


def reply(text: str) -> ModelOutput:
    return ModelOutput.from_content(MOCK, text)


def run(task: Any, model: Any, log_dir: Path, **task_args: Any) -> EvalLog:
    [log] = inspect_eval(
        task, task_args=task_args, model=model, log_dir=str(log_dir), display="none"
    )
    assert log.status == "success", log.error
    return log


@pytest.fixture(scope="module")
def world() -> Iterator[SgrWorld]:
    world = open_world(task_ids=["cwe_001", "cwe_002"])
    yield world
    world.env.close()
    world.env.snapshot.close()


def answer_page(world: SgrWorld, task_id: str) -> str:
    """The address of the task's (last) answer-bearing reference state."""
    task = next(t for t in world.tasks if t.task_id == task_id)
    reference = reference_of(task)
    assert reference is not None
    model = world.env.sites[reference.site]
    states = walk(model, reference.path)
    return model.url(states[reference.answer.states[-1] % len(states)])


def sgr_score_of(log: EvalLog) -> Any:
    assert log.samples is not None
    [sample] = log.samples
    return sample, sample.scores["sgr_score"]


def test_entry_point_registers_the_tasks(tmp_path: Path) -> None:
    """``inspect eval sgrgym/sgr_bench`` finds the task through the entry point (run from
    another folder: in the checkout, Inspect reads the checkout's own egg-info and names the
    tasks without their package)."""
    [ep] = [ep for ep in entry_points(group="inspect_ai") if ep.name == "sgrgym"]
    assert ep.value == "sgrgym.inspect._registry"
    script = """
import sys
from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from sgrgym.core.netguard import loopback_only
out = ModelOutput.from_content("mockllm/model", "NONE")
out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
with loopback_only():
    [log] = eval("sgrgym/sgr_bench", task_args={"task_ids": "cwe_001"}, log_dir=sys.argv[1],
                 model=get_model("mockllm/model", custom_outputs=[out]), display="none")
print(log.status, log.eval.task, log.samples[0].scores["sgr_score"].value["item_f1"])
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "logs")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["success", "sgrgym/sgr_bench", "0.0"]


def test_sgr_bench_scripted_solve_scores_one(world: SgrWorld, tmp_path: Path) -> None:
    from sgrgym.inspect.sgr_task import sgr_bench

    task = next(t for t in world.tasks if t.task_id == "cwe_001")
    model = scripted(
        call("fetch", url=answer_page(world, "cwe_001")),
        call("submit_answer", answer=task.task.oracle_answer),
        reply("Done: the answer is submitted."),
    )
    log = run(sgr_bench(task_ids="cwe_001"), model, tmp_path)
    sample, score = sgr_score_of(log)
    assert score.value == {"item_f1": 1.0, "row_f1": 1.0, "poa": 1.0}
    assert score.answer == task.task.oracle_answer
    assert score.metadata["category"] == "solved"
    assert all(row["matched"] for row in score.metadata["rows"])
    assert sample.metadata == {
        "task_id": "cwe_001",
        "variant": "CG",
        "domain": task.domain,
        "cardinality": len(task.gold_canon),
        "task_file": task.source,
    }
    assert sample.input == episode_prompt(world.env, task, False)
    episode = sample.store["sgrgym_episode"]
    assert (episode["ended_by"], episode["answer_from"], episode["tool_calls"]) == (
        "answer",
        "final",
        2,
    )
    assert [s["tool"] for s in episode["steps"]] == ["fetch", "submit_answer", "answer"]
    tool_results = [m.text for m in sample.messages if m.role == "tool"]
    assert tool_results[0].startswith(f"{answer_page(world, 'cwe_001')}\nHTTP status 200\n")
    # the tools offered are the MCP server's: names, descriptions and schemas of tools.v2.json
    events = resolve_sample_attachments(sample, "full").events
    [first_call] = [e for e in events if e.event == "model"][:1]
    offered = {t.name: t for t in first_call.tools}
    specs = {s.name: s for s in tool_specs()}
    assert set(offered) == set(specs) == {"search", "fetch", "pdf", "submit_answer"}
    for name, spec in specs.items():
        assert offered[name].description == spec.description
        assert offered[name].parameters.model_dump(exclude_none=True) == spec.input_schema
    # every pin in the eval metadata
    pins = log.eval.metadata["sgrgym"]
    assert pins["pack_sha256"] == world.env.snapshot.pin
    assert pins["prompt_sha256"] == template_sha256()
    assert pins["tools_sha256"] == tools_sha256()
    assert pins["task_ids"] == ["cwe_001"]
    for name, digest in pins["task_files"].items():
        assert sha256_file(next(f for f in world.files if f.as_posix().endswith(name)))[0] == digest
    assert pins["budget"] == {"max_wall_s": 6000.0, "stall_s": 3000.0, "max_tool_calls": None}
    assert {s.name: s.metrics["mean"].value for s in log.results.scores} == {
        "item_f1": 1.0,
        "row_f1": 1.0,
        "poa": 1.0,
    }
    assert log.eval.config.time_limit == 6000


def test_sgr_bench_wrong_answer_scores_as_sgrgym(world: SgrWorld, tmp_path: Path) -> None:
    from sgrgym.inspect.sgr_task import sgr_bench

    task = next(t for t in world.tasks if t.task_id == "cwe_002")
    rows = task.task.oracle_answer.splitlines()
    wrong = "\n".join([*reversed(rows[1:]), rows[0].replace("CWE-", "CWE-9")])
    model = scripted(call("search", query="CWE weaknesses catalogue"), reply(wrong))
    log = run(sgr_bench(task_ids=["cwe_002"]), model, tmp_path)
    sample, score = sgr_score_of(log)
    expected = score_answer(task, wrong)
    assert expected.item_f1 < 1.0
    assert score.value == {
        "item_f1": expected.item_f1,
        "row_f1": expected.row_f1,
        "poa": expected.poa,
    }
    assert score.answer == wrong
    assert score.metadata["rows"] == [r.model_dump(mode="json") for r in expected.rows]
    assert score.metadata["category"] not in ("solved", "no reference")
    assert sample.store["sgrgym_episode"]["answer_from"] == "final"


def test_sgr_bench_budget_and_text_calls(world: SgrWorld, tmp_path: Path) -> None:
    from sgrgym.inspect.sgr_task import sgr_bench

    task = next(t for t in world.tasks if t.task_id == "cwe_001")
    text_call = json.dumps({"name": "submit_answer", "arguments": {"answer": "CWE-431|x|y"}})
    model = scripted(
        reply(f"```json\n{text_call}\n```"),  # a call written in the text, as small models do
        call("fetch", url="http://cwe.sgrgym.test/"),  # over the cap of one tool call
        reply("never asked"),
    )
    log = run(sgr_bench(task_ids="cwe_001", max_tool_calls=1), model, tmp_path)
    sample, score = sgr_score_of(log)
    episode = sample.store["sgrgym_episode"]
    assert episode["ended_by"] == "budget: tool calls"
    assert (episode["answer"], episode["answer_from"]) == ("CWE-431|x|y", "submitted")
    expected = score_answer(task, "CWE-431|x|y")
    assert score.value["item_f1"] == expected.item_f1
    assert sample.messages[2].text.startswith("Result of submit_answer:\nAnswer recorded.")


def test_sgr_bench_time_limit_scores_the_last_submission(world: SgrWorld, tmp_path: Path) -> None:
    import anyio

    from sgrgym.inspect.sgr_task import sgr_bench

    task = next(t for t in world.tasks if t.task_id == "cwe_001")
    first = call("submit_answer", answer=task.task.oracle_answer)
    first.usage = USAGE

    turns = iter([first])

    async def model_turn(*args: Any) -> ModelOutput:
        output = next(turns, None)
        if output is None:
            await anyio.sleep(30)  # a model that never answers: the time limit ends the sample
        assert output is not None
        return output

    model = get_model(MOCK, custom_outputs=model_turn)
    log = run(sgr_bench(task_ids="cwe_001", max_wall_s=1), model, tmp_path)
    sample, score = sgr_score_of(log)
    assert sample.limit is not None and sample.limit.type == "time"
    episode = sample.store["sgrgym_episode"]
    assert (episode["ended_by"], episode["answer_from"]) == ("budget: wall", "submitted")
    assert score.value == {"item_f1": 1.0, "row_f1": 1.0, "poa": 1.0}


def test_seeker_gym_matches_the_environment(tmp_path: Path) -> None:
    import sgrgym
    from sgrgym.inspect.seeker_task import seeker_gym
    from sgrgym.seeker.llm_agent import parse_queries

    try:
        env = sgrgym.make_seeker_env(horizon=3)
    except (UserError, ImportError) as exc:
        pytest.skip(f"the SeekerGym demo corpus, model or extra is missing: {exc}")
    doc = env.store.documents()[0]
    replies = [
        "Query: authenticate with the REMOTE_USER header\nQuery: RemoteUserMiddleware",
        "1. single sign-on on an intranet web server",
        '{"queries": ["RemoteUserBackend create_unknown_user", "logout of external auth"]}',
    ]
    env.reset(doc, 0)
    expected = []
    for text in replies:
        expected.append(fixed(env.step(parse_queries(text, 2).queries).completeness, 6))
    model = scripted(*(reply(text) for text in replies))
    log = run(seeker_gym(documents=doc, steps=3, belief="trajectory"), model, tmp_path)
    assert log.samples is not None
    [sample] = log.samples
    score = sample.scores["seeker_score"]
    assert score.metadata["completeness"] == expected
    assert score.value == expected[-1] == score.metadata["final_completeness"]
    assert [len(step["queries"]) for step in score.metadata["steps"]] == [2, 1, 2]
    assert [m.role for m in sample.messages] == ["system"] + ["user", "assistant"] * 3
    pins = log.eval.metadata["sgrgym"]
    assert (pins["belief"], pins["steps"], pins["queries_per_step"], pins["docs"]) == (
        "trajectory",
        3,
        2,
        [doc],
    )
    assert pins["store_vectors_sha256"] == env.store.manifest.vectors_sha256


def test_export_inspect_of_an_oracle_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "oracle"
    oracle = ["sgr", "run", "--agent", "oracle", "--task", "cwe_001", "cwe_002"]
    assert main([*oracle, "--out", str(run_dir)]) == 0
    out = tmp_path / "oracle.eval"
    capsys.readouterr()
    assert main(["export-inspect", str(run_dir), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    log = read_eval_log(str(out))
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    card = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert log.eval.metadata["sgrgym"] == card
    assert {s.name: s.metrics["mean"].value for s in log.results.scores} == {
        name: scores["overall"][name] for name in ("item_f1", "row_f1", "poa")
    }
    assert log.samples is not None
    assert [s.id for s in log.samples] == ["cwe_001", "cwe_002"]
    for sample, expected in zip(log.samples, scores["tasks"], strict=True):
        score = sample.scores["sgr_score"]
        assert score.value == {k: expected[k] for k in ("item_f1", "row_f1", "poa")}
        assert score.metadata["rows"] == expected["rows"]
        assert score.metadata["category"] == "solved"
        calls = [
            c.function for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []
        ]
        assert calls[0] == "fetch" and len(calls) == sample.store["sgrgym_episode"]["tool_calls"]
    # the .json format too
    assert main(["export-inspect", str(run_dir), "--out", str(tmp_path / "oracle.json")]) == 0
    assert read_eval_log(str(tmp_path / "oracle.json")).results == log.results


def test_export_inspect_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "oracle"
    assert (
        main(["sgr", "run", "--agent", "oracle", "--task", "cwe_001", "--out", str(run_dir)]) == 0
    )
    capsys.readouterr()
    cases = [
        (tmp_path, tmp_path / "a.eval", "not a run folder"),
        (run_dir, tmp_path / "missing" / "a.eval", "no folder"),
        (run_dir, tmp_path / "a.txt", ".eval or .json"),
    ]
    (run_dir / "complete.json").rename(tmp_path / "complete.json")
    cases.append((run_dir, tmp_path / "b.eval", "unfinished"))
    for folder, out, message in cases:
        assert main(["export-inspect", str(folder), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["complete.json", "oracle"]
