"""Terminal rendering of a :class:`~sgrgym.sgr.score.ScoreReport` (laid out like table 2)."""

from __future__ import annotations

from sgrgym.report.table import format_table, percent
from sgrgym.sgr.score import GroupScore, ScoreReport

_METRICS = ("Row-F1", "Item-F1", "P.O.A.")


def _cells(group: GroupScore) -> list[str]:
    return [percent(group.row_f1), percent(group.item_f1), percent(group.poa)]


def _group_table(title: str, groups: dict[str, GroupScore]) -> str:
    rows = [[name, str(g.n), *_cells(g)] for name, g in groups.items()]
    return format_table([title, "n", *_METRICS], rows)


def _id_list(title: str, ids: list[str]) -> str:
    return f"{title} ({len(ids)}): {', '.join(ids)}"


def render_report(report: ScoreReport, label: str, per_task: bool = False) -> str:
    """Main table (CG / GO / Overall, metrics in percent), breakdowns, then flagged tasks."""
    cg, go = report.by_variant["CG"], report.by_variant["GO"]
    main = format_table(
        ["System", *_METRICS, *_METRICS, "Item-F1"],
        [[label, *_cells(cg), *_cells(go), percent(report.overall.item_f1)]],
        groups=[
            ("", 1),
            ("Constraint-Guided Tasks", 3),
            ("Goal-Oriented Tasks", 3),
            ("Overall", 1),
        ],
    )
    parts = [
        f"SGR-Bench scores: {report.overall.n} task variants ({cg.n} CG, {go.n} GO); "
        "metrics in percent",
        "",
        main,
        "",
        _group_table("By domain", report.by_domain),
        "",
        _group_table("By cardinality", report.by_cardinality),
    ]
    if per_task:
        rows = [
            [
                t.task_id,
                t.variant,
                str(t.cardinality),
                str(t.n_pred_rows),
                percent(t.row_f1),
                percent(t.item_f1),
                percent(t.poa),
                "missing" if t.missing else ("parse failure" if t.parse_failure else t.format),
            ]
            for t in report.tasks
        ]
        parts += ["", format_table(["Task", "Var", "Gold", "Pred", *_METRICS, "Answer"], rows)]
    notes = [
        _id_list(title, ids)
        for title, ids in (
            ("Missing predictions, scored as empty", report.missing),
            ("Parse failures, scored 0", report.parse_failures),
            ("Predictions for unknown task ids, not scored", report.unknown_predictions),
        )
        if ids
    ]
    if notes:
        parts += ["", *notes]
    return "\n".join(parts)
