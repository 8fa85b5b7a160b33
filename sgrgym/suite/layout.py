"""The layout of a ``sgrgym run`` folder: where each part goes, which files are volatile, what
the completion marker pins, and where the baseline replay records its outcome."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.core.hashing import sha256_file
from sgrgym.core.io import TMP_SUFFIX
from sgrgym.runs.folder import COMPLETE, LOCK

if TYPE_CHECKING:
    from sgrgym.suite.baseline import ReplayStatus
    from sgrgym.suite.config import RunConfig

SEEKER = "seeker"
CALIBRATION = "calibration"
SGR = "sgr"
RESULTS = "results"
REPORT = "report"
BASELINE = "baseline"
REPLAY_JSON = "replay.json"  # in BASELINE: the outcome of the replay
# What differs between two runs of one config: wall-clock seconds, and the LLM call log (cache
# hits and network attempts: a record and its replay differ there, and only there).
VOLATILE = ("timings.jsonl", "llm_run.json")


def seeker_part(agent: str, belief: str) -> str:
    return f"{SEEKER}/{agent}__{belief}"


def sgr_part(agent: str) -> str:
    return f"{SGR}/{agent}"


def baseline_status(out: Path, config: RunConfig) -> ReplayStatus | None:
    """The recorded outcome of the run's baseline replay; None when the run has none."""
    from sgrgym.suite.baseline import read_status

    marker = out / BASELINE / REPLAY_JSON
    if not config.baseline.enabled or not marker.is_file():
        return None
    return read_status(marker)


def pinned_files(out: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(sha256 of every result and record file, sha256 of the volatile timing files) under
    ``out``; locks, temporary files and the top completion marker are left out."""
    files: dict[str, str] = {}
    volatile: dict[str, str] = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if not path.is_file() or path.name == LOCK or path.name.endswith(TMP_SUFFIX):
            continue
        if rel == COMPLETE:
            continue
        (volatile if path.name in VOLATILE else files)[rel] = sha256_file(path)[0]
    return files, volatile
