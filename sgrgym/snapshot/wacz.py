"""WACZ export and WARC/WACZ import: exchange snapshot packs with other web-archive tools.

``export_wacz`` writes a pack as a WACZ 1.1.1 file (https://specs.webrecorder.net/wacz/1.1.1/)
that ReplayWeb.page and pywb can open: ``archive/*.warc.gz`` (stored, not recompressed),
``indexes/index.cdxj``, ``pages/pages.jsonl``, ``datapackage.json`` (sha256 and size of every
file) and ``datapackage-digest.json``. The same pack always gives a byte-identical file.

``import_archives`` makes a new pack from ``.warc``, ``.warc.gz`` (any gzip layout) and
``.wacz`` files: every record is copied into ``<pack>/warc/<pack>-00000.warc.gz``, one gzip
member per record. Record headers keep their names, values and order; record blocks are copied
byte for byte, so block and payload digests verify as before. Bad input (not a WARC, truncated,
altered, zip entries leaving the archive, records over the size limit) is refused with the file
named, and nothing is left behind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO

from pydantic import ValidationError
from surt import surt as surt_key

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes, sha256_file
from sgrgym.core.version import __version__
from sgrgym.snapshot.pack import (
    MANIFEST,
    PACK_NAME,
    WARC_DIR,
    Manifest,
    PackFile,
    RecordProblem,
    SiteInfo,
    SkippedRecord,
    build_manifest,
    check_files,
    load_manifest,
    manifest_sha256,
    pack_file,
    resolve_pack,
    utc_now,
    write_manifest,
)
from sgrgym.snapshot.stream import NotWarc, RecordStream, StreamError
from sgrgym.snapshot.text import HTML_MIMES, html_title
from sgrgym.snapshot.urls import CanonRules
from sgrgym.snapshot.warc import MAX_RECORD_BYTES, ScannedRecord, read_response, scan_warc

WACZ_VERSION = "1.1.1"
CDXJ_PATH = "indexes/index.cdx"  # CDXJ lines; pywb loads only *.cdx(.gz) from a WACZ
SGRGYM_KEY = "sgrgym"  # datapackage.json: the pack's site entries, restored on import
PAGES_PATH = "pages/pages.jsonl"
DATAPACKAGE = "datapackage.json"
DATAPACKAGE_DIGEST = "datapackage-digest.json"
ARCHIVE_DIR = "archive"

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_ZIP_MODE = (stat.S_IFREG | 0o644) << 16
_ZIP_UNIX = 3
_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK"
_HEADER_SLACK = 1 << 20  # record headers and read-ahead allowed on top of a record's block
_JSON_LIMIT = 16 << 20  # datapackage files are small; refuse huge ones unread
_CONTENT_LENGTH = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class WaczResult:
    """What :func:`export_wacz` wrote."""

    path: Path
    sha256: str
    bytes: int
    records: int
    captures: int
    pages: int

    def __str__(self) -> str:
        return (
            f"{self.path}: WACZ {WACZ_VERSION}, {self.bytes} bytes, sha256 {self.sha256}; "
            f"{self.records} records, {self.captures} indexed captures, {self.pages} pages"
        )


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_archives` made."""

    pack_dir: Path
    sources: int
    records: int
    sites: int
    manifest_sha256: str
    skipped: int = 0

    def __str__(self) -> str:
        skipped = f", {self.skipped} bad record(s) skipped" if self.skipped else ""
        return (
            f"{self.pack_dir}: imported {self.records} records from {self.sources} file(s)"
            f"{skipped}, {self.sites} site(s); manifest sha256 {self.manifest_sha256}"
        )


# --- keys --------------------------------------------------------------------------------


def surt(url: str) -> str:
    """The SURT sort key of ``url`` in CDXJ indexes: ``org,example)/path?a=1&b=2``.

    Computed by the reference implementation (the ``surt`` package), as pywb and
    ReplayWeb.page do, so that their lookups find every line. This key is for other tools'
    indexes only: the pack's own lookups use :func:`sgrgym.snapshot.urls.canonical_url`.
    Anything the package cannot parse is only lower-cased.
    """
    try:
        key: str = surt_key(url)
    except Exception:  # the package raises whatever its URL parser raises
        return url.lower().replace(" ", "%20")
    return key


