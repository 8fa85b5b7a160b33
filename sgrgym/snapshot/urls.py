"""Canonical lookup keys for archived requests: versioned, declared rules.

A request is found in a snapshot by (method, URL, request body). ``exact`` lookups use the
URL as recorded; ``rule`` lookups use the canonical key built by :class:`CanonRules`:

- scheme and host lower-cased, default ports (80 for http, 443 for https) dropped;
- the fragment dropped;
- percent-encoding normalized (unreserved characters decoded, hex digits upper-cased);
- query parameters sorted, and the pack's declared volatile parameters dropped;
- the body of a POST: form fields sorted, JSON re-serialized with sorted keys, else raw.

The rules' version and sha256 go into every pack manifest: an index built under other rules
is never reused.
"""

from __future__ import annotations

import json
import re
from contextlib import suppress
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes, sha256_json

RULES_VERSION = "1"
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SAFE_PATH = "/:@!$&'()*+,;=%"
MAX_ECHO = 200  # characters of user input repeated in an error message


class BadUrl(UserError):
    """A URL that does not parse as an absolute http(s) URL."""


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` as an error message repeats it: quoted, and cut after ``limit`` characters."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def check_url(url: str) -> str:
    """``url`` when it is an absolute http(s) URL that parses, else :class:`BadUrl`."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # an out-of-range or non-numeric port raises here
    except ValueError as exc:
        raise BadUrl(f"{clip(url)} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise BadUrl(f"{clip(url)} is not an absolute http:// or https:// URL")
    return url


def archived_url(target_uri: str) -> str:
    """The URL of a ``WARC-Target-URI`` value: WARC 1.0 writers may wrap it in ``<...>``."""
    value = target_uri.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    return value


class CanonRules(BaseModel):
    """The declared canonicalization rules of a pack."""

    model_config = ConfigDict(frozen=True)

    version: str = RULES_VERSION
    volatile_params: tuple[str, ...] = Field(
        default=("_", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content"),
        description="query parameters ignored when matching (cache busters, trackers)",
    )

    def sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


def _percent(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalize_percent(text: str, safe: str) -> str:
    """RFC 3986 6.2.2: encode what must be encoded, decode unreserved %XX, upper-case hex."""
    return _PERCENT.sub(_percent, quote(text, safe=safe))


def _host_port(scheme: str, netloc: str) -> str:
    userinfo, _, hostport = netloc.rpartition("@")
    hostport = hostport.lower()
    if (scheme == "http" and hostport.endswith(":80")) or (
        scheme == "https" and hostport.endswith(":443")
    ):
        hostport = hostport.rsplit(":", 1)[0]
    return f"{userinfo}@{hostport}" if userinfo else hostport


def canonical_url(url: str, rules: CanonRules) -> str:
    """The canonical form of ``url`` under ``rules`` (see the module docstring).

    A URL that does not parse raises :class:`BadUrl`.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise BadUrl(f"{clip(url)} is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    netloc = _host_port(scheme, parts.netloc)
    path = _normalize_percent(parts.path or "/", _SAFE_PATH)
    volatile = set(rules.volatile_params)
    query = sorted(
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in volatile
    )
    return urlunsplit((scheme, netloc, path, urlencode(query, quote_via=quote), ""))


def index_key(url: str, rules: CanonRules) -> str:
    """The canonical key of an archived URL; one that does not parse is its own key."""
    try:
        return canonical_url(url, rules)
    except BadUrl:
        return url


def body_key(body: bytes | None, content_type: str | None = None) -> str:
    """sha256 of the canonical request body ("" for no body), part of the lookup key."""
    if not body:
        return ""
    kind = (content_type or "").split(";")[0].strip().lower()
    # A body that does not parse as its declared type is keyed by its raw bytes.
    if kind == "application/x-www-form-urlencoded":
        with suppress(UnicodeDecodeError, ValueError):
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
            body = urlencode(sorted(pairs)).encode()
    elif kind.endswith("json"):
        with suppress(UnicodeDecodeError, ValueError, RecursionError):  # too deep: raw bytes
            body = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    return sha256_bytes(body)
