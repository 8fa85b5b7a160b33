"""Benchmark: replaying recorded model calls, in one run.

1. Records a SeekerGym LLM-agent run of ``docs x seeds x steps`` calls (default 50 x 2 x 10 =
   1,000) on the demo corpus with the trajectory belief (it grows every step, so every
   request is distinct) from a scripted chat server on 127.0.0.1, then replays it
   offline and checks the episodes are byte-identical. The query vectors sit in a persistent
   query cache (filled while recording), so the replay measures the harness, not ONNX.
   Baseline in the same run: the same episodes with the recorded queries issued directly by a
   scripted agent (no model, no cache: everything but the LLM layer).
   Goal: the 1,000-call replay <= 3 s.
2. Per replayed call: ``ChatClient.complete`` (canonical body, request hash, lock, cached
   lookup, parsing into a ChatReply) and ``CallMeter.complete`` (plus the priced call record)
   against a bare requests-cache lookup of the same stored response
   (``CachedSession.cache.get_response(key)`` on a plain session over the same SQLite file),
   alternated call by call. Goal: harness overhead <= 1 ms p50.

Needs the demo corpus and the exported model.
Usage: ``python benchmarks/bench_llm_replay.py [--docs 50] [--seeds 2] [--steps 10] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted chat server of the tests

from chat_server import scripted  # noqa: E402

from sgrgym.core.loopback import serve_http  # noqa: E402
from sgrgym.llm.chat import ChatClient  # noqa: E402
from sgrgym.llm.http import request_hash  # noqa: E402
from sgrgym.llm.options import open_meter  # noqa: E402
from sgrgym.llm.settings import LLMOptions  # noqa: E402
from sgrgym.seeker.agents import noun_phrases  # noqa: E402
from sgrgym.seeker.belief import trajectory_belief  # noqa: E402
from sgrgym.seeker.corpus import load_corpus  # noqa: E402
from sgrgym.seeker.embed import CachedEmbedder, OnnxMiniLM, QueryCache  # noqa: E402
from sgrgym.seeker.env import EpisodeState, SeekerEnv  # noqa: E402
from sgrgym.seeker.llm_agent import LLMAgentSettings, LLMSeekerAgent  # noqa: E402
from sgrgym.seeker.run import run_seeker  # noqa: E402

MODEL = "bench-llm"


def reply(body: dict[str, Any]) -> str:
    """Three queries from the belief's abstract, moving on as passages are found."""
    user = body["messages"][-1]["content"]
    abstract = next((ln[10:] for ln in user.splitlines() if ln.startswith("Abstract: ")), "")
    found = sum(1 for ln in user.splitlines() if ln.startswith("["))
    phrases = noun_phrases(abstract) or ["overview"]
    picked = [phrases[(found + body.get("seed", 0) + i) % len(phrases)] for i in range(3)]
    return "\n".join(f"Query: {p} (part {found + i})" for i, p in enumerate(picked))


class RecordedQueries:
    """The queries of a recorded run, issued again step by step (the baseline agent)."""

    name = "recorded-queries"

    def __init__(self, episodes: Path) -> None:
        self.steps: dict[tuple[str, int], list[list[str]]] = {}
        for line in episodes.read_text().splitlines():
            e = json.loads(line)
            self.steps[(e["doc_id"], e["seed"])] = [s["queries"] for s in e["steps"]]

    def queries(self, state: EpisodeState, belief: str, rng: Any) -> list[str]:
        return self.steps[(state.document.id, state.seed)][len(state.history)]


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))],
    }


