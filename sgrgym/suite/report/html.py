"""``sgrgym report``: a static HTML page and a Markdown file from one or more run folders.

Everything is read from the run folders' records and ``results/`` (written by ``sgrgym run``);
figures are SVG files from :mod:`sgrgym.suite.report.figures`. Several folders appear side by side:
tables get one row per run and agent, figures one per run. Sections and the papers' layouts:

- SeekerGym (paper 000): table 3 (agent × belief, mean ± std over seeds), figure 4a
  (completeness per step per belief, ± 0.3 std bands), figure 3 (per-topic heatmap, dedup
  belief), figure 4b (cost–completeness frontier, when the episodes carry token counts),
  appendix C.4 (query diversity and context length per step), table 4 with the c vs ĉ scatter
  and nonconformity histogram (figures 16-19), and table 9 (variance decomposition);
- Baseline replay: whether the committed real-model baseline replayed to its committed
  results, else a table of what differs (file, record, field, committed, replayed) or why the
  replay failed;
- SGR-Bench (paper 003): table 2 (Row-F1 / Item-F1 / P.O.A. per variant, overall Item-F1),
  table 3 (overall means), figure 3 (Item-F1 per source family), appendix K (per
  cardinality bin), an Item-F1 vs Row-F1 scatter, appendix G category shares, and one page per
  task with each agent's trajectory and the states it reached.

The same run folders give the same bytes.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.core.errors import UserError
from sgrgym.seeker.records import read_pairs
from sgrgym.suite.config import RunConfig
from sgrgym.suite.results import (
    BASELINE_HEADER,
    BASELINE_JSON,
    CALIBRATION_JSON,
    SEEKER_JSON,
    SGR_JSON,
    baseline_label,
    baseline_rows,
    card_config,
    near_theta_text,
    read_json_file,
)

if TYPE_CHECKING:
    from sgrgym.sgr.tasks import ScoringTask

FIGURES = "figures"
TASKS = "tasks"
CSS = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:2px 6px;
font-size:13px;text-align:right}td:first-child,th:first-child{text-align:left}
.row{display:flex;flex-wrap:wrap;gap:1em}.row figure{margin:0}img{max-width:100%}
figcaption{font-size:12px;color:#555}.note{color:#8a4b00}code{font-size:12px}
pre{white-space:pre-wrap;background:#f6f6f6;padding:0.5em;font-size:12px}
table.text td,table.text th{text-align:left}"""


def require_report_extra() -> None:
    """matplotlib and statsmodels (the ``report`` extra) must be installed."""
    try:
        import matplotlib  # noqa: F401
        import statsmodels  # noqa: F401
    except ImportError as exc:
        raise UserError(
            f"the report needs the report extra ({exc.name} is missing): "
            'pip install -c constraints.txt -e ".[report]", or run with --no-report'
        ) from None


@dataclass
class Run:
    label: str
    path: Path
    config: RunConfig
    seeker: list[dict[str, Any]] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    sgr: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] | None = None  # results/baseline.json


def load_run(path: Path, label: str) -> Run:
    config = card_config(path)
    run = Run(label, path, config)
    for name, enabled, attr in (
        (SEEKER_JSON, config.seeker.enabled, "seeker"),
        (CALIBRATION_JSON, config.calibration.enabled, "calibration"),
        (SGR_JSON, config.sgr.enabled, "sgr"),
    ):
        if enabled:
            file = path / "results" / name
            if not file.is_file():
                raise UserError(
                    f"{file}: missing; finish the run first (rerun sgrgym run with the same --out)"
                )
            setattr(run, attr, read_json_file(file, "results file")["rows"])
    baseline = path / "results" / BASELINE_JSON
    if config.baseline.enabled and baseline.is_file():  # not in runs made before it was added
        run.baseline = read_json_file(baseline, "results file")
    return run


