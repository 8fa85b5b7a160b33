"""Record site states into a pack: requests + ``warcio.capture_http``, request and response.

Input is a list of requests (``--urls``: one URL per line, or a JSON object per line with
``url``, ``method``, ``body``, ``headers``) or a crawl spec (``--crawl``: seeds, allowed
hosts, URL patterns, max pages, per-host delay). Redirects are recorded as they are and
their targets queued. Recording resumes: requests already in the pack are skipped and a
record cut short by a crash is truncated away. With ``fixed_date`` every WARC-Date is that
date and every WARC-Record-ID is derived from the request, so the same capture gives
byte-identical files.

Only loopback hosts are contacted unless ``allow_network`` is set.
"""

from __future__ import annotations

# warcio's capture_http patches http.client; it must be imported before requests/urllib3.
from warcio.capture_http import RecordingHTTPConnection, capture_http

# isort: split
import os
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

from sgrgym.core.errors import UserError
from sgrgym.core.inputs import decode_text, field_problem, read_bytes
from sgrgym.core.netguard import is_loopback, loopback_only
from sgrgym.core.output import Say
from sgrgym.core.version import __version__
from sgrgym.snapshot.pack import (
    MANIFEST,
    PACK_NAME,
    WARC_DIR,
    SiteInfo,
    build_manifest,
    load_manifest,
    utc_now,
    warc_files,
    write_manifest,
)
from sgrgym.snapshot.text import charset_of
from sgrgym.snapshot.urls import (
    BadUrl,
    CanonRules,
    archived_url,
    body_key,
    canonical_url,
    check_url,
    clip,
    index_key,
)
from sgrgym.snapshot.warc import WarcError, check_member, read_response, scan_warc

USER_AGENT = f"sgrgym/{__version__} (snapshot recorder)"


class RequestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    method: str = "GET"
    body: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class CrawlSpec(BaseModel):
    """What to record: explicit requests and/or seeds to crawl from."""

    model_config = ConfigDict(extra="forbid")

    seeds: list[str] = Field(default_factory=list)
    requests: list[RequestSpec] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list, description="default: seeds' hosts")
    url_patterns: list[str] = Field(default_factory=list, description="regexes; default: all")
    max_pages: int = Field(default=1000, ge=1)
    delay_s: float = Field(default=0.0, ge=0)
    follow_links: bool = True
    volatile_params: list[str] | None = None
    sites: list[SiteInfo] = Field(default_factory=list)
    proxy: str | None = Field(
        default=None,
        description="an HTTP proxy to send every request through (absolute-form request "
        "lines); URLs are archived as requested, so a local app can be recorded under its "
        "public host name",
    )


def read_url_list(path: Path) -> CrawlSpec:
    """An ``--urls`` file: URLs (GET) or JSON request objects, one per line; ``#`` comments."""
    specs: list[RequestSpec] = []
    lines = decode_text(read_bytes(path, "URL list (--urls)"), path, "URL list").splitlines()
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if line.startswith("{"):
                specs.append(RequestSpec.model_validate_json(line))
            else:
                specs.append(RequestSpec(url=line))
            check_url(specs[-1].url)
        except ValidationError as exc:
            raise UserError(f"{path}:{number}: not a request ({exc.errors()[0]['msg']})") from None
        except BadUrl as exc:
            raise UserError(f"{path}:{number}: {exc}") from None
    if not specs:
        raise UserError(f"{path}: no URLs")
    return CrawlSpec(requests=specs, follow_links=False)


def read_crawl_spec(path: Path) -> CrawlSpec:
    """A ``--crawl`` spec file, its URLs checked (the field that is wrong is named)."""
    data = read_bytes(path, "crawl spec (--crawl)")
    try:
        spec = CrawlSpec.model_validate_json(data)
    except ValidationError as exc:
        raise UserError(f"{path}: invalid crawl spec: {field_problem(exc)}") from None
    fields = [(f"seeds.{i}", url) for i, url in enumerate(spec.seeds)]
    fields += [(f"requests.{i}.url", r.url) for i, r in enumerate(spec.requests)]
    fields += [("proxy", spec.proxy)] if spec.proxy else []
    for where, url in fields:
        try:
            check_url(url)
        except BadUrl as exc:
            raise UserError(f"{path}: invalid crawl spec: {where}: {exc}") from None
    return spec


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area", "iframe", "frame"):
            for name, value in attrs:
                if name in ("href", "src") and value:
                    self.links.append(value)


def extract_links(base: str, html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return [urljoin(base, link).split("#", 1)[0] for link in parser.links]


@dataclass
class RecordResult:
    pack_dir: Path
    recorded: int
    skipped: int
    failed: list[str]
    manifest_sha256: str


def _record_id(*parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, '|'.join(parts))}>"


