"""The recorded chat-completions client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatHandler, scripted

from sgrgym.core.errors import UserError
from sgrgym.core.loopback import serve_http
from sgrgym.llm.chat import ChatClient
from sgrgym.llm.http import request_hash

SECRET = "sk-chat-secret-4242"


def echo(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    return f"seed {body.get('seed')} t={body.get('temperature')} «{last[:20]}» Completeness: 0.4"


@pytest.fixture
def handler() -> Iterator[type[ChatHandler]]:
    yield scripted(echo)


def messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You estimate."}, {"role": "user", "content": text}]


def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a connection was attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_record_then_replay_offline_is_identical(
    tmp_path: Path, handler: type[ChatHandler], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGRGYM_CHAT_KEY", SECRET)
    cache = tmp_path / "llm" / "chat.sqlite"
    with serve_http(handler) as url:
        with ChatClient(
            url + "/v1",
            "tiny-model",
            cache_path=cache,
            mode="record",
            api_key_env="SGRGYM_CHAT_KEY",
        ) as client:
            first = client.complete(
                messages("Ünïcode belief ✓"), seed=3, temperature=0.7, max_tokens=64
            )
            again = client.complete(
                messages("Ünïcode belief ✓"), seed=3, temperature=0.7, max_tokens=64
            )
            other_seed = client.complete(
                messages("Ünïcode belief ✓"), seed=4, temperature=0.7, max_tokens=64
            )
        assert len(handler.received) == 2  # the repeat came from the cache
        assert handler.received[0] == {
            "model": "tiny-model",
            "messages": messages("Ünïcode belief ✓"),
            "seed": 3,
            "temperature": 0.7,
            "max_tokens": 64,
        }
        assert handler.auth == [f"Bearer {SECRET}"] * 2
    assert not first.from_cache and again.from_cache
    assert first.text.startswith("seed 3 t=0.7 «Ünïcode belief ✓»")
    assert other_seed.text.startswith("seed 4")
    assert first.model == "served-model-7b" and first.requested_model == "tiny-model"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (11, 5)
    assert first.params == {"seed": 3, "temperature": 0.7, "max_tokens": 64}
    assert first.finish_reason == "stop"
    # The key: method, URL and the JSON body with sorted keys.
    body = {
        "max_tokens": 64,
        "messages": messages("Ünïcode belief ✓"),
        "model": "tiny-model",
        "seed": 3,
        "temperature": 0.7,
    }
    assert first.request_hash == request_hash(
        "POST", url + "/v1/chat/completions", json.dumps(body)
    )
    stored = cache.read_bytes()
    assert SECRET.encode() not in stored and b"Bearer" not in stored

    # Replay with every connection refused: the same replies, byte for byte.
    monkeypatch.delenv("SGRGYM_CHAT_KEY")
    no_connections(monkeypatch)
    with ChatClient(url + "/v1", "tiny-model", cache_path=cache) as replay:
        replayed = replay.complete(
            messages("Ünïcode belief ✓"), seed=3, temperature=0.7, max_tokens=64
        )
        assert replayed.from_cache
        assert replayed.model_dump_json(
            exclude={"from_cache", "attempts"}
        ) == first.model_dump_json(exclude={"from_cache", "attempts"})
        changed = replay.body(messages("a changed prompt"), seed=3, temperature=0.7, max_tokens=64)
        missing = request_hash("POST", url + "/v1/chat/completions", json.dumps(changed))
        with pytest.raises(UserError, match=rf"request {missing}, model tiny-model"):
            replay.complete(messages("a changed prompt"), seed=3, temperature=0.7, max_tokens=64)
        with pytest.raises(UserError, match="not in the cache"):
            replay.complete(messages("Ünïcode belief ✓"), seed=3, temperature=0.0, max_tokens=64)


def test_refresh_sends_again_and_replay_needs_a_cache(
    tmp_path: Path, handler: type[ChatHandler], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "chat.sqlite"
    with serve_http(handler) as url:
        with ChatClient(url, "m", cache_path=cache, mode="record") as client:
            client.complete(messages("x"), seed=0)
        with ChatClient(url, "m", cache_path=cache, mode="refresh") as client:
            refreshed = client.complete(messages("x"), seed=0)
        assert len(handler.received) == 2 and not refreshed.from_cache
    with pytest.raises(UserError, match="no chat completion cache to replay from"):
        ChatClient(url, "m", cache_path=tmp_path / "absent.sqlite")
    with pytest.raises(UserError, match="cache mode must be one of"):
        ChatClient(url, "m", cache_path=cache, mode="live")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="set OPENAI_API_KEY"):
        ChatClient("https://llm.example.invalid/v1", "m", cache_path=cache, mode="record")


def test_an_edited_reply_is_refused_and_an_old_recording_is_sealed_once(
    tmp_path: Path,
    handler: type[ChatHandler],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sqlite3

    import requests_cache

    from sgrgym.cli import main
    from sgrgym.llm.http import CHECKSUMS

    cache = tmp_path / "chat.sqlite"
    with (
        serve_http(handler) as url,
        ChatClient(url + "/v1", "tiny-model", cache_path=cache, mode="record") as client,
    ):
        first = client.complete(messages("belief"), seed=1)

    def replay() -> str:
        with ChatClient(url + "/v1", "tiny-model", cache_path=cache) as again:
            return again.complete(messages("belief"), seed=1).text

    no_connections(monkeypatch)
    assert replay() == first.text
    # An old recording (no checksum table) is refused until it is sealed once.
    db = sqlite3.connect(cache)
    db.execute(f"DROP TABLE {CHECKSUMS}")
    db.commit()
    db.close()
    with pytest.raises(UserError, match=r"has no entry checksums .*`sgrgym llm seal"):
        replay()
    assert main(["llm", "seal", str(cache)]) == 0
    assert "1 entry checksum(s) added" in capsys.readouterr().out
    assert replay() == first.text
    # A reply edited after recording (to other valid JSON) is refused, not replayed.
    session = requests_cache.CachedSession(str(cache), backend="sqlite", serializer="json")
    stored = session.cache.get_response(first.request_hash)
    assert stored is not None
    body = json.loads(stored.content)
    body["choices"][0]["message"]["content"] = "Completeness: 0.99"
    stored._content = json.dumps(body).encode()
    session.cache.save_response(stored, cache_key=first.request_hash)
    session.close()
    with pytest.raises(UserError, match="was changed after it was recorded"):
        replay()


def test_no_server_is_said_at_once_with_the_cure(tmp_path: Path) -> None:
    """A refused first connection is not retried for 15 s: nothing listens there."""
    from sgrgym.llm.http import RecordedPost

    with socket.socket() as probe:  # a free loopback port, closed again: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    post = RecordedPost(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        tmp_path / "calls.sqlite",
        mode="record",
        sleep=waits.append,
    )
    with pytest.raises(UserError, match=r"no server answers there.*sgrgym llm serve"):
        post.send({"model": "m"}, label="model m")
    post.close()
    assert waits == []
