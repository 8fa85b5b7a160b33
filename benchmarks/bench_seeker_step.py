"""Benchmark: SeekerGym step overhead on the demo corpus, in one run.

Measures ``SeekerEnv.step([query])`` p50/p95 (a) embedding each query with the pinned ONNX
model and (b) with the query vectors already in the persistent query cache, and (c) the
retrieval itself: numpy on the document's cached matrix vs a LanceDB filtered vector search
per step, over the same queries (ratio LanceDB / numpy), and (d) the price of exact, processor-
independent decisions: sgrgym's retrieval (float64 product, exact recomputation near θ) against
the raw float32 numpy product and threshold (ratio). Goals: (a) ≤ 5 ms, (b) ≤ 0.2 ms.
Needs the demo corpus (``sgrgym seeker build-corpus``) and the exported model.
Usage: ``python benchmarks/bench_seeker_step.py [--queries 300] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sgrgym.seeker.agents import noun_phrases
from sgrgym.seeker.corpus import load_corpus
from sgrgym.seeker.embed import CachedEmbedder, OnnxMiniLM, QueryCache
from sgrgym.seeker.env import SeekerEnv
from sgrgym.seeker.retrieval import retrieve
from sgrgym.seeker.store import PassageStore

ROOT = Path(__file__).resolve().parent.parent


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args()

    corpus = load_corpus(ROOT / "tasks/seeker/djangodocs/corpus.jsonl")
    store = PassageStore.open(ROOT / "embeddings/djangodocs__minilm-l6-onnx")
    model = OnnxMiniLM(
        ROOT / "embeddings/models/all-MiniLM-L6-v2",
        manifest_path=ROOT / "embeddings/models/manifest.json",
    )
    work = [(d.id, q) for d in corpus.documents for q in noun_phrases(d.abstract)[:5]]
    work = work[: args.queries]
    result: dict[str, object] = {"queries": len(work), "theta": store.manifest.theta}
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedEmbedder(model, QueryCache(Path(tmp) / "queries.sqlite"))
        for label, embed in (("embedding", model.embed), ("cached_vectors", cached.embed)):
            if label == "cached_vectors":
                cached.embed([q for _, q in work])  # warm the cache
            env = SeekerEnv(corpus, store, embed, None, horizon=len(work) + 1)
            times = []
            current = ""
            for doc_id, query in work:
                if doc_id != current:
                    env.reset(doc_id)
                    current = doc_id
                start = time.perf_counter()
                env.step([query])
                times.append(time.perf_counter() - start)
            result[f"step_{label}"] = percentiles(times)
        vectors = cached.embed([q for _, q in work])
    numpy_times, raw_times, lance_times, agree, raw_agree = [], [], [], 0, 0
    theta32 = np.float32(store.manifest.theta)
    for (doc_id, _), vector in zip(work, vectors, strict=True):
        ids, matrix = store.matrix(doc_id)
        start = time.perf_counter()
        hits = retrieve(matrix, vector[None, :], store.manifest.theta)[0]
        numpy_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        raw = np.flatnonzero((vector[None, :] @ matrix.T)[0] > theta32).tolist()
        raw_times.append(time.perf_counter() - start)
        raw_agree += raw == hits
        start = time.perf_counter()
        lance = store.search_lancedb(doc_id, vector, store.manifest.theta)
        lance_times.append(time.perf_counter() - start)
        agree += sorted(ids[i] for i in hits) == lance
    result["retrieval_numpy"] = percentiles(numpy_times)
    result["retrieval_lancedb"] = percentiles(lance_times)
    ratio = statistics.median(lance_times) / statistics.median(numpy_times)
    result["ratio_lancedb_over_numpy_p50"] = ratio
    result["same_hits"] = f"{agree}/{len(work)}"
    result["retrieval_raw_float32"] = percentiles(raw_times)
    exact_ratio = statistics.median(numpy_times) / statistics.median(raw_times)
    result["ratio_exact_over_raw_float32_p50"] = exact_ratio
    result["same_hits_as_raw_float32"] = f"{raw_agree}/{len(work)}"
    emb, cvec = result["step_embedding"], result["step_cached_vectors"]
    print(f"SeekerGym step, {len(work)} queries on the demo corpus (θ={store.manifest.theta})")
    print(
        f"  step with embedding       p50 {emb['p50_ms']:.3f} ms  p95 {emb['p95_ms']:.3f} ms"  # type: ignore[index]
        "   (goal <= 5 ms)"
    )
    print(
        f"  step with cached vectors  p50 {cvec['p50_ms']:.3f} ms  p95 {cvec['p95_ms']:.3f} ms"  # type: ignore[index]
        "   (goal <= 0.2 ms)"
    )
    print(
        f"  retrieval: LanceDB per step / numpy on the cached matrix = {ratio:.0f}x "
        f"(same hits {result['same_hits']})"
    )
    print(
        f"  retrieval: exact (sgrgym) / raw float32 numpy = {exact_ratio:.1f}x "
        f"(same hits {result['same_hits_as_raw_float32']})"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
