"""An OpenAI-compatible chat-completions client, recorded with requests-cache.

``ChatClient.complete(messages, seed=..., temperature=...)`` posts ``<base_url>/chat/completions``
through :class:`~sgrgym.llm.http.RecordedPost` (record / replay / refresh). The request carries
the model, the messages, the seed, the temperature and any other sampling parameters given
(``top_p``, ``max_tokens``...); the :class:`ChatReply` keeps the reply text, the model id the
server returned, the token usage, the request hash (the cache key) and the parameters sent, so
a result can say exactly what produced it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sgrgym.closing import Closing
from sgrgym.errors import UserError
from sgrgym.llm.http import RecordedPost

DEFAULT_TIMEOUT_S = 300.0


class Usage(BaseModel):
    """Token usage as the server reported it (0 where it reported nothing)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    choices: list[_Choice]
    usage: Usage | None = None


class ChatReply(BaseModel):
    """One chat completion and what produced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    model: str  # the model id the server returned (the requested one if it returned none)
    requested_model: str
    usage: Usage
    finish_reason: str | None
    request_hash: str
    from_cache: bool
    params: dict[str, Any]  # seed, temperature and the other sampling parameters sent


class ChatClient(Closing):
    """Chat completions from one model at ``base_url`` (OpenAI-compatible)."""

    def __init__(
        self, base_url: str, model: str, *, cache_path: Path, mode: str = "replay",
        api_key_env: str = "OPENAI_API_KEY", timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:  # fmt: skip
        if not model:
            raise UserError("the chat client needs a model name (--llm-model)")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.post = RecordedPost(
            self.base_url + "/chat/completions", cache_path, mode=mode,
            api_key_env=api_key_env, what="chat completion", timeout_s=timeout_s,
        )  # fmt: skip

    @property
    def mode(self) -> str:
        return self.post.mode

    def body(
        self, messages: list[dict[str, str]], *, seed: int | None = None,
        temperature: float | None = None, **params: Any,
    ) -> dict[str, Any]:  # fmt: skip
        """The request body (what the cache key is computed from)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if seed is not None:
            body["seed"] = seed
        if temperature is not None:
            body["temperature"] = temperature
        body.update({k: v for k, v in params.items() if v is not None})
        return body

    def complete(
        self, messages: list[dict[str, str]], *, seed: int | None = None,
        temperature: float | None = None, **params: Any,
    ) -> ChatReply:  # fmt: skip
        """One completion of ``messages`` with the given seed and sampling parameters."""
        body = self.body(messages, seed=seed, temperature=temperature, **params)
        content, from_cache, key = self.post.post(body, label=f"model {self.model}")
        try:
            parsed = _Completion.model_validate_json(content)
        except ValidationError as exc:
            raise UserError(f"{self.post.url}: malformed chat completion (request {key}): "
                            f"{exc}") from None  # fmt: skip
        if not parsed.choices:
            raise UserError(f"{self.post.url}: a chat completion without choices ({key})")
        choice = parsed.choices[0]
        sent = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return ChatReply(
            text=choice.message.content or "", model=parsed.model or self.model,
            requested_model=self.model, usage=parsed.usage or Usage(),
            finish_reason=choice.finish_reason, request_hash=key, from_cache=from_cache,
            params=sent,
        )  # fmt: skip

    def close(self) -> None:
        self.post.close()
