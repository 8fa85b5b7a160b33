"""Agent CLIs end to end: a real CLI from npm, a scripted model server, the MCP server, a run.

The CLI is installed with ``npm ci`` in ``benchmarks/cli-agents/<profile>/`` (see
docs/agent-clis.md); without it these tests skip. The model is a real HTTP server on 127.0.0.1
(:mod:`scripted_model`) whose replies issue tool calls in the CLI's wire format. Where the
machine allows network namespaces (root), the CLI runs in the egress sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_model import Reply, ScriptedModel, ToolCall
from sgr_helpers import write_jsonl
from toy_site import SOUTH_TWO_PAGES, TREES_BY_HEIGHT, ToySite

from sgrgym.cli import main
from sgrgym.sgr.cli_agents.profiles import load_profile, profile_names
from sgrgym.sgr.cli_agents.tools import tool_names
from sgrgym.sgr.sites.build import build_pack
from sgrgym.sgr.tasks import load_tasks

ROOT = Path(__file__).resolve().parent.parent
CLI_ROOT = ROOT / "benchmarks" / "cli-agents"
TREES = "http://toy.sgrgym.test/plants?kind=tree&order=desc&sort=height"
SOUTH = "http://toy.sgrgym.test/plants?zone=south"
ANSWERS = {
    "toy_001": "cedar|tree|40\nbirch|tree|25\nalder|tree|20",
    "toy_002": "cedar|tree|40\ndogwood|shrub|6\nfern|herb|1",
}
SANDBOX = os.geteuid() == 0 and all(shutil.which(t) for t in ("unshare", "ip", "mount"))


def cli_dir(profile: str) -> Path:
    folder = CLI_ROOT / profile
    executable = folder / load_profile(profile)[0].executable
    if not executable.is_file():
        pytest.skip(f"{profile} is not installed: run `npm ci` in {folder} (docs/agent-clis.md)")
    return folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("toy-cli")
    task_file = write_jsonl(root / "constraint.jsonl", [TREES_BY_HEIGHT, SOUTH_TWO_PAGES])
    result = build_pack(root / "packs" / "toy", [ToySite()], load_tasks([task_file]), True)
    return result.pack_dir, task_file


def _task_of(request: dict[str, Any]) -> str:
    text = json.dumps(request.get("messages") or request.get("input"))
    return "toy_002" if "toy_002" in text else "toy_001"


def solve(prefix: str, namespace: str = "") -> Any:
    """A script that searches, fetches the answer pages, submits and answers."""

    def script(done: int, request: dict[str, Any]) -> Reply:
        task = _task_of(request)
        url = TREES if task == "toy_001" else SOUTH
        plan = [
            ToolCall(f"{prefix}search", {"query": "plant register"}, namespace),
            ToolCall(f"{prefix}fetch", {"url": url}, namespace),
            ToolCall(f"{prefix}fetch", {"url": url + "&page=2"}, namespace),
            ToolCall(f"{prefix}submit_answer", {"answer": ANSWERS[task]}, namespace),
        ]
        return Reply(calls=(plan[done],)) if done < len(plan) else Reply(ANSWERS[task])

    return script


def run_args(profile: str, model: ScriptedModel, toy: tuple[Path, Path], out: Path) -> list[str]:
    pack, task_file = toy
    args = [
        "sgr",
        "run",
        "--agent",
        f"cli:{profile}",
        "--cli-dir",
        str(cli_dir(profile)),
        "--base-url",
        model.base_url,
        "--model",
        "scripted",
        "--pack",
        str(pack),
        "--tasks",
        str(task_file),
        "--out",
        str(out),
        "--poll-s",
        "1",
        "--quiet",
    ]
    return args if SANDBOX else [*args, "--no-egress-sandbox"]


def test_profiles_load_and_name_their_findings() -> None:
    assert {"claude-code", "codex", "qwen-code"} <= set(profile_names())
    for name in profile_names():
        profile, sha = load_profile(name)
        assert profile.name == name and len(sha) == 64 and profile.notes


def test_qwen_code_end_to_end(
    toy: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = cli_dir("qwen-code")
    prefix = "mcp__sgrgym__"
    with ScriptedModel(solve(prefix)) as model:
        started = time.monotonic()
        assert main(run_args("qwen-code", model, toy, tmp_path / "one")) == 0
        one_s = time.monotonic() - started
        requests = [r for path, r in model.requests if path.endswith("/chat/completions")]
        started = time.monotonic()
        assert main([*run_args("qwen-code", model, toy, tmp_path / "two"), "--jobs", "2"]) == 0
        two_s = time.monotonic() - started
    print(f"qwen-code e2e: 2 tasks in {one_s:.1f} s (--jobs 1), {two_s:.1f} s (--jobs 2)")
    assert folder.is_dir()
    offered = set()
    for request in requests:
        names = {t["function"]["name"] for t in request.get("tools", [])}
        offered |= {n for n in names if n.startswith("mcp__")}
        assert not names & {"web_fetch", "web_search"}  # the CLI's own web tools are off
    assert offered == {prefix + name for name in tool_names()}  # exactly our tools
    one = tmp_path / "one"
    check_run(one, "qwen-code")
    assert '"type":"result"' in (one / "episodes" / "toy_001" / "cli.stdout").read_text()
    card = json.loads((one / "run.json").read_text())
    assert card["agent"] == "cli:qwen-code" and card["profile"] == "qwen-code"
    assert card["egress"] == ([f"127.0.0.1:{model.port}"] if SANDBOX else [])
    for name in ("answers.jsonl", "trajectories.jsonl", "scores.json"):  # --jobs changes nothing
        assert (one / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert "cli:qwen-code" in capsys.readouterr().out  # the audit table names the agent


def check_run(one: Path, profile: str) -> None:
    """A solved two-task run folder of ``profile``: records, transcripts, scores, audit."""
    records = [json.loads(line) for line in (one / "trajectories.jsonl").read_text().splitlines()]
    for record in records:
        assert record["diagnostics"]["category"] == "solved", record
        tools = ["search", "fetch", "fetch", "submit_answer"]
        assert [s["tool"] for s in record["steps"]] == tools
        assert record["answer_from"] == "final" and record["ended_by"] == "answer"
        assert record["cli"] == {"profile": profile, "exit": "exited", "returncode": 0}
        assert record["transcript_calls_match_steps"]
        assert [c["tool"] for c in record["transcript"] if c["ours"]] == tools
        episode = one / "episodes" / record["task_id"]
        assert (episode / "cli.stdout").stat().st_size > 0  # its transcript
        assert list((episode / "session").rglob("*.jsonl"))  # its own session log
        assert len((episode / "transcript.jsonl").read_text().splitlines()) >= 4
        assert (episode / "mcp" / "steps.jsonl").is_file()
    scores = json.loads((one / "scores.json").read_text())
    assert [t["item_f1"] for t in scores["tasks"]] == [1.0, 1.0]
    assert main(["sgr", "audit", str(one)]) == 0


def test_codex_end_to_end(toy: tuple[Path, Path], tmp_path: Path) -> None:
    cli_dir("codex")
    with ScriptedModel(solve("", "mcp__sgrgym")) as model:
        started = time.monotonic()
        assert main(run_args("codex", model, toy, tmp_path / "one")) == 0
        print(f"codex e2e: 2 tasks in {time.monotonic() - started:.1f} s")
    requests = [r for path, r in model.requests if path.endswith("/responses")]
    assert requests and not [p for p, _ in model.requests if p.endswith("/chat/completions")]
    for request in requests:
        kinds = {t.get("type") for t in request["tools"]}
        assert "web_search" not in kinds  # its own web search is off
        namespaces = [t for t in request["tools"] if t.get("name") == "mcp__sgrgym"]
        assert [t["name"] for t in namespaces[0]["tools"]] == sorted(tool_names())
    check_run(tmp_path / "one", "codex")


def test_claude_code_end_to_end(toy: tuple[Path, Path], tmp_path: Path) -> None:
    cli_dir("claude-code")
    prefix = "mcp__sgrgym__"
    with ScriptedModel(solve(prefix)) as model:
        started = time.monotonic()
        args = run_args("claude-code", model, toy, tmp_path / "one")
        args[args.index(model.base_url)] = model.base_url.removesuffix("/v1")  # Anthropic's form
        assert main(args) == 0
        print(f"claude-code e2e: 2 tasks in {time.monotonic() - started:.1f} s")
    requests = [r for path, r in model.requests if path.split("?")[0].endswith("/messages")]
    assert requests and not [p for p, _ in model.requests if p.endswith("/chat/completions")]
    offered = set()
    for request in requests:
        names = {t["name"] for t in request.get("tools", [])}
        offered |= {n for n in names if n.startswith("mcp__")}
        assert not names & {"WebSearch", "WebFetch"}  # denied: never offered to the model
    assert offered == {prefix + name for name in tool_names()}  # exactly our tools
    check_run(tmp_path / "one", "claude-code")


def test_a_stalled_cli_is_stopped_and_its_submitted_answer_scored(
    toy: tuple[Path, Path], tmp_path: Path
) -> None:
    cli_dir("qwen-code")
    prefix = "mcp__sgrgym__"

    def script(done: int, request: dict[str, Any]) -> Reply:
        if done == 0:
            return Reply(calls=(ToolCall(f"{prefix}submit_answer", {"answer": "cedar|tree|40"}),))
        time.sleep(120)  # the model never answers again
        return Reply("too late")

    pack = toy[0]
    one_task = write_jsonl(tmp_path / "one.jsonl", [TREES_BY_HEIGHT])
    with ScriptedModel(script) as model:
        args = run_args("qwen-code", model, (pack, one_task), tmp_path / "stall")
        assert main([*args, "--stall-s", "30"]) == 0  # from the start too: leave time to start
    record = json.loads((tmp_path / "stall" / "trajectories.jsonl").read_text())
    assert record["ended_by"] == "budget: stall" and record["cli"]["exit"] == "budget: stall"
    assert record["answer_from"] == "submitted"
    assert json.loads((tmp_path / "stall" / "answers.jsonl").read_text())["answer"] == (
        "cedar|tree|40"
    )


def test_a_cli_over_the_tool_call_cap_is_stopped(toy: tuple[Path, Path], tmp_path: Path) -> None:
    cli_dir("qwen-code")
    prefix = "mcp__sgrgym__"

    def script(done: int, request: dict[str, Any]) -> Reply:
        if done == 0:
            return Reply(calls=(ToolCall(f"{prefix}submit_answer", {"answer": "cedar|tree|40"}),))
        return Reply(calls=(ToolCall(f"{prefix}search", {"query": f"plants {done}"}),))  # forever

    one_task = write_jsonl(tmp_path / "one.jsonl", [TREES_BY_HEIGHT])
    with ScriptedModel(script) as model:
        args = run_args("qwen-code", model, (toy[0], one_task), tmp_path / "cap")
        assert main([*args, "--max-tool-calls", "3"]) == 0
    record = json.loads((tmp_path / "cap" / "trajectories.jsonl").read_text())
    assert (
        record["ended_by"] == "budget: tool calls" and record["cli"]["exit"] == record["ended_by"]
    )
    assert record["tool_calls"] == 3 and len(record["steps"]) == 3
    assert record["answer_from"] == "submitted"


@pytest.mark.slow
def test_real_model_end_to_end(toy: tuple[Path, Path], tmp_path: Path) -> None:
    """A real local model behind the CLI (e.g. `sgrgym llm serve` or llama-server): the run
    folder is complete whatever the model answers. Set SGRGYM_LLM_BASE_URL (…/v1) and
    SGRGYM_LLM_MODEL; SGRGYM_LLM_CLI picks the profile (default qwen-code)."""
    base_url, model = os.environ.get("SGRGYM_LLM_BASE_URL"), os.environ.get("SGRGYM_LLM_MODEL")
    if not base_url or not model:
        pytest.skip("set SGRGYM_LLM_BASE_URL and SGRGYM_LLM_MODEL to a local model server")
    profile = os.environ.get("SGRGYM_LLM_CLI", "qwen-code")
    pack = toy[0]
    one_task = write_jsonl(tmp_path / "one.jsonl", [TREES_BY_HEIGHT])
    out = tmp_path / "real"
    args = [
        "sgr",
        "run",
        "--agent",
        f"cli:{profile}",
        "--cli-dir",
        str(cli_dir(profile)),
        "--base-url",
        base_url,
        "--model",
        model,
        "--pack",
        str(pack),
        "--tasks",
        str(one_task),
        "--out",
        str(out),
        "--max-wall-s",
        "1800",
        "--stall-s",
        "900",
        "--quiet",
    ]
    assert main(args if SANDBOX else [*args, "--no-egress-sandbox"]) == 0
    record = json.loads((out / "trajectories.jsonl").read_text())
    assert record["diagnostics"]["category"]
    assert (out / "scores.json").is_file() and (out / "complete.json").is_file()
    assert (out / "episodes" / "toy_001" / "cli.stdout").stat().st_size > 0