Key = tuple[str, str, str]  # (method, canonical URL, body key)
Where = tuple[str, int, int]  # (WARC path, offset, length) of an archived response


def _existing(pack_dir: Path, rules: CanonRules) -> dict[Key, Where]:
    """Keys of complete request/response pairs already captured.

    Whatever follows the last complete pair (a record cut short by a crash, or half of a
    pair) is truncated away, so those requests are recorded again.
    """
    done: dict[Key, Where] = {}
    for path in warc_files(pack_dir):
        requests_seen: dict[str, tuple[str, str]] = {}  # response id -> (method, body key)
        responses_seen: dict[str, tuple[str, Where]] = {}  # response id -> (canonical URL, where)
        safe_end = 0
        fd = os.open(path, os.O_RDONLY)
        try:
            for record in scan_warc(path):
                if check_member(fd, record.offset, record.length):
                    break
                if record.warc_type == "request":
                    key = record.concurrent_to
                    requests_seen[key] = (record.method, body_key(record.body, record.content_type))
                elif record.warc_type == "response":
                    key = record.record_id
                    where = (str(path), record.offset, record.length)
                    url = index_key(archived_url(record.target_uri), rules)
                    responses_seen[key] = (url, where)
                else:
                    continue
                if key in requests_seen and key in responses_seen:
                    method, body = requests_seen[key]
                    url, where = responses_seen[key]
                    done[(method, url, body)] = where
                    safe_end = record.offset + record.length
        except WarcError:
            pass
        finally:
            size = os.fstat(fd).st_size
            os.close(fd)
        if size != safe_end:
            with open(path, "r+b") as f:
                f.truncate(safe_end)
    return done