def timestamp14(date: str) -> str:
    """The 14-digit CDX timestamp of a WARC-Date: ``2026-11-30T00:00:00Z`` -> ``20261130000000``."""
    return re.sub(r"\D", "", date)[:14].ljust(14, "0")


def _request_query(request: ScannedRecord) -> str:
    """The request body as pywb's ``post-append`` query text (form fields or base64)."""
    if not request.body:
        return ""
    kind = request.content_type.split(";")[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        try:
            return request.body.decode("ascii")
        except UnicodeDecodeError:
            pass
    return "__wb_post_data=" + base64.b64encode(request.body).decode("ascii")


def cdxj_line(record: ScannedRecord, filename: str, request: ScannedRecord | None) -> str:
    """One CDXJ line ``<surt> <timestamp> {json}`` for a response or resource record.

    A capture of a request other than GET is keyed pywb-style, with ``__wb_method=<method>``
    and the request body appended to the query, so that it never answers a plain GET.
    """
    key_url = record.target_uri
    fields: dict[str, str] = {"url": record.target_uri}
    if record.mime:
        fields["mime"] = record.mime
    fields["status"] = str(record.status)
    if record.payload_digest:
        fields["digest"] = record.payload_digest
    fields.update(length=str(record.length), offset=str(record.offset), filename=filename)
    if request is not None and request.method and request.method != "GET":
        body = _request_query(request)
        key_url += ("&" if "?" in key_url else "?") + f"__wb_method={request.method.lower()}"
        key_url += f"&{body}" if body else ""
        fields["method"] = request.method
        if body:
            fields["requestBody"] = body
    return f"{surt(key_url)} {timestamp14(record.date)} {json.dumps(fields)}"


# --- export ------------------------------------------------------------------------------


@dataclass
class _Index:
    cdxj: list[str]
    pages: list[dict[str, str]]
    records: int = 0


def _index_warc(path: Path, filename: str, index: _Index) -> None:
    """Add the CDXJ lines and HTML pages of one WARC file to ``index``."""
    records = list(scan_warc(path))
    index.records += len(records)
    requests = {r.concurrent_to: r for r in records if r.warc_type == "request" and r.concurrent_to}
    fd = os.open(path, os.O_RDONLY)
    try:
        for record in records:
            if record.warc_type not in ("response", "resource") or not record.target_uri:
                continue
            request = requests.get(record.record_id)
            index.cdxj.append(cdxj_line(record, filename, request))
            is_get = request is None or request.method in ("", "GET")
            if is_get and record.status == 200 and record.mime in HTML_MIMES:
                http = read_response(fd, str(path), record.offset, record.length)
                # A page without a title is named by its URL, as py-wacz does: a row with an
                # empty title is a blank row to `wacz validate` (its columns are the header's).
                title = html_title(http.body) or record.target_uri
                index.pages.append({"url": record.target_uri, "ts": record.date, "title": title})
    finally:
        os.close(fd)


def _jsonl(rows: list[dict[str, str]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8")


def _zip_info(name: str, size: int) -> zipfile.ZipInfo:
    """A stored entry with fixed date, permissions and system: the same bytes on every run."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = _ZIP_MODE
    info.create_system = _ZIP_UNIX
    info.file_size = size
    return info


def _resource(path: str, digest: str, size: int) -> dict[str, Any]:
    return {
        "name": PurePosixPath(path).name,
        "path": path,
        "hash": f"sha256:{digest}",
        "bytes": size,
    }


def _copy_into_zip(zf: zipfile.ZipFile, name: str, source: Path, entry: PackFile) -> None:
    """Store ``source`` as ``name``; refuse it if it no longer matches the manifest."""
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as src, zf.open(_zip_info(name, entry.bytes), "w") as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    if digest.hexdigest() != entry.sha256 or size != entry.bytes:
        raise UserError(f"{source}: changed while it was being exported; export it again")


def _datapackage(manifest: Manifest, pin: str, resources: list[dict[str, Any]]) -> bytes:
    """``datapackage.json``: WACZ metadata and every other file's sha256 and size."""
    package = {
        "profile": "data-package",
        "wacz_version": WACZ_VERSION,
        "title": manifest.pack,
        "description": f"sgrgym snapshot pack {manifest.pack} (manifest sha256 {pin})",
        "created": manifest.created,
        "software": f"sgrgym {__version__}",
        "resources": sorted(resources, key=lambda r: str(r["path"])),
        SGRGYM_KEY: {
            "pack": manifest.pack,
            "manifest_sha256": pin,
            "sites": [site.model_dump(mode="json") for site in manifest.sites],
        },
    }
    return canonical_json(package).encode("utf-8")


def _write_zip(
    out: Path, pack_dir: Path, warcs: dict[str, PackFile], small: dict[str, bytes]
) -> None:
    """Write the entries, sorted by name, to a temporary file renamed to ``out`` when done."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as zf:
            for name in sorted([*warcs, *small]):
                if name in warcs:
                    _copy_into_zip(zf, name, pack_file(pack_dir, warcs[name].path), warcs[name])
                else:
                    zf.writestr(_zip_info(name, len(small[name])), small[name])
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def export_wacz(pack: str | Path, out: Path) -> WaczResult:
    """Write the pack ``pack`` (folder or name) as the WACZ file ``out`` (atomically).

    The pack's files are checked against its manifest first; ``created`` in datapackage.json
    is the manifest's, so the same pack always gives the same bytes.
    """
    pack_dir = resolve_pack(pack)
    manifest = load_manifest(pack_dir)
    problems = check_files(pack_dir, manifest)
    if problems:
        raise UserError(
            f"{pack_dir}: pack does not match its manifest, not exporting it:\n  - "
            + "\n  - ".join(problems)
        )
    out = Path(out)
    if out.suffix != ".wacz":
        raise UserError(f"{out}: a WACZ file name must end in .wacz")
    if out.is_dir():
        raise UserError(f"{out}: is a folder; give the path of the .wacz file to write")
    warcs = {
        f"{ARCHIVE_DIR}/{PurePosixPath(entry.path).name}": entry
        for entry in sorted(manifest.files, key=lambda e: e.path)
    }
    index = _Index([], [])
    for name, entry in warcs.items():
        before = index.records
        _index_warc(pack_file(pack_dir, entry.path), PurePosixPath(name).name, index)
        if index.records - before != entry.records:
            raise UserError(
                f"{pack_dir}: {entry.path} holds {index.records - before} records, its "
                f"manifest says {entry.records}; the manifest was altered (run `sgrgym "
                "snapshot verify`)"
            )
    index.pages.sort(key=lambda page: (page["url"], page["ts"]))
    header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    small = {
        CDXJ_PATH: "".join(line + "\n" for line in sorted(index.cdxj)).encode("utf-8"),
        PAGES_PATH: _jsonl([header, *index.pages]),
    }
    resources = [_resource(name, e.sha256, e.bytes) for name, e in warcs.items()]
    resources += [_resource(name, sha256_bytes(data), len(data)) for name, data in small.items()]
    small[DATAPACKAGE] = _datapackage(manifest, manifest_sha256(pack_dir), resources)
    digest = {"path": DATAPACKAGE, "hash": f"sha256:{sha256_bytes(small[DATAPACKAGE])}"}
    small[DATAPACKAGE_DIGEST] = canonical_json(digest).encode("utf-8")
    _write_zip(out, pack_dir, warcs, small)
    sha, size = sha256_file(out)
    return WaczResult(out, sha, size, index.records, len(index.cdxj), len(index.pages))


# --- import ------------------------------------------------------------------------------


_Opener = Callable[[], IO[bytes]]
MAX_IMPORT_BYTES = 512 * 1024 * 1024  # all records of one import, decompressed


@dataclass(frozen=True)
class _Copied:
    """A record copied into the new pack's WARC: its source, its number there (from 1),
    and the span of its gzip member in the pack's file."""

    source: int
    number: int
    start: int
    end: int


@dataclass
class _Sink:
    """The pack's WARC being written, the records copied so far and the bytes left."""

    out: BinaryIO
    cap: int
    left: int
    total: int
    copied: list[_Copied]


def _copy_records(label: str, opener: _Opener, sink: _Sink, source: int) -> int:
    """Copy every record of one WARC stream (plain or gzip, any layout) into the sink, each
    as its own gzip member: header bytes as written, block byte for byte."""
    count = 0
    try:
        with opener() as raw:
            stream = RecordStream(raw, sink.cap)
            for record in stream.records():
                sink.left -= len(record.header) + record.length
                if sink.left < 0:
                    raise StreamError(
                        f"the import is over its {sink.total}-byte limit for all records "
                        "(raise it with --max-total-bytes)"
                    )
                start = sink.out.tell()
                compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
                sink.out.write(compressor.compress(record.header))
                for chunk in stream.block(record):
                    sink.out.write(compressor.compress(chunk))
                sink.out.write(compressor.compress(b"\r\n\r\n"))
                sink.out.write(compressor.flush())
                count += 1
                sink.copied.append(_Copied(source, count, start, sink.out.tell()))
    except (StreamError, zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        reason = str(exc).strip() or exc.__class__.__name__
        if count == 0 and isinstance(exc, NotWarc):
            raise UserError(f"{label}: not a WARC file ({reason})") from None
        raise UserError(f"{label}: record {count + 1}: cannot import it ({reason})") from None
    if count == 0:
        raise UserError(f"{label}: no WARC records in it")
    return count


def _safe_entry_name(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(name) and not (
        name.startswith("/") or "\\" in name or ".." in parts or re.match(r"^[A-Za-z]:", name)
    )


def _zip_entries(path: Path, zf: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The entries of a WACZ by name; names leaving the archive or duplicated are refused."""
    entries: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        name = info.filename
        if not _safe_entry_name(name):
            raise UserError(f"{path}: zip entry {name!r} escapes the archive folder; refused")
        if name in entries:
            raise UserError(f"{path}: zip entry {name!r} appears twice; refused")
        if info.flag_bits & 0x1:
            raise UserError(f"{path}: zip entry {name!r} is encrypted")
        entries[name] = info
    return entries


def _read_json(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[Any, bytes]:
    """A small JSON entry, parsed, with its bytes."""
    if info.file_size > _JSON_LIMIT:
        raise UserError(f"{path}: {info.filename} is over {_JSON_LIMIT} bytes; refused")
    with zf.open(info) as entry:
        data = entry.read(_JSON_LIMIT + 1)
    try:
        return json.loads(data), data
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{path}: {info.filename} is not valid JSON") from None


def _hash_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, algorithm: str) -> tuple[str, int]:
    digest = hashlib.new(algorithm)
    size = 0
    with zf.open(info) as entry:  # yields at most the declared size; checks the CRC at the end
        while chunk := entry.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _parse_hash(path: Path, name: str, value: str) -> tuple[str, str]:
    """(hashlib algorithm, hex digest) of a datapackage hash ``algo:hex`` (md5 if no prefix)."""
    algorithm, _, hexdigest = value.rpartition(":")
    algorithm = (algorithm or "md5").lower()
    if algorithm not in hashlib.algorithms_guaranteed:
        raise UserError(f"{path}: {name}: unsupported hash {value!r} in {DATAPACKAGE}")
    return algorithm, hexdigest.lower()


def _altered(path: Path, name: str, what: str) -> UserError:
    return UserError(f"{path}: {name}: {what} in {DATAPACKAGE}; the WACZ is damaged or was altered")


def _check_resource(
    path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, resource: dict[str, Any], cap: int
) -> None:
    """Check one datapackage resource's hash and byte count against the entry's content. The
    zip's own size of the entry is checked first (inflating never yields more than it): an
    entry declared larger than ``cap`` or than its listed size is refused uninflated."""
    declared = resource.get("bytes")
    if info.file_size > cap:
        raise UserError(
            f"{path}: {info.filename} inflates to {info.file_size} bytes, over the import's "
            f"{cap}-byte limit (raise it with --max-total-bytes); refused"
        )
    if isinstance(declared, int) and declared != info.file_size:
        raise _altered(path, info.filename, f"{info.file_size} bytes, not {declared} as")
    value = resource.get("hash")
    algorithm, expected = ("sha256", "")
    if isinstance(value, str) and value:
        algorithm, expected = _parse_hash(path, info.filename, value)
    try:
        found, size = _hash_entry(zf, info, algorithm)
    except zipfile.BadZipFile as exc:
        raise UserError(f"{path}: {info.filename}: damaged zip entry ({exc})") from None
    if expected and found != expected:
        raise _altered(path, info.filename, f"{algorithm} is {found}, not {expected} as")
    if isinstance(declared, int) and declared != size:
        raise _altered(path, info.filename, f"{size} bytes, not {declared} as")


def _check_datapackage(
    path: Path, zf: zipfile.ZipFile, entries: dict[str, zipfile.ZipInfo], cap: int
) -> Any:
    """Check every listed file's hash and size, and that every WARC is listed; return the
    parsed datapackage (None when the WACZ has none)."""
    if DATAPACKAGE not in entries:
        return None
    package, raw = _read_json(path, zf, entries[DATAPACKAGE])
    if DATAPACKAGE_DIGEST in entries:
        digest, _ = _read_json(path, zf, entries[DATAPACKAGE_DIGEST])
        value = digest.get("hash") if isinstance(digest, dict) else None
        if isinstance(value, str) and value:
            algorithm, expected = _parse_hash(path, DATAPACKAGE, value)
            found = hashlib.new(algorithm, raw).hexdigest()
            if found != expected:
                raise _altered(path, DATAPACKAGE, f"{algorithm} is {found}, not {expected} as")
    resources = package.get("resources") if isinstance(package, dict) else None
    if not isinstance(resources, list):
        raise UserError(f"{path}: {DATAPACKAGE} has no list of resources")
    listed = set()
    for resource in resources:
        name = resource.get("path") if isinstance(resource, dict) else None
        if not isinstance(name, str) or name not in entries:
            raise UserError(f"{path}: {DATAPACKAGE} lists {name!r}, which the WACZ lacks")
        listed.add(name)
        _check_resource(path, zf, entries[name], resource, cap)
    for name, info in entries.items():
        if name.startswith(f"{ARCHIVE_DIR}/") and not info.is_dir() and name not in listed:
            raise UserError(f"{path}: {name} is not listed in {DATAPACKAGE}")
    return package


def _carried_sites(path: Path, package: Any) -> list[SiteInfo]:
    """The site entries an sgrgym export carries in its datapackage (none for others)."""
    carried = package.get(SGRGYM_KEY) if isinstance(package, dict) else None
    if carried is None:
        return []
    try:
        return [SiteInfo.model_validate(site) for site in carried["sites"]]
    except (TypeError, KeyError, ValidationError) as exc:
        raise UserError(f"{path}: {DATAPACKAGE}: {SGRGYM_KEY}.sites is malformed ({exc})") from None


def _import_wacz(path: Path, sink: _Sink, source: int) -> list[SiteInfo]:
    """Copy the records of every WARC under ``archive/`` after checking datapackage.json;
    return the site entries it carries."""
    try:
        with zipfile.ZipFile(path) as zf:
            entries = _zip_entries(path, zf)
            warcs = sorted(
                name
                for name, info in entries.items()
                if name.startswith(f"{ARCHIVE_DIR}/") and not info.is_dir()
            )
            if not warcs:
                raise UserError(f"{path}: no WARC files under {ARCHIVE_DIR}/")
            package = _check_datapackage(path, zf, entries, sink.total)
            sites = _carried_sites(path, package)
            for name in warcs:
                _copy_records(f"{path}: {name}", partial(zf.open, entries[name]), sink, source)
            return sites
    except (zipfile.BadZipFile, zlib.error, OSError, NotImplementedError) as exc:
        raise UserError(f"{path}: not a readable WACZ file ({exc})") from None


def _import_source(path: Path, sink: _Sink, source: int) -> list[SiteInfo]:
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if magic == _ZIP_MAGIC:
        return _import_wacz(path, sink, source)
    if path.suffix.lower() == ".wacz":
        raise UserError(f"{path}: not a WACZ file (not a ZIP archive)")

    def opener() -> IO[bytes]:
        return open(path, "rb")

    _copy_records(str(path), opener, sink, source)
    return []


def _check_target(out_dir: Path) -> None:
    if (out_dir / MANIFEST).exists():
        raise UserError(f"{out_dir}: already a snapshot pack (has {MANIFEST}); import elsewhere")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UserError(f"{out_dir}: exists and is not an empty folder")


def _digest_problems(work: Path, pack: str, cap: int) -> list[RecordProblem]:
    _, problems = build_manifest(work, pack, "", CanonRules(), check_digests=True, cap=cap)
    return problems


def _drop_records(warc: Path, copied: list[_Copied], bad: set[int]) -> list[_Copied]:
    """Rewrite ``warc`` without the records starting at the offsets in ``bad``."""
    kept: list[_Copied] = []
    tmp = warc.with_name(warc.name + ".tmp")
    with open(warc, "rb") as src, open(tmp, "xb") as dst:
        for record in copied:
            if record.start in bad:
                continue
            src.seek(record.start)
            start = dst.tell()
            dst.write(src.read(record.end - record.start))
            kept.append(_Copied(record.source, record.number, start, dst.tell()))
    os.replace(tmp, warc)
    return kept


def import_archives(
    sources: Sequence[Path],
    out_dir: Path,
    fixed_date: str | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
    max_total_bytes: int = MAX_IMPORT_BYTES,
    skip_bad_records: bool = False,
) -> ImportResult:
    """Make the pack ``out_dir`` from WARC and WACZ files (see the module docstring).

    Every record's digests must verify, or nothing is imported; with ``skip_bad_records``
    the records that fail are left out and listed in the manifest's ``skipped``. The pack
    is built in a temporary folder next to ``out_dir`` and renamed into place only when
    complete. ``fixed_date`` is the manifest's ``created`` (default: now).
    """
    out_dir = Path(out_dir)
    if not re.match(PACK_NAME, out_dir.name):
        raise UserError(
            f"{out_dir.name!r}: a pack folder name must be lower-case letters, digits, "
            "'.', '_' or '-' (at most 64 characters)"
        )
    if not sources:
        raise UserError("nothing to import: name at least one .warc, .warc.gz or .wacz file")
    paths = [Path(source) for source in sources]
    for path in paths:
        if not path.is_file():
            what = "is a folder, not a file" if path.is_dir() else "file not found"
            raise UserError(f"{path}: {what}")
    _check_target(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = out_dir.parent / f".{out_dir.name}.{uuid.uuid4().hex[:12]}.importing"
    work.mkdir()
    try:
        (work / WARC_DIR).mkdir()
        warc = work / WARC_DIR / f"{out_dir.name}-00000.warc.gz"
        carried: dict[str, SiteInfo] = {}
        with open(warc, "xb") as out:
            sink = _Sink(out, max_record_bytes, max_total_bytes, max_total_bytes, [])
            for number, path in enumerate(paths):
                for site in _import_source(path, sink, number):
                    carried.setdefault(site.host, site)
        names = [path.name for path in paths]
        copied = sink.copied
        by_offset = {record.start: record for record in copied}
        problems = _digest_problems(work, out_dir.name, max_record_bytes)
        skipped: list[SkippedRecord] = []
        if problems and not skip_bad_records:
            lines = [f"{names[by_offset[p.offset].source]}: {p.what}" for p in problems]
            more = f"\n  ... and {len(lines) - 20} more" if len(lines) > 20 else ""
            raise UserError(
                "records whose digests or bodies do not verify, nothing imported (or pass "
                "--skip-bad-records to import the rest):\n  - " + "\n  - ".join(lines[:20]) + more
            )
        if problems:
            reasons: dict[int, list[str]] = {}
            for problem in problems:
                reasons.setdefault(problem.offset, []).append(problem.what)
            for offset, found in sorted(reasons.items()):
                record = by_offset[offset]
                skipped.append(
                    SkippedRecord(
                        source=names[record.source], record=record.number, reason="; ".join(found)
                    )
                )
            copied = _drop_records(warc, copied, {p.offset for p in problems})
            if not copied:
                raise UserError("no record's digests verify: nothing to import")
        starts = {record.start: record.source for record in copied}

        def site_for(host: str, places: list[tuple[str, int]]) -> SiteInfo:
            found = ", ".join(sorted({names[starts[offset]] for _, offset in places}))
            site = carried.get(host)  # an sgrgym export: the site entry as it was exported
            if site is None:
                return SiteInfo(host=host, source=found)
            return site if site.source else site.model_copy(update={"source": found})

        manifest, again = build_manifest(
            work,
            out_dir.name,
            fixed_date or utc_now(),
            CanonRules(),
            site_for=site_for,
            check_digests=True,
            cap=max_record_bytes,
        )
        if again:
            raise UserError(f"records still fail after skipping: {again[0]}")
        manifest.skipped = skipped
        pin = write_manifest(work, manifest)
        _check_target(out_dir)
        if out_dir.is_dir():
            out_dir.rmdir()
        os.rename(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return ImportResult(
        out_dir, len(paths), manifest.record_count, len(manifest.sites), pin, len(skipped)
    )
