"""Offline replay: answer (method, URL, body) from a pack, exactly, never from the network.

>>> snap = Snapshot.open("snapshots/demo")          # verifies sha256, builds/loads the index
>>> page = snap.fetch("http://site.example/a?x=1")  # Response(status, headers, body, match)

Lookup order: the URL exactly as archived (``exact``), then its canonical key under the
pack's declared rules (``rule``); otherwise a deterministic 404 "not in snapshot" response
(``miss``) carrying the header ``X-Sgrgym-Snapshot: miss``; a URL that does not parse is a
miss too. Archived redirects are followed (up to 10 hops) inside the snapshot; a redirect whose
target the pack does not hold is answered with the archived 3xx itself, as pywb does. When a
URL was captured more than once the latest capture answers. A revisit record answers with its
own status and headers and the payload of the record it refers to (by
WARC-Refers-To-Target-URI and -Date, else by payload digest).

Reads go straight to the indexed offset with ``os.pread``, so one Snapshot serves many
threads. Every record read is checked against the index row that pointed to it (record id and
target URI): an index that no longer matches the pack is rebuilt, never trusted.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin

from sgrgym.core.closing import Closing
from sgrgym.core.errors import UserError
from sgrgym.snapshot.index import build_index, connect, ensure_index
from sgrgym.snapshot.pack import (
    Manifest,
    check_files,
    load_manifest,
    manifest_sha256,
    pack_file,
    resolve_pack,
)
from sgrgym.snapshot.text import body_to_text
from sgrgym.snapshot.urls import BadUrl, archived_url, body_key, canonical_url
from sgrgym.snapshot.warc import MAX_RECORD_BYTES, HttpRecord, read_response

Match = Literal["exact", "rule", "miss"]
MATCH_HEADER = "X-Sgrgym-Snapshot"
MAX_REDIRECTS = 10
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class Capture:
    url: str
    status: int
    mime: str
    warc_file: str
    offset: int
    length: int
    capture_time: str
    location: str
    record_id: str = ""
    original: Capture | None = None  # a revisit's payload record


_COLUMNS = (
    'url, canonical_key, method, body_digest, status, mime, warc_file, "offset", length, '
    "capture_time, location, record_id, warc_type, refers_to_uri, refers_to_date, payload_digest"
)
Row = tuple[object, ...]


def _capture(row: Row, original: Capture | None = None) -> Capture:
    """The capture of one index row (columns as in :data:`_COLUMNS`)."""
    _, _, _, _, status, mime, warc, offset, length, time, location, record_id = row[:12]
    return Capture(
        url=str(row[0]),
        status=int(status),  # type: ignore[call-overload]
        mime=str(mime),
        warc_file=str(warc),
        offset=int(offset),  # type: ignore[call-overload]
        length=int(length),  # type: ignore[call-overload]
        capture_time=str(time),
        location=str(location),
        record_id=str(record_id),
        original=original,
    )


def _originals(rows: list[Row]) -> dict[tuple[str, str], Capture]:
    """Records a revisit can refer to, by (URL, capture time) and by ("", payload digest)."""
    found: dict[tuple[str, str], Capture] = {}
    for row in rows:
        kind, digest = row[12], row[15]
        if kind == "revisit":
            continue
        capture = _capture(row)
        found.setdefault((capture.url, capture.capture_time), capture)
        if digest:
            found.setdefault(("", str(digest)), capture)
    return found


@dataclass(frozen=True)
class Response:
    """An answer from the snapshot: archived (``exact``/``rule``) or a ``miss``."""

    url: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    match: Match
    redirects: tuple[str, ...] = ()
    capture_time: str = ""

    def header(self, name: str, default: str = "") -> str:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), default)

    @property
    def content_type(self) -> str:
        return self.header("Content-Type")


def miss_response(url: str, method: str, redirects: tuple[str, ...] = ()) -> Response:
    body = f"not in snapshot: {method} {url}\n".encode()
    headers = (("Content-Type", "text/plain; charset=utf-8"), (MATCH_HEADER, "miss"))
    return Response(url, 404, "Not In Snapshot", headers, body, "miss", redirects)


class Snapshot(Closing):
    """A verified, indexed pack ready to answer requests offline."""

    def __init__(
        self,
        pack_dir: Path,
        manifest: Manifest,
        pin: str,
        captures: list[Row],
        max_record_bytes: int = MAX_RECORD_BYTES,
    ) -> None:
        self.pack_dir = pack_dir
        self.manifest = manifest
        self.pin = pin
        self.max_record_bytes = max_record_bytes
        self._exact: dict[tuple[str, str, str], Capture] = {}
        self._rule: dict[tuple[str, str, str], Capture] = {}
        self._by_id: dict[str, Capture] = {}
        self._load(captures)
        self._fds: dict[str, tuple[int, str]] = {}  # manifest path -> (fd, file path)
        self._lock = threading.Lock()

    def _load(self, rows: list[Row]) -> None:
        """Fill the lookup tables from index rows (ordered by capture time)."""
        originals = _originals(rows)
        exact: dict[tuple[str, str, str], Capture] = {}
        rule: dict[tuple[str, str, str], Capture] = {}
        by_id: dict[str, Capture] = {}
        for row in rows:
            url, key, method, body = row[:4]
            kind, refers_uri, refers_date, digest = row[12:]
            original = None
            if kind == "revisit":
                original = originals.get((str(refers_uri or url), str(refers_date))) or (
                    originals.get(("", str(digest))) if digest else None
                )
                if original is None:
                    continue  # its payload is not in the pack: an earlier capture answers
            capture = _capture(row, original)
            # Rows come ordered by capture time: a later capture replaces an earlier one.
            exact[(str(method), str(url), str(body))] = capture
            rule[(str(method), str(key), str(body))] = capture
            by_id[capture.record_id] = capture
        self._exact, self._rule, self._by_id = exact, rule, by_id

    @staticmethod
    def _rows(index: Path) -> list[Row]:
        con = connect(index)
        try:
            rows: list[Row] = con.execute(
                f'SELECT {_COLUMNS} FROM captures ORDER BY capture_time, warc_file, "offset"'
            ).fetchall()
        finally:
            con.close()
        return rows

    @classmethod
    def open(
        cls,
        spec: str | Path,
        verify: bool = True,
        rebuild_index: bool = False,
        max_record_bytes: int = MAX_RECORD_BYTES,
    ) -> Snapshot:
        """Open a pack by folder or name: check every file's sha256, then load the index."""
        pack_dir = resolve_pack(spec)
        manifest = load_manifest(pack_dir)
        if verify:
            problems = check_files(pack_dir, manifest)
            if problems:
                raise UserError(
                    f"{pack_dir}: pack does not match its manifest, refusing to use it:\n  - "
                    + "\n  - ".join(problems)
                    + f"\n(run `sgrgym snapshot verify {pack_dir}` for details)"
                )
        pin = manifest_sha256(pack_dir)
        path = ensure_index(pack_dir, manifest, pin, rebuild=rebuild_index)
        return cls(pack_dir, manifest, pin, cls._rows(path), max_record_bytes)

    def _reindex(self) -> None:
        """Rebuild the index from the pack's files and reload it (it no longer matched)."""
        with self._lock:
            path = build_index(self.pack_dir, self.manifest, self.pin)
            self._load(self._rows(path))

    def _fd(self, warc_file: str) -> tuple[int, str]:
        """An open descriptor of a pack file (opened once, keyed by its manifest path)."""
        entry = self._fds.get(warc_file)
        if entry is None:
            with self._lock:
                entry = self._fds.get(warc_file)
                if entry is None:
                    path = str(pack_file(self.pack_dir, warc_file))
                    entry = self._fds[warc_file] = (os.open(path, os.O_RDONLY), path)
        return entry

    def lookup(
        self, url: str, method: str = "GET", body: bytes | None = None, content_type: str = ""
    ) -> tuple[Capture | None, Match]:
        """The capture answering a request, without reading it, and how it matched."""
        method = method.upper()
        digest = body_key(body, content_type)
        capture = self._exact.get((method, url, digest))
        if capture is not None:
            return capture, "exact"
        try:
            key = canonical_url(url, self.manifest.rules)
        except BadUrl:
            return None, "miss"
        capture = self._rule.get((method, key, digest))
        return (capture, "rule") if capture is not None else (None, "miss")

    def fetch(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        content_type: str = "",
        follow_redirects: bool = True,
    ) -> Response:
        """The archived response to a request; archived redirects are followed while their
        targets are archived (an archived redirect to elsewhere is answered as it is)."""
        redirects: list[str] = []
        match: Match = "exact"
        while True:
            capture, how = self.lookup(url, method, body, content_type)
            if capture is None:
                return miss_response(url, method.upper(), tuple(redirects))
            if how == "rule":
                match = "rule"
            if follow_redirects and len(redirects) < MAX_REDIRECTS:
                hop = self._redirect(capture, method, body, content_type)
                if hop is not None:
                    redirects.append(url)
                    url, method, body, content_type = hop
                    continue
            http = self._read(capture)
            headers = (
                *http.headers,
                (MATCH_HEADER, match),
                ("X-Sgrgym-Capture-Time", capture.capture_time),
            )
            return Response(
                capture.url,
                http.status,
                http.reason,
                headers,
                http.body,
                match,
                tuple(redirects),
                capture.capture_time,
            )

    def _redirect(
        self, capture: Capture, method: str, body: bytes | None, content_type: str
    ) -> tuple[str, str, bytes | None, str] | None:
        """The request an archived redirect leads to, when the pack holds its target."""
        if capture.status not in _REDIRECTS or not capture.location:
            return None
        try:
            target = urljoin(capture.url, capture.location)
        except ValueError:  # an archived Location that does not parse
            return None
        if capture.status == 303 or (capture.status in (301, 302) and method.upper() != "GET"):
            method, body, content_type = "GET", None, ""
        found, _ = self.lookup(target, method, body, content_type)
        return None if found is None else (target, method, body, content_type)

    def _read_checked(self, capture: Capture) -> HttpRecord | None:
        """The record at the capture's offset, or None when it is not the record indexed."""
        fd, path = self._fd(capture.warc_file)
        http = read_response(fd, path, capture.offset, capture.length, self.max_record_bytes)
        if http.record_id != capture.record_id or archived_url(http.target_uri) != capture.url:
            return None
        return http

    def _read(self, capture: Capture) -> HttpRecord:
        """Read a capture (a revisit: its headers over its original's payload), checked
        against the index; an index that points elsewhere is rebuilt and asked again."""
        http = self._read_checked(capture)
        original = self._read_checked(capture.original) if capture.original else None
        if http is None or (capture.original is not None and original is None):
            self._reindex()
            again = self._by_id.get(capture.record_id)
            http = self._read_checked(again) if again else None
            original = self._read_checked(again.original) if again and again.original else None
            if again is None or http is None or (again.original is not None and original is None):
                raise UserError(
                    f"{self.pack_dir}: the record indexed for {capture.url} is not in the pack "
                    "even after rebuilding the index (run `sgrgym snapshot verify`)"
                )
        if original is None:
            return http
        if http.status in (0, 304):  # no headers of its own, or a not-modified answer
            return original
        return HttpRecord(
            http.status, http.reason, http.headers, original.body, http.record_id, http.target_uri
        )

    def text(self, url: str) -> tuple[Response, str]:
        """The response and its text (HTML rendered, PDF extracted) for agents' tools."""
        response = self.fetch(url)
        if response.match == "miss":
            return response, response.body.decode()
        try:
            return response, body_to_text(response.body, response.content_type)
        except ValueError as exc:
            raise UserError(f"{url}: {exc}") from None

    def urls(self) -> list[str]:
        return sorted({c.url for c in self._exact.values()})

    def close(self) -> None:
        with self._lock:
            for fd, _ in self._fds.values():
                os.close(fd)
            self._fds.clear()
