"""Offline replay: answer (method, URL, body) from a pack, exactly, never from the network.

>>> snap = Snapshot.open("snapshots/demo")          # verifies sha256, builds/loads the index
>>> page = snap.fetch("http://site.example/a?x=1")  # Response(status, headers, body, match)

Lookup order: the URL exactly as archived (``exact``), then its canonical key under the
pack's declared rules (``rule``); otherwise a deterministic 404 "not in snapshot" response
(``miss``) carrying the header ``X-Sgrgym-Snapshot: miss``. Archived redirects are followed
(up to 10 hops) inside the snapshot. When a URL was captured more than once the latest capture
answers. Reads go straight to the indexed offset with ``os.pread``, so one Snapshot serves
many threads.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin

from sgrgym.errors import UserError
from sgrgym.sgr.archive.index import connect, ensure_index
from sgrgym.sgr.archive.pack import (
    Manifest,
    check_files,
    load_manifest,
    manifest_sha256,
    pack_file,
    resolve_pack,
)
from sgrgym.sgr.archive.text import body_to_text
from sgrgym.sgr.archive.urls import body_key, canonical_url
from sgrgym.sgr.archive.warc import MAX_RECORD_BYTES, read_response

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


class Snapshot:
    """A verified, indexed pack ready to answer requests offline."""

    def __init__(
        self, pack_dir: Path, manifest: Manifest, pin: str, captures: list[tuple[object, ...]],
        max_record_bytes: int = MAX_RECORD_BYTES,
    ) -> None:  # fmt: skip
        self.pack_dir = pack_dir
        self.manifest = manifest
        self.pin = pin
        self.max_record_bytes = max_record_bytes
        self._exact: dict[tuple[str, str, str], Capture] = {}
        self._rule: dict[tuple[str, str, str], Capture] = {}
        for url, key, method, body, status, mime, warc, offset, length, time, loc in captures:
            capture = Capture(
                str(url), int(status), str(mime), str(warc), int(offset), int(length),  # type: ignore[call-overload]
                str(time), str(loc),
            )  # fmt: skip
            # Rows come ordered by capture time: a later capture replaces an earlier one.
            self._exact[(str(method), str(url), str(body))] = capture
            self._rule[(str(method), str(key), str(body))] = capture
        self._fds: dict[str, tuple[int, str]] = {}  # manifest path -> (fd, file path)
        self._lock = threading.Lock()

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
        con = connect(path)
        try:
            rows = con.execute(
                "SELECT url, canonical_key, method, body_digest, status, mime, warc_file, "
                '"offset", length, capture_time, location FROM captures '
                'ORDER BY capture_time, warc_file, "offset"'
            ).fetchall()
        finally:
            con.close()
        return cls(pack_dir, manifest, pin, rows, max_record_bytes)

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
        key = canonical_url(url, self.manifest.rules)
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
        """The archived response to a request; archived redirects are followed."""
        redirects: list[str] = []
        match: Match = "exact"
        while True:
            capture, how = self.lookup(url, method, body, content_type)
            if capture is None:
                return miss_response(url, method.upper(), tuple(redirects))
            if how == "rule":
                match = "rule"
            if (
                follow_redirects
                and capture.status in _REDIRECTS
                and capture.location
                and len(redirects) < MAX_REDIRECTS
            ):
                redirects.append(url)
                url = urljoin(capture.url, capture.location)
                if capture.status == 303 or (capture.status in (301, 302) and method != "GET"):
                    method, body, content_type = "GET", None, ""
                continue
            fd, path = self._fd(capture.warc_file)
            http = read_response(fd, path, capture.offset, capture.length, self.max_record_bytes)
            headers = (
                *http.headers,
                (MATCH_HEADER, match),
                ("X-Sgrgym-Capture-Time", capture.capture_time),
            )
            return Response(
                capture.url, http.status, http.reason, headers, http.body, match,
                tuple(redirects), capture.capture_time,
            )  # fmt: skip

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

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
