"""Benchmark: the pinned local models on ``llama-server`` — determinism, speed, tool calls.

Needs the fetched files (``sgrgym llm fetch-model NAME``). For each model it starts a
:class:`~sgrgym.llm.local.LocalServer` on a free port and measures:

- determinism: one request at temperature 0 and at 0.8 (seeded) sent twice, then again after
  other requests (other prompts, seeds, temperatures), with the prompt cache off, and after a
  server restart: are the reply bytes identical every time (and which check differs)?
- speed: a ~1,000-token prompt with the prompt cache off and 64 generated tokens
  (``ignore_eos``), several rounds; the server's own ``timings`` (prompt and generation
  tokens per second), medians;
- tool calls: a short system prompt offering ``search`` / ``fetch`` / ``submit_answer`` through
  :class:`~sgrgym.llm.chat.ChatClient` (``tools=``), several seeds: how many replies carried a
  native ``tool_calls`` field, how many a call written in the text
  (:mod:`sgrgym.llm.toolcalls`), how many neither.

The baseline is the first model named: the others are reported as ratios of its speeds.
Usage: ``python benchmarks/bench_local_model.py [--models A B] [--threads N] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import requests

from sgrgym.llm.chat import ChatClient
from sgrgym.llm.local import LocalServer, ServerSettings, default_threads

QUESTION = "Name three rivers in Europe and give one fact about each."
OTHERS = [("Write a haiku about the sea.", 0.8, 3), ("What is 17 times 23?", 0.3, 7)]
LONG = (
    "Below is a list of facts. "
    + " ".join(f"Fact {i}: the number {i} squared is {i * i}." for i in range(60))
    + " Summarise the pattern in one sentence."
)
SYSTEM = (
    "You are a research agent. Use the tools to find the answer. Call exactly one tool per "
    "turn. If the tools are not available natively, write the call as a JSON object "
    '{"name": TOOL, "arguments": {...}} and nothing else.'
)
TASK = "Find the population of the capital of Australia, then submit it."


def tool(name: str, description: str, **params: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
                "required": list(params),
            },
        },
    }


TOOLS = [
    tool("search", "Search the web", query="the search query"),
    tool("fetch", "Fetch a web page", url="the page address"),
    tool("submit_answer", "Submit the final answer", answer="the answer"),
]


def ask(url: str, content: str, temperature: float, seed: int, **extra: Any) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": content}],
        "temperature": temperature,
        "seed": seed,
        "max_tokens": 48,
        **extra,
    }
    response = requests.post(url + "/chat/completions", json=body, timeout=900)
    response.raise_for_status()
    reply: dict[str, Any] = response.json()
    return reply


def text_of(reply: dict[str, Any]) -> str:
    content: str = reply["choices"][0]["message"]["content"] or ""
    return content


def determinism(url: str) -> dict[str, list[str]]:
    """The reply texts to QUESTION at each temperature, in the order they were asked."""
    seen: dict[str, list[str]] = {}
    for temperature in (0.0, 0.8):
        texts = [text_of(ask(url, QUESTION, temperature, 42)) for _ in range(2)]
        for prompt, t, seed in OTHERS:
            ask(url, prompt, t, seed)
        texts.append(text_of(ask(url, QUESTION, temperature, 42)))
        texts.append(text_of(ask(url, QUESTION, temperature, 42, cache_prompt=False)))
        seen[f"t={temperature}"] = texts
    return seen


def speed(url: str, rounds: int) -> dict[str, float]:
    prompt, generation, prompt_n = [], [], 0
    for i in range(rounds):
        timings = ask(url, LONG, 0.0, i, max_tokens=64, ignore_eos=True, cache_prompt=False)
        prompt.append(timings["timings"]["prompt_per_second"])
        generation.append(timings["timings"]["predicted_per_second"])
        prompt_n = timings["timings"]["prompt_n"]
    return {
        "prompt_tokens": prompt_n,
        "prompt_tok_s": round(statistics.median(prompt), 1),
        "generation_tok_s": round(statistics.median(generation), 1),
    }


def tool_calls(url: str, model: str, seeds: int) -> dict[str, Any]:
    counts = {"native": 0, "text": 0, "none": 0}
    first = ""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    with tempfile.TemporaryDirectory() as tmp:
        client = ChatClient(
            url, f"local:{model}", cache_path=Path(tmp) / "c.sqlite", mode="refresh"
        )
        with client:
            for seed in range(seeds):
                temperature = 0.0 if seed == 0 else 0.8
                reply = client.complete(
                    messages, seed=seed, temperature=temperature, max_tokens=96, tools=TOOLS
                )
                counts[reply.tool_call_source] += 1
                if seed == 0:
                    first = reply.text or json.dumps([c.model_dump() for c in reply.tool_calls])
    return {**counts, "first_reply": first[:300]}


CHECKS = ("repeat", "after_others", "no_prompt_cache", "restart")


def measure(
    model: str, threads: int, rounds: int, seeds: int, parts: list[str], prompt_cache: bool
) -> dict[str, Any]:
    settings = ServerSettings(port=0, threads=threads, ctx=4096, prompt_cache=prompt_cache)
    result: dict[str, Any] = {"model": model, "threads": threads, "prompt_cache": prompt_cache}
    with LocalServer(model, settings) as server:
        before = determinism(server.base_url)
        if "speed" in parts:
            result.update(speed(server.base_url, rounds))
        if "tools" in parts:
            result["tool_calls"] = tool_calls(server.base_url, model, seeds)
    with LocalServer(model, settings) as server:  # a fresh process: same bytes?
        after = {f"t={t}": text_of(ask(server.base_url, QUESTION, t, 42)) for t in (0.0, 0.8)}
    result["identical"] = {key: len({*texts, after[key]}) == 1 for key, texts in before.items()}
    result["same_as_first"] = {
        key: dict(zip(CHECKS, [t == texts[0] for t in [*texts[1:], after[key]]], strict=True))
        for key, texts in before.items()
    }
    result["sample"] = before["t=0.0"][0][:120]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--json", type=Path, metavar="FILE")
    parser.add_argument(
        "--parts",
        nargs="*",
        choices=["speed", "tools"],
        default=["speed", "tools"],
        help="what to measure besides determinism (default: both)",
    )
    parser.add_argument("--no-prompt-cache", action="store_true", help="serve with it off")
    args = parser.parse_args()
    results = [
        measure(m, args.threads, args.rounds, args.seeds, args.parts, not args.no_prompt_cache)
        for m in args.models
    ]
    base = results[0]
    for result in results:
        if "speed" in args.parts:
            for key in ("prompt_tok_s", "generation_tok_s"):
                result[key.replace("tok_s", "ratio_to_first")] = round(result[key] / base[key], 2)
        print(json.dumps(result, ensure_ascii=False), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
