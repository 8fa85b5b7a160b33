"""Plain-text tables for terminal output (shared by every report)."""

from __future__ import annotations

from collections.abc import Sequence


def percent(value: float | None) -> str:
    """A fraction in [0, 1] as a percentage with two decimals, as the papers' tables print."""
    return "-" if value is None else f"{100 * value:.2f}"


def format_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    groups: Sequence[tuple[str, int]] = (),
    align: str = "",
) -> str:
    """Render ``rows`` under ``header``; the first column is left-aligned, the rest right.

    ``align`` overrides that per column with one letter each (``l`` or ``r``), e.g. ``"rrll"``.

    ``groups`` optionally labels runs of columns above the header, e.g.
    ``[("", 1), ("Constraint-Guided Tasks", 3), ...]``; spans must add up to the width.
    """
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    gap = "  "
    lines: list[str] = []
    if groups:
        if sum(span for _, span in groups) != len(header):
            raise ValueError("group spans must cover every column")
        parts, start = [], 0
        for label, span in groups:
            width = sum(widths[start : start + span]) + len(gap) * (span - 1)
            if len(label) > width:  # widen the group's last column to fit its label
                widths[start + span - 1] += len(label) - width
                width = len(label)
            parts.append(label.center(width) if label else " " * width)
            start += span
        lines.append(gap.join(parts).rstrip())

    sides = align or "l" + "r" * (len(header) - 1)

    def line(cells: Sequence[str]) -> str:
        out = [
            c.ljust(w) if side == "l" else c.rjust(w)
            for c, w, side in zip(cells, widths, sides, strict=True)
        ]
        return gap.join(out).rstrip()

    lines.append(line(header))
    lines.append(gap.join("-" * w for w in widths))
    lines.extend(line(r) for r in rows)
    return "\n".join(lines)
