"""The SGR LLM agent end to end: ``sgr run --agent llm`` on demo tasks against a scripted
chat-completions server on 127.0.0.1 (native tool calls and calls written as fenced JSON),
recorded, then replayed with every connection refused."""

from __future__ import annotations

import json
import re
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatHandler, scripted

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.core.loopback import serve_http
from sgrgym.llm.chat import ChatClient
from sgrgym.llm.prices import load_prices
from sgrgym.llm.usage import LOG, CallMeter, LLMTotals, add_totals
from sgrgym.sgr.env import Episode, SgrEnv
from sgrgym.sgr.llm_agent import LLM_TOTALS, LLMAgent, LLMAgentSettings, cut
from sgrgym.sgr.render import load_renderer
from sgrgym.sgr.sites.model import site_models
from sgrgym.sgr.tasks import ScoringTask, load_tasks
from sgrgym.sgr.watchdog import watch_episode
from sgrgym.snapshot.replay import Snapshot

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "snapshots" / "demo"
RESULTS = (
    "answers.jsonl",
    "trajectories.jsonl",
    "scores.json",
    LLM_TOTALS,
    "run.json",
    "complete.json",
)
TASKS_TAKEN = 8  # the first constraint and goal variants of each site's files, 8 in all
RESULT_CHARS = 1200
PRICES = {"models": {"tiny-sgr": {"prompt": 0.5, "completion": 2.0}}}

if not (PACK / "warc").is_dir():
    pytest.skip("the demo pack is not built (sgrgym sgr build-packs)", allow_module_level=True)


def demo_tasks(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A task file of demo tasks, and each task's reference answer by instruction."""
    records: list[dict[str, Any]] = []
    for site in ("cwe", "diseases", "elements", "places"):
        for name in ("constraint.jsonl", "goal.jsonl"):
            line = (ROOT / "tasks" / "sgr" / site / name).read_text("utf-8").splitlines()[0]
            records.append(json.loads(line))
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records[:TASKS_TAKEN]), "utf-8")
    return path, {r["instruction"]: r["oracle_answer"] for r in records[:TASKS_TAKEN]}


