"""The passage store: precomputed passage vectors in LanceDB, pinned by content hashes.

``embeddings/<corpus>__<model>/`` holds:

- the LanceDB table ``passages`` (doc_id, passage_id, section, order, text_sha256, vector):
  the data of record;
- ``passages.arrow``: the same rows in (doc_id, order) order, an uncompressed Arrow IPC file
  derived from the table (by ``build-store``, else when the store is first opened, after every
  row of the table is checked against the pins; never committed); episodes read their document
  from it through a memory map (no LanceDB import, nothing read for the other documents);
- ``documents.json``: the per-document index, one ``[doc id, first row, end row, content
  sha256]`` a document;
- ``manifest.json``: corpus, model id, dims, θ, normalization, row count, the content sha256
  of the whole store (``vectors_sha256``) and the sha256 of ``documents.json``
  (``index_sha256``).

LanceDB files are not byte-reproducible (they carry random ids), so the pins are content
hashes: rows in (doc_id, order) order, each as every column: doc id, passage id, section,
order and text sha256 NUL-separated, a NUL, then the float32 vector bytes (little-endian). A
document's hash covers its rows, the store's hash all rows; both are computed over whole
Arrow buffers (no Python loop per row). Opening a store checks the index against the manifest
and the rows file's layout; reading a document (:meth:`PassageStore.matrix`) checks its rows
against the index, so every id, section, order, text hash and vector an episode uses is the
one the manifest pins, at a cost independent of the store's size. :meth:`PassageStore.verify`
(``build-store``, ``check-store``) checks the whole store: the LanceDB table against
``vectors_sha256`` and every document of both the table and the rows file against the index.
A file that cannot be read is a UserError naming the store.

LanceDB is the store, not the per-step search: an episode loads its document's matrix once
(:meth:`PassageStore.matrix`) and scores queries with numpy (:mod:`sgrgym.seeker.retrieval`).
"""

from __future__ import annotations

import hashlib
import json
import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from sgrgym.core.errors import PinError, UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.inputs import field_problem, read_bytes, shorten
from sgrgym.core.io import TMP_SUFFIX, write_atomic
from sgrgym.seeker.retrieval import Matrix

TABLE = "passages"
ROWS_FILE = "passages.arrow"  # the table's rows in (doc_id, order) order, read by episodes
INDEX = "documents.json"  # per document: first row, end row, content sha256
MANIFEST = "manifest.json"
DEFAULT_THETA = 0.65  # paper section 2.2 (text-embedding-3-large); each model pins its own θ
THETA_EVIDENCE = "theta-selection.json"  # `sgrgym seeker select-theta` evidence, beside MANIFEST
BATCH_ROWS = 1 << 16  # rows per record batch of the rows file
HASH_ROWS = 1 << 14  # rows hashed at a time (bounds the memory of a whole-store hash)
REBUILD = "rebuild it with `sgrgym seeker build-store`"


class ThetaSelection(BaseModel):
    """Where a store's θ came from: the select-theta evidence file (appendix A.2) and its pin."""

    file: str
    sha256: str
    rule: str
    paper_theta: float


class StoreManifest(BaseModel):
    corpus: str
    corpus_sha256: str  # the corpus manifest this store was built from
    model_id: str
    dims: int = Field(gt=0)
    theta: float = Field(gt=-1.0, lt=1.0)
    normalization: str = "l2"
    rows: int = Field(ge=0)
    vectors_sha256: str  # the content hash of every row (the module docstring)
    index_sha256: str  # sha256 of INDEX, which pins each document's rows
    theta_selection: ThetaSelection | None = None  # None: θ was not selected for this store


@dataclass(frozen=True)
class PassageRow:
    doc_id: str
    passage_id: str
    section: str
    order: int
    text: str


COLUMNS = ("doc_id", "passage_id", "section", "order", "text_sha256", "vector")


@dataclass(frozen=True)
class DocumentSpan:
    """A document's rows in the rows file (``start`` to ``end``) and their content sha256."""

    start: int
    end: int
    sha256: str


def _schema(dims: int) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("passage_id", pa.string()),
            ("section", pa.string()),
            ("order", pa.int32()),
            ("text_sha256", pa.string()),
            ("vector", pa.list_(pa.float32(), dims)),
        ]
    )


