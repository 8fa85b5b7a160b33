"""One recorded JSON POST session over requests + requests-cache (SQLite), shared by clients.

- **Cache key**: sha256 of the method, the URL and the JSON body re-serialized with sorted keys
  (:func:`request_hash`); headers never enter the key, so the API key never does.
- **Secrets**: the ``Authorization`` header (and the other credential names requests-cache
  knows) is redacted from the stored request; the key is read from an environment variable at
  request time and never written to the cache, to logs or to results.
- **Modes**: ``record`` answers from the cache and sends (then stores) only what is missing;
  ``replay`` is offline: a miss is a :class:`~sgrgym.core.errors.UserError` naming the request hash
  and model, raised before any connection is attempted; ``refresh`` sends every request and
  overwrites what was stored.
- **One writer**: every client of one cache file in a process shares one requests-cache
  session and one lock (:func:`shared_cache`); reads and writes of the SQLite file go through
  that lock, the network requests themselves run outside it, so ``--jobs N`` threads send in
  parallel and never see "database is locked".
- **Retries**: HTTP 429 and 5xx answers, timeouts and refused connections are retried after
  the fixed delays :data:`RETRY_DELAYS_S` (no jitter: the schedule is deterministic); every
  attempt is counted in the :class:`Sent` record. Only a 200 answer is stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sgrgym.core.closing import Closing
from sgrgym.core.errors import ReplayMiss, UserError

if TYPE_CHECKING:
    import requests

Mode = Literal["record", "replay", "refresh"]
MODES: tuple[Mode, ...] = ("record", "replay", "refresh")
SECRET_HEADERS = (
    "Authorization",
    "Proxy-Authorization",
    "X-API-Key",
    "api-key",
    "X-Auth-Token",
    "access_token",
    "api_key",
    "apikey",
)


RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0)  # ours: 4 retries, 15 s in all
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Sent:
    """One POST as the harness saw it: the response bytes and how they were obtained."""

    content: bytes
    from_cache: bool
    request_hash: str
    attempts: int  # network attempts (0 when served from the cache)
    retried: tuple[str, ...] = ()  # why each failed attempt was retried ("HTTP 429", "timeout")


def canonical_body(body: Any) -> bytes:
    """The JSON bytes of ``body`` with sorted keys (UTF-8, no ASCII escaping)."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def request_hash(method: str, url: str, body: bytes | str | None) -> str:
    """sha256 of method, URL and the JSON body with sorted keys (the raw body if not JSON)."""
    raw = body.encode("utf-8") if isinstance(body, str) else (body or b"")
    try:
        normalized = canonical_body(json.loads(raw)) if raw else b""
    except ValueError:
        normalized = raw
    return canonical_hash(method, url, normalized)


def canonical_hash(method: str, url: str, normalized: bytes) -> str:
    """:func:`request_hash` of a body already in :func:`canonical_body` form (not re-parsed)."""
    digest = hashlib.sha256()
    digest.update(method.upper().encode() + b"\n" + url.encode("utf-8") + b"\n")
    digest.update(normalized)
    return digest.hexdigest()


def _key_fn(request: Any, **_: Any) -> str:
    return request_hash(str(request.method), str(request.url), request.body)


def sqlite_path(path: Path) -> Path:
    """requests-cache adds ``.sqlite`` to a name without a suffix; do it here so checks agree."""
    return path if path.suffix else path.with_name(path.name + ".sqlite")


def is_loopback_url(url: str) -> bool:
    from urllib.parse import urlsplit

    from sgrgym.core.netguard import is_loopback

    return is_loopback((urlsplit(url).hostname or "", 0))