class ReportPage:
    """HTML and Markdown written side by side."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.html: list[str] = []
        self.md: list[str] = [f"# {title}\n"]

    def heading(self, text: str, level: int = 2) -> None:
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")
        self.md.append(f"{'#' * level} {text}\n")

    def text(self, text: str, note: bool = False) -> None:
        cls = ' class="note"' if note else ""
        self.html.append(f"<p{cls}>{html.escape(text)}</p>")
        self.md.append(f"{'> ' if note else ''}{text}\n")

    def table(
        self, header: Sequence[str], rows: Sequence[Sequence[str]], text: bool = False
    ) -> None:
        """A table; ``text``: its cells are words (left-aligned), not figures."""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        cls = ' class="text"' if text else ""
        self.html.append(f"<table{cls}><tr>{head}</tr>{body}</table>")
        md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += [
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", "<br>") for c in row) + " |"
            for row in rows
        ]
        self.md.append("\n".join(md) + "\n")

    def preformatted(self, text: str) -> None:
        """``text`` as written (an instruction, an agent's raw answer), wrapped, not cut."""
        self.html.append(f"<pre>{html.escape(text)}</pre>")
        fence = "````" if "```" in text else "```"
        self.md.append(f"{fence}\n{text}\n{fence}\n")

    def figures(self, items: Sequence[tuple[str, str]]) -> None:
        """(relative SVG path, caption) shown in one row."""
        cells = "".join(
            f'<figure><img src="{html.escape(src)}" alt="{html.escape(cap)}">'
            f"<figcaption>{html.escape(cap)}</figcaption></figure>"
            for src, cap in items
        )
        self.html.append(f'<div class="row">{cells}</div>')
        self.md.append("\n".join(f"![{cap}]({src})" for src, cap in items) + "\n")

    def link(self, href: str, text: str) -> str:
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'

    def raw(self, fragment: str, md: str) -> None:
        self.html.append(fragment)
        self.md.append(md)

    def render_html(self, css_href: str = "") -> str:
        body = "\n".join(self.html)
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head>\n"
            f"<body>\n<h1>{html.escape(self.title)}</h1>\n{body}\n</body></html>\n"
        )

    def render_md(self) -> str:
        return "\n".join(self.md)


def _pm(mean: Any, std: Any, scale: float = 100.0, digits: int = 1) -> str:
    if not isinstance(mean, (int, float)):
        return str(mean)
    if not isinstance(std, (int, float)):
        return f"{scale * mean:.{digits}f}"
    return f"{scale * mean:.{digits}f} ± {scale * std:.{digits}f}"


def _pct(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, (int, float)) else "-"


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


# ------------------------------------------------------------------------------ SeekerGym


