"""Benchmark: score 1,100 (task, prediction) pairs, against a naive baseline in the same run.

Generates a synthetic SGR-Bench-shaped set (550 CG/GO pairs, 12 domains, 2-44 rows, typed
fields, predictions in every supported format with realistic errors) from a fixed seed, then
times, several rounds each, interleaved:

- ``baseline``: the cheapest possible scorer: split both texts into lines and count exact
  line matches (no parsing of formats, no canonicalization, no alignment);
- ``sgrgym``: :func:`sgrgym.sgr.score.score_tasks` (parse, canonicalize, align, Item-F1,
  Row-F1, P.O.A., per-row diagnostics and aggregates), with fresh tasks each round so no
  canonicalization cache carries over.

Prints the median seconds of each and their ratio. Usage:
``python benchmarks/bench_sgr_score.py [--pairs 1100] [--rounds 7] [--legacy-share 0.5]
[--write DIR]`` (``--legacy-share`` writes that share of the tasks with a published legacy
rubric instead, so the default canonicalization with its per-column kind inference is timed;
``--write`` also writes the task and prediction files, for timing the CLI as a whole).

``--cli [N ...]`` times the command line instead: for each N (default 30,000 and 100,000
pairs) it writes the files (under ``--write DIR/N``, or a temporary folder), runs
``sgrgym sgr score --tasks ... --predictions ... --json --out ...`` (stdout discarded) and
prints its wall time and peak memory (max RSS), then the memory per pair between the smallest
and the largest N: (RSS at the largest - RSS at the smallest) / (difference in pairs).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sgrgym.sgr.score import score_tasks
from sgrgym.sgr.tasks import ScoringTask, build_task

DOMAINS = [
    "ARXIV",
    "CENSUS_GOV",
    "CDC_WONDER",
    "CFPB_COMPLAINT_DATABASE",
    "CFPB_REPORTS",
    "COMPTOX_CHEMEXPO",
    "EUROPEPMC_PMC",
    "KEGG_BRITE",
    "KEGG_GENOME",
    "NVD",
    "REPTILE_DATABASE",
    "WATER_QUALITY_PORTAL",
]
TYPES = ["string", "integer", "decimal", "id_list", "date"]


def _value(rng: random.Random, kind: str, i: int) -> str:
    if kind == "integer":
        return f"{rng.randint(0, 2_000_000):,}"
    if kind == "decimal":
        return f"{rng.uniform(0, 1000):.{rng.randint(0, 3)}f}"
    if kind == "id_list":
        return " ".join(f"CWE-{rng.randint(1, 1400)}" for _ in range(rng.randint(1, 4)))
    if kind == "date":
        return f"{rng.randint(1990, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f"{rng.choice(['alpha', 'beta', 'gamma', 'delta'])} {i} {rng.randint(0, 99)}"


def make_record(rng: random.Random, n: int) -> dict[str, Any]:
    cardinality = min(44, max(2, int(rng.lognormvariate(1.5, 0.8))))
    width = rng.randint(3, 7)
    columns = [f"col_{j}" for j in range(width)]
    kinds = ["string"] + [rng.choice(TYPES) for _ in range(width - 1)]
    rows = [[f"key {n}-{i}"] + [_value(rng, k, i) for k in kinds[1:]] for i in range(cardinality)]
    separator = rng.choice(["\n", ";"])
    return {
        "task_id": f"bench_{n:04d}",
        "domain": DOMAINS[n % len(DOMAINS)],
        "oracle_output_cardinality": cardinality,
        "instruction": "Synthetic benchmark task.",
        "output_format": "|".join(columns),
        "oracle_answer": separator.join("|".join(r) for r in rows),
        "rubric": {
            "columns": columns,
            "row_key": ["col_0"],
            "record_separator": separator,
            "fields": {c: {"type": k} for c, k in zip(columns, kinds, strict=True)},
        },
    }


def make_prediction(rng: random.Random, record: dict[str, Any]) -> str:
    columns = record["rubric"]["columns"]
    rows = [
        r.split("|") for r in record["oracle_answer"].split(record["rubric"]["record_separator"])
    ]
    roll = rng.random()
    if roll < 0.05:
        return "NONE"
    if roll < 0.08:
        return "I could not find the requested data."
    rows = [list(r) for r in rows if rng.random() > 0.15]  # dropped rows
    for r in rows:
        if rng.random() < 0.3:
            r[rng.randrange(1, len(r))] = "wrong"
    if rng.random() < 0.3:
        rng.shuffle(rows)
    style = rng.randrange(4)
    if style == 0:
        return "\n".join("|".join(r) for r in rows)
    if style == 1:
        head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
        return head + "\n".join("| " + " | ".join(r) + " |" for r in rows)
    if style == 2:
        return (
            "```json\n" + json.dumps([dict(zip(columns, r, strict=True)) for r in rows]) + "\n```"
        )
    return "Here you go:\n```\n" + "\n".join("\t".join(r) for r in rows) + "\n```"


def to_legacy(record: dict[str, Any]) -> dict[str, Any]:
    """The same task with a published (legacy) rubric: schema, separators, dedup_key text."""
    rubric = record["rubric"]
    normalization = {
        "field_separator": "|",
        "record_separator": rubric["record_separator"],
        "schema": rubric["columns"],
        "dedup_key": f"dedup by {rubric['columns'][0]}; other columns may repeat",
    }
    return dict(record, rubric={"normalization": normalization})


def naive_scores(records: list[dict[str, Any]], answers: dict[str, str]) -> float:
    total = 0.0
    for record in records:
        gold = set(record["oracle_answer"].replace(";", "\n").split("\n"))
        pred = answers.get(record["task_id"], "").split("\n")
        hits = sum(1 for line in pred if line in gold)
        total += 2 * hits / (len(gold) + len(pred))
    return total / len(records)


def make_set(
    pairs: int, seed: int, legacy_share: float
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The synthetic tasks and their answers (the same for the same arguments)."""
    rng = random.Random(seed)
    records = [make_record(rng, n) for n in range(pairs)]
    answers = {r["task_id"]: make_prediction(rng, r) for r in records}
    pick = random.Random(seed + 1)  # its own stream: the default run is unchanged
    records = [to_legacy(r) if pick.random() < legacy_share else r for r in records]
    return records, answers


