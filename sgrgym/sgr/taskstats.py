"""Dataset statistics of a task set, laid out like SGR-Bench section 3.3 and appendix K.

Counted per CG/GO pair (both variants share answer, format and reference): pairs per source
family and per domain, the answer-cardinality distribution (range, mean, median, share of at
most seven rows, the appendix-K bins 1-2 / 3-5 / 6-10 / 11+), dependency types with their
intra-/inter-chain flags, and the state mechanisms each pair's reference path uses (from the
operations of sgrgym's ``reference`` objects: filters, hierarchy, window, scope, view, sort,
pages, export/report states). Published task files without a reference still get every count
except the mechanisms.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from sgrgym.sgr.families import load_families
from sgrgym.sgr.sites.reference import Reference, reference_of
from sgrgym.sgr.tasks import ScoringTask

# Appendix K's cardinality bins (label, lowest, highest; None = no upper bound).
CARDINALITY_BINS: tuple[tuple[str, int, int | None], ...] = (
    ("1-2", 1, 2),
    ("3-5", 3, 5),
    ("6-10", 6, 10),
    ("11+", 11, None),
)
# Which state mechanism (section 3.3's vocabulary) an operation exercises.
MECHANISMS = {
    "set_filter": "facets",
    "clear_filter": "facets",
    "open_node": "hierarchy",
    "set_window": "time window",
    "set_scope": "scope",
    "select_view": "view",
    "sort": "sort",
    "page": "pages",
    "goto": "link",
}
EXPORT_SUFFIXES = {".csv": "CSV export", ".pdf": "PDF report"}
UNKNOWN_FAMILY = "(no family)"


class TaskStats(BaseModel):
    """The statistics of one task set (counts are over CG/GO pairs unless said otherwise)."""

    variants: int
    cg: int
    go: int
    pairs: int
    families: dict[str, int]
    domains: dict[str, int]
    rows_min: int
    rows_max: int
    rows_mean: float
    rows_median: float
    at_most_seven: int
    cardinality_bins: dict[str, int]
    dependency_types: dict[str, int]
    intra_chain: int
    inter_chain: int
    data_dependent: int  # pairs whose reference path has a data-dependent step
    multi_state: int  # pairs answered from 2+ states or needing a page change
    mechanisms: dict[str, int]  # pairs whose reference path uses each mechanism
    mechanisms_per_pair: dict[str, int]  # number of distinct mechanisms -> pairs
    with_reference: int


def mechanisms_of(reference: Reference) -> set[str]:
    """The state mechanisms a reference path exercises."""
    found = {MECHANISMS[op.op] for op in reference.path}
    for op in reference.path:
        if op.op == "select_view" and not op.control:
            found |= {name for suffix, name in EXPORT_SUFFIXES.items() if op.value.endswith(suffix)}
    return found


def _bin(rows: int) -> str:
    for label, low, high in CARDINALITY_BINS:
        if rows >= low and (high is None or rows <= high):
            return label
    return "0"


def task_stats(
    tasks: Sequence[ScoringTask], families: Mapping[str, str] | None = None
) -> TaskStats:
    """Statistics of ``tasks``; a pair is represented by its CG variant (else its GO one).

    A pair's source family comes from the domain -> family map the scorer uses
    (:func:`sgrgym.sgr.families.load_families` unless ``families`` is given)."""
    family_of = load_families() if families is None else families
    pairs: dict[str, ScoringTask] = {}
    for task in sorted(tasks, key=lambda t: (t.task.pair_id, t.variant)):
        pairs.setdefault(task.task.pair_id, task)
    chosen = list(pairs.values())
    rows = [len(t.gold_rows) for t in chosen] or [0]
    references = {t.task.pair_id: r for t in chosen if (r := reference_of(t)) is not None}
    mechanisms: Counter[str] = Counter()
    per_pair: Counter[str] = Counter()
    for reference in references.values():
        used = mechanisms_of(reference)
        mechanisms.update(used)
        per_pair[str(len(used))] += 1
    metadata = [t.task.metadata for t in chosen]
    return TaskStats(
        variants=len(tasks),
        cg=sum(t.variant == "CG" for t in tasks),
        go=sum(t.variant == "GO" for t in tasks),
        pairs=len(chosen),
        families=dict(
            sorted(Counter(family_of.get(t.domain, UNKNOWN_FAMILY) for t in chosen).items())
        ),
        domains=dict(sorted(Counter(t.domain for t in chosen).items())),
        rows_min=min(rows),
        rows_max=max(rows),
        rows_mean=round(statistics.fmean(rows), 2),
        rows_median=float(statistics.median(rows)),
        at_most_seven=sum(n <= 7 for n in rows),
        cardinality_bins={
            label: sum(_bin(n) == label for n in rows) for label, _, _ in CARDINALITY_BINS
        },
        dependency_types=dict(
            sorted(Counter(m.dependency_type or "(none)" for m in metadata).items())
        ),
        intra_chain=sum(bool(m.intra_chain) for m in metadata),
        inter_chain=sum(bool(m.inter_chain) for m in metadata),
        data_dependent=sum(any(op.type == "data" for op in r.path) for r in references.values()),
        multi_state=sum(
            len(r.answer.states) > 1 or any(op.op == "page" for op in r.path)
            for r in references.values()
        ),
        mechanisms=dict(mechanisms.most_common()),
        mechanisms_per_pair=dict(sorted(per_pair.items(), key=lambda kv: int(kv[0]))),
        with_reference=len(references),
    )


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.1f}%)" if total else str(count)


def render_stats(stats: TaskStats) -> str:
    """The statistics as plain text, in the order of section 3.3."""
    total = stats.pairs
    lines = [
        f"{stats.variants} task variants ({stats.cg} constraint-guided, {stats.go} goal-oriented)"
        f" = {total} pairs",
        "",
        "Source families (pairs):",
        *(f"  {name}: {_share(n, total)}" for name, n in stats.families.items()),
        "Domains (pairs):",
        *(f"  {name}: {_share(n, total)}" for name, n in stats.domains.items()),
        "",
        f"Answer rows: {stats.rows_min} to {stats.rows_max}, mean {stats.rows_mean:.2f}, "
        f"median {stats.rows_median:g}; at most seven rows: {_share(stats.at_most_seven, total)}",
        "Cardinality bins (appendix K):",
        *(f"  {label} rows: {_share(n, total)}" for label, n in stats.cardinality_bins.items()),
        "",
        "Dependency types:",
        *(f"  {name}: {_share(n, total)}" for name, n in stats.dependency_types.items()),
        f"  intra-chain: {_share(stats.intra_chain, total)}; "
        f"inter-chain: {_share(stats.inter_chain, total)}",
    ]
    if stats.with_reference:
        refs = stats.with_reference
        lines += [
            f"  with a data-dependent step on the reference path: "
            f"{_share(stats.data_dependent, refs)}",
            f"  answered from 2+ states or across pages: {_share(stats.multi_state, refs)}",
            "",
            f"State mechanisms on the reference paths ({refs} pairs):",
            *(f"  {name}: {_share(n, refs)}" for name, n in stats.mechanisms.items()),
            "Distinct mechanisms per pair:",
            *(f"  {k}: {_share(n, refs)}" for k, n in stats.mechanisms_per_pair.items()),
        ]
    return "\n".join(lines)
