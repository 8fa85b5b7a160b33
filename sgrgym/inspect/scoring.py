"""sgrgym's scores as Inspect scores: one shape for the live task and for exported run folders.

An SGR-Bench score is a dict value (``item_f1``, ``row_f1``, ``poa``: the paper's Item-F1,
Row-F1 and P.O.A., appendix A) with the mean and standard error of each as metrics; Item-F1
comes first, so it is the log's headline. Its metadata holds what ``scores.json`` and
``trajectories.jsonl`` hold for the task: the per-row comparison, the flags and the appendix G
category with its evidence. A SeekerGym score is the final completeness, with the
completeness after every step in its metadata.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Score

from sgrgym.sgr.diagnostics import Diagnostics
from sgrgym.sgr.score import TaskScore

SGR_SCORER = "sgr_score"
SEEKER_SCORER = "seeker_score"
SGR_METRICS = ("item_f1", "row_f1", "poa")


def sgr_score_value(score: TaskScore) -> dict[str, float]:
    """The three metrics of one task variant, Item-F1 first."""
    return {"item_f1": score.item_f1, "row_f1": score.row_f1, "poa": score.poa}


def sgr_inspect_score(
    score: TaskScore, diagnostics: Diagnostics | dict[str, Any] | None, answer: str | None
) -> Score:
    """The Inspect score of one SGR episode: the metrics, the answer scored, the per-row
    comparison and the appendix G category (``explanation`` names it)."""
    diagnosis = diagnostics.model_dump() if isinstance(diagnostics, Diagnostics) else diagnostics
    category = str((diagnosis or {}).get("category", "unknown"))
    details = score.model_dump(mode="json")
    rows = details.pop("rows")
    for name in SGR_METRICS:
        details.pop(name)
    return Score(
        value=sgr_score_value(score),
        answer=answer,
        explanation=f"appendix G: {category}",
        metadata={
            "category": category,
            "diagnostics": diagnosis,
            "rows": rows,
            **details,
        },
    )
