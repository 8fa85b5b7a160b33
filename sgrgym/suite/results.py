"""The summary tables of a ``sgrgym run`` folder, computed from its records only.

``results/seeker.json`` (SeekerGym table 3 and the data of figures 3, 4 and C.4),
``results/calibration.json`` (table 4), ``results/sgr.json`` (SGR-Bench tables 2 and 3, figure
3, appendix K and appendix G), ``results/baseline.json`` (whether the committed real-model
baseline replayed to its committed results, and what differed; from
``baseline/replay.json``) and ``results/tables.md`` (the same as text). :func:`compute` is
what ``sgrgym verify-run`` runs again: the files must come out byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json
from sgrgym.core.inputs import BadJson, decode_text, json_value, read_bytes
from sgrgym.core.io import write_atomic
from sgrgym.core.table import format_table
from sgrgym.seeker.records import (
    EpisodeRecord,
    PartitionResult,
    read_episodes,
    read_pairs,
    read_partitions,
)
from sgrgym.sgr.records import read_trajectories
from sgrgym.suite.config import RunConfig

ROUND = 6
SEEKER_JSON = "seeker.json"
CALIBRATION_JSON = "calibration.json"
SGR_JSON = "sgr.json"
BASELINE_JSON = "baseline.json"
BASELINE_HEADER = ("File", "Record", "Field", "Committed", "Replayed")
TABLES_MD = "tables.md"


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (ddof = 1; 0 for a single value), rounded."""
    if not values:
        return math.nan, math.nan
    spread = stdev(values) if len(values) > 1 else 0.0
    return round(fmean(values), ROUND), round(spread, ROUND)


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file; a bad one is an error naming it."""
    try:
        return json_value(decode_text(read_bytes(path, what), path, what))
    except BadJson as exc:
        raise UserError(f"{path}: the {what} is not valid JSON ({exc})") from None


def _llm_totals(episode: EpisodeRecord) -> dict[str, Any] | None:
    """An LLM agent's per-episode totals (``llm.totals``: calls, prompt and completion tokens,
    cost), or None for a built-in agent."""
    totals = episode.llm.get("totals") if episode.llm is not None else None
    return totals if isinstance(totals, dict) else None


def _tokens(totals: dict[str, Any] | None) -> float | None:
    if totals is None:
        return None
    return float(totals.get("prompt_tokens", 0)) + float(totals.get("completion_tokens", 0))


def _cost(totals: dict[str, Any] | None) -> float | None:
    """The episode's cost in US$, None unless every call was priced."""
    if totals is None or totals.get("unpriced_calls", 0) or "cost_usd" not in totals:
        return None
    return float(totals["cost_usd"])