def call(name: str, arguments: dict[str, str], turn: int) -> dict[str, Any]:
    return {
        "id": f"c{turn}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def script_for(answers: dict[str, str]) -> Any:
    """A model that searches (native call), fetches the first hit (JSON in the text), calls a
    tool it does not have (malformed), submits the reference answer (even-numbered tasks) and
    ends with a final reply (odd ones: the answer in a fence)."""
    order = sorted(answers)

    def script(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prompt = messages[0]["content"]
        instruction = next(i for i in order if i in prompt)
        answer, even = answers[instruction], order.index(instruction) % 2 == 0
        turn = sum(m["role"] == "assistant" for m in messages)
        usage = {"prompt_tokens": len(json.dumps(messages)) // 4, "completion_tokens": 9 + turn}
        if turn == 0:
            return {
                "tool_calls": [call("search", {"query": instruction[:80]}, turn)],
                "usage": usage,
            }
        if turn == 1:
            url = re.search(r"http://\S+", messages[-1]["content"])
            assert url is not None
            text = json.dumps({"name": "fetch", "arguments": {"url": url.group(0)}})
            return {"content": f"I will open it.\n```json\n{text}\n```", "usage": usage}
        if turn == 2:
            return {"tool_calls": [call("browse", {"url": "x"}, turn)], "usage": usage}
        if turn == 3 and even:
            return {"tool_calls": [call("submit_answer", {"answer": answer}, turn)], "usage": usage}
        return {"content": "Submitted." if even else f"```\n{answer}\n```", "usage": usage}

    return script


def run_llm(
    out: Path, cache: Path, url: str, tasks: Path, prices: Path, *extra: str, mode: str = "record"
) -> int:
    return main(
        [
            "sgr",
            "run",
            "--agent",
            "llm",
            "--pack",
            str(PACK),
            "--tasks",
            str(tasks),
            "--out",
            str(out),
            "--llm-model",
            "tiny-sgr",
            "--base-url",
            url + "/v1",
            "--llm-cache",
            str(cache),
            "--llm-mode",
            mode,
            "--prices",
            str(prices),
            "--llm-result-chars",
            str(RESULT_CHARS),
            "--quiet",
            *extra,
        ]
    )


def refuse_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a connection was attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def same_results(one: Path, two: Path) -> None:
    for name in RESULTS:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One recorded run (jobs 1) and one recorded with 8 jobs into another cache."""
    root = tmp_path_factory.mktemp("sgr-llm")
    tasks, answers = demo_tasks(root)
    prices = root / "prices.json"
    prices.write_text(json.dumps(PRICES), "utf-8")
    handler: type[ChatHandler] = scripted(script_for(answers))
    with serve_http(handler) as url:
        assert run_llm(root / "one", root / "one.sqlite", url, tasks, prices) == 0
        requests = len(handler.received)
        assert (
            run_llm(root / "eight", root / "eight.sqlite", url, tasks, prices, "--jobs", "8") == 0
        )
    return {
        "root": root,
        "url": url,
        "tasks": tasks,
        "prices": prices,
        "answers": answers,
        "requests": handler.received[:requests],
    }


def trajectories(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def test_llm_episodes_use_both_tool_call_forms_and_the_shared_tools(
    recorded: dict[str, Any],
) -> None:
    out = recorded["root"] / "one"
    records = trajectories(out)
    assert len(records) == TASKS_TAKEN
    for record in records:
        tools = [s["tool"] for s in record["steps"]]
        assert tools[:2] == ["search", "fetch"], tools  # the env's own trajectory steps
        assert "operate" not in tools  # site operations are off by default
        llm = record["llm"]
        assert record["diagnostics"]["category"]  # appendix G labels, as for built-in agents
        assert [c["tool_call_source"] for c in llm["calls"]][:3] == ["native", "text", "native"]
        assert llm["malformed"] == [
            "turn 3: no tool 'browse'; tools: search, fetch, pdf, submit_answer"
        ]
        assert llm["totals"]["malformed_replies"] == 1
        assert llm["totals"]["text_tool_calls"] == 1
        assert llm["answer_source"] in ("submit_answer", "last message")
        assert all(
            c["requested_model"] == "tiny-sgr" and c["model"] == "served-model-7b"
            for c in llm["calls"]
        )
        assert all(c["params"] == {"seed": 0, "temperature": 0.0} for c in llm["calls"])
    sources = {r["llm"]["answer_source"] for r in records}
    assert sources == {"submit_answer", "last message"}
    # Every scripted answer is the reference answer: submitted or in the final reply.
    scores = json.loads((out / "scores.json").read_text())
    assert scores["overall"]["item_f1"] == 1.0
    # The tools offered are the MCP server's (one schema file), operate not among them.
    first = recorded["requests"][0]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "search",
        "fetch",
        "pdf",
        "submit_answer",
    ]
    assert "operate(" not in first["messages"][0]["content"]


def test_sgr_audit_reads_llm_runs(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["sgr", "audit", "--json", str(recorded["root"] / "one")]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["agent"] == "llm" and run["failures"] + run["solved"] == TASKS_TAKEN


def test_jobs_change_nothing_for_built_in_agents(tmp_path: Path) -> None:
    tasks, _ = demo_tasks(tmp_path)
    for jobs in ("1", "4"):
        argv = [
            "sgr",
            "run",
            "--agent",
            "explore",
            "--pack",
            str(PACK),
            "--tasks",
            str(tasks),
            "--out",
            str(tmp_path / jobs),
            "--jobs",
            jobs,
            "--quiet",
        ]
        assert main(argv) == 0
    for name in ("answers.jsonl", "trajectories.jsonl", "scores.json", "complete.json"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "4" / name).read_bytes()


def test_tool_results_are_cut_and_old_ones_elided(recorded: dict[str, Any]) -> None:
    for body in recorded["requests"]:
        results = [
            m
            for m in body["messages"]
            if m["role"] == "tool"
            or (m["role"] == "user" and m["content"].startswith("Result of "))
        ]
        full = [m for m in results if "result removed to keep" not in m["content"]]
        assert len(full) <= 2
        longest = len(cut("x" * (RESULT_CHARS + 99999), RESULT_CHARS))
        for message in full:
            text = re.sub(r"^Result of \w+:\n", "", message["content"])
            assert len(text) <= longest
    assert any(
        "more characters cut" in m["content"]
        for b in recorded["requests"]
        for m in b["messages"]
        if m["role"] == "tool"
    )
    assert any(
        "result removed to keep" in str(m["content"])
        for b in recorded["requests"]
        for m in b["messages"]
    )


def test_totals_add_up(recorded: dict[str, Any]) -> None:
    out = recorded["root"] / "one"
    records = trajectories(out)
    run = LLMTotals.model_validate_json((out / LLM_TOTALS).read_text())
    parts = [LLMTotals.model_validate(r["llm"]["totals"]) for r in records]
    assert run == add_totals(parts)
    calls = [c for r in records for c in r["llm"]["calls"]]
    assert run.calls == len(calls) == len(recorded["requests"])
    assert run.prompt_tokens == sum(c["prompt_tokens"] for c in calls)
    assert run.completion_tokens == sum(c["completion_tokens"] for c in calls)
    price = PRICES["models"]["tiny-sgr"]
    expected = (
        sum(
            c["prompt_tokens"] * price["prompt"] + c["completion_tokens"] * price["completion"]
            for c in calls
        )
        / 1e6
    )
    assert run.cost_usd == pytest.approx(expected, abs=1e-9) and run.cost_usd > 0
    assert run.unpriced_calls == 0 and run.malformed_replies == TASKS_TAKEN
    assert run.text_tool_calls == TASKS_TAKEN
    assert run.native_tool_calls == 2 * TASKS_TAKEN + TASKS_TAKEN // 2
    log = json.loads((out / LOG).read_text())
    assert log["mode"] == "record" and log["calls"] == run.calls and log["from_cache"] == 0
    card = (out / "run.json").read_text()
    assert '"record"' not in card and "llm_mode" not in card  # the mode is in the log only


def test_replay_offline_is_byte_identical_and_a_changed_prompt_misses(
    recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, url = recorded["root"], recorded["url"]
    refuse_connections(monkeypatch)
    args = (recorded["tasks"], recorded["prices"])
    assert run_llm(root / "replay", root / "one.sqlite", url, *args, mode="replay") == 0
    same_results(root / "one", root / "replay")
    log = json.loads((root / "replay" / LOG).read_text())
    assert log["mode"] == "replay" and log["from_cache"] == log["calls"]
    assert log["network_attempts"] == 0
    # 8 jobs: recorded and replayed, the same results as one job.
    same_results(root / "one", root / "eight")
    assert (
        run_llm(root / "replay8", root / "one.sqlite", url, *args, "--jobs", "8", mode="replay")
        == 0
    )
    same_results(root / "one", root / "replay8")
    # A changed prompt (another date) is not in the cache: a clear error, exit 2.
    capsys.readouterr()
    code = run_llm(
        root / "changed",
        root / "one.sqlite",
        url,
        *args,
        "--current-date",
        "2026-02-02",
        mode="replay",
    )
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(
        r"chat completion not in the cache .*one\.sqlite \(request [0-9a-f]{64}, "
        r"model tiny-sgr, episode \w+\)",
        err,
    ), err
    assert "Traceback" not in err
    answers = root / "changed" / "answers.jsonl"
    assert not answers.exists() or not answers.read_text()  # the episode is not recorded


def test_llm_agent_needs_its_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "sgr",
            "run",
            "--agent",
            "llm",
            "--pack",
            str(PACK),
            "--out",
            str(tmp_path),
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m",
        ]
    )
    assert code == 2 and "--llm-cache FILE" in capsys.readouterr().err
    code = main(
        [
            "sgr",
            "run",
            "--agent",
            "llm",
            "--pack",
            str(PACK),
            "--out",
            str(tmp_path),
            "--llm-cache",
            str(tmp_path / "c.sqlite"),
        ]
    )
    assert code == 2 and "needs a model" in capsys.readouterr().err


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[SgrEnv, ScoringTask]]:
    snapshot = Snapshot.open(PACK)
    env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), renderer=load_renderer(snapshot))
    (task,) = load_tasks([demo_tasks(Path(tempfile.mkdtemp()))[0]])[:1]
    with snapshot:
        yield env, task
    env.close()


def episode_with(
    world: tuple[SgrEnv, ScoringTask], tmp_path: Path, script: Any, max_turns: int = 6
) -> tuple[Episode, dict[str, Any]]:
    env, task = world
    settings = LLMAgentSettings(
        model="tiny-sgr", base_url="", sampling={}, seed=1, max_turns=max_turns
    )
    with serve_http(scripted(script)) as url:
        client = ChatClient(url, "tiny-sgr", cache_path=tmp_path / "c.sqlite", mode="record")
        agent = LLMAgent(CallMeter(client, load_prices()), settings)
        try:
            episode = watch_episode(env, agent, env.reset(task))
        finally:
            agent.close()
    extra = agent.episode_extra(task.task_id)["llm"]
    assert isinstance(extra, dict)
    return episode, extra


def test_malformed_replies_are_counted_and_the_episode_goes_on(
    world: tuple[SgrEnv, ScoringTask], tmp_path: Path
) -> None:
    replies: list[dict[str, Any]] = [
        {"content": ""},
        {"content": '<tool_call>{"name": "search", "arguments": {"query": </tool_call>'},
        {
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "fetch", "arguments": "{not json"},
                }
            ]
        },
        {"tool_calls": [call("search", {"q": "missing the query argument"}, 3)]},
        {"content": "CWE-1|Name|2006-07-19"},
    ]

    def script(body: dict[str, Any]) -> dict[str, Any]:
        return replies[sum(m["role"] == "assistant" for m in body["messages"])]

    episode, llm = episode_with(world, tmp_path, script)
    assert episode.ended_by == "answer" and episode.answer == "CWE-1|Name|2006-07-19"
    assert llm["answer_source"] == "last message"
    assert llm["malformed"] == [
        "turn 1: empty reply",
        "turn 2: unreadable tool call",
        "turn 3: fetch: arguments are not a JSON object",
        "turn 4: search: unknown argument(s) ['q']; takes ['query']",
    ]
    assert llm["totals"]["malformed_replies"] == 4 and llm["totals"]["calls"] == 5
    assert episode.tool_calls == 0  # nothing malformed reached the environment


def test_turn_limit_ends_the_episode_with_the_last_submission(
    world: tuple[SgrEnv, ScoringTask], tmp_path: Path
) -> None:
    def script(body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn == 1:
            return {"tool_calls": [call("submit_answer", {"answer": "CWE-2|x|y"}, turn)]}
        return {"tool_calls": [call("search", {"query": f"weakness {turn}"}, turn)]}

    episode, llm = episode_with(world, tmp_path, script, max_turns=4)
    assert episode.ended_by == "budget: model turns"
    assert (episode.answer, episode.answer_from) == ("CWE-2|x|y", "submitted")
    assert llm["totals"]["calls"] == 4 and llm["totals"]["native_tool_calls"] == 4
    assert [s.tool for s in episode.trajectory] == ["search", "submit_answer", "search", "search"]


def test_a_replay_miss_inside_an_episode_is_the_run_s_error(
    world: tuple[SgrEnv, ScoringTask], tmp_path: Path
) -> None:
    env, task = world
    cache = tmp_path / "empty.sqlite"
    ChatClient("http://127.0.0.1:9", "m", cache_path=cache, mode="record").close()
    client = ChatClient("http://127.0.0.1:9", "m", cache_path=cache, mode="replay")
    settings = LLMAgentSettings(model="m", base_url="", sampling={}, seed=None)
    agent = LLMAgent(CallMeter(client, load_prices()), settings)
    with pytest.raises(UserError, match=rf"model m, episode {task.task_id}"):
        watch_episode(env, agent, env.reset(task))
    agent.close()


def test_site_operations_only_on_request(world: tuple[SgrEnv, ScoringTask], tmp_path: Path) -> None:
    env, task = world
    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        if len(body["messages"]) == 1:
            home = {"site": "cwe.sgrgym.test", "op": "goto", "value": "http://cwe.sgrgym.test/"}
            return {"tool_calls": [call("operate", home, 0)]}
        return {"content": "NONE"}

    settings = LLMAgentSettings(model="m", base_url="", sampling={}, seed=2, site_ops=True)
    with serve_http(scripted(script)) as url:
        client = ChatClient(url, "m", cache_path=tmp_path / "c.sqlite", mode="record")
        agent = LLMAgent(CallMeter(client, load_prices()), settings)
        episode = watch_episode(env, agent, env.reset(task))
        agent.close()
    assert "operate" in [t["function"]["name"] for t in seen[0]["tools"]]
    assert "operate(" in seen[0]["messages"][0]["content"]
    assert [s.tool for s in episode.trajectory] == ["goto", "answer"]
    assert "HTTP status 200" in seen[1]["messages"][-1]["content"]