def check_mode(mode: str, what: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"{what} cache mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


SQLITE_HEADER = b"SQLite format 3\x00"


def check_recording(path: Path, replay: bool, what: str) -> None:
    """A recording file must be SQLite (or, to record into, absent or empty): any other file is
    refused and left as it is; replaying needs a recording that exists and is not empty."""
    if path.is_dir():
        raise UserError(f"{path}: is a folder; the {what} cache is a SQLite file")
    if path.exists() and not path.is_file():
        raise UserError(f"{path}: not a regular file; the {what} cache is a SQLite file")
    if not path.exists():
        if replay:
            raise UserError(f"{path}: no {what} cache to replay from: run once with mode record")
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} cache ({exc.strerror or exc})") from None
    if not head and replay:
        raise UserError(f"{path}: the {what} cache is empty: nothing to replay (mode record)")
    if head and head != SQLITE_HEADER:
        raise UserError(
            f"{path}: not a {what} cache (not a SQLite file); it is left as it is: name a new "
            "file or one a record run wrote"
        )


@contextmanager
def sqlite_errors(path: Path, what: str) -> Iterator[None]:
    """A damaged SQLite file (truncated, overwritten) as a UserError naming it."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise UserError(
            f"{path}: the {what} cache is damaged ({exc}); restore it or record it again"
        ) from None


CHECKSUMS = "sgrgym_entry_sha256"  # request hash -> sha256 of the recorded response bytes


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the SQLite database ``db`` holds a table ``name``."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


class EntrySums:
    """The sha256 of every recorded response, in its own table of the recording: written as
    each response is stored, checked as each is read back, so a reply edited after it was
    recorded (to other valid JSON, say) is refused instead of replayed."""

    def __init__(self, path: Path, read_only: bool, what: str) -> None:
        self.path, self.what = path, what
        self._lock = threading.Lock()  # one connection, shared by a run's threads
        with sqlite_errors(path, what):
            if read_only:
                uri = f"{path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            else:
                self._db = sqlite3.connect(path, check_same_thread=False)
                with self._db:
                    self._db.execute(
                        f"CREATE TABLE IF NOT EXISTS {CHECKSUMS} "
                        "(key TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID"
                    )
            self.present = has_table(self._db, CHECKSUMS)

    def check(self, key: str, content: bytes) -> None:
        """``content`` is what was recorded under ``key`` (else a UserError naming it)."""
        if not self.present:
            raise UserError(
                f"{self.path}: this {self.what} recording has no entry checksums (an older "
                f"sgrgym wrote it): seal it once with `sgrgym llm seal {self.path}`, or record "
                "it again"
            )
        with self._lock, sqlite_errors(self.path, self.what):
            row = self._db.execute(
                f"SELECT sha256 FROM {CHECKSUMS} WHERE key = ?", (key,)
            ).fetchone()
        digest = hashlib.sha256(content).hexdigest()
        if row is None:
            raise UserError(
                f"{self.path}: recorded {self.what} {key} has no checksum: it was not stored "
                "by sgrgym; record it again"
            )
        if row[0] != digest:
            raise UserError(
                f"{self.path}: recorded {self.what} {key} was changed after it was recorded "
                f"(sha256 {digest}, recorded {row[0]}); restore the file or record it again"
            )

    def keys(self) -> set[str]:
        """The keys that have a checksum."""
        with self._lock, sqlite_errors(self.path, self.what):
            return {k for (k,) in self._db.execute(f"SELECT key FROM {CHECKSUMS}")}

    def vectors(self) -> list[tuple[str, str, bytes]]:
        """The recording's query vectors (model id, text, bytes), which a recorded embedder
        stores beside the replies (:mod:`sgrgym.seeker.embed`); none when it has none."""
        with self._lock, sqlite_errors(self.path, self.what):
            if not has_table(self._db, "query_vectors"):
                return []
            rows = self._db.execute("SELECT model_id, text, vector FROM query_vectors")
            return [(m, t, bytes(v)) for m, t, v in rows]

    def put(self, key: str, content: bytes, *, replace: bool = True) -> None:
        """Store the checksum of ``content`` (``replace=False``: the first one stays, as the
        entry it describes does)."""
        with self._lock, sqlite_errors(self.path, self.what), self._db:
            self._db.execute(
                f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO {CHECKSUMS} (key, sha256) "
                "VALUES (?, ?)",
                (key, hashlib.sha256(content).hexdigest()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def vector_key(model_id: str, text: str) -> str:
    """A recorded query vector's key in the checksum table (its bytes: little-endian float32)."""
    return f"vector {model_id} {hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def seal_recording(path: Path, what: str = "request") -> int:
    """Add the checksum of every recorded response that has none (a recording an older sgrgym
    wrote: its responses are taken as they are now); the number added."""
    path = sqlite_path(Path(path))
    check_recording(path, replay=True, what=what)
    with sqlite_errors(path, what):
        session = _open_cache(path, False, what)
        sums = EntrySums(path, read_only=False, what=what)
        try:
            known = sums.keys()
            added = 0
            for key in list(session.cache.responses.keys()):
                if key in known:
                    continue
                response = session.cache.get_response(key)
                if response is not None:
                    sums.put(key, bytes(response.content))
                    added += 1
            for model_id, text, blob in sums.vectors():
                key = vector_key(model_id, text)
                if key not in known:
                    sums.put(key, bytes(blob))
                    added += 1
        finally:
            sums.close()
            session.close()
    return added