class Recorder:
    """Records requests into ``pack_dir/warc/<pack>-00000.warc.gz`` and writes the manifest."""

    def __init__(
        self,
        pack_dir: Path,
        spec: CrawlSpec,
        allow_network: bool = False,
        fixed_date: str | None = None,
        timeout_s: float = 30.0,
        progress: Say | None = None,
    ) -> None:
        if not re.match(PACK_NAME, pack_dir.name):
            raise UserError(
                f"{pack_dir.name!r}: a pack folder name must be lower-case letters, digits, "
                "'.', '_' or '-' (at most 64 characters)"
            )
        self.pack_dir = pack_dir
        self.pack = pack_dir.name
        self.spec = spec
        self.allow_network = allow_network
        self.fixed_date = fixed_date
        self.timeout_s = timeout_s
        self.progress = progress
        self.rules = (
            CanonRules(volatile_params=tuple(spec.volatile_params))
            if spec.volatile_params is not None
            else CanonRules()
        )
        self.patterns = [re.compile(p) for p in spec.url_patterns]
        seed_hosts = [urlsplit(u).hostname or "" for u in spec.seeds]
        self.allowed = {h.lower() for h in (spec.allowed_hosts or seed_hosts)}
        self._last_hit: dict[str, float] = {}
        self._ordinal = 0

    def _check_host(self, url: str) -> None:
        parts = urlsplit(check_url(url))
        if self.spec.proxy:  # the connection goes to the proxy, not to the URL's host
            parts = urlsplit(check_url(self.spec.proxy))
            if parts.scheme != "http":
                raise UserError(f"proxy {clip(self.spec.proxy)} is not an http:// URL")
        if not self.allow_network and not is_loopback((parts.hostname, parts.port or 80)):
            raise UserError(
                f"{url}: recording from {parts.hostname} needs the network; "
                "pass --allow-network (only loopback hosts are recorded without it)"
            )

    def _wanted(self, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        if host not in self.allowed:
            return False
        return not self.patterns or any(p.search(url) for p in self.patterns)

    def _filter(self, spec: RequestSpec) -> Callable[..., tuple[ArcWarcRecord, ArcWarcRecord]]:
        def apply(
            request: ArcWarcRecord, response: ArcWarcRecord, _recorder: Any
        ) -> tuple[ArcWarcRecord, ArcWarcRecord]:
            if self.spec.proxy:  # an internal detail (and an ephemeral port): not archived
                for record in (request, response):
                    record.rec_headers.remove_header("WARC-Proxy-Host")
            if self.fixed_date:
                self._ordinal += 1
                key = (
                    self.pack,
                    spec.method.upper(),
                    spec.url,
                    spec.body or "",
                    str(self._ordinal),
                )
                for record, kind in ((request, "request"), (response, "response")):
                    record.rec_headers.replace_header("WARC-Date", self.fixed_date)
                    record.rec_headers.replace_header("WARC-Record-ID", _record_id(*key, kind))
            return request, response

        return apply

    def _throttle(self, url: str) -> None:
        host = urlsplit(url).netloc
        wait = self._last_hit.get(host, -1e9) + self.spec.delay_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_hit[host] = time.monotonic()

    def _queue(self) -> Iterator[RequestSpec]:
        yield from self.spec.requests
        yield from (RequestSpec(url=u) for u in self.spec.seeds)

    def run(self) -> RecordResult:
        import urllib3.connection

        if not issubclass(urllib3.connection.HTTPConnection, RecordingHTTPConnection):
            raise RuntimeError(
                "urllib3 was imported before warcio.capture_http, so nothing would be "
                "recorded: import sgrgym.snapshot.record before requests/urllib3"
            )
        for spec in [*self.spec.requests, *(RequestSpec(url=u) for u in self.spec.seeds)]:
            self._check_host(spec.url)
        (self.pack_dir / WARC_DIR).mkdir(parents=True, exist_ok=True)
        done = _existing(self.pack_dir, self.rules)
        skipped = recorded = 0
        failed: list[str] = []
        queue: deque[RequestSpec] = deque(self._queue())
        seen: set[tuple[str, str, str]] = set()
        warc_path = self.pack_dir / WARC_DIR / f"{self.pack}-00000.warc.gz"
        guard: AbstractContextManager[None] = (
            nullcontext() if self.allow_network else loopback_only()
        )
        session = requests.Session()
        session.trust_env = False  # never route through proxies from the environment
        if self.spec.proxy:
            session.proxies = {"http": self.spec.proxy}
        with guard, open(warc_path, "ab") as out:
            writer = WARCWriter(out, gzip=True)
            while queue and recorded + skipped < self.spec.max_pages:
                spec = queue.popleft()
                body = spec.body.encode("utf-8") if spec.body is not None else None
                ctype = next(
                    (v for k, v in spec.headers.items() if k.lower() == "content-type"), ""
                )
                key = (
                    spec.method.upper(),
                    canonical_url(spec.url, self.rules),
                    body_key(body, ctype),
                )
                if key in seen:
                    continue
                seen.add(key)
                if key in done:
                    skipped += 1
                    queue.extend(
                        RequestSpec(url=u) for u in self._follow_archived(spec.url, done[key])
                    )
                    continue
                self._check_host(spec.url)
                self._throttle(spec.url)
                headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **spec.headers}
                try:
                    with capture_http(writer, self._filter(spec), record_ip=not self.fixed_date):
                        response = session.request(
                            spec.method.upper(),
                            spec.url,
                            data=body,
                            headers=headers,
                            timeout=self.timeout_s,
                            allow_redirects=False,
                        )
                        content = response.content
                except requests.RequestException as exc:
                    failed.append(f"{spec.method} {spec.url}: {exc.__class__.__name__}: {exc}")
                    continue
                out.flush()
                recorded += 1
                if self.progress:
                    self.progress(f"[{recorded}] {response.status_code} {spec.method} {spec.url}")
                links = self._follow(
                    spec.url,
                    response.status_code,
                    response.headers.get("Location", ""),
                    response.headers.get("Content-Type", ""),
                    content,
                )
                queue.extend(RequestSpec(url=link) for link in links)
        pin = self.write_manifest()
        return RecordResult(self.pack_dir, recorded, skipped, failed, pin)

    def _follow(
        self, url: str, status: int, location: str, content_type: str, content: bytes
    ) -> list[str]:
        """URLs to record next: a redirect's target, and (crawls) an HTML page's links."""
        links: list[str] = []
        if status in (301, 302, 303, 307, 308) and location:
            links.append(urljoin(url, location))
        if self.spec.follow_links and status == 200 and "html" in content_type:
            links += extract_links(url, content.decode(charset_of(content_type), "replace"))
        return [link for link in links if self._wanted(link)]

    def _follow_archived(self, url: str, where: Where) -> list[str]:
        """Links of a page recorded by an earlier run, so a resumed crawl goes on from it."""
        path, offset, length = where
        fd = os.open(path, os.O_RDONLY)
        try:
            http = read_response(fd, path, offset, length)
        finally:
            os.close(fd)
        headers = {k.lower(): v for k, v in http.headers}
        return self._follow(
            url,
            http.status,
            headers.get("location", ""),
            headers.get("content-type", ""),
            http.body,
        )

    def write_manifest(self) -> str:
        """Describe the pack's files; a resumed pack keeps the date it was first created."""
        declared = {s.host: s for s in self.spec.sites}
        created = self.fixed_date
        if created is None and (self.pack_dir / MANIFEST).is_file():
            created = load_manifest(self.pack_dir).created
        manifest, _ = build_manifest(
            self.pack_dir,
            self.pack,
            created or utc_now(),
            self.rules,
            site_for=lambda host, _places: declared.get(host, SiteInfo(host=host)),
        )
        return write_manifest(self.pack_dir, manifest)