def _schema_text(schema: Any) -> str:
    return shorten("; ".join(f"{field.name}: {field.type}" for field in schema), 300)


def _sorted_rows(table: Any) -> Any:
    """The table's rows as one Arrow table in (doc_id, order) order."""
    return table.to_arrow().sort_by([("doc_id", "ascending"), ("order", "ascending")])


def _vectors(data: Any) -> np.ndarray:
    """The vector column of ``data`` as a (rows, dims) float32 matrix (no copy of one chunk)."""
    column = data["vector"]
    dims = data.schema.field("vector").type.list_size
    if column.num_chunks == 0:
        return np.zeros((0, dims), np.float32)
    chunk = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    values = chunk.flatten()
    if values.null_count:
        raise ValueError("null vector components")
    flat = np.frombuffer(values.buffers()[1], np.float32, len(values), values.offset * 4)
    return flat.reshape(data.num_rows, dims)


def _binary(parts: np.ndarray, widths: np.ndarray) -> Any:
    """A binary Arrow array over the bytes of ``parts``, element i ``widths[i]`` bytes long
    (built from buffers: converting Python objects would make pyarrow import pandas)."""
    import pyarrow as pa

    offsets = np.zeros(len(widths) + 1, np.int32)
    np.cumsum(widths, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.binary(), len(widths), [None, pa.py_buffer(offsets), pa.py_buffer(parts)]
    )