def seeker_row(folder: Path, agent: str, belief: str) -> dict[str, Any]:
    """Table 3's cell for one agent and belief: final completeness mean ± std over seeds
    (section 3.1), with the per-step curve (figure 4a: mean and std over episodes), per-topic
    means (figure 3), per-document means (table 9's input), context length and query
    diversity per step (C.4) and, when the episodes carry them, tokens and cost (figure 4b)."""
    episodes = read_episodes(folder / "episodes.jsonl")
    if not episodes:
        raise UserError(f"{folder}: no episodes recorded")
    by_seed: dict[int, list[float]] = {}
    topics: dict[str, list[float]] = {}
    docs: dict[str, list[float]] = {}
    for e in episodes:
        by_seed.setdefault(e.seed, []).append(e.final_completeness)
        topics.setdefault(e.topic, []).append(e.final_completeness)
        docs.setdefault(e.doc_id, []).append(e.final_completeness)
    steps = len(episodes[0].completeness)
    if any(len(e.completeness) < steps or len(e.belief_tokens) < steps for e in episodes):
        raise UserError(f"{folder / 'episodes.jsonl'}: episodes of different lengths")
    curve = [[e.completeness[i] for e in episodes] for i in range(steps)]
    context = [[float(e.belief_tokens[i]) for e in episodes] for i in range(steps)]
    diversity: list[list[float]] = [[] for _ in range(steps)]
    for e in episodes:
        position = 0
        for i, step in enumerate(e.steps):
            count = len(step.queries)
            if i:  # the first step has no earlier queries to differ from
                diversity[i] += e.query_diversity[position : position + count]
            position += count
    seed_means = [fmean(v) for _, v in sorted(by_seed.items())]
    mean, std = mean_std(seed_means)
    totals = [_llm_totals(e) for e in episodes]
    tokens = [t for t in map(_tokens, totals) if t is not None]
    costs = [c for c in map(_cost, totals) if c is not None]
    return {
        "agent": agent,
        "belief": belief,
        "episodes": len(episodes),
        "seeds": len(by_seed),
        "final_completeness": mean,
        "final_completeness_std": std,
        "final_completeness_by_seed": [round(v, ROUND) for v in seed_means],
        "completeness_by_step": [round(fmean(c), ROUND) for c in curve],
        "completeness_by_step_std": [mean_std(c)[1] for c in curve],
        "by_topic": {t: round(fmean(v), ROUND) for t, v in sorted(topics.items())},
        "by_document": {d: round(fmean(v), ROUND) for d, v in sorted(docs.items())},
        "belief_tokens_by_step": [round(fmean(t), 3) for t in context],
        "query_diversity_by_step": [round(fmean(d), ROUND) if d else None for d in diversity],
        "tokens_per_episode": round(fmean(tokens), 3) if len(tokens) == len(episodes) else None,
        "cost_usd_per_episode": round(fmean(costs), 6) if len(costs) == len(episodes) else None,
        "near_theta": sum(e.near_theta for e in episodes),
    }


def _protocol(partitions: Sequence[PartitionResult], key: str) -> tuple[float, float]:
    """Section 3.3: mean ± std (ddof = 1) across the split-level means of ``key``."""
    splits: dict[int, list[float]] = {}
    for p in partitions:
        splits.setdefault(p.split, []).append(getattr(p, key))
    means = [fmean(v) for _, v in sorted(splits.items())]
    if any(math.isnan(m) for m in means):
        return math.nan, math.nan
    if any(math.isinf(m) for m in means):
        return math.inf, math.nan
    return mean_std(means)


def calibration_row(folder: Path) -> dict[str, Any]:
    """Table 4's row for one estimator, from its partitions and (c, ĉ) pairs."""
    partitions = read_partitions(folder)
    pairs = read_pairs(folder)
    if not partitions:
        raise UserError(f"{folder}: no calibration partitions recorded")
    q_hat, q_std = _protocol(partitions, "q_hat")
    r2, r2_std = _protocol(partitions, "r2")
    cov, cov_std = _protocol(partitions, "coverage")
    scores = [p.score for p in pairs if p.score is not None]
    return {
        "estimator": folder.name,
        "q_hat": _finite(q_hat),
        "q_hat_std": _finite(q_std),
        "r2": _finite(r2),
        "r2_std": _finite(r2_std),
        "coverage": _finite(cov),
        "coverage_std": _finite(cov_std),
        "states": len(pairs),
        "mean_score": round(fmean(scores), ROUND) if scores else None,
    }


def _finite(value: float) -> float | str:
    if math.isinf(value):
        return "Infinity"
    if math.isnan(value):
        return "NaN"
    return value


def sgr_row(folder: Path, agent: str) -> dict[str, Any]:
    """Tables 2 and 3 for one agent (scores recomputed by the scorer are checked by
    ``verify-run``; here they are read), with appendix G's category counts."""
    scores = read_json_file(folder / "scores.json", "SGR scores")
    trajectories = read_trajectories(folder / "trajectories.jsonl")
    categories: dict[str, int] = {}
    for t in trajectories:
        categories[t.category] = categories.get(t.category, 0) + 1
    try:
        return {
            "agent": agent,
            "overall": scores["overall"],
            "by_variant": scores["by_variant"],
            "by_family": scores.get("by_family", {}),
            "by_cardinality": scores["by_cardinality"],
            "categories": dict(sorted(categories.items())),
            "tasks": len(trajectories),
        }
    except (KeyError, TypeError) as exc:
        raise UserError(f"{folder / 'scores.json'}: lacks field {exc}") from None


