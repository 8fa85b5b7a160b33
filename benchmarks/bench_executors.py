"""Benchmark: episodes per second of the local thread loop and of ``--executor ray``, in one run.

``sgr run --agent random`` on the demo pack's task variants (default: all of them) with
``--jobs 1``, ``--jobs 2``, and ``--executor ray`` with 2 workers twice: cold (the run starts
its own local cluster on 127.0.0.1 and stops it) and warm (a 2-CPU cluster already up in this
process, so the time is the episodes' and Ray's per-task cost). Ray's per-episode overhead is
reported as the ratio of its seconds per episode to ``--jobs 2``'s (1.0: none). Every Ray run's
files are checked against ``--jobs 1``'s (timings aside). Prints numbers; asserts nothing.

Needs the `ray` extra. Usage: ``python benchmarks/bench_executors.py [--limit N] [--json FILE]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

from sgrgym.cli import main
from sgrgym.suite.layout import VOLATILE

SGR_RANDOM = ["sgr", "run", "--agent", "random", "--seed", "1", "--quiet", "--json"]


def _files(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): b"" if p.name in VOLATILE else p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _timed(argv: list[str], out: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the runs' JSON reports
        assert main([*argv, "--out", str(out)]) == 0
    wall = time.perf_counter() - start
    episodes = sum(1 for _ in (out / "answers.jsonl").open())
    return wall, episodes


def run(limit: int | None) -> dict[str, dict[str, float]]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    argv = [*SGR_RANDOM, *(["--limit", str(limit)] if limit else [])]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cases = [
            ("jobs 1", ["--jobs", "1"]),
            ("jobs 2", ["--jobs", "2"]),
            ("ray 2 workers, cold", ["--executor", "ray", "--jobs", "2"]),
        ]
        for name, extra in cases:
            out = root / name.replace(" ", "_").replace(",", "")
            wall, episodes = _timed([*argv, *extra], out)
            results[name] = {"wall_s": wall, "episodes": episodes, "eps": episodes / wall}
        import ray

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            out = root / "ray_warm"
            wall, episodes = _timed([*argv, "--executor", "ray", "--jobs", "2"], out)
            results["ray 2 workers, warm"] = {
                "wall_s": wall,
                "episodes": episodes,
                "eps": episodes / wall,
            }
        finally:
            ray.shutdown()
        same = all(
            _files(root / d) == _files(root / "jobs_1") for d in ("ray_2_workers_cold", "ray_warm")
        )
    base = results["jobs 2"]["eps"]
    for name in ("ray 2 workers, cold", "ray 2 workers, warm"):
        results[name]["overhead_ratio_vs_jobs2"] = base / results[name]["eps"]
    print(f"{'executor':<22} {'episodes':>8} {'wall s':>8} {'episodes/s':>11} {'ratio':>7}")
    for name, r in results.items():
        ratio = r.get("overhead_ratio_vs_jobs2")
        shown = f"{ratio:7.2f}" if ratio else " " * 7
        print(f"{name:<22} {r['episodes']:>8.0f} {r['wall_s']:>8.2f} {r['eps']:>11.2f} {shown}")
    print(f"Ray runs' files identical to --jobs 1 (timings aside): {same}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="the first N task variants (default: all)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args()
    numbers = run(args.limit)
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")