def _row_bytes(data: Any) -> tuple[memoryview, np.ndarray]:
    """Every row of ``data`` as the hashed bytes (the module docstring), concatenated, and the
    offset of each row's bytes (rows + 1 offsets, the first 0)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data = data.combine_chunks()
    rows = data.num_rows
    for name in COLUMNS:
        if data[name].null_count:
            raise ValueError(f"column {name!r} holds nulls")
    vectors = np.ascontiguousarray(_vectors(data), dtype="<f4")
    vector_bytes = _binary(vectors, np.full(rows, vectors.shape[1] * 4))
    separator = _binary(np.zeros(rows, np.uint8), np.ones(rows, np.int32))
    text = [pc.cast(data[name], pa.binary()) for name in ("doc_id", "passage_id", "section")]
    order = pc.cast(pc.cast(data["order"], pa.string()), pa.binary())
    joined = pc.binary_join_element_wise(
        *text, order, pc.cast(data["text_sha256"], pa.binary()), vector_bytes, separator
    )
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    offsets_buffer, data_buffer = joined.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, np.int32)[joined.offset : joined.offset + rows + 1]
    if data_buffer is None:
        return memoryview(b""), np.zeros(rows + 1, np.int64)
    blob = memoryview(data_buffer)[int(offsets[0]) : int(offsets[-1])]
    return blob, offsets.astype(np.int64) - offsets[0]


def _content_hashes(data: Any, spans: Sequence[tuple[int, int]]) -> tuple[str, list[str]]:
    """The content sha256 of all rows of ``data`` and of each span (contiguous row ranges in
    order, covering ``data``), from one pass over the rows, HASH_ROWS at a time."""
    whole = hashlib.sha256()
    parts = [hashlib.sha256() for _ in spans]
    k = 0
    for first in range(0, data.num_rows, HASH_ROWS):
        blob, offsets = _row_bytes(data.slice(first, HASH_ROWS))
        last = first + len(offsets) - 1
        whole.update(blob)
        while k < len(spans):
            start, end = spans[k]
            if start >= last:  # the span starts in a later chunk
                break
            low, high = max(start, first) - first, min(end, last) - first
            parts[k].update(blob[offsets[low] : offsets[high]])
            if end > last:
                break
            k += 1
    return whole.hexdigest(), [p.hexdigest() for p in parts]


def _document_spans(data: Any) -> list[tuple[str, int, int]]:
    """(doc id, first row, end row) of each document of ``data`` (rows in doc_id order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = data.num_rows
    if rows == 0:
        return []
    docs = data["doc_id"].combine_chunks()
    changes = pc.not_equal(docs.slice(1), docs.slice(0, rows - 1))
    starts = np.concatenate([[0], np.flatnonzero(changes.to_numpy(zero_copy_only=False)) + 1])
    ends = np.append(starts[1:], rows)
    names = docs.take(pa.array(starts)).to_pylist()
    return list(zip(names, starts.tolist(), ends.tolist(), strict=True))


def _index_bytes(rows: int, dims: int, content: str, documents: dict[str, DocumentSpan]) -> bytes:
    """INDEX: the store's row count, dims and content sha256 (so that the manifest's pin of
    INDEX pins them too), then one JSON array a document per line (small to diff, one
    json.loads to read)."""
    head = json.dumps({"dims": dims, "rows": rows, "vectors_sha256": content})[:-1]
    lines = [
        json.dumps([doc, span.start, span.end, span.sha256], ensure_ascii=False)
        for doc, span in documents.items()
    ]
    return (head + ', "documents": [\n' + ",\n".join(lines) + "\n]}\n").encode("utf-8")


def _write_rows_file(path: Path, data: Any) -> None:
    """The rows file (uncompressed Arrow IPC, BATCH_ROWS rows a batch), written atomically."""
    import pyarrow as pa

    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
            writer.write_table(data, max_chunksize=BATCH_ROWS)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def index_table(path: Path) -> tuple[int, int, str, str]:
    """Read the LanceDB table of the store ``path``, write its rows file and per-document
    index from it; returns (rows, dims, content sha256, index sha256) for the manifest."""
    import lancedb

    data = _sorted_rows(lancedb.connect(str(path)).open_table(TABLE))
    dims = data.schema.field("vector").type.list_size
    data = data.cast(_schema(dims))  # the table build_store writes: names and types unchanged
    spans = _document_spans(data)
    content, hashes = _content_hashes(data, [(start, end) for _, start, end in spans])
    documents = {
        doc: DocumentSpan(start, end, digest)
        for (doc, start, end), digest in zip(spans, hashes, strict=True)
    }
    _write_rows_file(path / ROWS_FILE, data)
    index = _index_bytes(data.num_rows, dims, content, documents)
    write_atomic(path / INDEX, index)
    return data.num_rows, dims, content, sha256_bytes(index)


def _derive_rows_file(
    path: Path, manifest: StoreManifest, documents: dict[str, DocumentSpan]
) -> None:
    """Write the rows file of a store that has none (a fresh clone: only the LanceDB table is
    committed) from its LanceDB table, once every row of the table matches the manifest's
    content sha256 and every document the index (the one time a run path imports LanceDB)."""
    import lancedb

    try:
        data = _sorted_rows(lancedb.connect(str(path)).open_table(TABLE))
        if not data.schema.equals(_schema(manifest.dims)):
            raise UserError(
                f"{path}: the LanceDB table {TABLE!r} has the schema {_schema_text(data.schema)}, "
                f"expected {list(COLUMNS)} with {manifest.dims}-dim float32 vectors; {REBUILD}"
            )
        content, hashes = _content_hashes(data, [(d.start, d.end) for d in documents.values()])
    except UserError:
        raise
    except Exception as exc:  # lance and arrow raise ValueError, OSError, RuntimeError ...
        raise _damaged(path, f"the LanceDB table {TABLE!r}", exc) from None
    changed = [doc for (doc, d), h in zip(documents.items(), hashes, strict=True) if h != d.sha256]
    if content != manifest.vectors_sha256 or changed or data.num_rows != manifest.rows:
        raise UserError(
            f"{path}: the LanceDB table {TABLE!r} does not match the manifest (content sha256 "
            f"{content}, pinned {manifest.vectors_sha256}); {REBUILD}"
        )
    _write_rows_file(path / ROWS_FILE, data)


def build_store(
    out_dir: Path,
    corpus: str,
    corpus_sha256: str,
    rows: Sequence[PassageRow],
    embed: Callable[[Sequence[str]], Matrix],
    model_id: str,
    theta: float = DEFAULT_THETA,
    batch: int = 64,
    progress: Callable[[int, int, str], None] | None = None,
) -> StoreManifest:
    """Embed every passage (in batches), write the LanceDB table, its rows file, index and
    manifest, then verify the whole store."""
    import lancedb
    import pyarrow as pa

    chunks = []
    for start in range(0, len(rows), batch):
        chunks.append(embed([r.text for r in rows[start : start + batch]]))
        if progress:
            progress(min(start + batch, len(rows)), len(rows), "passages embedded")
    vectors = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros((0, 1), "f4")
    dims = int(vectors.shape[1])
    table = pa.table(
        {
            "doc_id": [r.doc_id for r in rows],
            "passage_id": [r.passage_id for r in rows],
            "section": [r.section for r in rows],
            "order": pa.array([r.order for r in rows], pa.int32()),
            "text_sha256": [sha256_bytes(r.text.encode("utf-8")) for r in rows],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dims),
        }
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST).unlink(missing_ok=True)  # no manifest pins a half-written store
    lancedb.connect(str(out_dir)).create_table(TABLE, table, mode="overwrite")
    count, dims, content, index = index_table(out_dir)
    manifest = StoreManifest(
        corpus=corpus,
        corpus_sha256=corpus_sha256,
        model_id=model_id,
        dims=dims,
        theta=theta,
        rows=count,
        vectors_sha256=content,
        index_sha256=index,
    )
    write_atomic(out_dir / MANIFEST, canonical_json(manifest.model_dump(mode="json")))
    PassageStore.open(out_dir).verify()
    return manifest