class _SharedCache:
    """One requests-cache session per SQLite file and process, and the lock that serializes
    its use (the single cache writer)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.lock = threading.Lock()
        self.users = 0


_SHARED: dict[tuple[str, bool], _SharedCache] = {}
_SHARED_LOCK = threading.Lock()


def _open_cache(path: Path, read_only: bool, what: str) -> Any:
    try:
        import requests_cache
    except ImportError:
        raise UserError(
            f"the {what} client needs requests-cache: pip install 'sgrgym[seeker]'"
        ) from None
    return requests_cache.CachedSession(
        cache_name=str(path),
        backend="sqlite",
        serializer="json",
        allowable_methods=("POST",),
        allowable_codes=(200,),
        expire_after=requests_cache.NEVER_EXPIRE,
        cache_control=False,
        ignored_parameters=SECRET_HEADERS,
        key_fn=_key_fn,
        only_if_cached=read_only,
        read_only=read_only,
    )


def shared_cache(path: Path, read_only: bool, what: str) -> _SharedCache:
    """The process's one session for ``path`` (opened on first use, counted per user)."""
    key = (str(path.resolve()), read_only)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = _SharedCache(_open_cache(path, read_only, what))
        shared.users += 1
        return shared


def _release(path: Path, read_only: bool) -> None:
    key = (str(path.resolve()), read_only)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            return
        shared.users -= 1
        if shared.users <= 0:
            shared.session.close()
            del _SHARED[key]