def _pooled(rows: Sequence[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Mean and std per step over the episodes of several rows (equal episode counts)."""
    steps = len(rows[0]["completeness_by_step"])
    mean, std = [], []
    for i in range(steps):
        ms = [r["completeness_by_step"][i] for r in rows]
        ss = [r["completeness_by_step_std"][i] for r in rows]
        m = sum(ms) / len(ms)
        second = sum(s * s + x * x for s, x in zip(ss, ms, strict=True)) / len(ms)
        mean.append(m)
        std.append(max(second - m * m, 0.0) ** 0.5)
    return mean, std


def _episodes(run: Run) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The run's SeekerGym episode records by (agent, belief)."""
    from sgrgym.seeker.records import read_episodes
    from sgrgym.suite.layout import seeker_part

    found = {}
    for agent in run.config.seeker_agents():
        for belief in run.config.seeker.beliefs:
            folder = run.path / seeker_part(agent, belief)
            found[(agent, belief)] = [e.data() for e in read_episodes(folder / "episodes.jsonl")]
    return found


def belief_blind(episodes: dict[tuple[str, str], list[dict[str, Any]]]) -> list[str]:
    """The agents whose episodes are the same under every belief (they never read it): for
    each (document, seed), the same passages in the same order whatever the belief. Such
    episodes are copies, not replicates, and say nothing about beliefs."""
    by_agent: dict[str, dict[tuple[str, int], set[tuple[str, ...]]]] = {}
    beliefs: dict[str, set[str]] = {}
    for (agent, belief), records in episodes.items():
        beliefs.setdefault(agent, set()).add(belief)
        runs = by_agent.setdefault(agent, {})
        for e in records:
            runs.setdefault((e["doc_id"], e["seed"]), set()).add(tuple(e["retrieved"]))
    return sorted(
        agent
        for agent, runs in by_agent.items()
        if len(beliefs[agent]) > 1 and runs and all(len(r) == 1 for r in runs.values())
    )


OVERALL_ROW = "all documents"


def _seeker(page: ReportPage, runs: Sequence[Run], out: Path) -> None:
    from sgrgym.seeker.agents import PRIVILEGED_AGENTS
    from sgrgym.suite.report import figures
    from sgrgym.suite.report.variance import decompose

    runs = [r for r in runs if r.seeker]
    if not runs:
        return
    episodes = {run.label: _episodes(run) for run in runs}
    blind = {run.label: belief_blind(episodes[run.label]) for run in runs}

    def reading(run: Run) -> list[str]:
        """The run's agents that read the belief and see no gold text (what the belief
        figures and table 9 pool); all unprivileged agents when none reads it."""
        plain = [a for a in run.config.seeker_agents() if a not in PRIVILEGED_AGENTS]
        return [a for a in plain if a not in blind[run.label]] or plain

    page.heading("SeekerGym")
    page.heading("Final completeness %, mean ± std over seeds (table 3 layout)", 3)
    beliefs = list(dict.fromkeys(b for r in runs for b in r.config.seeker.beliefs))
    body = []
    for run in runs:
        by_agent: dict[str, dict[str, str]] = {}
        for row in run.seeker:
            by_agent.setdefault(row["agent"], {})[row["belief"]] = _pm(
                row["final_completeness"], row["final_completeness_std"]
            )
        body += [[run.label, a, *(c.get(b, "-") for b in beliefs)] for a, c in by_agent.items()]
    page.table(["Run", "Agent", *beliefs], body)
    for run in runs:
        ceiling = [a for a in run.config.seeker_agents() if a in PRIVILEGED_AGENTS]
        notes = []
        if ceiling:
            notes.append(
                f"{', '.join(ceiling)}: a ceiling (its queries are the gold passages' own "
                "texts), left out of the belief curves, the topic heatmap and table 9"
            )
        copies = [a for a in blind[run.label] if a not in PRIVILEGED_AGENTS]
        if copies:
            notes.append(
                f"{', '.join(copies)}: the same episodes under every belief (the "
                "agent never reads it), so its columns are equal by construction and it is "
                "left out of the belief curves and table 9"
            )
        if notes:
            page.text(f"{run.label}: " + "; ".join(notes) + ".", note=True)
    for run in runs:
        page.text(f"{run.label}: {near_theta_text(run.seeker)}", note=True)

    items = []
    for run in runs:
        curves = {}
        pooled = reading(run)
        for belief in run.config.seeker.beliefs:
            rows = [r for r in run.seeker if r["belief"] == belief and r["agent"] in pooled]
            if rows:
                curves[belief] = _pooled(rows)
        name = f"{FIGURES}/{_safe(run.label)}-seeker-steps.svg"
        figures.completeness_curves(curves, out / name, f"{run.label}: completeness per step")
        items.append(
            (
                name,
                f"{run.label}: completeness per step by belief over {', '.join(pooled)} "
                "(figure 4a; bands ± 0.3 std across episodes)",
            )
        )
    page.heading("Completeness per step (figure 4a)", 3)
    page.figures(items)

    page.heading("Per-topic difficulty (figure 3)", 3)
    items = []
    for run in runs:
        belief = "dedup" if "dedup" in run.config.seeker.beliefs else run.config.seeker.beliefs[0]
        rows = [
            r for r in run.seeker if r["belief"] == belief and r["agent"] not in PRIVILEGED_AGENTS
        ]
        topics = sorted({t for r in rows for t in r["by_topic"]})
        values = [[r["by_topic"].get(t) for r in rows] for t in topics]
        # figure 3's overall mean, as a last row under a dashed line
        topics.append(OVERALL_ROW)
        values.append([r["final_completeness"] for r in rows])
        name = f"{FIGURES}/{_safe(run.label)}-seeker-topics.svg"
        figures.heatmap(
            topics,
            [r["agent"] for r in rows],
            values,
            out / name,
            f"{run.label}: final completeness by topic ({belief})",
        )
        items.append(
            (
                name,
                f"{run.label}: mean final completeness by topic cluster and agent, "
                f"{belief} belief (figure 3)",
            )
        )
    page.figures(items)

    page.heading("Cost–completeness frontier (figure 4b)", 3)
    model_rows = [
        (run, r) for run in runs for r in run.seeker if r.get("tokens_per_episode") is not None
    ]
    # the paper's axis is the cost per episode; tokens when a configuration is unpriced or
    # every one is free (a local model)
    costs = [r.get("cost_usd_per_episode") for _, r in model_rows]
    priced = bool(costs) and all(c is not None for c in costs) and any(c for c in costs)
    key, unit = ("cost_usd_per_episode", "US$") if priced else ("tokens_per_episode", "tokens")
    points = {
        f"{run.label}/{r['agent']}/{r['belief']}": (r[key], r["final_completeness"])
        for run, r in model_rows
    }
    if points:
        name = f"{FIGURES}/seeker-frontier.svg"
        figures.frontier(
            points, out / name, f"{unit} per episode vs final completeness", f"{unit} per episode"
        )
        page.figures([(name, f"cost–completeness frontier in {unit} (figure 4b; x axis flipped)")])
    else:
        page.text(
            "no LLM runs: the built-in agents spend no tokens, so there is no "
            "cost–completeness frontier to draw",
            note=True,
        )

    page.heading("Query diversity and context length per step (appendix C.4)", 3)
    items = []
    for run in runs:
        label = _safe(run.label)
        diversity = {
            f"{r['agent']}/{r['belief']}": r["query_diversity_by_step"] for r in run.seeker
        }
        tokens = {f"{r['agent']}/{r['belief']}": r["belief_tokens_by_step"] for r in run.seeker}
        name = f"{FIGURES}/{label}-seeker-diversity.svg"
        figures.lines(diversity, out / name, f"{run.label}: query diversity", "1 − max cos")
        items.append((name, f"{run.label}: query diversity per step (C.4)"))
        name = f"{FIGURES}/{label}-seeker-context.svg"
        figures.lines(tokens, out / name, f"{run.label}: belief length", "tokens (chars / 4)")
        items.append((name, f"{run.label}: belief context length per step (C.4)"))
    page.figures(items)

    page.heading("Variance decomposition (table 9 layout)", 3)
    for run in runs:
        pooled = reading(run)
        if all(a in blind[run.label] for a in pooled) and len(run.config.seeker.beliefs) > 1:
            page.text(
                f"{run.label}: no agent of this run reads its belief, so its episodes under "
                "the beliefs are copies of each other: table 9 would decompose copies "
                "(pseudo-replication), so it is left out. Run an agent that reads the belief "
                "(belief-phrases, llm) to have it.",
                note=True,
            )
            continue
        rows = [
            {**e, "agent": agent, "belief": belief}
            for (agent, belief), records in episodes[run.label].items()
            if agent in pooled
            for e in records
        ]
        left_out = [a for a in run.config.seeker_agents() if a not in pooled]
        result = decompose(rows)
        page.text(
            f"{run.label}: {result.observations} episodes of {', '.join(pooled)}; Type III "
            "ANOVA of c ~ belief × agent + document (OLS, sum contrasts)"
            + (f"; left out: {', '.join(left_out)} (see table 3's notes)" if left_out else "")
        )
        page.table(
            ["Factor", "df", "F", "η²", "η²p"],
            [
                [
                    f.factor,
                    f"{f.df:.0f}",
                    "—" if f.f is None else f"{f.f:.1f}",
                    "—" if f.eta2 is None else f"{f.eta2:.3f}",
                    "—" if f.eta2_partial is None else f"{f.eta2_partial:.3f}",
                ]
                for f in result.factors
            ],
        )
        if result.document_share_mixed is not None:
            page.text(
                f"mixed-effects model (belief × agent + topic, document as random "
                f"intercept): the document "
                f"accounts for {result.document_share_mixed:.3f} of the variance left"
            )
        for note in result.notes:
            page.text(note, note=True)


def _calibration(page: ReportPage, runs: Sequence[Run], out: Path) -> None:
    from sgrgym.suite.layout import CALIBRATION
    from sgrgym.suite.report import figures

    runs = [r for r in runs if r.calibration]
    if not runs:
        return
    page.heading("Completeness uncertainty: split conformal (table 4 layout)")
    body = [
        [
            run.label,
            r["estimator"],
            _pm(r["q_hat"], r["q_hat_std"], 1, 3),
            _pm(r["r2"], r["r2_std"], 1, 3),
            _pm(r["coverage"], r["coverage_std"]),
        ]
        for run in runs
        for r in run.calibration
    ]
    page.table(["Run", "Estimator", "q̂", "R²", "Coverage %"], body)
    for run in runs:
        items = []
        for row in run.calibration:
            folder = run.path / CALIBRATION / row["estimator"]
            pairs = [p for p in read_pairs(folder) if p.c_hat is not None]
            q_hat = row["q_hat"] if isinstance(row["q_hat"], (int, float)) else float("inf")
            base = f"{FIGURES}/{_safe(run.label)}-cal-{_safe(row['estimator'])}"
            figures.scatter_c(
                [p.c for p in pairs],
                [p.c_hat for p in pairs if p.c_hat is not None],
                q_hat,
                out / f"{base}-scatter.svg",
                f"{row['estimator']}: ĉ vs c",
            )
            figures.histogram(
                [p.score for p in pairs if p.score is not None],
                q_hat,
                out / f"{base}-scores.svg",
                f"{row['estimator']}: nonconformity",
            )
            items += [
                (f"{base}-scatter.svg", f"{run.label} {row['estimator']}: c vs ĉ, ± q̂"),
                (f"{base}-scores.svg", f"{run.label} {row['estimator']}: |c − ĉ|"),
            ]
        page.figures(items)


# ------------------------------------------------------------------------------ baseline


def _baseline(page: ReportPage, runs: Sequence[Run]) -> None:
    """Whether each run's baseline replay matched its committed results, else what differs."""
    entries = [(run.label, run.baseline) for run in runs if run.baseline is not None]
    if not entries:
        return
    page.heading("Baseline replay")
    for label, entry in entries:
        where = baseline_label(entry)
        if entry["error"] is not None:
            page.text(f"{label}: the replay of {where} failed: {entry['error']}", note=True)
        elif entry["identical"]:
            page.text(f"{label}: identical: {where} replays to its committed results.")
        else:
            count, files = entry["difference_count"], len(entry["differing_files"])
            page.text(
                f"{label}: DIFFERENT: {where} does not replay to its committed results: "
                f"{count} difference(s) in {files} file(s), all in baseline/replay.json.",
                note=True,
            )
            page.table(["Run", *BASELINE_HEADER], [[label, *r] for r in baseline_rows(entry)])
            for file, more in entry["unlisted"].items():
                page.text(f"{label}: {more} more difference(s) in {file}, not listed")


# ------------------------------------------------------------------------------ SGR-Bench


def _sgr(page: ReportPage, runs: Sequence[Run], out: Path) -> None:
    from sgrgym.sgr.diagnostics import SOLVED
    from sgrgym.suite.report import figures

    runs = [r for r in runs if r.sgr]
    if not runs:
        return
    page.heading("SGR-Bench")
    sizes = {f"{run.label}/{r['agent']}": r["overall"].get("n") for run in runs for r in run.sgr}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{k}: {n}" for k, n in sizes.items())
        page.text(
            f"These rows are not over the same task variants ({listed}): their means are not "
            "comparable; compare rows with the same number of task variants only.",
            note=True,
        )
    page.heading("Main results (table 2 layout)", 3)
    body = []
    for run in runs:
        for r in run.sgr:
            cells = [run.label, r["agent"]]
            for variant in ("CG", "GO"):
                g = r["by_variant"].get(variant, {})
                cells += [_pct(g.get("row_f1")), _pct(g.get("item_f1")), _pct(g.get("poa"))]
            body.append([*cells, _pct(r["overall"].get("item_f1"))])
    page.table(
        [
            "Run",
            "Agent",
            "CG Row-F1",
            "CG Item-F1",
            "CG P.O.A.",
            "GO Row-F1",
            "GO Item-F1",
            "GO P.O.A.",
            "Overall Item-F1",
        ],
        body,
    )
    page.heading("All task variants (table 3 layout)", 3)
    rows = sorted(
        ((run.label, r) for run in runs for r in run.sgr),
        key=lambda x: -(x[1]["overall"].get("item_f1") or 0),
    )
    page.table(
        ["Run", "Agent", "Item-F1", "Row-F1", "P.O.A.", "n"],
        [
            [
                lbl,
                r["agent"],
                _pct(r["overall"].get("item_f1")),
                _pct(r["overall"].get("row_f1")),
                _pct(r["overall"].get("poa")),
                str(r["overall"].get("n", "")),
            ]
            for lbl, r in rows
        ],
    )

    page.heading("Item-F1 by source family (figure 3) and by cardinality (appendix K)", 3)
    items = []
    for run in runs:
        families = sorted({f for r in run.sgr for f in r["by_family"]})
        series = {
            r["agent"]: [r["by_family"].get(f, {}).get("item_f1") for f in families]
            for r in run.sgr
        }
        name = f"{FIGURES}/{_safe(run.label)}-sgr-families.svg"
        figures.grouped_bars(
            families, series, out / name, f"{run.label}: Item-F1 by family", "Item-F1 %"
        )
        items.append((name, f"{run.label}: Item-F1 by agent and source family (figure 3)"))
    page.figures(items)
    from sgrgym.sgr.score import CARDINALITY_BINS

    # the scorer's bin order (the JSON keys come back sorted as text: 1-2, 11+, 3-5, 6-10)
    found = {b for run in runs for r in run.sgr for b in r["by_cardinality"]}
    bins = [name for name, _, _ in CARDINALITY_BINS if name in found]
    bins += sorted(found - set(bins))
    page.table(
        ["Run", "Agent", *(f"{b} rows Item-F1 (n)" for b in bins)],
        [
            [
                run.label,
                r["agent"],
                *(
                    f"{_pct(r['by_cardinality'].get(b, {}).get('item_f1'))} "
                    f"({r['by_cardinality'].get(b, {}).get('n', 0)})"
                    for b in bins
                ),
            ]
            for run in runs
            for r in run.sgr
        ],
    )

    page.heading("Item-F1 vs Row-F1 per task, and appendix G categories", 3)
    from sgrgym.suite.layout import sgr_part

    items = []
    for run in runs:
        points = {}
        for r in run.sgr:
            scores = read_json_file(run.path / sgr_part(r["agent"]) / "scores.json", "scores")
            points[r["agent"]] = [(t["row_f1"], t["item_f1"]) for t in scores["tasks"]]
        name = f"{FIGURES}/{_safe(run.label)}-sgr-f1.svg"
        figures.f1_scatter(points, out / name, f"{run.label}: Item-F1 vs Row-F1")
        items.append((name, f"{run.label}: Item-F1 against Row-F1, one point per task"))
        # shares over failures, as the paper's table 4 and `sgr audit` take them
        failures = [{c: n for c, n in r["categories"].items() if c != SOLVED} for r in run.sgr]
        categories = sorted({c for f in failures for c in f})
        name = f"{FIGURES}/{_safe(run.label)}-sgr-categories.svg"
        figures.stacked_shares(
            [r["agent"] for r in run.sgr],
            categories,
            failures,
            out / name,
            f"{run.label}: failure categories",
        )
        items.append(
            (
                name,
                f"{run.label}: share of each appendix G category among each agent's failed "
                "episodes (solved ones left out, as in the paper's table 4)",
            )
        )
    page.figures(items)
    categories = sorted({c for run in runs for r in run.sgr for c in r["categories"]})
    page.table(
        ["Run", "Agent", *categories],
        [
            [run.label, r["agent"], *(str(r["categories"].get(c, 0)) for c in categories)]
            for run in runs
            for r in run.sgr
        ],
    )
    _task_pages(page, runs, out)


def _shown(value: Any) -> str:
    """A recorded value as a reader reads it: no Python ``None``/``True`` spellings."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _run_tasks(folder: Path) -> tuple[dict[str, ScoringTask], str]:
    """The tasks an SGR part was run on, from the task files its run card names, and a note
    when they cannot be shown (a file missing or changed since the run)."""
    from sgrgym.core.hashing import sha256_file
    from sgrgym.core.home import locate
    from sgrgym.sgr.tasks import load_tasks

    card = read_json_file(folder / "run.json", "run card")
    files = card.get("task_files") or {}
    changed = [
        f
        for f, digest in sorted(files.items())
        if not locate(f).is_file() or sha256_file(locate(f))[0] != digest
    ]
    if changed:
        return {}, (
            f"the task file {changed[0]} is missing or changed since the run: the instruction "
            "and the reference are not shown"
        )
    try:
        return {t.task_id: t for t in load_tasks([locate(f) for f in sorted(files)])}, ""
    except UserError as exc:
        return {}, f"the task files cannot be read ({exc}): the instruction is not shown"


def _comparison(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[list[str]]:
    """One line per reference row (and per predicted row matching none), each field as
    ``✓ value`` or ``✗ reference → predicted``, from the scorer's per-row diagnostics."""
    lines = []
    for row in rows:
        if row.get("gold_index") is None:
            status = "duplicate key" if row.get("duplicate") else "not in the reference"
        else:
            status = "matched" if row.get("matched") else "missing from the answer"
        fields = {f["column"]: f for f in row.get("fields", [])}
        cells = []
        for column in [*columns, *(c for c in fields if c not in columns)]:
            f = fields.get(column)
            if f is None:
                cells.append("")
            elif f.get("correct"):
                cells.append(f"✓ {_shown(f.get('pred'))}")
            else:
                cells.append(f"✗ {_shown(f.get('gold'))} → {_shown(f.get('pred'))}")
        key = " | ".join(_shown(k) for k in row.get("key", []))
        lines.append([key, status, *cells])
    return lines


def _task_pages(page: ReportPage, runs: Sequence[Run], out: Path) -> None:
    """One page per task: the task as the agents were given it and its reference, then per
    run and agent the scores, the answer as given, a per-field comparison with the reference
    and the trajectory; every page links back to the report."""
    from sgrgym.sgr.records import TrajectoryRecord, read_answers, read_trajectories
    from sgrgym.suite.layout import sgr_part

    tasks: dict[str, list[tuple[str, str, TrajectoryRecord, dict[str, Any], str | None]]] = {}
    known: dict[str, ScoringTask] = {}
    notes: list[str] = []
    for run in runs:
        for r in run.sgr:
            folder = run.path / sgr_part(r["agent"])
            scores = {
                t["task_id"]: t for t in read_json_file(folder / "scores.json", "scores")["tasks"]
            }
            answers = {a.task_id: a.answer for a in read_answers(folder / "answers.jsonl")}
            found, note = _run_tasks(folder)
            known.update(found)
            if note and note not in notes:
                notes.append(note)
            for t in read_trajectories(folder / "trajectories.jsonl"):
                tasks.setdefault(t.task_id, []).append(
                    (run.label, r["agent"], t, scores.get(t.task_id, {}), answers.get(t.task_id))
                )
    links = []
    for task_id, entries in sorted(tasks.items()):
        sub = ReportPage(f"SGR task {task_id}")
        sub.raw(
            f"<p>{sub.link('../index.html', '← back to the report')}</p>",
            "[← back to the report](../report.md)\n",
        )
        task = known.get(task_id)
        columns: Sequence[str] = task.columns if task else ()
        if task is not None:
            sub.heading("Task")
            sub.text(
                f"{task.variant} variant, domain {task.domain}, {len(task.gold_rows)} reference "
                f"row(s); row key: {', '.join(task.key_names)}"
            )
            sub.preformatted(task.task.instruction)
            sub.heading("Reference answer", 3)
            sub.table(list(task.columns), [list(row) for row in task.gold_rows], text=True)
        for label, agent, trajectory, score, answer in entries:
            sub.heading(f"{label} / {agent}")
            sub.text(
                f"Item-F1 {_pct(score.get('item_f1'))}, Row-F1 {_pct(score.get('row_f1'))}, "
                f"P.O.A. {_pct(score.get('poa'))}; ended by {trajectory.ended_by}; "
                f"category: {trajectory.category}; {trajectory.tool_calls} tool call(s)"
            )
            sub.heading("Answer as given", 3)
            if answer is None:
                sub.text("no answer (the episode ended without one)", note=True)
            else:
                sub.preformatted(answer)
            rows = score.get("rows") or []
            if rows:
                sub.heading("Compared with the reference (canonical values)", 3)
                width = max(len(columns), *(len(r.get("fields", [])) for r in rows))
                header = [*columns, *(f"extra {i}" for i in range(1, width - len(columns) + 1))]
                sub.table(["Row key", "Row", *header], _comparison(rows, columns), text=True)
            steps = trajectory.steps
            sub.heading("Trajectory", 3)
            sub.table(
                ["Step", "Tool", "Arguments", "State reached", "Match", "Status"],
                [
                    [
                        _shown(s.get("step")),
                        _shown(s.get("tool")),
                        "; ".join(f"{k}={v}" for k, v in sorted(s.get("args", {}).items())),
                        _shown(s.get("state") or None),
                        _shown(s.get("match") or None),
                        _shown(s.get("status") or None),
                    ]
                    for s in steps
                ],
                text=True,
            )
            reached = sorted(
                {s["state"] for s in steps if s.get("state") and s.get("status") == 200}
            )
            sub.text("reached states: " + (", ".join(reached) if reached else "none"))
            sub.table(
                ["Diagnostic", "Value"],
                [[k, _shown(v)] for k, v in sorted(trajectory.diagnostics.items())],
                text=True,
            )
        name = f"{TASKS}/{_safe(task_id)}"
        (out / f"{name}.html").write_text(sub.render_html(), encoding="utf-8")
        (out / f"{name}.md").write_text(sub.render_md(), encoding="utf-8")
        links.append((name, task_id))
    page.heading("Per-task pages (task, reference, answers compared, trajectories)", 3)
    for note in notes:
        page.text(note, note=True)
    page.raw(
        "<p>" + " ".join(page.link(f"{n}.html", t) for n, t in links) + "</p>",
        " ".join(f"[{t}]({n}.md)" for n, t in links) + "\n",
    )


# ------------------------------------------------------------------------------ the report


def _labels(dirs: Sequence[Path]) -> list[str]:
    """Run labels: ``run`` for a single folder (so the report does not depend on where the
    folder is), else the folder names, made unique."""
    if len(dirs) == 1:
        return ["run"]
    labels: list[str] = []
    for d in dirs:
        base = d.resolve().name or "run"
        label, n = base, 2
        while label in labels:
            label, n = f"{base}-{n}", n + 1
        labels.append(label)
    return labels


def write_report(dirs: Sequence[Path], out: Path) -> Path:
    """Write ``out/index.html``, ``out/report.md``, ``out/figures/`` and ``out/tasks/``."""
    require_report_extra()
    runs = [load_run(d, label) for d, label in zip(dirs, _labels(dirs), strict=True)]
    for sub in (FIGURES, TASKS):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
        (out / sub).mkdir(parents=True)
    page = ReportPage("sgrgym report")
    page.table(["Run", "Config sha256"], [[r.label, r.config.sha256()[:16]] for r in runs])
    _baseline(page, runs)
    _seeker(page, runs, out)
    _calibration(page, runs, out)
    _sgr(page, runs, out)
    (out / "index.html").write_text(page.render_html(), encoding="utf-8")
    (out / "report.md").write_text(page.render_md(), encoding="utf-8")
    return out / "index.html"
