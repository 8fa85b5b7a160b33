"""One recorded JSON POST session over requests + requests-cache (SQLite), shared by clients.

- **Cache key**: sha256 of the method, the URL and the JSON body re-serialized with sorted keys
  (:func:`request_hash`); headers never enter the key, so the API key never does.
- **Secrets**: the ``Authorization`` header (and the other credential names requests-cache
  knows) is redacted from the stored request; the key is read from an environment variable at
  request time and never written to the cache, to logs or to results.
- **Modes**: ``record`` answers from the cache and sends (then stores) only what is missing;
  ``replay`` is offline: a miss is a :class:`~sgrgym.errors.UserError` naming the request hash
  and model, raised before any connection is attempted; ``refresh`` sends every request and
  overwrites what was stored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sgrgym.closing import Closing
from sgrgym.errors import UserError

if TYPE_CHECKING:
    import requests

Mode = Literal["record", "replay", "refresh"]
MODES: tuple[Mode, ...] = ("record", "replay", "refresh")
SECRET_HEADERS = (
    "Authorization", "Proxy-Authorization", "X-API-Key", "api-key", "X-Auth-Token",
    "access_token", "api_key", "apikey",
)  # fmt: skip


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

    from sgrgym.runs.netguard import is_loopback

    return is_loopback((urlsplit(url).hostname or "", 0))


def check_mode(mode: str, what: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"{what} cache mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


class RecordedPost(Closing):
    """JSON POSTs to one endpoint through a requests-cache SQLite file.

    ``api_key_env`` names the environment variable holding the API key; recording from a
    non-loopback URL without it is refused (a loopback server needs no key).
    """

    def __init__(
        self, url: str, cache_path: Path, *, mode: str = "replay",
        api_key_env: str = "OPENAI_API_KEY", what: str = "request", timeout_s: float = 300.0,
    ) -> None:  # fmt: skip
        self.mode = check_mode(mode, what)
        self.url = url
        self.what = what
        self.timeout_s = timeout_s
        self.cache_path = sqlite_path(Path(cache_path))
        self.api_key_env = api_key_env
        if self.mode == "replay" and not self.cache_path.is_file():
            raise UserError(
                f"{self.cache_path}: no {what} cache to replay from: run once with mode record"
            )
        if self.mode != "replay":
            if not os.environ.get(api_key_env) and not is_loopback_url(url):
                raise UserError(f"set {api_key_env} to record from {url}")
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._session = self._open_session()

    def _open_session(self) -> requests.Session:
        try:
            import requests_cache
        except ImportError:
            raise UserError(f"the {self.what} client needs requests-cache: pip install "
                            "'sgrgym[seeker]'") from None  # fmt: skip
        return requests_cache.CachedSession(
            cache_name=str(self.cache_path), backend="sqlite", serializer="json",
            allowable_methods=("POST",), allowable_codes=(200,),
            expire_after=requests_cache.NEVER_EXPIRE, cache_control=False,
            ignored_parameters=SECRET_HEADERS, key_fn=_key_fn,
            only_if_cached=self.mode == "replay", read_only=self.mode == "replay",
        )  # fmt: skip

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.mode != "replay" else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def contains(self, body: Any) -> bool:
        """Whether the cache holds the response to ``body``."""
        key = request_hash("POST", self.url, canonical_body(body))
        return bool(self._session.cache.contains(key))  # type: ignore[attr-defined]

    def post(self, body: Any, *, label: str) -> tuple[bytes, bool, str]:
        """(response bytes, served from the cache, request hash) for a JSON ``body``.

        ``label`` names the request in errors (e.g. the model). A replay miss raises before
        any connection is attempted.
        """
        import requests

        data = canonical_body(body)
        key = request_hash("POST", self.url, data)
        if self.mode == "replay" and not self._session.cache.contains(key):  # type: ignore[attr-defined]
            raise UserError(
                f"{self.what} not in the cache {self.cache_path} (request {key}, {label}): "
                "record it first (mode record), or replay with the inputs it was recorded with"
            )
        try:
            response = self._session.post(
                self.url, data=data, headers=self._headers(), timeout=self.timeout_s,
                force_refresh=self.mode == "refresh",  # type: ignore[call-arg]
            )  # fmt: skip
        except requests.RequestException as exc:
            raise UserError(f"{self.what} to {self.url} failed: {exc}") from None
        from_cache = bool(getattr(response, "from_cache", False))
        if self.mode == "replay" and (not from_cache or response.status_code == 504):
            raise UserError(f"{self.what} not in the cache {self.cache_path} (request {key}, "
                            f"{label})")  # fmt: skip
        if response.status_code != 200:
            raise UserError(
                f"{self.what} to {self.url} failed: HTTP {response.status_code}: "
                f"{response.text[:300]}"
            )
        return response.content, from_cache, key

    def close(self) -> None:
        self._session.close()
