"""``sgrgym sgr run --agent cli:NAME``: agent CLIs under the paper's protocol (appendix C).

Per task: a fresh temporary project folder and home folder; the profile's config files written
there (a strict MCP config exposing only ``sgrgym mcp`` for that task, the CLI's own web tools
disabled); the paper's task prompt; the CLI started as a subprocess in non-interactive mode,
optionally inside an egress sandbox (:mod:`.egress`). The runner is the watchdog: every
``poll_s`` seconds (5 s in the paper) it reads the episode's live log (progress and submitted
answers) and the CLI's transcript (its final answer); it stops the CLI at the wall budget, or
when the trajectory made no progress for the stall budget. The last answer seen is scored.

Run folder: what ``sgr run`` writes (card, answers, trajectories with appendix G diagnostics,
scores, timings), plus ``episodes/<task_id>/``: ``mcp/`` (the MCP server's own episode folder
with its live log), ``cli.stdout`` (the CLI's transcript), ``cli.stderr``, ``session/`` (the
CLI's own session logs), ``transcript.jsonl`` (the transcript's tool calls with timings).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.io import jsonl_line
from sgrgym.core.output import Progress
from sgrgym.runs.folder import open_run_folder
from sgrgym.runs.parallel import ordered_map
from sgrgym.sgr.env import Budget, Episode
from sgrgym.sgr.run import SCORES, RunCard, answered, finish_run, record_episode
from sgrgym.sgr.score import ScoreReport
from sgrgym.sgr.sites.model import SiteModel
from sgrgym.sgr.tasks import ScoringTask

from .egress import Egress
from .episode import LiveLog, read_live, trajectory_of
from .profiles import Profile, fill, write_files
from .transcripts import Transcript, parse_events

KILL_GRACE_S = 5.0
OUTPUT_CAP = 16 << 20  # bytes of a session's stdout kept (file and transcript)
_READ = 1 << 20  # at most this much of a line is read at once (a line without end is bounded)


class CliRunCard(RunCard):
    """The run card of a CLI run: the run card plus the profile, the endpoint and the sandbox."""

    profile: str
    profile_sha256: str
    tools_sha256: str
    site_ops: bool
    model: str
    base_url: str
    poll_s: float
    egress: list[str]  # allowed HOST:PORT, empty without a sandbox


@dataclass(frozen=True)
class CliSettings:
    profile: Profile
    cli_dir: Path
    base_url: str
    model: str
    api_key: str
    pack_dir: Path
    task_files: tuple[Path, ...]
    budget: Budget
    current_date: str = defaults.CURRENT_DATE
    site_ops: bool = False
    no_render: bool = False
    poll_s: float = defaults.CLI_POLL_S
    egress: Egress | None = None

    @property
    def executable(self) -> Path:
        return self.cli_dir / self.profile.executable


@dataclass
class Session:
    """What one CLI session left: its episode, how it ended, its transcript."""

    episode: Episode
    exit_reason: str  # exited | budget: wall | budget: stall | budget: tool calls
    returncode: int | None
    transcript: Transcript
    extra: dict[str, object] = field(default_factory=dict)


def mcp_arguments(settings: CliSettings, task: ScoringTask, mcp_dir: Path) -> list[str]:
    """The ``sgrgym mcp`` arguments for one episode (absolute paths: the CLI runs elsewhere)."""
    budget = settings.budget
    args = [
        "-m",
        "sgrgym",
        "mcp",
        "--task",
        task.task_id,
        "--out",
        str(mcp_dir),
        "--pack",
        str(settings.pack_dir),
        "--tasks",
        *(str(p) for p in settings.task_files),
        "--current-date",
        settings.current_date,
        "--max-wall-s",
        f"{budget.max_wall_s:g}",
        # A stall is no progress in the CLI's trace (appendix C), which only the runner sees:
        # the server's own stall clock (tool calls) never fires before the wall.
        "--stall-s",
        f"{budget.max_wall_s:g}",
    ]
    if budget.max_tool_calls is not None:
        args += ["--max-tool-calls", str(budget.max_tool_calls)]
    if settings.site_ops:
        args.append("--site-ops")
    if settings.no_render:
        args.append("--no-render")
    return args


class _Lines:
    """The CLI's stdout, read as it comes: kept in a file, each line with the time it came;
    past :data:`OUTPUT_CAP` bytes the rest is read and dropped (``cut`` says how much)."""

    def __init__(self, stream: IO[bytes], copy: Path, started: float) -> None:
        self.lines: list[tuple[float | None, str]] = []
        self.kept = 0
        self.cut = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(stream, copy, started))
        self._thread.daemon = True
        self._thread.start()

    def _read(self, stream: IO[bytes], copy: Path, started: float) -> None:
        with copy.open("wb") as out:
            for raw in iter(lambda: stream.readline(_READ), b""):
                if self.kept + len(raw) > OUTPUT_CAP:
                    self.cut += len(raw)  # a session's output is bounded, however much it prints
                    continue
                self.kept += len(raw)
                out.write(raw)
                out.flush()
                with self._lock:
                    self.lines.append(
                        (round(time.monotonic() - started, 3), raw.decode("utf-8", "replace"))
                    )

    def snapshot(self) -> list[tuple[float | None, str]]:
        with self._lock:
            return list(self.lines)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the CLI's process group, SIGKILL it after a grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class _Seen:
    """The last answer seen, and where it came from."""

    answer: str | None = None
    source: str = "none"
    submitted: str | None = None
    final: str | None = None

    def observe(self, log: LiveLog, transcript: Transcript) -> None:
        if log.answer is not None and log.answer != self.submitted:
            self.submitted = log.answer
            self.answer, self.source = log.answer, "submitted"
        if transcript.final is not None and transcript.final != self.final:
            self.final = transcript.final  # the final message comes after the last tool call
            self.answer, self.source = transcript.final, "final"


def run_session(settings: CliSettings, task: ScoringTask, prompt: str, folder: Path) -> Session:
    """One fresh CLI session on ``task``; everything it leaves goes into ``folder``."""
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted session is not resumed: a fresh one per task
    folder.mkdir(parents=True)
    mcp_dir = folder / "mcp"
    profile = settings.profile
    with tempfile.TemporaryDirectory(prefix="sgrgym-cli-") as tmp:
        project, home = Path(tmp) / "project", Path(tmp) / "home"
        project.mkdir()
        home.mkdir()
        mcp_args = mcp_arguments(settings, task, mcp_dir)
        values = {
            "project": str(project),
            "home": str(home),
            "cli_dir": str(settings.cli_dir),
            "executable": str(settings.executable),
            "base_url": settings.base_url,
            "model": settings.model,
            "api_key": settings.api_key,
            "prompt": prompt,
            "mcp_command": sys.executable,
            "mcp_args_json": json.dumps(mcp_args),
        }
        write_files(profile, values, mcp_args)
        argv = [str(a) for a in fill(profile.argv, values, mcp_args)]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "ORT_DISABLE_TELEMETRY": "1",
            **fill(profile.env, values, mcp_args),
        }
        if settings.egress is not None:
            argv = settings.egress.wrap(argv)
        started = time.monotonic()
        with (folder / "cli.stderr").open("wb") as stderr:
            proc = subprocess.Popen(
                argv,
                cwd=project,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
            assert proc.stdout is not None
            lines = _Lines(proc.stdout, folder / "cli.stdout", started)
            seen, reason = _watch(settings, proc, lines, mcp_dir, started)
            lines.join(KILL_GRACE_S)
        wall_s = time.monotonic() - started
        transcript = parse_events(lines.snapshot(), profile.transcript_format)
        log = read_live(mcp_dir)
        seen.observe(log, transcript)
        _keep_session_logs(profile, values, mcp_args, folder / "session")
    with (folder / "transcript.jsonl").open("w", encoding="utf-8") as out:
        for call in transcript.calls:
            out.write(jsonl_line(asdict(call)))
    if reason == "exited":
        ended_by = "answer" if proc.returncode == 0 else "agent error"
    else:
        ended_by = reason
    error = "" if proc.returncode == 0 or reason != "exited" else f"exit status {proc.returncode}"
    trajectory = trajectory_of(log)
    if log.malformed:  # lines the server did not write: the session touched its log
        ended_by = "agent error"
        error = "; ".join(filter(None, [error, f"malformed live log: {log.malformed[0]}"]))
    if lines.cut:
        error = "; ".join(filter(None, [error, f"output cut at {OUTPUT_CAP} bytes"]))
    episode = Episode(
        task_id=task.task_id,
        answer=seen.answer,
        ended_by=ended_by,
        answer_from=seen.source,
        error=error,
        tool_calls=log.tool_calls,
        submitted_answers=log.submitted_answers,
        target_site_rank=log.target_site_rank,
        trajectory=trajectory,
        wall_s=wall_s,
    )
    ours = [c for c in transcript.calls if c.ours]
    extra: dict[str, object] = {
        "cli": {"profile": profile.name, "exit": reason, "returncode": proc.returncode},
        "transcript": transcript.summary(),
        "transcript_calls_match_steps": len([c for c in ours if not c.is_error])
        == len(episode.trajectory),
    }
    return Session(episode, reason, proc.returncode, transcript, extra)


def _watch(
    settings: CliSettings,
    proc: subprocess.Popen[bytes],
    lines: _Lines,
    mcp_dir: Path,
    started: float,
) -> tuple[_Seen, str]:
    """Poll until the CLI exits or a budget is spent; (answers seen, exit reason)."""
    budget = settings.budget
    seen = _Seen()
    progress, last_progress = (0, 0), started
    while True:
        try:
            proc.wait(settings.poll_s)
            return seen, "exited"
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        log = read_live(mcp_dir)
        trace = lines.snapshot()
        # Progress is any new event in the CLI's trace or any new step of the episode.
        events = sum(1 for _, line in trace if line.lstrip().startswith("{"))
        if (len(log.steps), events) != progress:
            progress, last_progress = (len(log.steps), events), now
        seen.observe(log, parse_events(trace, settings.profile.transcript_format))
        if log.stopped is not None:  # the episode refused a call: e.g. over --max-tool-calls
            _stop(proc)
            return seen, f"budget: {log.stopped}"
        spent = budget.spent(started, last_progress, now)
        if spent is not None:
            _stop(proc)
            return seen, f"budget: {spent.reason}"


def _keep_session_logs(
    profile: Profile, values: dict[str, str], mcp_args: list[str], into: Path
) -> None:
    for pattern in profile.session_logs:
        source = Path(fill(pattern, values, mcp_args))
        if source.is_dir():
            shutil.copytree(source, into / source.name, dirs_exist_ok=True)
        elif source.is_file():
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / source.name)


def run_cli_tasks(
    settings: CliSettings,
    sites: dict[str, SiteModel],
    tasks: Sequence[ScoringTask],
    prompts: dict[str, str],
    out_dir: Path,
    card: CliRunCard,
    *,
    jobs: int = 1,
    progress: Progress | None = None,
) -> ScoreReport:
    """Run the CLI once per task not yet answered (``jobs`` sessions at a time); records are
    appended in task order, so the results do not depend on ``jobs``."""
    if not settings.executable.is_file():
        raise UserError(
            f"{settings.executable}: the {settings.profile.name} CLI is not installed there; "
            f"install it: {settings.profile.install.replace('CLI_DIR', str(settings.cli_dir))}"
        )
    with open_run_folder(out_dir, card, finals=(SCORES,)) as folder:
        done = answered(folder)
        pending = [t for t in tasks if t.task_id not in done]
        folder.begin()  # decided: the sessions write into the folder beside its records

        def one(task: ScoringTask) -> Session:
            folder_of = out_dir / "episodes" / task.task_id
            return run_session(settings, task, prompts[task.task_id], folder_of)

        with closing(ordered_map(one, pending, jobs, name="cli-session")) as sessions:
            for number, (task, session) in enumerate(zip(pending, sessions, strict=True), 1):
                score = record_episode(folder, task, sites, session.episode, session.extra)
                if progress:
                    progress(number, len(pending), f"{task.task_id} item_f1={score.item_f1:.2f}")
        return finish_run(folder, tasks)
