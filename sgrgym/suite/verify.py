"""``sgrgym verify-run``: check a run folder's hashes and recompute its metrics from the records.

1. ``complete.json`` (the run finished) lists every file with its sha256: each must exist and
   match, and no other file may be there (the timing files are listed apart as volatile).
2. Each part's own ``complete.json`` must match its files too.
3. The inputs named in ``run.json`` (manifests, task files, prompts) are hashed again.
4. Every summary is recomputed from the records and compared byte for byte: each SeekerGym
   ``summary.json`` from its episodes; each estimator's calibration ``report.json`` (q̂, R²,
   coverage) from its partitions, the partitions from the (c, ĉ) pairs (section 3.3 protocol;
   within the pairs' 6-decimal rounding), ``scores.json`` from the pairs; each SGR
   ``scores.json`` by the scorer from ``answers.jsonl`` and the task files; ``results/*``.

A folder of one ``sgr run`` or ``seeker run`` (such as one joined from its shards by
``sgrgym merge``) is checked as a part is: the sha256 its ``complete.json`` lists, then its
summary recomputed from its records (:func:`verify_folder`).

Every problem names the file it is in; nothing stops at the first one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.home import locate
from sgrgym.core.shard import Shard
from sgrgym.runs.folder import COMPLETE, SHARD
from sgrgym.suite.results import compute, load_card, read_json_file

Item = TypeVar("Item")
TOLERANCE = 1e-5  # the pairs are rounded to 6 decimals; q̂ and R² recomputed from them


def _check(problems: list[str], where: Path, job: Callable[[], list[str]]) -> None:
    try:
        problems += job()
    except UserError as exc:
        problems.append(f"{where}: {exc}")
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        problems.append(f"{where}: a record lacks a field or has a wrong value ({exc!r})")


def _hashes(out: Path) -> list[str]:
    from sgrgym.suite.layout import pinned_files

    marker = read_json_file(out / COMPLETE, "completion marker")
    if not isinstance(marker, dict) or not isinstance(marker.get("files"), dict):
        return [f"{out / COMPLETE}: not a completion marker (no files)"]
    listed = {**marker["files"], **marker.get("volatile", {})}
    found_files, found_volatile = pinned_files(out)
    found = {**found_files, **found_volatile}
    problems = []
    for name, digest in sorted(listed.items()):
        if name not in found:
            problems.append(f"{out / name}: listed in {COMPLETE} but missing")
        elif found[name] != digest:
            problems.append(f"{out / name}: sha256 {found[name]} differs from {COMPLETE}'s")
    problems += [f"{out / n}: not listed in {COMPLETE}" for n in sorted(set(found) - set(listed))]
    return problems


def _part_markers(out: Path) -> list[str]:
    problems = []
    for marker in sorted(out.rglob(COMPLETE)):
        if marker.parent == out:
            continue
        listing = read_json_file(marker, "completion marker")
        for name, digest in sorted(listing.get("files", {}).items()):
            path = marker.parent / name
            if not path.is_file():
                problems.append(f"{path}: listed in {marker} but missing")
            elif sha256_file(path)[0] != digest:
                problems.append(f"{path}: sha256 differs from {marker}'s")
    return problems


def _inputs(card: dict[str, Any]) -> list[str]:
    problems = []
    for label, entry in sorted(card.get("manifests", {}).items()):
        path = Path(entry["path"])
        if not path.is_file():
            problems.append(
                f"{path}: {label} of the run is not here (run verify-run from "
                "the directory the run started in)"
            )
        elif sha256_file(path)[0] != entry["sha256"]:
            problems.append(f"{path}: {label} changed since the run (sha256 differs)")
    return problems


def _same(path: Path, text: str) -> list[str]:
    if not path.is_file():
        return [f"{path}: missing"]
    if path.read_bytes() != text.encode("utf-8"):
        return [f"{path}: differs from the value recomputed from the records"]
    return []


def _sharded(card: dict[str, Any], episodes: list[Item]) -> list[Item]:
    """The ``episodes`` of the run ``card`` that its folder holds: its shard's, if it is one."""
    if SHARD not in card:
        return episodes
    try:
        shard = Shard.of_card(card[SHARD])
    except ValueError:
        raise UserError(f"field {SHARD} of the run card is not {{index, count}}") from None
    return shard.select(episodes)


