"""The DuckDB index of a pack: one ``captures`` row per archived response, plus full text.

Built from the WARC files, stored at ``<pack>/.cache/index-<manifest sha256>.duckdb`` and
reused while the manifest is unchanged; a changed pack gets a new index and stale ones are
removed. The index is pinned too: the sha256 of its file is written beside it
(``index-<manifest sha256>.sha256``) and checked before every use, and an index that does not
match is rebuilt. Columns of ``captures``: url, canonical_key, method, body_digest, status,
mime, payload_digest, warc_file, offset, length, capture_time, record_id, location, warc_type,
refers_to_uri, refers_to_date (the last two for revisit records, which point to the record
holding their payload).

``pages`` holds the text of every archived HTML, PDF and plain-text 200 response (an HTML
page's words as :func:`~sgrgym.snapshot.text.search_text` reads them) with a DuckDB full-text
(BM25) index over title and text. Both tables are filled by one Arrow bulk insert each. The
FTS extension is loaded from the pinned ``duckdb-extension-fts`` package: nothing is
downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.output import Say
from sgrgym.core.version import __version__
from sgrgym.snapshot.pack import CACHE_DIR, Manifest, pack_file
from sgrgym.snapshot.text import TEXT_MIMES, html_title, search_text
from sgrgym.snapshot.urls import archived_url, body_key, index_key
from sgrgym.snapshot.warc import ScannedRecord, WarcError, read_response, scan_warc

if TYPE_CHECKING:
    import duckdb

INDEX_VERSION = "3"

# (name, DuckDB type) of each column, in table order
CAPTURE_COLUMNS = (
    ("url", "VARCHAR"), ("canonical_key", "VARCHAR"), ("method", "VARCHAR"),
    ("body_digest", "VARCHAR"), ("status", "INTEGER"), ("mime", "VARCHAR"),
    ("payload_digest", "VARCHAR"), ("warc_file", "VARCHAR"), ("offset", "BIGINT"),
    ("length", "BIGINT"), ("capture_time", "VARCHAR"), ("record_id", "VARCHAR"),
    ("location", "VARCHAR"), ("warc_type", "VARCHAR"), ("refers_to_uri", "VARCHAR"),
    ("refers_to_date", "VARCHAR"),
)  # fmt: skip
PAGE_COLUMNS = (("url", "VARCHAR"), ("title", "VARCHAR"), ("text", "VARCHAR"))
_ARROW_TYPES = {"VARCHAR": "string", "INTEGER": "int32", "BIGINT": "int64"}


def _create(
    con: duckdb.DuckDBPyConnection, table: str, columns: tuple[tuple[str, str], ...]
) -> None:
    con.execute(f"CREATE TABLE {table} (" + ", ".join(f'"{n}" {t}' for n, t in columns) + ")")


def _bulk_insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: tuple[tuple[str, str], ...],
    rows: list[tuple[object, ...]],
) -> None:
    """Insert ``rows`` (tuples in column order) into ``table`` as one Arrow table."""
    import pyarrow as pa

    data = pa.table(
        {
            name: pa.array([row[i] for row in rows], type=_ARROW_TYPES[kind])
            for i, (name, kind) in enumerate(columns)
        }
    )
    con.register("_bulk", data)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM _bulk")
    finally:
        con.unregister("_bulk")


def fts_extension() -> Path:
    """Path of the pinned DuckDB FTS extension shipped by ``duckdb-extension-fts``."""
    import duckdb
    import duckdb_extension_fts

    base = Path(duckdb_extension_fts.__file__).parent / "extensions"
    path = base / f"v{duckdb.__version__}" / "fts.duckdb_extension"
    if not path.is_file():
        found = sorted(p.parent.name for p in base.glob("*/fts.duckdb_extension"))
        raise RuntimeError(
            f"duckdb {duckdb.__version__} needs duckdb-extension-fts of the same version "
            f"(installed: {found}); reinstall with -c constraints.txt"
        )
    return path


def connect(path: Path, read_only: bool = True, fts: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with extension downloads off; ``fts``: with the pinned FTS
    extension loaded (for building or querying a full-text index; replay needs none, and
    loading it costs tens of milliseconds a connection)."""
    import duckdb

    con = duckdb.connect(
        str(path),
        read_only=read_only,
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    if fts:
        con.execute(f"LOAD '{fts_extension()}'")
    return con


def index_path(pack_dir: Path, manifest_sha256: str) -> Path:
    return pack_dir / CACHE_DIR / f"index-{manifest_sha256}.duckdb"


def index_pin_path(index: Path) -> Path:
    """Where the sha256 of an index file is kept."""
    return index.with_suffix(".sha256")


def index_is_pinned(index: Path) -> bool:
    """Whether ``index`` exists and its bytes still hash to the sha256 written beside it."""
    pin = index_pin_path(index)
    if not index.is_file() or not pin.is_file():
        return False
    return pin.read_text(encoding="ascii", errors="replace").strip() == sha256_file(index)[0]


def _capture_rows(
    pack_dir: Path, manifest: Manifest, progress: Say | None
) -> tuple[list[tuple[object, ...]], list[tuple[str, ScannedRecord]]]:
    rules = manifest.rules
    rows: list[tuple[object, ...]] = []
    texts: list[tuple[str, ScannedRecord]] = []  # (pack-relative WARC path, response)
    for entry in manifest.files:
        path = pack_file(pack_dir, entry.path)
        requests: dict[str, ScannedRecord] = {}
        responses: list[ScannedRecord] = []
        count = 0
        for record in scan_warc(path):
            count += 1
            if record.warc_type == "request" and record.concurrent_to:
                requests[record.concurrent_to] = record
            elif record.warc_type in ("response", "resource", "revisit"):
                responses.append(record)
        if count != entry.records:
            raise UserError(
                f"{pack_dir}: {entry.path} holds {count} records, its manifest says "
                f"{entry.records}; the manifest was altered (run `sgrgym snapshot verify`)"
            )
        for response in responses:
            request = requests.get(response.record_id)
            method = request.method if request else "GET"
            body = body_key(request.body, request.content_type) if request else ""
            url = archived_url(response.target_uri)
            rows.append(
                (
                    url,
                    index_key(url, rules),
                    method,
                    body,
                    response.status,
                    response.mime,
                    response.payload_digest,
                    entry.path,
                    response.offset,
                    response.length,
                    response.date,
                    response.record_id,
                    response.location,
                    response.warc_type,
                    archived_url(response.refers_to_uri),
                    response.refers_to_date,
                )
            )
            if (
                response.warc_type != "revisit"
                and response.status == 200
                and response.mime in TEXT_MIMES
                and method == "GET"
            ):
                texts.append((entry.path, response))
        if progress:
            progress(f"indexed {entry.path}: {len(responses)} responses")
    return rows, texts


def _page_rows(
    pack_dir: Path, texts: list[tuple[str, ScannedRecord]]
) -> list[tuple[str, str, str]]:
    pages = []
    fds: dict[str, int] = {}
    try:
        for relative, record in texts:
            path = str(pack_file(pack_dir, relative))
            fd = fds.get(path)
            if fd is None:
                fd = fds[path] = os.open(path, os.O_RDONLY)
            http = read_response(fd, path, record.offset, record.length)
            content_type = dict((k.lower(), v) for k, v in http.headers).get("content-type", "")
            try:
                text = search_text(http.body, content_type or record.mime)
            except ValueError as exc:
                raise WarcError(path, record.offset, str(exc)) from None
            title = html_title(http.body) if "html" in record.mime else ""
            pages.append((archived_url(record.target_uri), title, text))
    finally:
        for fd in fds.values():
            os.close(fd)
    return pages


def build_index(
    pack_dir: Path, manifest: Manifest, manifest_sha256: str, progress: Say | None = None
) -> Path:
    """Build the pack's index from its WARC files (atomically) and return its path."""
    target = index_path(pack_dir, manifest_sha256)
    target.parent.mkdir(exist_ok=True)
    rows, texts = _capture_rows(pack_dir, manifest, progress)
    pages = _page_rows(pack_dir, texts)
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    con = connect(tmp, read_only=False, fts=True)
    try:
        _create(con, "captures", CAPTURE_COLUMNS)
        _create(con, "pages", PAGE_COLUMNS)
        _create(con, "meta", (("key", "VARCHAR"), ("value", "VARCHAR")))
        _bulk_insert(con, "captures", CAPTURE_COLUMNS, rows)
        _bulk_insert(con, "pages", PAGE_COLUMNS, list(pages))
        con.execute("PRAGMA create_fts_index('pages', 'url', 'title', 'text', overwrite=1)")
        meta = {
            "manifest_sha256": manifest_sha256,
            "rules_sha256": manifest.canonicalization.sha256,
            "index_version": INDEX_VERSION,
            "sgrgym_version": __version__,
        }
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(tmp, target)
    pin = index_pin_path(target)
    pin.write_text(sha256_file(target)[0] + "\n", encoding="ascii")
    for stale in [*target.parent.glob("index-*.duckdb*"), *target.parent.glob("index-*.sha256")]:
        if stale not in (target, pin):
            stale.unlink(missing_ok=True)
    if progress:
        progress(f"index: {len(rows)} captures, {len(pages)} text pages -> {target}")
    return target


def ensure_index(
    pack_dir: Path,
    manifest: Manifest,
    manifest_sha256: str,
    rebuild: bool = False,
    progress: Say | None = None,
) -> Path:
    """The pack's index, built first when missing, stale, altered (its bytes no longer match
    the sha256 written beside it) or when ``rebuild`` is asked for."""
    path = index_path(pack_dir, manifest_sha256)
    if not rebuild and index_is_pinned(path):
        con = connect(path)
        try:
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        finally:
            con.close()
        if meta.get("index_version") == INDEX_VERSION and meta.get("manifest_sha256") == (
            manifest_sha256
        ):
            return path
    return build_index(pack_dir, manifest, manifest_sha256, progress)
