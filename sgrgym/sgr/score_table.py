"""Terminal rendering of :class:`~sgrgym.sgr.score.ScoreReport` (laid out like table 2).

:func:`render_report` prints one system's report; :func:`render_comparison` prints several
systems, one row each, as table 2 of the paper does, with per-family and per-cardinality
Item-F1 columns (figure 3 and appendix K as columns).
"""

from __future__ import annotations

from collections.abc import Sequence

from sgrgym.core.table import format_table, percent
from sgrgym.sgr.score import CARDINALITY_BINS, GroupScore, ScoredTask, ScoreReport

_METRICS = ("Row-F1", "Item-F1", "P.O.A.")


def _cells(group: GroupScore) -> list[str]:
    return [percent(group.row_f1), percent(group.item_f1), percent(group.poa)]


def _group_table(title: str, groups: dict[str, GroupScore]) -> str:
    rows = [[name, str(g.n), *_cells(g)] for name, g in groups.items()]
    return format_table([title, "n", *_METRICS], rows)


def _id_list(title: str, ids: list[str]) -> str:
    return f"{title} ({len(ids)}): {', '.join(ids)}"


def _main_table(rows: Sequence[tuple[str, ScoreReport]]) -> str:
    """Table 2: CG and GO Row-F1 / Item-F1 / P.O.A., then Overall Item-F1; one row a system."""
    body = [
        [
            label,
            *_cells(report.by_variant["CG"]),
            *_cells(report.by_variant["GO"]),
            percent(report.overall.item_f1),
        ]
        for label, report in rows
    ]
    return format_table(
        ["System", *_METRICS, *_METRICS, "Item-F1"],
        body,
        groups=[
            ("", 1),
            ("Constraint-Guided Tasks", 3),
            ("Goal-Oriented Tasks", 3),
            ("Overall", 1),
        ],
    )


def _overall_table(rows: Sequence[tuple[str, ScoreReport]]) -> str:
    """Table 3: Item-F1, Row-F1 and P.O.A. averaged over all task variants."""
    body = [
        [
            label,
            percent(report.overall.item_f1),
            percent(report.overall.row_f1),
            percent(report.overall.poa),
        ]
        for label, report in rows
    ]
    return format_table(["All task variants", "Item-F1", "Row-F1", "P.O.A."], body)


def _notes(report: ScoreReport) -> list[str]:
    return [
        _id_list(title, ids)
        for title, ids in (
            ("Missing predictions, scored as empty", report.missing),
            ("Parse failures, scored 0", report.parse_failures),
            ("Several tables in one answer, the last complete one scored", report.multiple_tables),
            (
                "Domains with no source family (left out of the family table)",
                report.unmapped_domains,
            ),
            ("Predictions for unknown task ids, not scored", report.unknown_predictions),
        )
        if ids
    ]


def _modes(report: ScoreReport) -> str:
    return ", ".join(f"{mode} {n}" for mode, n in report.canonicalization.items()) or "none"


def render_report(
    report: ScoreReport,
    label: str,
    per_task: bool = False,
    tasks: Sequence[ScoredTask] | None = None,
) -> str:
    """Main table (CG / GO / Overall, metrics in percent), breakdowns, then flagged tasks.

    ``tasks``: the per-task lines' scores when the report holds none (default:
    ``report.tasks``).
    """
    cg, go = report.by_variant["CG"], report.by_variant["GO"]
    parts = [
        f"SGR-Bench scores: {report.overall.n} task variants ({cg.n} CG, {go.n} GO); "
        f"metrics in percent; canonicalization: {_modes(report)}",
        "",
        _main_table([(label, report)]),
        "",
        _overall_table([(label, report)]),
    ]
    if report.by_family:
        parts += ["", _group_table("By source family", report.by_family)]
    parts += [
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
                ", ".join(t.flags),
            ]
            for t in (report.tasks if tasks is None else tasks)
        ]
        parts += [
            "",
            format_table(["Task", "Var", "Gold", "Pred", *_METRICS, "Answer", "Flags"], rows),
        ]
    notes = _notes(report)
    if notes:
        parts += ["", *notes]
    return "\n".join(parts)


def render_comparison(rows: Sequence[tuple[str, ScoreReport]]) -> str:
    """Several systems: table 2 (one row each), table 3, then Item-F1 per family and bin."""
    families: list[str] = []
    for _, report in rows:
        families += [f for f in report.by_family if f not in families]
    bins = [name for name, _, _ in CARDINALITY_BINS]
    breakdown = [
        [
            label,
            *(percent(r.by_family[f].item_f1 if f in r.by_family else None) for f in families),
            *(percent(r.by_cardinality[b].item_f1) for b in bins),
        ]
        for label, r in rows
    ]
    groups = [("", 1)]
    if families:
        groups.append(("Item-F1 by source family", len(families)))
    groups.append(("Item-F1 by cardinality", len(bins)))
    parts = [
        f"SGR-Bench comparison of {len(rows)} systems; metrics in percent",
        "",
        _main_table(rows),
        "",
        _overall_table(rows),
        "",
        format_table(["System", *families, *bins], breakdown, groups=groups),
    ]
    for label, report in rows:
        notes = _notes(report)
        if notes:
            parts += ["", f"{label}:", *(f"  {n}" for n in notes)]
    return "\n".join(parts)