def compute(out: Path, config: RunConfig) -> dict[str, str]:
    """File name -> text of every results file of the run folder ``out``."""
    from sgrgym.suite.layout import CALIBRATION, seeker_part, sgr_part

    texts: dict[str, str] = {}
    tables: list[str] = []
    if config.seeker.enabled:
        rows = [
            seeker_row(out / seeker_part(a, b), a, b)
            for a in config.seeker_agents()
            for b in config.seeker.beliefs
        ]
        texts[SEEKER_JSON] = canonical_json({"rows": rows})
        tables.append(
            "## SeekerGym: final completeness %, mean ± std over seeds (table 3)\n\n"
            + seeker_table(rows, config.seeker.beliefs)
        )
        tables.append(near_theta_text(rows))
    if config.calibration.enabled:
        rows = [calibration_row(out / CALIBRATION / e) for e in config.calibration.estimators]
        texts[CALIBRATION_JSON] = canonical_json({"rows": rows})
        tables.append(
            "## Completeness estimators: q̂, R², coverage (table 4)\n\n" + calibration_table(rows)
        )
    if config.sgr.enabled:
        rows = [sgr_row(out / sgr_part(a), a) for a in config.sgr_agents()]
        texts[SGR_JSON] = canonical_json({"rows": rows})
        tables.append("## SGR-Bench (table 2)\n\n" + sgr_table(rows))
    if config.baseline.enabled:
        entry = baseline_entry(out)
        texts[BASELINE_JSON] = canonical_json(entry)
        heading = "## Baseline replay (committed real-model recording)\n\n"
        tables.append(heading + baseline_text(entry))
    texts[TABLES_MD] = "\n\n".join(f"{t}\n" if not t.endswith("\n") else t for t in tables)
    return texts


def write_results(out: Path, config: RunConfig) -> None:
    folder = out / "results"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in compute(out, config).items():
        write_atomic(folder / name, text)


def baseline_entry(out: Path) -> dict[str, Any]:
    """The baseline replay's outcome as ``baseline/replay.json`` records it: identical or
    not, why a replay failed, the files that differ, how many differences, the listed ones."""
    from sgrgym.suite.baseline import read_status
    from sgrgym.suite.layout import BASELINE, REPLAY_JSON

    marker = out / BASELINE / REPLAY_JSON
    if not marker.is_file():
        raise UserError(
            f"{marker}: missing; finish the run first (rerun sgrgym run with the same --out)"
        )
    status = read_status(marker)
    return {
        "baseline": status.baseline,
        "runs": status.runs,
        "identical": status.identical,
        "error": status.error,
        "differing_files": list(dict.fromkeys(d.file for d in status.differences)),
        "difference_count": len(status.differences) + sum(status.unlisted.values()),
        "differences": [d.model_dump(mode="json") for d in status.differences],
        "unlisted": status.unlisted,
    }


def baseline_text(entry: dict[str, Any]) -> str:
    """The baseline replay's outcome as text: identical, the error, or a table of what
    differs (file, record, field, committed, replayed)."""
    where = baseline_label(entry)
    if entry["error"] is not None:
        return f"The replay of {where} failed: {entry['error']}\n"
    if entry["identical"]:
        return f"Identical: {where} replays to its committed results byte for byte.\n"
    files = entry["differing_files"]
    table = format_table(BASELINE_HEADER, baseline_rows(entry), align="lllll")
    more = "".join(
        f"\n{count} more difference(s) in {file}, not listed"
        for file, count in entry["unlisted"].items()
    )
    summary = f"{entry['difference_count']} difference(s) in {len(files)} file(s)"
    return (
        f"DIFFERENT: {where} does not replay to its committed results: {summary}.\n\n"
        f"```\n{table}\n```{more}\n"
    )


def baseline_label(entry: dict[str, Any]) -> str:
    """The baseline folder and its runs: ``baselines/x (sgr, seeker-dedup)``."""
    runs = entry["runs"]
    return f"{entry['baseline']} ({', '.join(runs)})" if runs else str(entry["baseline"])


