"""An agent CLI session that prints or writes what it should not: a malformed transcript line,
a forged or broken live-log line, endless output, a secret on the command line. Each is
recorded for that episode; none stops the run."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sgrgym.core.errors import UserError
from sgrgym.sgr.cli_agents import runner
from sgrgym.sgr.cli_agents.episode import STEPS, read_live, trajectory_of
from sgrgym.sgr.cli_agents.profiles import load_profile
from sgrgym.sgr.cli_agents.transcripts import parse_events


def test_a_tool_call_with_arguments_of_any_shape_is_read() -> None:
    events = [
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "a", "name": "mcp__sgrgym__fetch", "input": [1, 2]},
            {"type": "tool_use", "id": "b", "name": "mcp__sgrgym__search", "input": "not json"},
            {"type": "tool_use", "id": "c", "name": "Bash", "input": 7},
            {"type": "tool_use", "id": "d", "name": "mcp__sgrgym__fetch", "input": None},
        ]}},
        {"type": "result", "result": "done"},
    ]  # fmt: skip
    lines = [(0.0, json.dumps(e)) for e in events] + [(0.1, "{torn")]
    transcript = parse_events(lines, "stream-json")
    assert [c.arguments for c in transcript.calls] == [
        {"raw": [1, 2]},
        {"raw": "not json"},
        {"raw": 7},
        {},
    ]
    item = {"type": "mcp_tool_call", "server": "sgrgym", "tool": "fetch", "arguments": [3]}
    codex = json.dumps({"type": "item.completed", "item": item})
    assert parse_events([(0.0, codex)], "codex-json").calls[0].arguments == {"raw": [3]}


def test_lines_the_server_did_not_write_are_noted_not_raised(tmp_path: Path) -> None:
    good = {
        "t": 1.0,
        "step": {"step": 1, "tool": "fetch", "args": {"url": "http://x.test/"}},
        "tool_calls": 1,
        "submitted_answers": 0,
    }
    forged = [
        "not json at all",
        json.dumps([1, 2]),
        json.dumps({"step": 5}),
        json.dumps({**good, "tool_calls": "many"}),
        json.dumps({**good, "step": {"nonsense": True}}),
    ]
    lines = [json.dumps(good), *forged]
    (tmp_path / STEPS).write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe\n")
    log = read_live(tmp_path)
    assert log.tool_calls == 1 and len(log.steps) == 2
    steps = trajectory_of(log)
    assert [s.tool for s in steps] == ["fetch"]
    assert len(log.malformed) == 6 and log.malformed[0].startswith("line 2: ")  # 5 + bad UTF-8
    assert log.malformed[-1].startswith("step 2: ")


def test_a_sessions_output_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "OUTPUT_CAP", 1000)
    monkeypatch.setattr(runner, "_READ", 64)
    stream = io.BytesIO(b'{"type": "result", "result": "ok"}\n' + b"x" * 5000 + b"\n")
    lines = runner._Lines(stream, tmp_path / "cli.stdout", time.monotonic())
    lines.join(10)
    assert lines.kept <= 1000 and lines.cut == 5036 - lines.kept
    assert (tmp_path / "cli.stdout").stat().st_size == lines.kept
    assert parse_events(lines.snapshot(), "stream-json").final == "ok"


def test_a_profile_may_not_put_the_api_key_on_the_command_line(tmp_path: Path) -> None:
    profile = json.loads(Path("sgrgym/sgr/cli_agents/profiles/qwen-code.json").read_text())
    assert "OPENAI_API_KEY" in profile["env"] and not any("{api_key}" in a for a in profile["argv"])
    profile["argv"] += ["--openai-api-key", "{api_key}"]
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(profile))
    with pytest.raises(UserError, match=r"argv holds \{api_key\}"):
        load_profile(str(leaky))
    for name in ("qwen-code", "codex", "claude-code"):
        load_profile(name)  # the shipped profiles pass


TICKING = """
import json, sys, time
for n in range(int(sys.argv[1])):
    print(json.dumps({"type": "system", "n": n}), flush=True)  # trace events, no tool call
    time.sleep(0.2)
"""


@pytest.mark.parametrize(("events", "ended"), [(12, "exited"), (0, "budget: stall")])
def test_a_stall_is_no_progress_in_the_trace(tmp_path: Path, events: int, ended: str) -> None:
    """A CLI that keeps printing events (thinking, no tool call) is not stalled; a silent one
    is, after stall_s."""
    from sgrgym.sgr.env import Budget

    profile, _ = load_profile("qwen-code")
    settings = SimpleNamespace(
        budget=Budget(max_wall_s=30, stall_s=0.8), poll_s=0.1, profile=profile
    )
    code = TICKING if events else "import time; time.sleep(5)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(events)], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    started = time.monotonic()
    lines = runner._Lines(proc.stdout, tmp_path / "cli.stdout", started)
    (tmp_path / "mcp").mkdir()
    _, reason = runner._watch(settings, proc, lines, tmp_path / "mcp", started)  # type: ignore[arg-type]
    proc.wait(10)
    assert reason == ended