def load_store_manifest(path: Path) -> StoreManifest:
    """The manifest of the store ``path`` (a UserError naming it when missing or invalid, or
    when it is a store of the older format without a per-document index)."""
    if not (path / MANIFEST).exists():
        raise UserError(
            f"{path}: no passage store here (build it with `sgrgym seeker build-store`)"
        )
    data = read_bytes(path / MANIFEST, "passage store manifest")
    try:
        return StoreManifest.model_validate_json(data)
    except ValidationError as exc:
        try:
            fields = json.loads(data)
        except ValueError:
            fields = None
        if isinstance(fields, dict) and "vectors_sha256" in fields and "index_sha256" not in fields:
            raise UserError(
                f"{path}: a passage store of an older format (its manifest pins no per-document "
                f"index, {INDEX}); {REBUILD}"
            ) from None
        raise UserError(
            f"{path / MANIFEST}: not a passage store manifest ({field_problem(exc, '(record)')}); "
            f"{REBUILD}"
        ) from None


def _verify_theta_evidence(path: Path, manifest: StoreManifest) -> None:
    """The θ evidence file the manifest pins must be there, unchanged, and choose the
    manifest's θ (an edited θ is refused, not reported as the selected one)."""
    selection = manifest.theta_selection
    if selection is None:
        return
    evidence = path / selection.file
    try:
        data = evidence.read_bytes()
        digest = sha256_bytes(data)
    except FileNotFoundError:
        raise UserError(
            f"{evidence}: the θ evidence the manifest pins is missing; rerun "
            "`sgrgym seeker select-theta --pin`"
        ) from None
    if digest != selection.sha256:
        raise UserError(
            f"{evidence}: sha256 {digest} does not match the manifest's {selection.sha256}; "
            "rerun `sgrgym seeker select-theta --pin`"
        )
    chosen = json.loads(data).get("chosen")
    if chosen != manifest.theta:
        raise PinError(
            f"{path / MANIFEST}: θ = {manifest.theta:g} is not the θ its evidence {evidence.name} "
            f"chose ({chosen}); restore it, or pass --theta to run at another θ"
        )


def theta_note(theta: float, store: PassageStore) -> str:
    """How an episode's θ relates to the store's pinned one (for summaries and run cards)."""
    pinned = store.manifest.theta
    selection = store.manifest.theta_selection
    origin = (
        f"selected by select-theta, {selection.file} sha256 {selection.sha256[:12]}"
        if selection
        else "not selected for this embedder"
    )
    if abs(theta - pinned) > 1e-12:
        return f"θ = {theta:g} overrides the store's pinned θ = {pinned:g} ({origin})"
    return f"θ = {theta:g}: the store's pinned θ ({origin})"


def _damaged(path: Path, name: str, exc: Exception) -> UserError:
    return UserError(
        f"{path}: cannot read {name} ({type(exc).__name__}: {shorten(str(exc), 300)}); the "
        f"store is damaged: {REBUILD}"
    )


