"""``sgr audit``: failure categories of runs, laid out like SGR-Bench appendix H, table 4.

Each episode's category comes from its trajectory's diagnostics (:mod:`sgrgym.sgr.diagnostics`).
Per run: a count per category, the failures, the solved episodes, and each category's share
of the failures (the paper's percentages are over failures only, excluding correct runs).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.table import format_table
from sgrgym.sgr.diagnostics import CATEGORIES, NOT_DETECTED, SOLVED

SHORT = {
    "site never reached": "No site",
    "retrieval-scope drift": "Scope drift",
    "criterion mismatch": "Crit. mis.",
    "retrieval dependency error": "Dep. err.",
    "in-page evidence misreading": "Page mis.",
    "final answer composition": "Final ans.",
    "no answer": "No answer",
}


class RunAudit(BaseModel):
    run: str  # the folder
    agent: str
    counts: dict[str, int]  # category -> episodes (CATEGORIES order)
    failures: int
    solved: int
    shares: dict[str, float]  # category -> share of failures


class Audit(BaseModel):
    runs: list[RunAudit]
    total: RunAudit
    not_detected: list[str]


def _read(run_dir: Path) -> tuple[str, list[str]]:
    card, trajectories = run_dir / "run.json", run_dir / "trajectories.jsonl"
    if not card.is_file() or not trajectories.is_file():
        raise UserError(f"{run_dir}: not an sgr run folder (needs run.json, trajectories.jsonl)")
    agent = str(json.loads(card.read_text(encoding="utf-8")).get("agent", "?"))
    categories = []
    for number, line in enumerate(trajectories.read_text(encoding="utf-8").splitlines(), 1):
        try:
            category = json.loads(line)["diagnostics"]["category"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise UserError(
                f"{trajectories}:{number}: no diagnostics.category (a run of an older sgrgym? "
                "run it again into a new folder)"
            ) from None
        categories.append(str(category))
    return agent, categories


def _summary(run: str, agent: str, categories: list[str]) -> RunAudit:
    seen = Counter(categories)
    counts = {c: seen.get(c, 0) for c in CATEGORIES}
    failures = sum(counts.values())
    return RunAudit(
        run=run,
        agent=agent,
        counts=counts,
        failures=failures,
        solved=seen.get(SOLVED, 0),
        shares={c: (n / failures if failures else 0.0) for c, n in counts.items()},
    )


def audit_runs(run_dirs: list[Path]) -> Audit:
    runs, everything = [], []
    for run_dir in run_dirs:
        agent, categories = _read(run_dir)
        runs.append(_summary(str(run_dir), agent, categories))
        everything += categories
    return Audit(
        runs=runs, total=_summary("total", "", everything), not_detected=list(NOT_DETECTED)
    )


def render_audit(audit: Audit) -> str:
    head = ["Run", *(SHORT[c] for c in CATEGORIES), "Fail", "Solved"]
    rows = [
        [
            f"{r.agent} ({r.run})",
            *(str(r.counts[c]) for c in CATEGORIES),
            str(r.failures),
            str(r.solved),
        ]
        for r in [*audit.runs, audit.total]
    ]
    total = audit.total
    rows.append(
        ["share of failures", *(f"{100 * total.shares[c]:.1f}%" for c in CATEGORIES), "", ""]
    )
    note = (
        "\nShares are over failures only (solved excluded), as in the paper's table 4. "
        f"Not detected automatically: {', '.join(audit.not_detected)}."
    )
    return format_table(head, rows) + note
