"""The report's figures, drawn with matplotlib into byte-deterministic SVG files.

SVG output is fixed by a constant ``svg.hashsalt`` (the ids matplotlib generates) and no
``Date`` metadata, with the Agg backend and matplotlib's own DejaVu fonts, so the same data
gives the same bytes. Each function takes plain data and writes one file.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from sgrgym.core.io import write_atomic

SALT = "sgrgym-report"
STYLE: Any = {  # (Any: matplotlib types rc keys as literals)
    "svg.hashsalt": SALT,
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
BAND = 0.3  # SeekerGym figures 4a and 8: shaded bands of ± 0.3 std across episodes
LOG_SPAN = 20  # a line chart whose values span more than this factor gets a log y axis


def _save(fig: Figure, path: Path) -> Path:
    svg = io.BytesIO()
    fig.savefig(svg, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    write_atomic(path, svg.getvalue(), parents=True)
    return path


def _figure(width: float = 6.0, height: float = 3.6) -> tuple[Figure, Any]:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(width, height))
    return fig, ax


def completeness_curves(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], path: Path, title: str
) -> Path:
    """Figure 4a: mean completeness per step, one line per belief, ± 0.3 std bands."""
    with plt.rc_context(STYLE):
        fig, ax = _figure()
        for label, (mean, std) in curves.items():
            steps = list(range(1, len(mean) + 1))
            ax.plot(steps, mean, marker="o", markersize=3, label=label)
            low = [m - BAND * s for m, s in zip(mean, std, strict=True)]
            high = [m + BAND * s for m, s in zip(mean, std, strict=True)]
            ax.fill_between(steps, low, high, alpha=0.2)
        ax.set_xlabel("step")
        ax.set_ylabel("completeness ratio")
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
        ax.legend(loc="lower right")
        return _save(fig, path)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    path: Path,
    title: str,
) -> Path:
    """Figure 3: mean final completeness per topic (rows) and agent (columns); the last row,
    under a dashed line, is the overall mean (the paper's dashed overall-mean line)."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(1.8 + 1.1 * len(columns), 1.0 + 0.32 * len(rows))
        data = [[math.nan if v is None else v for v in row] for row in values]
        image = ax.imshow(data, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(columns)), labels=list(columns), rotation=30, ha="right")
        ax.set_yticks(range(len(rows)), labels=list(rows))
        ax.grid(False)
        for i, row in enumerate(data):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(
                        j,
                        i,
                        f"{100 * v:.0f}",
                        ha="center",
                        va="center",
                        color="white" if v < 0.6 else "black",
                        fontsize=7,
                    )
        if len(rows) > 1:
            ax.axhline(len(rows) - 1.5, color="white", linestyle="--", linewidth=1.2)
        fig.colorbar(image, ax=ax, label="final completeness")
        ax.set_title(title)
        return _save(fig, path)


