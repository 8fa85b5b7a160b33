"""The SeekerGym LLM agent end to end: ``seeker run --agent llm`` against a scripted chat server
on 127.0.0.1, recorded, then replayed with every connection refused.

Needs the exported ONNX model (the passage store is built here from sentences written for
the test).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from chat_server import scripted

from sgrgym.cli import main
from sgrgym.core.loopback import serve_http
from sgrgym.seeker.corpus import Corpus, CorpusSource, corpus_sha256, make_document, save_corpus
from sgrgym.seeker.llm_agent import parse_queries

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
HAVE_MODEL = (MODELS / "all-MiniLM-L6-v2" / "model.onnx").is_file()
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="the ONNX model is not exported")
SECRET = "sk-seeker-secret-777"
RESULTS = ("run.json", "episodes.jsonl", "summary.json", "complete.json")

DOCS = {
    "tea": (
        "How tea is grown, processed, brewed and traded.",
        [
            "Green tea leaves are steamed or pan-fired soon after picking to stop oxidation.",
            "Water just below boiling keeps green tea from turning bitter.",
            "Tea bushes grow best on acidic soil with steady rainfall.",
            "Clipper ships raced to carry the first tea of the season to London.",
        ],
    ),
    "bees": (
        "How honey bees live, forage and make honey.",
        [
            "A colony has one queen, thousands of workers and a few hundred drones.",
            "Foragers tell each other where flowers are with a waggle dance.",
            "Nectar is dried by fanning wings until it thickens into honey.",
            "Beekeepers smoke the hive to calm the bees before opening it.",
        ],
    ),
}
QUERIES = {
    "Tea": [
        "brewing green tea with hot water",
        "ships carrying tea to London",
        "soil and rain for tea plants",
        "steaming fresh tea leaves",
    ],
    "Bees": [
        "the queen and the workers of a colony",
        "the waggle dance of foragers",
        "turning nectar into honey",
        "smoke calms the hive",
    ],
}


def chat_reply(body: dict[str, Any]) -> str:
    """Queries chosen from the belief: the title, and how many passages were found so far."""
    user = body["messages"][-1]["content"]
    title = re.search(r"^Title: (.+)$", user, re.M)
    assert title is not None
    found = len(re.findall(r"^\[", user, re.M))
    if body.get("seed") == 3 and found:
        return "Here are my new queries:"  # malformed: no query at all
    pool = QUERIES[title.group(1)]
    count = int(re.search(r"Write (\d+) new", user).group(1))  # type: ignore[union-attr]
    picked = [pool[(found + i) % len(pool)] for i in range(count)]
    lines = [f"Query: {q}" for q in picked]
    if "Completeness:" in user:
        lines.append(f"Completeness: {min(1.0, 0.3 + 0.2 * found):.2f}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if not HAVE_MODEL:
        pytest.skip("the ONNX model is not exported (sgrgym seeker export-model)")
    from sgrgym.seeker.embed import OnnxMiniLM
    from sgrgym.seeker.store import PassageRow, build_store

    embedder = OnnxMiniLM(MODELS / "all-MiniLM-L6-v2", manifest_path=MODELS / "manifest.json")
    docs = tuple(
        make_document(name, name.title(), abstract, "test", [(("Body",), t) for t in texts])
        for name, (abstract, texts) in DOCS.items()
    )
    corpus = Corpus(name="tiny", source=CorpusSource(kind="test"), documents=docs)
    rows = [PassageRow(d.id, p.id, "Body", p.order, p.text) for d in docs for p in d.passages]
    folder = tmp_path_factory.mktemp("seeker-llm")
    store = folder / "tiny__minilm"
    build_store(store, "tiny", corpus_sha256(corpus), rows, embedder.embed, embedder.model_id)
    corpus_file = folder / "tiny.jsonl"
    save_corpus(corpus, corpus_file)
    return corpus_file, store


def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a connection was attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"served-model-7b": {"prompt": 1.0, "completion": 2.0}}}))
    return path


def run_args(tiny: tuple[Path, Path], url: str, cache: Path, out: Path, *extra: str) -> list[str]:
    corpus_file, store = tiny
    return [
        "seeker",
        "run",
        "--corpus",
        "tiny",
        "--corpus-file",
        str(corpus_file),
        "--store",
        str(store),
        "--agent",
        "llm",
        "--llm-model",
        "tiny-llm",
        "--base-url",
        url + "/v1",
        "--api-key-env",
        "SGRGYM_SEEKER_KEY",
        "--llm-cache",
        str(cache),
        "--belief",
        "dedup",
        "--steps",
        "3",
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]


def results(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in RESULTS}


def episodes(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("reply", "count", "queries", "form"),
    [
        ("Query: alpha\nQuery: beta\nQuery: gamma", 2, ["alpha", "beta"], "query-lines"),
        ('1. **Query 1:** alpha\n2. **Query 2:** "beta"', 5, ["alpha", "beta"], "query-lines"),
        ('```json\n{"queries": ["alpha", "beta", "alpha"]}\n```', 3, ["alpha", "beta"], "json"),
        ('["alpha", 7, "beta"]', 3, ["alpha", "beta"], "json"),
        ("Ideas:\n- alpha\n- beta\n* gamma", 3, ["alpha", "beta", "gamma"], "list"),
        ("<think>Query: hidden</think>alpha\nbeta", 3, ["alpha", "beta"], "lines"),
        ("Here are the queries:", 3, [], "none"),
        ("", 3, [], "none"),
        ("<think>thinking that never ends", 3, [], "none"),
    ],
)
def test_parse_queries(reply: str, count: int, queries: list[str], form: str) -> None:
    parsed = parse_queries(reply, count)
    assert parsed.queries == queries and parsed.form == form
    assert bool(parsed.malformed) == (not queries)


def test_parse_queries_with_an_estimate() -> None:
    parsed = parse_queries(
        "Query: python 3.11 release\nQuery: 20 modules\nCompleteness: 0.35", 3, estimate=True
    )
    assert parsed.queries == ["python 3.11 release", "20 modules"] and parsed.c_hat == 0.35
    missing = parse_queries("Query: alpha", 3, estimate=True)
    assert missing.queries == ["alpha"] and missing.c_hat is None
    assert missing.malformed == "no readable completeness estimate in the reply"


@needs_model
def test_record_then_replay_offline_is_byte_identical(
    tiny: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SGRGYM_SEEKER_KEY", SECRET)
    cache = tmp_path / "calls.sqlite"
    prices = ["--prices", str(prices_file(tmp_path)), "--seeds", "4"]
    handler = scripted(chat_reply)
    with serve_http(handler) as url:
        assert (
            main([*run_args(tiny, url, cache, tmp_path / "rec"), *prices, "--llm-mode", "record"])
            == 0
        )
    sent = len(handler.received)
    calls = [c for e in episodes(tmp_path / "rec") for c in e["llm"]["calls"]]
    assert len(calls) == 2 * 4 * 3  # 2 documents x 4 seeds x 3 steps, one call a step
    # Seed 3's malformed step leaves the belief as it was: its next request is a cache hit.
    assert sent == len({c["request_hash"] for c in calls}) == 22
    assert {b["seed"] for b in handler.received} == {0, 1, 2, 3}  # the episodes' seeds
    assert {b["temperature"] for b in handler.received} == {0.0}
    monkeypatch.delenv("SGRGYM_SEEKER_KEY")
    no_connections(monkeypatch)
    assert main([*run_args(tiny, url, cache, tmp_path / "replay"), *prices]) == 0
    out = capsys.readouterr().out
    assert "LLM: 24 calls" in out and "malformed replies" in out
    assert results(tmp_path / "rec") == results(tmp_path / "replay")
    logs = {
        m: json.loads((tmp_path / f / "llm_run.json").read_text())
        for m, f in (("record", "rec"), ("replay", "replay"))
    }
    assert logs["record"]["mode"] == "record" and logs["record"]["from_cache"] == 24 - sent
    assert logs["replay"]["mode"] == "replay" and logs["replay"]["from_cache"] == 24
    for name in (*RESULTS, "llm_run.json"):
        text = (tmp_path / "rec" / name).read_text()
        assert "replay" not in text or name == "llm_run.json"
        assert SECRET not in text and "calls.sqlite" not in text
    assert SECRET.encode() not in cache.read_bytes()
    card = json.loads((tmp_path / "rec" / "run.json").read_text())
    assert card["agent"] == "llm" and card["llm"]["model"] == "tiny-llm"
    assert card["llm"]["seed_rule"] == "episode seed"
    assert list(card["llm"]["prompts"]) == ["queries-v1"]
    assert re.fullmatch(r"[0-9a-f]{64}", card["llm"]["prompts"]["queries-v1"])

    # Token and cost totals add up: calls -> episode totals -> the run's totals.
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    records = episodes(tmp_path / "rec")
    assert summary["llm"]["calls"] == 24
    for e in records:
        totals = e["llm"]["totals"]
        assert totals["prompt_tokens"] == sum(c["prompt_tokens"] for c in e["llm"]["calls"])
        assert totals["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in e["llm"]["calls"]))
    for key in ("prompt_tokens", "completion_tokens", "malformed_replies", "calls"):
        assert summary["llm"][key] == sum(e["llm"]["totals"][key] for e in records)
    assert summary["llm"]["prompt_tokens"] == 24 * 11  # the scripted server's usage
    assert summary["llm"]["cost_usd"] == pytest.approx(24 * (11 * 1.0 + 5 * 2.0) / 1e6)
    assert summary["llm"]["unpriced_calls"] == 0

    # Seed 3 answers without a query once a passage is found: counted, logged, never fatal.
    malformed = [(e["seed"], r) for e in records for r in e["llm"]["replies"] if r["malformed"]]
    assert malformed and {seed for seed, _ in malformed} == {3}
    assert summary["llm"]["malformed_replies"] == len(malformed)
    seed3 = [e for e in records if e["seed"] == 3]
    assert all(e["steps"][1]["queries"] == [] for e in seed3)
    assert all(
        r["form"] == "query-lines" for e in records if e["seed"] != 3 for r in e["llm"]["replies"]
    )
    assert summary["final_completeness"] > 0


@needs_model
def test_a_changed_prompt_in_replay_is_a_clear_miss(
    tiny: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SGRGYM_SEEKER_KEY", SECRET)
    cache = tmp_path / "calls.sqlite"
    with serve_http(scripted(chat_reply)) as url:
        assert main([*run_args(tiny, url, cache, tmp_path / "rec"), "--llm-mode", "record"]) == 0
    packaged = json.loads((ROOT / "sgrgym/seeker/prompts/queries-v1.json").read_text())
    changed = tmp_path / "queries-v2.json"
    changed.write_text(
        json.dumps(
            {**packaged, "version": "queries-v2", "system": packaged["system"] + " Be brief."}
        )
    )
    no_connections(monkeypatch)
    capsys.readouterr()
    code = main([*run_args(tiny, url, cache, tmp_path / "changed"), "--prompt", str(changed)])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"not in the cache .*\(request [0-9a-f]{64}, model tiny-llm, episode ", err)
    assert "Traceback" not in err
    # The packaged prompt still replays.
    assert main(run_args(tiny, url, cache, tmp_path / "again")) == 0


@needs_model
def test_eight_parallel_jobs_share_one_cache_and_match_one_job(
    tiny: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SGRGYM_SEEKER_KEY", SECRET)
    seeds = ["--seeds", "6", "--belief", "oracle"]
    handler = scripted(chat_reply)
    with serve_http(handler) as url:
        assert (
            main(
                [
                    *run_args(tiny, url, tmp_path / "eight.sqlite", tmp_path / "j8"),
                    *seeds,
                    "--jobs",
                    "8",
                    "--llm-mode",
                    "record",
                ]
            )
            == 0
        )
        eight = len(handler.received)
        assert (
            main(
                [
                    *run_args(tiny, url, tmp_path / "one.sqlite", tmp_path / "j1"),
                    *seeds,
                    "--llm-mode",
                    "record",
                ]
            )
            == 0
        )
    err = capsys.readouterr().err
    assert "database is locked" not in err
    assert results(tmp_path / "j8") == results(tmp_path / "j1")
    calls = [c for e in episodes(tmp_path / "j8") for c in e["llm"]["calls"]]
    assert len(calls) == 2 * 6 * 3
    # Every distinct request was sent once by each run (8 threads, one cache file).
    assert eight == len(handler.received) - eight == len({c["request_hash"] for c in calls})
    no_connections(monkeypatch)
    assert (
        main(
            [
                *run_args(tiny, url, tmp_path / "eight.sqlite", tmp_path / "r8"),
                *seeds,
                "--jobs",
                "8",
            ]
        )
        == 0
    )
    assert results(tmp_path / "r8") == results(tmp_path / "j1")
    assert json.loads((tmp_path / "r8" / "llm_run.json").read_text())["from_cache"] == len(calls)


@needs_model
def test_calibrated_stopping_uses_the_estimate_of_the_same_reply(
    tiny: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SGRGYM_SEEKER_KEY", SECRET)
    handler = scripted(chat_reply)
    with serve_http(handler) as url:
        # ĉ = 0.3 + 0.2 x (passages shown); stop when ĉ - 0.1 >= 0.5, i.e. 2 passages shown.
        args = run_args(tiny, url, tmp_path / "c.sqlite", tmp_path / "stop")
        assert (
            main(
                [
                    *args,
                    "--stop-q-hat",
                    "0.1",
                    "--stop-delta",
                    "0.5",
                    "--llm-seed",
                    "7",
                    "--llm-mode",
                    "record",
                    "--queries-per-step",
                    "1",
                ]
            )
            == 0
        )
        assert main([*args[:-2], "--out", str(tmp_path / "bad"), "--stop-q-hat", "0.1"]) == 2
        other = [a if a != "llm" else "sentences" for a in args]
        assert main([*other[:-2], "--out", str(tmp_path / "bad2"), "--llm-estimate"]) == 2
    err = capsys.readouterr().err
    assert "calibrated stopping needs both --stop-q-hat Q and --stop-delta D" in err
    assert "--model, --llm-estimate: only for --agent llm" in err
    assert {b["seed"] for b in handler.received} == {7}
    summary = json.loads((tmp_path / "stop" / "summary.json").read_text())
    card = json.loads((tmp_path / "stop" / "run.json").read_text())
    assert list(card["llm"]["prompts"]) == ["queries-estimate-v1"]
    assert card["llm"]["seed_rule"] == "--llm-seed"
    records = episodes(tmp_path / "stop")
    assert any(e["llm"]["stopped"] for e in records)
    for e in records:
        replies = e["llm"]["replies"]
        assert len(replies) == len(e["llm"]["calls"]) == e["llm"]["totals"]["calls"]
        if e["llm"]["stopped"]:
            # One reply per step plus the one after the last step that carried ĉ.
            assert len(replies) == len(e["steps"]) + 1
            assert replies[-1]["c_hat"] - 0.1 >= 0.5 - 1e-9
            assert all(r["c_hat"] - 0.1 < 0.5 - 1e-9 for r in replies[:-1])
        else:
            assert len(e["steps"]) == 3 and len(replies) == 3
    assert len(summary["completeness_by_step"]) == 3
    assert summary["completeness_by_step"] == sorted(summary["completeness_by_step"])
