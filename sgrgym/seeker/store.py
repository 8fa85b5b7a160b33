"""The passage store: precomputed passage vectors in LanceDB, pinned by a content hash.

``embeddings/<corpus>__<model>/`` holds a LanceDB table ``passages`` (doc_id, passage_id,
section, order, text_sha256, vector) and ``manifest.json`` (corpus, model id, dims, θ,
normalization, row count, sha256 of the vectors' content). LanceDB files are not
byte-reproducible (they carry random ids), so the pin is a content hash: rows in
(doc_id, order) order, each as every column: doc id, passage id, section, order, text sha256
and the float32 vector bytes. It is recomputed and compared every time the store is opened;
a table that lance cannot read is a UserError naming the store.

LanceDB is the store, not the per-step search: an episode loads its document's matrix once
(:meth:`PassageStore.matrix`) and scores queries with numpy (:mod:`sgrgym.seeker.retrieval`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from sgrgym.core.errors import PinError, UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.inputs import field_problem, read_bytes, shorten
from sgrgym.core.io import write_atomic
from sgrgym.seeker.retrieval import Matrix

TABLE = "passages"
MANIFEST = "manifest.json"
DEFAULT_THETA = 0.65  # paper section 2.2 (text-embedding-3-large); each model pins its own θ
THETA_EVIDENCE = "theta-selection.json"  # `sgrgym seeker select-theta` evidence, beside MANIFEST


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
    vectors_sha256: str
    theta_selection: ThetaSelection | None = None  # None: θ was not selected for this store


@dataclass(frozen=True)
class PassageRow:
    doc_id: str
    passage_id: str
    section: str
    order: int
    text: str


COLUMNS = ("doc_id", "passage_id", "section", "order", "text_sha256", "vector")


def _sorted_rows(table: Any) -> Any:
    """The table's rows as one Arrow table in (doc_id, order) order."""
    return table.to_arrow().sort_by([("doc_id", "ascending"), ("order", "ascending")])


def _content_sha256(data: Any) -> str:
    """sha256 over every column of every row, rows in (doc_id, order) order: the text
    columns NUL-separated, then the float32 vector bytes (little-endian)."""
    digest = hashlib.sha256()
    vectors = np.asarray(data["vector"].combine_chunks().flatten(), dtype="<f4")
    dims = len(vectors) // max(1, data.num_rows)
    vectors = vectors.reshape(data.num_rows, dims)
    columns = [data[name].to_pylist() for name in COLUMNS[:-1]]
    for i, (doc, pid, section, order, text_hash) in enumerate(zip(*columns, strict=True)):
        digest.update(f"{doc}\0{pid}\0{section}\0{order}\0{text_hash}\0".encode())
        digest.update(vectors[i].tobytes())
    return digest.hexdigest()


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
    """Embed every passage (in batches) and write the LanceDB table and its manifest."""
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
    db = lancedb.connect(str(out_dir))
    db.create_table(TABLE, table, mode="overwrite")
    manifest = StoreManifest(
        corpus=corpus,
        corpus_sha256=corpus_sha256,
        model_id=model_id,
        dims=dims,
        theta=theta,
        rows=len(rows),
        vectors_sha256=_content_sha256(_sorted_rows(db.open_table(TABLE))),
    )
    write_atomic(out_dir / MANIFEST, canonical_json(manifest.model_dump(mode="json")))
    return manifest


def load_store_manifest(path: Path) -> StoreManifest:
    """The manifest of the store ``path`` (a UserError naming it when missing or invalid)."""
    if not (path / MANIFEST).exists():
        raise UserError(
            f"{path}: no passage store here (build it with `sgrgym seeker build-store`)"
        )
    try:
        return StoreManifest.model_validate_json(
            read_bytes(path / MANIFEST, "passage store manifest")
        )
    except ValidationError as exc:
        raise UserError(
            f"{path / MANIFEST}: not a passage store manifest ({field_problem(exc, '(record)')}); "
            "rebuild with `sgrgym seeker build-store`"
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


class PassageStore:
    """An opened, verified store: per-document matrices for the episodes' hot path."""

    def __init__(self, path: Path, manifest: StoreManifest, table: Any, data: Any) -> None:
        self.path = path
        self.manifest = manifest
        self.table = table
        vectors = np.asarray(data["vector"].combine_chunks().flatten(), dtype=np.float32)
        self._vectors = vectors.reshape(data.num_rows, manifest.dims)
        self._docs: dict[str, tuple[int, int]] = {}
        self._ids = data["passage_id"].to_pylist()
        for i, doc in enumerate(data["doc_id"].to_pylist()):
            start, _ = self._docs.get(doc, (i, i))
            self._docs[doc] = (start, i + 1)

    @classmethod
    def open(cls, path: Path) -> PassageStore:
        """Open ``path`` and check its vectors against the manifest's content hash."""
        import lancedb

        manifest = load_store_manifest(path)
        try:
            table = lancedb.connect(str(path)).open_table(TABLE)
            data = _sorted_rows(table)
            if tuple(data.column_names) != COLUMNS:
                raise UserError(
                    f"{path}: the LanceDB table {TABLE!r} has columns {data.column_names}, "
                    f"expected {list(COLUMNS)}; rebuild with `sgrgym seeker build-store`"
                )
            dims = data.schema.field("vector").type.list_size
            if dims != manifest.dims:
                raise UserError(
                    f"{path}: the vectors have {dims} dims, the manifest {manifest.dims}; "
                    "rebuild with `sgrgym seeker build-store`"
                )
            found = _content_sha256(data)
        except UserError:
            raise
        except Exception as exc:  # lance and arrow raise ValueError, OSError, RuntimeError ...
            raise UserError(
                f"{path}: cannot read the LanceDB table {TABLE!r} ({type(exc).__name__}: "
                f"{shorten(str(exc), 300)}); the store is damaged: rebuild it with "
                "`sgrgym seeker build-store`"
            ) from None
        if found != manifest.vectors_sha256:
            raise UserError(
                f"{path}: the stored passages do not match the manifest (content sha256 {found}, "
                f"pinned {manifest.vectors_sha256}); rebuild with `sgrgym seeker build-store`"
            )
        if data.num_rows != manifest.rows:
            raise UserError(
                f"{path}: the table has {data.num_rows} rows, the manifest {manifest.rows}; "
                "rebuild with `sgrgym seeker build-store`"
            )
        _verify_theta_evidence(path, manifest)
        return cls(path, manifest, table, data)

    def documents(self) -> list[str]:
        return sorted(self._docs)

    def matrix(self, doc_id: str) -> tuple[list[str], Matrix]:
        """The document's passage ids and vectors, in document order (load once per episode)."""
        span = self._docs.get(doc_id)
        if span is None:
            raise UserError(f"{self.path}: no document {doc_id!r} in this store")
        start, end = span
        return self._ids[start:end], self._vectors[start:end]

    def search_lancedb(self, doc_id: str, query: Matrix, theta: float) -> list[str]:
        """The same retrieval through a LanceDB filtered vector search (for the benchmark)."""
        start, end = self._docs[doc_id]
        hits = (
            self.table.search(query)
            .metric("cosine")
            .where(f"doc_id = '{doc_id}'", prefilter=True)
            .limit(end - start)
            .to_arrow()
        )
        return sorted(
            pid
            for pid, dist in zip(
                hits["passage_id"].to_pylist(), hits["_distance"].to_pylist(), strict=True
            )
            if 1.0 - dist > theta
        )
