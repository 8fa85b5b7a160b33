"""Hand-made WARC records for the snapshot tests: exact header bytes, correct digests."""

from __future__ import annotations

import base64
import hashlib
import uuid
import zlib
from pathlib import Path

DATE = "2026-11-30T00:00:00Z"


def sha1_digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def http_block(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def warc_record(
    kind: str,
    target: str,
    block: bytes,
    *,
    date: str = DATE,
    extra: list[tuple[str, str]] | None = None,
    payload: bytes | None = None,
    end: bytes = b"\r\n\r\n",
) -> bytes:
    """One WARC/1.0 record; ``target`` is written as it is (angle brackets and all)."""
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}|{target}|{date}|{len(block)}")
    fields = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", f"<urn:uuid:{record_id}>"),
        ("WARC-Date", date),
        ("WARC-Target-URI", target),
        ("Content-Type", "application/http; msgtype=response"),
        ("WARC-Block-Digest", sha1_digest(block)),
    ]
    if payload is None and kind == "response":
        payload = block.partition(b"\r\n\r\n")[2]
    if payload is not None:
        fields.append(("WARC-Payload-Digest", sha1_digest(payload)))
    fields += extra or []
    fields.append(("Content-Length", str(len(block))))
    head = "WARC/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n"
    return head.encode("utf-8") + block + end


def response(
    target: str, body: bytes, mime: str = "text/html", status: str = "200 OK", **kw: object
) -> bytes:
    headers = kw.pop("headers", None) or [("Content-Type", mime)]
    block = http_block(status, headers, body)  # type: ignore[arg-type]
    return warc_record("response", target, block, **kw)  # type: ignore[arg-type]


def gzip_member(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    return compressor.compress(data) + compressor.flush()


def write_warc(path: Path, records: list[bytes], gzip_each: bool = True) -> Path:
    path.write_bytes(b"".join(gzip_member(r) for r in records) if gzip_each else b"".join(records))
    return path