def _seeker(folder: Path) -> list[str]:
    from sgrgym.seeker.records import read_episodes
    from sgrgym.seeker.run import episode_order, summarize, summary_text

    card = read_json_file(folder / "run.json", "run card")
    stored = read_json_file(folder / "summary.json", "SeekerGym summary")
    episodes = read_episodes(folder / "episodes.jsonl")
    expected = set(_sharded(card, episode_order(card["docs"], card["seeds"])))
    got = [(e.seed, e.doc_id) for e in episodes]
    problems = []
    if len(got) != len(set(got)) or set(got) != expected:
        problems.append(f"{folder / 'episodes.jsonl'}: episodes missing or repeated")
    summary = summarize(
        episodes,
        corpus=card["corpus"],
        agent=card["agent"],
        belief=card["belief"],
        steps=card["steps"],
        seeds=card["seeds"],
        theta=card["theta"],
    )
    summary = summary.model_copy(update={"theta_note": stored.get("theta_note", "")})
    return problems + _same(folder / "summary.json", summary_text(summary))


_SPECIAL = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}  # as JSON holds them


def _special(value: object) -> object:
    return _SPECIAL.get(value, value) if isinstance(value, str) else value


def _close(a: object, b: object, tolerance: float) -> bool:
    a, b = _special(a), _special(b)
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
        return (math.isnan(x) and math.isnan(y)) or x == y
    return abs(x - y) <= tolerance


def _estimator(folder: Path) -> list[str]:
    from sgrgym.seeker.calibrate import run_protocol
    from sgrgym.seeker.records import read_pairs, read_partitions
    from sgrgym.suite.results import _protocol

    report = read_json_file(folder / "report.json", "calibration report")
    partitions = read_partitions(folder)
    pairs = read_pairs(folder)
    problems = []
    for key in ("q_hat", "r2", "coverage"):
        mean, std = _protocol(partitions, key)
        if not _close(mean, report[key], 0) or not _close(std, report[f"{key}_std"], 0):
            problems.append(f"{folder / 'report.json'}: {key} differs from its partitions")
    c = [p.c for p in pairs]
    by_seed = [p.c_hat_by_seed for p in pairs]
    if report["estimator_seeded"] and all(s is not None for s in by_seed):
        rows = [
            [math.nan if v is None else v for v in col]
            for col in zip(*(s or [] for s in by_seed), strict=True)
        ]
    else:
        rows = [[math.nan if p.c_hat is None else p.c_hat for p in pairs]]
    redone = run_protocol(
        c,
        rows if len(rows) > 1 else rows[0],
        report["alpha"],
        splits=report["splits"],
        seeds=report["seeds"],
        base_seed=report["seed"],
        fit_mean=report["estimator"] == "constant",  # refit in every partition (section 3.3)
        protocol=report["protocol"],
        failure_rule=report["failure_rule"],
    )
    if len(redone.partitions) != len(partitions):
        problems.append(
            f"{folder / 'partitions.jsonl'}: {len(partitions)} partitions, the "
            f"protocol gives {len(redone.partitions)}"
        )
    for stored, again in zip(partitions, redone.partitions, strict=False):
        n_test = max(again.n_test, 1)
        for key, tolerance in (
            ("q_hat", TOLERANCE),
            ("r2", TOLERANCE),
            ("coverage", 1 / n_test + 1e-9),
        ):
            if not _close(getattr(stored, key), getattr(again, key), tolerance):
                where = f"{folder / 'partitions.jsonl'}: split {stored.split}"
                problems.append(f"{where} seed {stored.seed} {key} does not follow from the pairs")
                break
    scores = read_json_file(folder / "scores.json", "calibration scores")
    expected = sorted(p.score for p in pairs if p.score is not None)
    if [float(s) for s in scores.get("scores", [])] != expected:
        problems.append(f"{folder / 'scores.json'}: scores differ from the pairs'")
    pool = folder.parent / "pool.jsonl"
    if pool.is_file() and sha256_file(pool)[0] != report["pool_sha256"]:
        problems.append(f"{pool}: sha256 differs from {folder / 'report.json'}'s pool_sha256")
    return problems