def baseline_rows(entry: dict[str, Any]) -> list[list[str]]:
    """The listed differences as table rows (:data:`BASELINE_HEADER`)."""
    return [
        [d["file"], d["record"], d["field"], _value(d["committed"]), _value(d["replayed"])]
        for d in entry["differences"]
    ]


def _value(value: str | None) -> str:
    """A difference's value as shown: compact JSON, or (absent)."""
    return "(absent)" if value is None else value


def _pm(mean: object, std: object, scale: float = 100.0, digits: int = 1) -> str:
    if not isinstance(mean, (int, float)) or not isinstance(std, (int, float)):
        return str(mean)
    return f"{scale * mean:.{digits}f} ± {scale * std:.{digits}f}"


def seeker_table(rows: Sequence[dict[str, Any]], beliefs: Sequence[str]) -> str:
    """Table 3's layout: one row per agent, one column per belief."""
    cells: dict[str, dict[str, str]] = {}
    for r in rows:
        cells.setdefault(r["agent"], {})[r["belief"]] = _pm(
            r["final_completeness"], r["final_completeness_std"]
        )
    body = [[a, *(c.get(b, "-") for b in beliefs)] for a, c in cells.items()]
    return "```\n" + format_table(["Agent", *beliefs], body) + "\n```"


def near_theta_text(rows: Sequence[dict[str, Any]]) -> str:
    """How many retrieval decisions lay within 1e-5 of θ: those a processor change could flip
    where query vectors are computed live (a replay's recorded vectors cannot move)."""
    near = sum(int(r.get("near_theta", 0)) for r in rows)
    return (
        f"Retrieval decisions within 1e-5 of θ (live query vectors from another processor's "
        f"kernels could flip them): {near}."
    )


def calibration_table(rows: Sequence[dict[str, Any]]) -> str:
    body = [
        [
            r["estimator"],
            _pm(r["q_hat"], r["q_hat_std"], 1, 3),
            _pm(r["r2"], r["r2_std"], 1, 3),
            _pm(r["coverage"], r["coverage_std"]),
        ]
        for r in rows
    ]
    return "```\n" + format_table(["Estimator", "q̂", "R²", "Coverage %"], body) + "\n```"


def _pct(value: object) -> str:
    return f"{100 * value:.2f}" if isinstance(value, (int, float)) else "-"


def sgr_table(rows: Sequence[dict[str, Any]]) -> str:
    """Table 2's layout: Row-F1, Item-F1, P.O.A. per variant, then overall Item-F1."""
    body = []
    for r in rows:
        cells = [r["agent"]]
        for variant in ("CG", "GO"):
            g = r["by_variant"].get(variant, {})
            cells += [_pct(g.get("row_f1")), _pct(g.get("item_f1")), _pct(g.get("poa"))]
        cells.append(_pct(r["overall"].get("item_f1")))
        body.append(cells)
    metrics = ["Row-F1", "Item-F1", "P.O.A."]
    table = format_table(
        ["Agent", *metrics, *metrics, "Item-F1"],
        body,
        groups=[("", 1), ("Constraint-Guided", 3), ("Goal-Oriented", 3), ("Overall", 1)],
    )
    return "```\n" + table + "\n```"


def load_card(out: Path) -> dict[str, Any]:
    """The card of a ``sgrgym run`` folder (an error naming it when it is not one)."""
    card = read_json_file(out / "run.json", "run card")
    if not isinstance(card, dict) or card.get("kind") != "sgrgym run":
        raise UserError(f"{out}: not a sgrgym run folder (run.json is not a 'sgrgym run' card)")
    return card


def card_config(out: Path) -> RunConfig:
    """The config recorded in a run folder's card."""
    card = load_card(out)
    try:
        return RunConfig.model_validate(card["config"])
    except Exception as exc:  # pydantic's ValidationError, a missing key
        raise UserError(f"{out / 'run.json'}: field config is not a run config ({exc})") from None