def write_set(folder: Path, records: list[dict[str, Any]], answers: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "tasks.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    with (folder / "predictions.jsonl").open("w") as f:
        f.writelines(json.dumps({"task_id": k, "answer": v}) + "\n" for k, v in answers.items())


# Runs the command given as its arguments, stdout discarded, and prints its wall seconds, its
# max RSS (from RUSAGE_CHILDREN) and its exit code. The command is started from this small
# process, not from the benchmark: a child's max RSS counts the memory of the process it was
# forked from, and the benchmark holds every generated pair.
_LAUNCHER = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - start
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)
"""


def run_cli(folder: Path) -> tuple[float, float, int]:
    """(wall seconds, max RSS in KiB, exit code) of ``sgrgym sgr score`` on ``folder``."""
    command = [
        sys.executable,
        "-m",
        "sgrgym",
        "sgr",
        "score",
        "--tasks",
        str(folder / "tasks.jsonl"),
        "--predictions",
        str(folder / "predictions.jsonl"),
        "--json",
        "--out",
        str(folder / "out.json"),
    ]
    launched = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *command], capture_output=True, text=True, check=True
    )
    wall, rss, code = launched.stdout.split()
    scale = 1024 if sys.platform == "darwin" else 1  # ru_maxrss is in bytes on macOS
    return float(wall), int(rss) / scale, int(code)


def cli_main(args: argparse.Namespace) -> int:
    sizes = sorted(set(args.cli))
    with tempfile.TemporaryDirectory(prefix="bench-sgr-score-") as scratch:
        root = args.write or Path(scratch)
        measured: list[tuple[int, float]] = []
        for pairs in sizes:
            folder = root / str(pairs)
            write_set(folder, *make_set(pairs, args.seed, args.legacy_share))
            wall, rss, code = run_cli(folder)
            report = (folder / "out.json").stat().st_size if code == 0 else 0
            print(
                f"{pairs:>8,} pairs: {wall:7.1f} s  max RSS {rss / 1024:8.1f} MiB  "
                f"exit {code}  report {report / 1e6:.0f} MB",
                flush=True,
            )
            if code != 0:
                return 1
            measured.append((pairs, rss))
            if not args.write:
                for name in ("tasks.jsonl", "predictions.jsonl", "out.json"):
                    (folder / name).unlink()
    if len(measured) > 1:
        (low, low_rss), (high, high_rss) = measured[0], measured[-1]
        slope = (high_rss - low_rss) / (high - low)
        print(f"memory per pair ({low:,} -> {high:,}): {slope:.2f} KiB/pair (goal: <= 5)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument(
        "--legacy-share",
        type=float,
        default=0.0,
        metavar="F",
        help="share of tasks written with a legacy rubric (default 0)",
    )
    parser.add_argument("--write", type=Path, help="also write tasks.jsonl / predictions.jsonl")
    parser.add_argument(
        "--cli",
        type=int,
        nargs="*",
        metavar="N",
        help="time `sgrgym sgr score` on N pairs each (default 30000 100000): wall, max RSS",
    )
    args = parser.parse_args()
    if args.cli is not None:
        args.cli = args.cli or [30_000, 100_000]
        return cli_main(args)

    records, answers = make_set(args.pairs, args.seed, args.legacy_share)
    if args.write:
        write_set(args.write, records, answers)

    base_times, our_times = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        naive_scores(records, answers)
        base_times.append(time.perf_counter() - start)
        tasks: list[ScoringTask] = [build_task(r) for r in records]  # fresh caches
        start = time.perf_counter()
        report = score_tasks(tasks, answers)
        our_times.append(time.perf_counter() - start)
    base, ours = statistics.median(base_times), statistics.median(our_times)
    modes = ", ".join(f"{k} {v}" for k, v in report.canonicalization.items())
    print(
        f"pairs scored:            {len(records)} (overall Item-F1 {report.overall.item_f1:.4f};"
        f" {modes})"
    )
    print(f"baseline (exact lines):  median {base * 1000:8.1f} ms over {args.rounds} rounds")
    print(f"sgrgym score_tasks:      median {ours * 1000:8.1f} ms over {args.rounds} rounds")
    print(f"ratio sgrgym / baseline: {ours / base:.1f}x   (goal: sgrgym <= 1 s for 1,100 pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