def _load_index(path: Path, manifest: StoreManifest) -> dict[str, DocumentSpan]:
    """INDEX, checked against the manifest's sha256: the documents in doc_id order, their rows
    contiguous and covering the store's rows."""
    try:
        data = read_bytes(path / INDEX, "per-document index")
    except UserError as exc:
        raise UserError(f"{exc}; {REBUILD}") from None
    digest = sha256_bytes(data)
    if digest != manifest.index_sha256:
        raise UserError(
            f"{path / INDEX}: sha256 {digest} does not match the manifest's "
            f"{manifest.index_sha256}; the store was changed: {REBUILD}"
        )
    documents: dict[str, DocumentSpan] = {}
    problem = ""
    try:
        index = json.loads(data)
        pinned = (index["rows"], index["dims"], index["vectors_sha256"])
        if pinned != (manifest.rows, manifest.dims, manifest.vectors_sha256):
            raise UserError(
                f"{path / INDEX}: (rows, dims, content sha256) {pinned} do not match the "
                f"manifest's {(manifest.rows, manifest.dims, manifest.vectors_sha256)}; the store "
                f"was changed: {REBUILD}"
            )
        end, previous = 0, None
        for doc, start, stop, sha in index["documents"]:
            if start != end or stop <= start or (previous is not None and doc <= previous):
                problem = f"document {doc!r} at rows {start}-{stop} is out of place"
                break
            documents[doc] = DocumentSpan(start, stop, sha)
            end, previous = stop, doc
        else:
            if end != manifest.rows:
                problem = f"its documents cover {end} rows, the manifest {manifest.rows}"
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"not an index ({type(exc).__name__}: {shorten(str(exc), 200)})"
    if problem:
        raise UserError(f"{path / INDEX}: {problem}; {REBUILD}")
    return documents