def _sgr(folder: Path) -> list[str]:
    from sgrgym.sgr.make import select_tasks
    from sgrgym.sgr.records import read_answers
    from sgrgym.sgr.score import load_predictions, score_tasks
    from sgrgym.sgr.tasks import load_tasks

    card = read_json_file(folder / "run.json", "run card")
    problems = []
    files = []
    for name, digest in card["task_files"].items():  # in the run's order
        path = locate(name)
        if not path.is_file() or sha256_file(path)[0] != digest:
            problems.append(f"{path}: task file of {folder} is missing or changed")
        files.append(path)
    if problems:
        return problems
    ids = [a.task_id for a in read_answers(folder / "answers.jsonl")]
    if len(ids) != len(set(ids)):
        problems.append(f"{folder / 'answers.jsonl'}: a task is answered twice")
    tasks = load_tasks(files)
    selection = card.get("task_ids")
    if selection is not None:  # a run of some variants (sgr run --task/--limit)
        tasks = select_tasks(tasks, selection, None)
    tasks = _sharded(card, tasks)
    report = score_tasks(tasks, load_predictions(folder / "answers.jsonl"))
    return problems + _same(folder / "scores.json", report.model_dump_json(indent=2) + "\n")


def _listed(folder: Path) -> list[str]:
    """The files ``complete.json`` of ``folder`` lists: each must be there, with its sha256."""
    listing = read_json_file(folder / COMPLETE, "completion marker")
    files = listing.get("files") if isinstance(listing, dict) else None
    if not isinstance(files, dict):
        return [f"{folder / COMPLETE}: not a completion marker (no files)"]
    problems = []
    for name, digest in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{path}: listed in {folder / COMPLETE} but missing")
        elif sha256_file(path)[0] != digest:
            problems.append(f"{path}: sha256 differs from {folder / COMPLETE}'s")
    return problems


def folder_kind(card: object) -> str | None:
    """``"sgr"`` or ``"seeker"`` for the card of an ``sgr run`` or ``seeker run`` folder,
    ``"run"`` for a ``sgrgym run`` folder's, else None."""
    from sgrgym.seeker.merge import is_seeker_card
    from sgrgym.sgr.merge import is_sgr_card

    if not isinstance(card, dict):
        return None
    if card.get("kind") == "sgrgym run":
        return "run"
    return "sgr" if is_sgr_card(card) else "seeker" if is_seeker_card(card) else None


def verify_folder(folder: Path, kind: str) -> list[str]:
    """Every problem found in the finished ``sgr run`` or ``seeker run`` (``kind``) folder
    ``folder``: its completion marker's hashes, then its summary from its records."""
    problems: list[str] = []
    _check(problems, folder / COMPLETE, lambda: _listed(folder))
    _check(problems, folder, lambda: _sgr(folder) if kind == "sgr" else _seeker(folder))
    return problems


def verify_run(out: Path) -> list[str]:
    """Every problem found in the run folder ``out`` (empty: it verifies): a ``sgrgym run``
    folder, or the folder of one ``sgr run`` or ``seeker run`` (:func:`verify_folder`)."""
    from sgrgym.suite.layout import CALIBRATION, RESULTS, seeker_part, sgr_part
    from sgrgym.suite.results import card_config

    if not (out / COMPLETE).is_file():
        raise UserError(
            f"{out}: no {COMPLETE}: the run did not finish (rerun its command "
            "with the same --out to resume it)"
        )
    kind = folder_kind(read_json_file(out / "run.json", "run card"))
    if kind in ("sgr", "seeker"):
        assert kind is not None
        return verify_folder(out, kind)
    problems: list[str] = []
    _check(problems, out / COMPLETE, lambda: _hashes(out))
    _check(problems, out, lambda: _part_markers(out))
    card = load_card(out)
    config = card_config(out)
    _check(problems, out / "run.json", lambda: _inputs(card))
    if config.seeker.enabled:
        for agent in config.seeker_agents():
            for belief in config.seeker.beliefs:
                folder = out / seeker_part(agent, belief)
                _check(problems, folder, lambda f=folder: _seeker(f))  # type: ignore[misc]
    if config.calibration.enabled:
        for name in config.calibration.estimators:
            folder = out / CALIBRATION / name
            _check(problems, folder, lambda f=folder: _estimator(f))  # type: ignore[misc]
    if config.sgr.enabled:
        for agent in config.sgr_agents():
            folder = out / sgr_part(agent)
            _check(problems, folder, lambda f=folder: _sgr(f))  # type: ignore[misc]

    def results() -> list[str]:
        found = []
        for name, text in compute(out, config).items():
            found += _same(out / RESULTS / name, text)
        return found

    _check(problems, out / RESULTS, results)
    return problems
