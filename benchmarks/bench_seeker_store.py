"""Benchmark: what a SeekerGym process pays to open the passage store and read one document.

Builds synthetic stores with the project's :func:`sgrgym.seeker.store.build_store` (random
unit vectors of the demo's 384 dims instead of embedded text; documents of 100 passages):
3,500 passages and 500,000 passages, cached under ``benchmarks/out/`` (rebuilt when missing or
in an older store format). Then, each in a fresh subprocess, several rounds:

- ``open_one_doc``: ``PassageStore.open(store)`` + ``.matrix(doc)`` for the demo store
  (``embeddings/djangodocs__minilm-l6-onnx``, its largest document) and both synthetic stores:
  seconds inside the process (imports included), the process' wall seconds and its max RSS;
- ``import_lancedb``: ``import lancedb`` alone, against the run path above (whether it
  imported lancedb is reported).

Goal: 500k / 3.5k ≤ 1.2 for both time and memory of a one-document run. Prints medians and
the ratios; no assertions.
Usage: ``python benchmarks/bench_seeker_store.py [--passages 500000] [--rounds 5]
[--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sgrgym.core.errors import UserError
from sgrgym.seeker.retrieval import Matrix
from sgrgym.seeker.store import PassageRow, PassageStore, build_store, load_store_manifest

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
DEMO = ROOT / "embeddings" / "djangodocs__minilm-l6-onnx"
DIMS = 384
PER_DOC = 100

# The process' own high-water mark (getrusage's ru_maxrss keeps the parent's across exec).
MAX_RSS = """
def max_rss_mb():
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
"""

OPEN_ONE_DOC = (
    MAX_RSS
    + """
import json, sys, time
start = time.perf_counter()
from pathlib import Path
from sgrgym.seeker.store import PassageStore
store = PassageStore.open(Path(sys.argv[1]))
ids, matrix = store.matrix(sys.argv[2])
seconds = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds,
    "max_rss_mb": max_rss_mb(),
    "passages": len(ids),
    "lancedb_imported": "lancedb" in sys.modules,
}))
"""
)

IMPORT_LANCEDB = (
    MAX_RSS
    + """
import json, time
start = time.perf_counter()
import lancedb
print(json.dumps({
    "seconds": time.perf_counter() - start,
    "max_rss_mb": max_rss_mb(),
}))
"""
)


def synthetic_store(passages: int) -> Path:
    """A store of ``passages`` random unit vectors (documents of PER_DOC passages), built once."""
    path = OUT / f"seeker-store-{passages}"
    try:
        PassageStore.open(path)
        return path
    except UserError:
        pass
    rows = [
        PassageRow(
            f"doc-{i // PER_DOC:05d}",
            f"doc-{i // PER_DOC:05d}/p{i % PER_DOC:03d}",
            f"Section {i % PER_DOC // 10}",
            i % PER_DOC,
            f"synthetic passage {i}",
        )
        for i in range(passages)
    ]
    rng = np.random.default_rng(passages)

    def embed(texts: Sequence[str]) -> Matrix:
        vectors = rng.standard_normal((len(texts), DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    start = time.perf_counter()
    print(f"building {path} ({passages:,} passages) ...", file=sys.stderr)
    build_store(path, "synthetic", "0" * 64, rows, embed, "random-unit", 0.5, batch=8192)
    print(f"  built in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return path


def largest_demo_doc() -> str:
    store = PassageStore.open(DEMO)
    return max(store.documents(), key=lambda d: (len(store.matrix(d)[0]), d))


def child(code: str, *args: str) -> dict[str, float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the measured process failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    result["process_wall_s"] = time.perf_counter() - start
    return result


def medians(results: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(float(r[key]) for r in results) for key in results[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args()

    stores = {
        "demo": (DEMO, largest_demo_doc()),
        "3.5k": (synthetic_store(3_500), "doc-00017"),
        f"{args.passages // 1000}k": (
            synthetic_store(args.passages),
            f"doc-{args.passages // PER_DOC // 2:05d}",
        ),
    }
    result: dict[str, object] = {}
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in stores}
    runs["import_lancedb"] = []
    for _ in range(args.rounds):
        for label, (path, doc) in stores.items():
            runs[label].append(child(OPEN_ONE_DOC, str(path), doc))
        runs["import_lancedb"].append(child(IMPORT_LANCEDB))
    for label, (path, doc) in stores.items():
        manifest = load_store_manifest(path)
        result[f"open_one_doc_{label}"] = {
            "rows": manifest.rows,
            "doc": doc,
            **medians(runs[label]),
        }
    result["import_lancedb"] = medians(runs["import_lancedb"])
    big = result[f"open_one_doc_{args.passages // 1000}k"]
    small = result["open_one_doc_3.5k"]
    assert isinstance(big, dict) and isinstance(small, dict)
    result["ratio_big_over_3.5k"] = {
        key: big[key] / small[key] for key in ("seconds", "process_wall_s", "max_rss_mb")
    }
    for label, value in result.items():
        print(f"{label}: {json.dumps(value)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