class PassageStore:
    """An opened store: its manifest and index checked, each document's rows checked when read
    (:meth:`matrix`), the whole store on demand (:meth:`verify`)."""

    def __init__(
        self, path: Path, manifest: StoreManifest, documents: dict[str, DocumentSpan], rows: Any
    ) -> None:
        self.path = path
        self.manifest = manifest
        self._docs = documents
        self._schema = rows.schema
        # Record batches over the memory map: only their metadata is read here.
        self._batches = [rows.get_batch(i) for i in range(rows.num_record_batches)]
        self._batch_starts: list[int] = []
        total = 0
        for batch in self._batches:
            self._batch_starts.append(total)
            total += batch.num_rows
        if total != manifest.rows:
            raise UserError(
                f"{path / ROWS_FILE}: {total} rows, the manifest {manifest.rows}; "
                f"the store was changed: {REBUILD}"
            )
        self._table: Any = None

    @classmethod
    def open(cls, path: Path) -> PassageStore:
        """Open ``path``: the manifest, the index it pins and the layout of the rows file (no
        document is read; :meth:`matrix` checks each one it reads)."""
        manifest = load_store_manifest(path)
        documents = _load_index(path, manifest)
        if not (path / ROWS_FILE).exists():
            _derive_rows_file(path, manifest, documents)
        try:
            import pyarrow as pa

            rows = pa.ipc.open_file(pa.memory_map(str(path / ROWS_FILE)))
            if not rows.schema.equals(_schema(manifest.dims)):
                raise UserError(
                    f"{path / ROWS_FILE}: the rows file has the schema "
                    f"{_schema_text(rows.schema)}, expected {list(COLUMNS)} with "
                    f"{manifest.dims}-dim float32 vectors; {REBUILD}"
                )
            store = cls(path, manifest, documents, rows)
        except UserError:
            raise
        except Exception as exc:  # arrow raises OSError, ArrowInvalid (a ValueError) ...
            raise _damaged(path, ROWS_FILE, exc) from None
        _verify_theta_evidence(path, manifest)
        return store

    def documents(self) -> list[str]:
        return sorted(self._docs)

    def _rows(self, start: int, end: int) -> Any:
        """Rows ``start`` to ``end`` of the rows file (memory-mapped: nothing else is read), in
        the record batches that hold them."""
        import pyarrow as pa

        if end <= start:
            return self._schema.empty_table()
        first = bisect_right(self._batch_starts, start) - 1
        last = bisect_right(self._batch_starts, end - 1) - 1
        table = pa.Table.from_batches(self._batches[first : last + 1], self._schema)
        return table.slice(start - self._batch_starts[first], end - start)

    def matrix(self, doc_id: str) -> tuple[list[str], Matrix]:
        """The document's passage ids and vectors, in document order (load once per episode),
        checked against the content sha256 the index pins for it."""
        span = self._docs.get(doc_id)
        if span is None:
            raise UserError(f"{self.path}: no document {doc_id!r} in this store")
        try:
            data = self._rows(span.start, span.end).combine_chunks()
            found = _content_hashes(data, [(0, data.num_rows)])[0]
            ids = data["passage_id"].to_pylist()
            vectors = np.array(_vectors(data), dtype=np.float32)
        except Exception as exc:  # arrow raises OSError, ArrowInvalid (a ValueError) ...
            raise _damaged(self.path, ROWS_FILE, exc) from None
        if found != span.sha256:
            raise UserError(
                f"{self.path}: the passages of document {doc_id!r} in {ROWS_FILE} do not match "
                f"the store's index {INDEX} (content sha256 {found}, pinned {span.sha256}); "
                f"the store was changed or damaged: {REBUILD}"
            )
        return ids, vectors

    def verify(self) -> None:
        """Check the whole store: every row of the LanceDB table against the manifest's
        ``vectors_sha256`` and every document of the table and of the rows file against the
        index (``build-store`` and ``check-store`` do; episodes check what they read)."""
        self._lance_table()
        try:
            data = self._rows(0, self.manifest.rows)
            self._check_rows(data, ROWS_FILE)
        except UserError:
            raise
        except Exception as exc:
            raise _damaged(self.path, ROWS_FILE, exc) from None

    def _check_rows(self, data: Any, source: str) -> None:
        """``data`` (all rows in (doc_id, order) order) against the manifest and the index."""
        spans = [(span.start, span.end) for span in self._docs.values()]
        content, hashes = _content_hashes(data, spans)
        changed = [
            doc
            for (doc, span), digest in zip(self._docs.items(), hashes, strict=True)
            if digest != span.sha256
        ]
        if content != self.manifest.vectors_sha256 or changed:
            which = f"; documents that differ from {INDEX}: {shorten(', '.join(changed), 300)}"
            raise UserError(
                f"{self.path}: the stored passages ({source}) do not match the manifest (content "
                f"sha256 {content}, pinned {self.manifest.vectors_sha256}"
                f"{which if changed else ''}); {REBUILD}"
            )

    def _lance_table(self) -> Any:
        """The LanceDB table, every row checked against the manifest (once)."""
        if self._table is not None:
            return self._table
        import lancedb

        path = self.path
        try:
            table = lancedb.connect(str(path)).open_table(TABLE)
            data = _sorted_rows(table)
            if not data.schema.equals(_schema(self.manifest.dims)):
                raise UserError(
                    f"{path}: the LanceDB table {TABLE!r} has the schema "
                    f"{_schema_text(data.schema)}, expected {list(COLUMNS)} with "
                    f"{self.manifest.dims}-dim float32 vectors; {REBUILD}"
                )
            self._check_rows(data, f"LanceDB table {TABLE!r}")  # also proves the row count
        except UserError:
            raise
        except Exception as exc:  # lance and arrow raise ValueError, OSError, RuntimeError ...
            raise UserError(
                f"{path}: cannot read the LanceDB table {TABLE!r} ({type(exc).__name__}: "
                f"{shorten(str(exc), 300)}); the store is damaged: {REBUILD}"
            ) from None
        self._table = table
        return table

    @property
    def table(self) -> Any:
        """The LanceDB table (opened and checked on first use)."""
        return self._lance_table()

    def search_lancedb(self, doc_id: str, query: Matrix, theta: float) -> list[str]:
        """The same retrieval through a LanceDB filtered vector search (for the benchmark)."""
        span = self._docs[doc_id]
        hits = (
            self.table.search(query)
            .metric("cosine")
            .where(f"doc_id = '{doc_id}'", prefilter=True)
            .limit(span.end - span.start)
            .to_arrow()
        )
        return sorted(
            pid
            for pid, dist in zip(
                hits["passage_id"].to_pylist(), hits["_distance"].to_pylist(), strict=True
            )
            if 1.0 - dist > theta
        )