def _styles(labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Line styles that stay apart however many series there are: for ``agent/belief``
    labels, one colour per agent and one dash pattern per belief; else one colour each."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    parts = [label.split("/", 1) for label in labels]
    if all(len(p) == 2 for p in parts):
        agents = list(dict.fromkeys(p[0] for p in parts))
        beliefs = list(dict.fromkeys(p[1] for p in parts))
        dashes = ["-", "--", ":", "-."]
        return {
            label: {
                "color": colours[agents.index(a) % len(colours)],
                "linestyle": dashes[beliefs.index(b) % len(dashes)],
            }
            for label, (a, b) in zip(labels, parts, strict=True)
        }
    return {label: {"color": colours[i % len(colours)]} for i, label in enumerate(labels)}


def lines(
    series: Mapping[str, Sequence[float | None]], path: Path, title: str, ylabel: str
) -> Path:
    """One line per series over steps (C.4: query diversity, context length per step). When
    the values span more than :data:`LOG_SPAN` times, the y axis is logarithmic, so one long
    series does not flatten the others; the legend sits beside the plot."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(7.2, 3.6)
        styles = _styles(list(series))
        shown = []
        for label, values in series.items():
            points = [(i, v) for i, v in enumerate(values, start=1) if v is not None]
            if points:
                ax.plot(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    marker=".",
                    label=label,
                    **styles[label],
                )
                shown += [p[1] for p in points]
        positive = [v for v in shown if v > 0]
        if positive and len(positive) == len(shown) and max(positive) > LOG_SPAN * min(positive):
            ax.set_yscale("log")
            ylabel += " (log scale)"
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if shown:
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _save(fig, path)


def frontier(
    points: Mapping[str, tuple[float, float]],
    path: Path,
    title: str,
    xlabel: str = "tokens per episode",
) -> Path:
    """Figure 4b: final completeness against tokens per episode (x axis flipped: cheaper is
    to the right), with the Pareto frontier."""
    with plt.rc_context(STYLE):
        fig, ax = _figure()
        for label, (cost, completeness) in points.items():
            ax.scatter([cost], [completeness])
            ax.annotate(label, (cost, completeness), fontsize=6)
        best: list[tuple[float, float]] = []
        for cost, completeness in sorted(points.values()):
            if not best or completeness > best[-1][1]:
                best.append((cost, completeness))
        ax.plot([b[0] for b in best], [b[1] for b in best], linestyle="--", color="grey")
        ax.invert_xaxis()
        ax.set_xlabel(xlabel)
        ax.set_ylabel("final completeness")
        ax.set_title(title)
        return _save(fig, path)


def scatter_c(
    c: Sequence[float], c_hat: Sequence[float], q_hat: float, path: Path, title: str
) -> Path:
    """Figures 16-19 (left): estimated ĉ against true c, with the diagonal and ± q̂."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(3.8, 3.6)
        ax.scatter(c, c_hat, s=6, alpha=0.6)
        ax.plot([0, 1], [0, 1], color="black", linewidth=0.8)
        if math.isfinite(q_hat):
            ax.plot([0, 1], [q_hat, 1 + q_hat], color="red", linestyle="--", linewidth=0.8)
            ax.plot([0, 1], [-q_hat, 1 - q_hat], color="red", linestyle="--", linewidth=0.8)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("true completeness c")
        ax.set_ylabel("estimate ĉ")
        ax.set_title(title)
        return _save(fig, path)


def histogram(scores: Sequence[float], q_hat: float, path: Path, title: str) -> Path:
    """Figures 16-19 (right): nonconformity scores |c - ĉ| with q̂ marked."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(3.8, 3.0)
        ax.hist(list(scores), bins=20, range=(0, 1), color="tab:blue", alpha=0.8)
        if math.isfinite(q_hat):
            ax.axvline(q_hat, color="red", linestyle="--", label=f"q̂ = {q_hat:.3f}")
            ax.legend()
        ax.set_xlabel("nonconformity score |c − ĉ|")
        ax.set_ylabel("states")
        ax.set_title(title)
        return _save(fig, path)


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    path: Path,
    title: str,
    ylabel: str,
) -> Path:
    """Bars per group, one colour per series (SGR figure 3: Item-F1 by agent and family). Each
    bar carries its value, so a 0 is read as 0 and not as a missing bar; a group a series has
    no task in is marked "n/a"; the legend sits under the plot, clear of the bars."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(max(6.0, 1.3 * len(groups)), 4.0)
        width = 0.8 / max(len(series), 1)
        for k, (label, values) in enumerate(series.items()):
            xs = [i + k * width for i in range(len(groups))]
            heights = [0.0 if v is None else 100 * v for v in values]
            bars = ax.bar(xs, heights, width, label=label)
            ax.bar_label(
                bars,
                labels=["n/a" if v is None else f"{100 * v:.0f}" for v in values],
                fontsize=6,
                padding=1,
            )
        ax.set_xticks(
            [i + 0.4 - width / 2 for i in range(len(groups))],
            labels=list(groups),
            rotation=20,
            ha="right",
        )
        ax.set_ylim(0, 110)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(
            fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=min(4, len(series))
        )
        return _save(fig, path)


def f1_scatter(points: Mapping[str, Sequence[tuple[float, float]]], path: Path, title: str) -> Path:
    """Item-F1 against Row-F1 per task: one small panel per agent on the same axes. Tasks
    often share a point (0, 0 and 1, 1 above all), so each distinct point is drawn once, its
    area growing with the number of tasks on it, and that number is written beside it."""
    agents = list(points) or [""]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(agents), figsize=(0.6 + 2.5 * len(agents), 3.0), sharey=True, squeeze=False
        )
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        most = max([1, *(len(v) for v in points.values())])
        for k, (ax, label) in enumerate(zip(axes[0], agents, strict=True)):
            counts: dict[tuple[float, float], int] = {}
            for point in points.get(label, ()):
                counts[point] = counts.get(point, 0) + 1
            where = sorted(counts)
            ax.plot([0, 1], [0, 1], color="black", linewidth=0.6)
            ax.scatter(
                [x for x, _ in where],
                [y for _, y in where],
                s=[12 + 220 * counts[p] / most for p in where],
                alpha=0.55,
                color=colours[k % len(colours)],
            )
            for x, y in where:
                if counts[(x, y)] > 1:
                    ax.annotate(
                        str(counts[(x, y)]),
                        (x, y),
                        xytext=(6, 4),
                        textcoords="offset points",
                        fontsize=7,
                    )
            ax.set_xlim(-0.08, 1.12)
            ax.set_ylim(-0.08, 1.12)
            ax.set_title(f"{label} ({len(points.get(label, ()))} tasks)", fontsize=8)
            ax.set_xlabel("Row-F1")
        axes[0][0].set_ylabel("Item-F1")
        fig.suptitle(title, y=1.03)
        return _save(fig, path)


def stacked_shares(
    agents: Sequence[str],
    categories: Sequence[str],
    counts: Sequence[Mapping[str, int]],
    path: Path,
    title: str,
) -> Path:
    """SGR figure 4 / appendix G: share of each category within each agent's counted episodes
    (the caller passes the failures only, as the paper does)."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(6.5, 0.9 + 0.45 * len(agents))
        left = [0.0] * len(agents)
        for category in categories:
            shares = []
            for c in counts:
                total = sum(c.values())
                shares.append(c.get(category, 0) / total if total else 0.0)
            ax.barh(list(agents), shares, left=left, label=category)
            left = [a + b for a, b in zip(left, shares, strict=True)]
        for row, c in enumerate(counts):
            if not sum(c.values()):  # an empty bar reads as missing data: say why it is empty
                ax.text(0.01, row, "no failed episodes", va="center", fontsize=7, color="#555")
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of failed episodes")
        ax.set_title(title)
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
        return _save(fig, path)
