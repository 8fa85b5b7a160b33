"""The default values that several parts share, in one place, each with where it comes from.

No import: the command line reads these at start-up.
"""

from __future__ import annotations

MAX_WALL_S = 6000.0  # SGR-Bench appendix C: wall time per task
STALL_S = 3000.0  # SGR-Bench appendix C: a task with no tool call for this long is stopped
CURRENT_DATE = "2026-01-01"  # ours: the date SGR agents are shown (the demo pack's date)
EMBEDDER = "minilm-l6-onnx"  # ours: SeekerGym's pinned offline embedder (all-MiniLM-L6-v2)
SEEKER_CORPUS = "demo"  # the SeekerGym demo corpus (built from the pinned Django sdist)
# SeekerGym's query budget (section 2.3: completeness "within a fixed query budget"; 2.2: "one
# or more" queries a step, no number given): the same for every agent, ours.
QUERIES_PER_STEP = 2
HORIZON = 10  # the horizon M (section 2.2 names it, gives no value): ours
SGR_PACK = "demo"  # the SGR demo pack (the replica sites, recorded)
CLI_AGENTS_ROOT = "benchmarks/cli-agents"  # ours: one install folder per agent CLI profile
CLI_POLL_S = 5.0  # SGR-Bench appendix C: answer extraction polled every 5 s