def _refused(exc: BaseException) -> bool:
    """Whether a connection error is a refusal (nothing listens), not a drop or a reset."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or "Connection refused" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


class RecordedPost(Closing):
    """JSON POSTs to one endpoint through a requests-cache SQLite file.

    ``api_key_env`` names the environment variable holding the API key; recording from a
    non-loopback URL without it is refused (a loopback server needs no key). ``sleep`` is
    what waits between retries (a test passes a recorder).
    """

    def __init__(
        self,
        url: str,
        cache_path: Path,
        *,
        mode: str = "replay",
        api_key_env: str = "OPENAI_API_KEY",
        what: str = "request",
        timeout_s: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.mode = check_mode(mode, what)
        self.url = url
        self.what = what
        self.timeout_s = timeout_s
        self.sleep = sleep
        self.cache_path = sqlite_path(Path(cache_path))
        self.api_key_env = api_key_env
        check_recording(self.cache_path, self.mode == "replay", what)
        if self.mode != "replay":
            if not os.environ.get(api_key_env) and not is_loopback_url(url):
                raise UserError(f"set {api_key_env} to record from {url}")
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._read_only = self.mode == "replay"
        with sqlite_errors(self.cache_path, what):
            self._shared = shared_cache(self.cache_path, self._read_only, what)
        self._sums = EntrySums(self.cache_path, self._read_only, what)
        self._closed = False
        self._http: requests.Session | None = None
        self._answered = False  # a server has answered at self.url (retries make sense then)

    @property
    def _session(self) -> Any:
        return self._shared.session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.mode != "replay" else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def key(self, body: Any) -> str:
        """The request hash (cache key) of a JSON ``body``."""
        return request_hash("POST", self.url, canonical_body(body))

    def contains(self, body: Any) -> bool:
        """Whether the cache holds the response to ``body``."""
        with self._shared.lock, sqlite_errors(self.cache_path, self.what):
            return bool(self._session.cache.contains(self.key(body)))

    def lookup(self, key: str) -> bytes | None:
        """The stored response bytes for a request hash (None when absent)."""
        with self._shared.lock, sqlite_errors(self.cache_path, self.what):
            cached = self._session.cache.get_response(key)
            if cached is None:
                return None
            content = bytes(cached.content)
            self._sums.check(key, content)
        return content

    def miss_error(self, key: str, label: str) -> ReplayMiss:
        return ReplayMiss(
            f"{self.what} not in the cache {self.cache_path} (request {key}, {label}): "
            "record it first (mode record), or replay with the inputs it was recorded with"
        )

    def post(self, body: Any, *, label: str) -> tuple[bytes, bool, str]:
        """(response bytes, served from the cache, request hash) for a JSON ``body``."""
        sent = self.send(body, label=label)
        return sent.content, sent.from_cache, sent.request_hash

    def send(self, body: Any, *, label: str) -> Sent:
        """The response to a JSON ``body``: from the cache, or sent (with retries) and stored.

        ``label`` names the request in errors (model, episode). A replay miss raises before
        any connection is attempted.
        """
        data = canonical_body(body)
        key = canonical_hash("POST", self.url, data)
        if self.mode != "refresh":
            stored = self.lookup(key)
            if stored is not None:
                return Sent(stored, True, key, 0)
        if self.mode == "replay":
            raise self.miss_error(key, label)
        response, attempts, retried = self._send(data, label)
        with self._shared.lock, sqlite_errors(self.cache_path, self.what):
            self._session.cache.save_response(response, cache_key=key)
            self._sums.put(key, response.content)
        return Sent(response.content, False, key, attempts, retried)

    def _send(self, data: bytes, label: str) -> tuple[requests.Response, int, tuple[str, ...]]:
        import requests

        if self._http is None:
            self._http = requests.Session()
        retried: list[str] = []
        for attempt in range(len(RETRY_DELAYS_S) + 1):
            try:
                response = self._http.post(
                    self.url, data=data, headers=self._headers(), timeout=self.timeout_s
                )
            except requests.Timeout:
                reason = "timeout"
            except requests.ConnectionError as exc:
                if not self._answered and _refused(exc):
                    raise UserError(
                        f"{self.what} to {self.url} failed ({label}): no server answers there "
                        "(connection refused). Start one first: `sgrgym llm serve --model NAME` "
                        "for a local:NAME model, or pass the --base-url of a running server"
                    ) from None
                reason = f"connection error: {type(exc).__name__}"
            except requests.RequestException as exc:
                raise UserError(f"{self.what} to {self.url} failed ({label}): {exc}") from None
            else:
                self._answered = True
                if response.status_code == 200:
                    return response, attempt + 1, tuple(retried)
                reason = f"HTTP {response.status_code}"
                if response.status_code not in RETRY_STATUSES:
                    raise UserError(
                        f"{self.what} to {self.url} failed ({label}): {reason}: "
                        f"{response.text[:300]}"
                    )
            if attempt == len(RETRY_DELAYS_S):
                break
            retried.append(reason)
            self.sleep(RETRY_DELAYS_S[attempt])
        raise UserError(
            f"{self.what} to {self.url} failed ({label}) after {len(RETRY_DELAYS_S) + 1} "
            f"attempts: {', '.join([*retried, reason])}"
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._http is not None:
            self._http.close()
        self._sums.close()
        _release(self.cache_path, self._read_only)
