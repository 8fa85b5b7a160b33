"""Read the records of a WARC stream captured elsewhere, for import: bytes as they are.

A ``.warc.gz`` is inflated member by member (any layout: one member per record, one for the
whole file, or anything between), a ``.warc`` is read as it is. Records are found by their
header block (``WARC/<version>`` line, fields, blank line) and ``Content-Length``; the blank
lines that end a record are optional, since some writers leave them out of their gzip members.
Each record comes back as its header bytes, exactly as written (no field is re-spelled), and
its block, in chunks.

Every read is bounded: a header larger than :data:`MAX_HEADER_BYTES`, a block over the cap or
a stream that is not a WARC is refused as soon as that is known, so refusing a stream of zeros
or a decompression bomb costs time in proportion to the caps, never to the stream's length.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

MAX_HEADER_BYTES = 1 << 20  # one record's header block
_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_VERSION = re.compile(rb"^WARC/\d+\.\d+\r?\n")
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(.*?)[ \t]*\r?$", re.I | re.M)


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class StreamError(Exception):
    """The stream cannot be read as WARC records here (the message says why)."""


class NotWarc(StreamError):
    """No WARC record starts where one must."""


class _Inflated:
    """The decompressed bytes of a stream of gzip members (or the raw bytes if not gzip),
    read in chunks of at most ``_CHUNK`` decompressed bytes, one member after the other."""

    def __init__(self, raw: Readable) -> None:
        self.raw = raw
        self.pending = raw.read(2)  # input not yet fed to the inflater
        gzipped = self.pending == _GZIP_MAGIC
        self.inflater = zlib.decompressobj(wbits=31) if gzipped else None
        self.raw_done = False
        self.at_boundary = False  # the last member ended and no new one has begun

    def read(self) -> bytes:
        """The next decompressed chunk; b"" at the end of the stream."""
        while True:
            if not self.pending and not self.raw_done:
                self.pending = self.raw.read(_CHUNK)
                self.raw_done = not self.pending
            if self.inflater is None:
                data, self.pending = self.pending, b""
                return data
            if not self.pending:
                if self.at_boundary:
                    return b""
                raise StreamError("the file ends inside a gzip member (truncated?)")
            try:
                data = self.inflater.decompress(self.pending, _CHUNK)
            except zlib.error as exc:
                what = "bytes after a gzip member that are not gzip" if self.at_boundary else ""
                raise StreamError(f"damaged gzip data ({what or exc})") from None
            self.pending = self.inflater.unconsumed_tail
            self.at_boundary = False
            if self.inflater.eof:  # the member is complete: the next one starts afresh
                self.pending = self.inflater.unused_data + self.pending
                self.inflater = zlib.decompressobj(wbits=31)
                self.at_boundary = True
            if data:
                return data


@dataclass
class StreamRecord:
    """One record: its header block (``WARC/...`` to the blank line, as written) and the
    declared block length; :meth:`RecordStream.block` yields the block."""

    header: bytes
    length: int
    offset: int  # where the record starts in the decompressed stream


class RecordStream:
    """The records of one WARC stream, in order; see the module docstring."""

    def __init__(self, raw: Readable, cap: int) -> None:
        self.source = _Inflated(raw)
        self.cap = cap
        self.buffer = b""
        self.position = 0  # decompressed bytes consumed before ``buffer``
        self.ended = False

    def _fill(self) -> bool:
        """Read one more chunk into the buffer; False at the end of the stream."""
        if self.ended:
            return False
        data = self.source.read()
        if not data:
            self.ended = True
            return False
        self.buffer += data
        return True

    def _take(self, size: int) -> bytes:
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        self.position += len(data)
        return data

    def _skip_blank_lines(self) -> None:
        while True:
            stripped = self.buffer.lstrip(b"\r\n")
            self.position += len(self.buffer) - len(stripped)
            self.buffer = stripped
            if self.buffer or not self._fill():
                return

    def _header(self) -> bytes:
        """The next header block, through its blank line."""
        while len(self.buffer) < 32 and b"\n" not in self.buffer and self._fill():
            pass
        if not _VERSION.match(self.buffer):
            shown = self.buffer[:24]
            raise NotWarc(f"no WARC record starts here (found {shown!r})")
        searched = 0
        while True:
            ends = [
                i + len(mark)
                for mark in (b"\r\n\r\n", b"\n\n")
                if (i := self.buffer.find(mark, max(0, searched - 3))) >= 0
            ]
            if ends:
                return self._take(min(ends))
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise StreamError(f"a record header over {MAX_HEADER_BYTES} bytes (not a WARC?)")
            searched = len(self.buffer)
            if not self._fill():
                raise StreamError("the file ends inside a record header (truncated?)")

    def records(self) -> Iterator[StreamRecord]:
        """Each record's header; read its block with :meth:`block` before asking for the
        next one."""
        while True:
            self._skip_blank_lines()
            if not self.buffer:
                return
            offset = self.position
            header = self._header()
            match = _CONTENT_LENGTH.search(header)
            declared = match.group(1).decode("latin-1") if match else ""
            if not declared.isdigit():
                raise StreamError(f"missing or invalid Content-Length {declared!r}")
            length = int(declared)
            if length > self.cap:
                raise StreamError(f"{length}-byte record is over the {self.cap}-byte limit")
            yield StreamRecord(header, length, offset)

    def block(self, record: StreamRecord) -> Iterator[bytes]:
        """The record's block in chunks, exactly ``record.length`` bytes."""
        left = record.length
        while left:
            if not self.buffer and not self._fill():
                copied = record.length - left
                raise StreamError(
                    f"the file ends after {copied} of the record's {record.length} bytes"
                )
            chunk = self._take(min(left, _CHUNK))
            left -= len(chunk)
            yield chunk