def timed_run(env: SeekerEnv, agent: Any, docs: list[str], seeds: int, out: Path) -> float:
    start = time.perf_counter()
    run_seeker(
        env,
        agent,
        render=trajectory_belief,
        belief="trajectory",
        doc_ids=docs,
        seeds=seeds,
        out_dir=out,
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args()

    import requests_cache

    from sgrgym.seeker.paths import corpus_path, store_path
    from sgrgym.seeker.store import PassageStore

    corpus = load_corpus(ROOT / corpus_path("demo"))  # the demo corpus and its store
    store = PassageStore.open(ROOT / store_path("demo", "minilm-l6-onnx"))
    model = OnnxMiniLM(
        ROOT / "embeddings/models/all-MiniLM-L6-v2",
        manifest_path=ROOT / "embeddings/models/manifest.json",
    )
    docs = [d.id for d in corpus.documents][: args.docs]
    result: dict[str, Any] = {"docs": len(docs), "seeds": args.seeds, "steps": args.steps}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        embed = CachedEmbedder(model, QueryCache(tmp / "queries.sqlite")).embed
        env = SeekerEnv(corpus, store, embed, None, args.steps)
        cache = tmp / "chat.sqlite"
        handler = scripted(reply)
        with serve_http(handler) as url:
            options = LLMOptions(model=MODEL, base_url=url + "/v1", cache=cache, mode="record")
            meter = open_meter(options)
            agent = LLMSeekerAgent(meter, trajectory_belief, LLMAgentSettings())
            result["record_s"] = timed_run(env, agent, docs, args.seeds, tmp / "record")
            meter.client.close()
        calls = meter.log["calls"]
        result["calls"] = calls
        result["distinct_requests"] = len(handler.received)

        replay = open_meter(options.model_copy(update={"mode": "replay"}))
        agent = LLMSeekerAgent(replay, trajectory_belief, LLMAgentSettings())
        result["replay_s"] = timed_run(env, agent, docs, args.seeds, tmp / "replay")
        replay.client.close()
        same = (tmp / "record/episodes.jsonl").read_bytes() == (
            tmp / "replay/episodes.jsonl"
        ).read_bytes()
        result["replay_byte_identical"] = same
        baseline = RecordedQueries(tmp / "record/episodes.jsonl")
        result["baseline_s"] = timed_run(env, baseline, docs, args.seeds, tmp / "baseline")

        # Per call: the harness against a bare requests-cache lookup, alternated.
        bodies = list(handler.received)
        bare = requests_cache.CachedSession(
            cache_name=str(cache), backend="sqlite", serializer="json", read_only=True
        )
        endpoint = url + "/v1/chat/completions"
        client = ChatClient(url + "/v1", MODEL, cache_path=cache, mode="replay")
        meter = open_meter(options.model_copy(update={"mode": "replay"}))
        bare_t, client_t, meter_t = [], [], []
        for body in bodies * 3:
            key = request_hash("POST", endpoint, json.dumps(body))
            params = {k: v for k, v in body.items() if k not in ("model", "messages")}
            start = time.perf_counter()
            stored = bare.cache.get_response(key)
            bare_t.append(time.perf_counter() - start)
            assert stored is not None
            start = time.perf_counter()
            client.complete(body["messages"], episode="bench", **params)
            client_t.append(time.perf_counter() - start)
            start = time.perf_counter()
            meter.complete(body["messages"], episode="bench", **params)
            meter_t.append(time.perf_counter() - start)
        client.close()
        meter.client.close()
        bare.close()
    result["bare_lookup"] = percentiles(bare_t)
    result["chat_client"] = percentiles(client_t)
    result["call_meter"] = percentiles(meter_t)
    overhead = [m - b for m, b in zip(meter_t, bare_t, strict=True)]
    result["overhead_p50_ms"] = 1000 * statistics.median(overhead)
    result["ratio_meter_over_bare_p50"] = statistics.median(meter_t) / statistics.median(bare_t)
    print(
        f"LLM replay: {calls} calls ({result['distinct_requests']} distinct), {len(docs)} "
        f"documents x {args.seeds} seeds x {args.steps} steps, demo corpus"
    )
    ratio = result["replay_s"] / result["baseline_s"]
    print(
        f"  record {result['record_s']:.2f} s; replay {result['replay_s']:.2f} s "
        f"(goal <= 3 s), byte-identical: {same}; the same queries without the model: "
        f"{result['baseline_s']:.2f} s ({ratio:.1f}x)"
    )
    for label, key in (
        ("bare requests-cache lookup", "bare_lookup"),
        ("ChatClient.complete", "chat_client"),
        ("CallMeter.complete", "call_meter"),
    ):
        p = result[key]
        print(f"  {label:27} p50 {p['p50_ms']:.3f} ms  p95 {p['p95_ms']:.3f} ms")
    print(
        f"  harness overhead per call p50 {result['overhead_p50_ms']:.3f} ms (goal <= 1 ms); "
        f"meter / bare = {result['ratio_meter_over_bare_p50']:.1f}x"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
