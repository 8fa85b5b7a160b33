"""Benchmark: the section 3.3 calibration protocol (3 splits × 10 seeds) over 600 synthetic
belief states with cached estimates, against a naive baseline in the same run.

Draws 600 states with Algorithm 1 (from the demo corpus when it is built, else from a generated
corpus of numbered passages), fills an estimate cache with the ``visible-count`` estimator,
then times, several rounds each, interleaved:

- ``protocol``: :func:`sgrgym.seeker.calibrate.calibrate_estimator` end to end with every
  estimate served by the cache (render each state's deduplicated belief, hash it, look the
  estimate up, run 30 partitions: q̂, coverage, R²);
- ``protocol_only``: :func:`run_protocol` on the cached (c, ĉ) arrays;
- ``naive``: the same 30 partitions in plain Python (sorted scores, rank from a float ceiling,
  loops for coverage and R²), as a reference point.

Goal: ``protocol`` ≤ 1 s. Prints median seconds and the ratio naive / protocol_only.
Usage: ``python benchmarks/bench_seeker_calibrate.py [--states 600] [--rounds 7] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from sgrgym.seeker.calibrate import (
    BeliefPool,
    build_pool,
    calibrate_estimator,
    run_protocol,
    split_indices,
)
from sgrgym.seeker.corpus import Corpus, CorpusSource, load_corpus, make_document
from sgrgym.seeker.estimators import EstimateCache, VisibleCountEstimator

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks/seeker/djangodocs/corpus.jsonl"


def generated_corpus(documents: int = 80, passages: int = 60) -> Corpus:
    docs = tuple(
        make_document(
            f"doc{d}",
            f"Document {d}",
            f"About document {d}. It has parts.",
            "bench",
            [(("Body",), f"Passage {i} of document {d}.") for i in range(1, passages + 1)],
        )
        for d in range(documents)
    )
    return Corpus(name="generated", source=CorpusSource(kind="bench"), documents=docs)


def pool_of(corpus: Corpus, states: int) -> BeliefPool:
    """The first ``states`` states of the widest-interval pool that has that many."""
    for width in range(10, 0, -1):
        pool = build_pool(corpus, width, seed=0)
        if len(pool.states) >= states:
            return pool.model_copy(update={"states": pool.states[:states]})
    raise SystemExit(f"the corpus cannot give {states} states")


def naive_protocol(c: list[float], c_hat: list[float], alpha: float) -> tuple[float, float]:
    """Mean q̂ and coverage over the 3 splits × 10 seeds (one partition per split, section
    3.3; a deterministic estimator's estimates are the same for every seed), in plain Python."""
    q_hats, coverages = [], []
    for split in range(3):
        for _seed in range(10):
            cal, test = split_indices(len(c), split, 0)
            scores = sorted(abs(c[i] - c_hat[i]) for i in cal)
            k = math.ceil((len(scores) + 1) * (1 - alpha))
            q = scores[k - 1] if k <= len(scores) else math.inf
            q_hats.append(q)
            coverages.append(sum(abs(c[i] - c_hat[i]) <= q for i in test) / len(test))
            mean = sum(c[i] for i in test) / len(test)
            _r2 = 1 - sum((c[i] - c_hat[i]) ** 2 for i in test) / sum(
                (c[i] - mean) ** 2 for i in test
            )
    return statistics.fmean(q_hats), statistics.fmean(coverages)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--states", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args()

    corpus = load_corpus(DEMO) if DEMO.is_file() else generated_corpus()
    pool = pool_of(corpus, args.states)
    estimator = VisibleCountEstimator()
    cache = EstimateCache()
    warm = calibrate_estimator(corpus, pool, estimator, cache, 0.1)  # fills the cache
    c = warm.c
    c_hat = [float(h) for h in warm.c_hat if h is not None]
    assert len(c_hat) == len(c)

    times: dict[str, list[float]] = {"protocol": [], "protocol_only": [], "naive": []}
    for _ in range(args.rounds):
        start = time.perf_counter()
        result = calibrate_estimator(corpus, pool, estimator, cache, 0.1)
        times["protocol"].append(time.perf_counter() - start)
        assert result.report.estimates_computed == 0
        start = time.perf_counter()
        protocol = run_protocol(c, c_hat, 0.1)
        times["protocol_only"].append(time.perf_counter() - start)
        start = time.perf_counter()
        naive_q, naive_cov = naive_protocol(c, c_hat, 0.1)
        times["naive"].append(time.perf_counter() - start)
    assert abs(naive_q - statistics.fmean(p.q_hat for p in protocol.partitions)) < 1e-12
    assert abs(naive_cov - statistics.fmean(p.coverage for p in protocol.partitions)) < 1e-12
    medians = {k: statistics.median(v) for k, v in times.items()}
    ratio = medians["naive"] / medians["protocol_only"]
    out = {
        "corpus": corpus.name,
        "states": len(pool.states),
        "interval_width": pool.interval_width,
        "partitions": len(protocol.partitions),
        "rounds": args.rounds,
        "median_s": medians,
        "ratio_naive_over_protocol_only": ratio,
        "q_hat": protocol.q_hat,
        "coverage": protocol.coverage,
        "r2": protocol.r2,
        "goal_protocol_s": 1.0,
        "goal_met": medians["protocol"] <= 1.0,
    }
    print(
        f"calibration protocol, {len(pool.states)} states of {corpus.name} "
        f"(Δ={pool.interval_width}), 3 splits × 10 seeds, cached estimates"
    )
    print(
        f"  end to end (render, hash, cache hit, 30 partitions)  {medians['protocol']:.4f} s"
        "   (goal <= 1 s)"
    )
    print(
        f"  run_protocol on the arrays                           {medians['protocol_only']:.4f} s"
    )
    print(
        f"  naive plain-Python partitions                        {medians['naive']:.4f} s"
        f"   (x{ratio:.1f} of run_protocol)"
    )
    print(
        f"  q̂ {protocol.q_hat:.3f} ± {protocol.q_hat_std:.3f}, R² {protocol.r2:.3f}, "
        f"coverage {protocol.coverage:.3f}"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if out["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
