"""Reading WARC files: scan records with their offsets, read one record at an offset.

Every read is capped (:data:`MAX_RECORD_BYTES` by default): a record whose decoded body is
larger, a decompression bomb included, is reported as an error instead of filling memory.
Damaged files (truncated, flipped bytes) raise :class:`WarcError` naming file and offset.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotli
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

from sgrgym.core.errors import UserError

# warcio registers a brotli decoder written for brotlipy's interface, which the brotli package
# lacks (and a failing decoder makes warcio pass the body on still compressed): brotli bodies
# are decoded here instead, with the same size cap as every other read.
BufferedReader.DECOMPRESSORS.pop("br", None)

MAX_RECORD_BYTES = 64 * 1024 * 1024
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-encoding",
    "content-length",
}
# warcio raises these on malformed input (missing headers surface as AttributeError/TypeError).
_READ_ERRORS = (
    ArchiveLoadFailed,
    zlib.error,
    EOFError,
    ValueError,
    OSError,
    AttributeError,
    TypeError,
    KeyError,
    IndexError,
)


class WarcError(UserError):
    """A WARC file could not be read at some record."""

    def __init__(self, path: Path | str, offset: int, reason: str) -> None:
        self.path, self.offset, self.reason = str(path), offset, reason
        super().__init__(f"{path}: record at offset {offset}: {reason}")


@dataclass
class ScannedRecord:
    """What the index needs of one record, plus (for requests) the request body."""

    warc_type: str
    record_id: str
    target_uri: str
    date: str
    offset: int
    length: int
    concurrent_to: str = ""
    method: str = ""
    status: int = 0
    mime: str = ""
    location: str = ""
    payload_digest: str = ""
    content_type: str = ""
    block_length: int = 0  # the record's declared (uncompressed) Content-Length
    refers_to_uri: str = ""  # revisits: WARC-Refers-To-Target-URI of the original
    refers_to_date: str = ""  # revisits: WARC-Refers-To-Date of the original
    body: bytes = b""
    digest_problems: list[str] = field(default_factory=list)


def _unbrotli(data: bytes, cap: int) -> bytes:
    """A brotli-encoded body decoded, at most ``cap`` bytes of it (else ValueError)."""
    decoder = brotli.Decompressor()
    try:
        body: bytes = decoder.process(data, output_buffer_limit=cap + 1)
    except brotli.error as exc:
        raise ValueError(f"damaged brotli body ({exc})") from None
    if len(body) > cap:
        raise ValueError(f"brotli body is larger than the {cap}-byte limit (decompression bomb?)")
    if not decoder.is_finished():
        raise ValueError("brotli body is cut short")
    return body


def _read_capped(stream: Any, cap: int, what: str) -> bytes:
    data: bytes = stream.read(cap + 1)
    if len(data) > cap:
        raise ValueError(f"{what} is larger than the {cap}-byte limit (decompression bomb?)")
    return data


def _scan(record: ArcWarcRecord, offset: int, cap: int) -> ScannedRecord:
    headers = record.rec_headers
    scanned = ScannedRecord(
        warc_type=record.rec_type or "",
        record_id=headers.get_header("WARC-Record-ID") or "",
        target_uri=headers.get_header("WARC-Target-URI") or "",
        date=headers.get_header("WARC-Date") or "",
        offset=offset,
        length=0,
        concurrent_to=headers.get_header("WARC-Concurrent-To") or "",
        payload_digest=headers.get_header("WARC-Payload-Digest") or "",
        block_length=int(headers.get_header("Content-Length") or 0),
    )
    http = record.http_headers
    if record.rec_type == "request" and http is not None:
        scanned.method = (http.protocol or "GET").upper()
        scanned.content_type = http.get_header("Content-Type") or ""
        scanned.body = _read_capped(record.content_stream(), cap, "request body")
    elif record.rec_type in ("response", "revisit") and http is not None:
        code = (http.get_statuscode() or "0").strip()
        scanned.status = int(code) if code.isdigit() else 0
        scanned.mime = (http.get_header("Content-Type") or "").split(";")[0].strip().lower()
        scanned.location = http.get_header("Location") or ""
    if record.rec_type == "revisit":
        scanned.refers_to_uri = headers.get_header("WARC-Refers-To-Target-URI") or ""
        scanned.refers_to_date = headers.get_header("WARC-Refers-To-Date") or ""
    elif record.rec_type == "resource":
        scanned.status = 200
        scanned.mime = (headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
    return scanned


def scan_warc(
    path: Path, check_digests: bool = False, cap: int = MAX_RECORD_BYTES
) -> Iterator[ScannedRecord]:
    """Yield every record of ``path`` with its offset and length (reads each record fully).

    With ``check_digests``, each record's WARC-Block-Digest and WARC-Payload-Digest are
    verified; failures land in ``digest_problems``.
    """
    offset = 0
    with open(path, "rb") as stream:
        try:
            iterator = ArchiveIterator(stream, check_digests=check_digests)
            for record in iterator:
                # Read what we need first: asking for the offset reads the record to its end.
                scanned = _scan(record, offset, cap)
                iterator.read_to_end(record)  # digests are checked once a record is fully read
                scanned.offset = iterator.get_record_offset()
                scanned.length = iterator.get_record_length()
                checker = record.digest_checker
                if check_digests and checker.passed is False:
                    scanned.digest_problems = list(checker.problems)
                yield scanned
                offset = scanned.offset + scanned.length
        except _READ_ERRORS as exc:
            raise WarcError(path, offset, f"cannot read record ({exc})") from None


def check_member(fd: int, offset: int, length: int) -> str | None:
    """Why the gzip member at ``offset`` is damaged (truncated, bad CRC, trailing bytes), or None.

    Decompresses in bounded chunks and throws the output away, so a bomb costs time, not memory.
    """
    data = os.pread(fd, length, offset)
    if len(data) != length:
        return f"file ends {length - len(data)} bytes before the end of the record"
    inflater = zlib.decompressobj(wbits=31)
    try:
        chunk = inflater.decompress(data, 1 << 20)
        while inflater.unconsumed_tail and chunk:
            chunk = inflater.decompress(inflater.unconsumed_tail, 1 << 20)
    except zlib.error as exc:
        return f"damaged gzip data ({exc})"
    if not inflater.eof:
        return "gzip member is cut short (truncated file?)"
    if inflater.unused_data:
        return f"{len(inflater.unused_data)} stray bytes after the gzip member"
    return None


@dataclass(frozen=True)
class HttpRecord:
    """An archived HTTP response: status line, headers (decoded body's), decoded body, and
    the record's WARC-Record-ID and WARC-Target-URI (to check it is the record asked for)."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    record_id: str = ""
    target_uri: str = ""


def _fields(lines: list[bytes]) -> list[tuple[str, str]] | None:
    """``Name: value`` lines as pairs; None for folded or malformed lines (let warcio read them)."""
    fields = []
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not name or line[:1] in (b" ", b"\t"):
            return None
        fields.append((_text(name), _text(value)))
    return fields


def _text(raw: bytes) -> str:
    """A header name or value as warcio reads it: UTF-8 when valid, else Latin-1."""
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return raw.decode("latin-1").strip()


def _plain_response(raw: bytes, cap: int) -> HttpRecord | None:
    """Parse a decompressed response/resource record whose body needs no decoding.

    The common case on the replay hot path; anything unusual (chunked or content-encoded
    bodies, folded headers, other record types) returns None and goes through warcio.
    """
    warc_head, sep, rest = raw.partition(b"\r\n\r\n")
    warc = _fields(warc_head.split(b"\r\n")[1:]) if sep else None
    if warc is None:
        return None
    named = {k.lower(): v for k, v in warc}
    length = named.get("content-length", "")
    if not length.isdigit() or len(rest) < int(length):
        return None
    block = rest[: int(length)]
    kind = named.get("warc-type")
    ids = (named.get("warc-record-id", ""), named.get("warc-target-uri", ""))
    if kind == "resource":
        mime = named.get("content-type") or "application/octet-stream"
        if len(block) > cap:
            return None
        return HttpRecord(200, "OK", (("Content-Type", mime),), block, *ids)
    if kind != "response":
        return None
    http_head, sep, body = block.partition(b"\r\n\r\n")
    lines = http_head.split(b"\r\n")
    fields = _fields(lines[1:]) if sep else None
    if fields is None or len(body) > cap:
        return None
    for name, value in fields:
        lowered = name.lower()
        if lowered == "transfer-encoding" or (
            lowered == "content-encoding" and value.lower() != "identity"
        ):
            return None
    parts = lines[0].decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    headers = tuple((k, v) for k, v in fields if k.lower() not in _HOP_BY_HOP)
    return HttpRecord(int(parts[1]), parts[2] if len(parts) > 2 else "", headers, body, *ids)


def read_response(
    fd: int, path: str, offset: int, length: int, cap: int = MAX_RECORD_BYTES
) -> HttpRecord:
    """Read the response (or resource) record stored at ``offset`` (``os.pread``: thread-safe).

    Plain records are parsed directly from the decompressed member; the rest (chunked or
    compressed bodies: gzip, deflate and brotli; unusual headers; revisits) through warcio.
    Bodies over ``cap`` are an error.
    """
    data = os.pread(fd, length, offset)
    if len(data) != length:
        raise WarcError(path, offset, f"file ends before the record's {length} bytes")
    inflater = zlib.decompressobj(wbits=31)
    try:
        raw = inflater.decompress(data, cap + (1 << 16))
    except zlib.error:
        raw = b""  # let warcio report the damage in its words
    if inflater.eof and not inflater.unused_data:
        plain = _plain_response(raw, cap)
        if plain is not None:
            return plain
    try:
        record = next(iter(ArchiveIterator(io.BytesIO(data))))
        body = _read_capped(record.content_stream(), cap, "response body")
    except (StopIteration, *_READ_ERRORS) as exc:
        raise WarcError(path, offset, f"cannot read record ({exc})") from None
    http = record.http_headers
    rec = record.rec_headers
    ids = (rec.get_header("WARC-Record-ID") or "", rec.get_header("WARC-Target-URI") or "")
    if http is None and record.rec_type == "revisit":
        return HttpRecord(0, "", (), body, *ids)  # no headers of its own: the original's apply
    if record.rec_type == "resource" or http is None:
        mime = rec.get_header("Content-Type") or "application/octet-stream"
        return HttpRecord(200, "OK", (("Content-Type", mime),), body, *ids)
    status_line = (http.statusline or "").split(" ", 1)
    code = status_line[0]
    headers = tuple(
        (name, value) for name, value in http.headers if name.lower() not in _HOP_BY_HOP
    )
    if (http.get_header("Content-Encoding") or "").strip().lower() == "br":
        try:
            body = _unbrotli(body, cap)
        except ValueError as exc:
            raise WarcError(path, offset, str(exc)) from None
    return HttpRecord(
        int(code) if code.isdigit() else 0,
        status_line[1] if len(status_line) > 1 else "",
        headers,
        body,
        *ids,
    )
