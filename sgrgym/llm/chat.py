"""An OpenAI-compatible chat-completions client, recorded with requests-cache.

``ChatClient.complete(messages, seed=..., temperature=...)`` posts ``<base_url>/chat/completions``
through :class:`~sgrgym.llm.http.RecordedPost` (record / replay / refresh). The request carries
the model, the messages, the seed, the temperature and any other sampling parameters given
(``top_p``, ``max_tokens``...) and, for tool calling, the ``tools`` offered. The
:class:`ChatReply` keeps the reply text, the tool calls (native ``tool_calls``, or else the
ones written in the text: :mod:`sgrgym.llm.toolcalls`, counted apart), the model id and
system fingerprint the server returned, the token usage (reasoning tokens where reported),
the request hash (the cache key), the network attempts and the parameters sent, so a result
can say exactly what produced it (:meth:`ChatReply.record`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from sgrgym.core.closing import Closing
from sgrgym.core.errors import UserError
from sgrgym.llm.http import RecordedPost
from sgrgym.llm.toolcalls import ToolCall, arguments_of, text_tool_calls

DEFAULT_TIMEOUT_S = 300.0


class Usage(BaseModel):
    """Token usage as the server reported it (0 where it reported nothing)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0  # from completion_tokens_details where the server reports it


class _Details(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning_tokens: int | None = None


class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    completion_tokens_details: _Details | None = None

    def usage(self) -> Usage:
        details = self.completion_tokens_details
        return Usage(
            prompt_tokens=self.prompt_tokens or 0,
            completion_tokens=self.completion_tokens or 0,
            total_tokens=self.total_tokens or 0,
            reasoning_tokens=(details.reasoning_tokens or 0) if details else 0,
        )


class _Function(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = ""
    arguments: Any = None


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    function: _Function


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    system_fingerprint: str | None = None
    choices: list[_Choice]
    usage: _Usage | None = None


ToolCallSource = Literal["native", "text", "none"]


class CallRecord(BaseModel):
    """What one model call was and cost, as results files keep it (no cache or timing facts,
    so a replay writes the same record)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_hash: str
    requested_model: str
    model: str
    system_fingerprint: str | None
    params: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost_usd: float | None  # None: the model is not in the price table
    finish_reason: str | None
    tool_calls: int = 0
    tool_call_source: ToolCallSource = "none"


class ChatReply(BaseModel):
    """One chat completion and what produced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    model: str  # the model id the server returned (the requested one if it returned none)
    requested_model: str
    system_fingerprint: str | None = None
    usage: Usage
    finish_reason: str | None
    request_hash: str
    from_cache: bool
    params: dict[str, Any]  # seed, temperature and the other sampling parameters sent
    tool_calls: list[ToolCall] = []
    tool_call_source: ToolCallSource = "none"
    attempts: int = 0  # network attempts (0: from the cache)
    retried: list[str] = []

    def record(self, cost: Callable[[ChatReply], float | None] | None = None) -> CallRecord:
        """The results-file record of this call (``cost``: a price lookup)."""
        return CallRecord(
            request_hash=self.request_hash,
            requested_model=self.requested_model,
            model=self.model,
            system_fingerprint=self.system_fingerprint,
            params=self.params,
            prompt_tokens=self.usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens,
            reasoning_tokens=self.usage.reasoning_tokens,
            cost_usd=cost(self) if cost else None,
            finish_reason=self.finish_reason,
            tool_calls=len(self.tool_calls),
            tool_call_source=self.tool_call_source,
        )


class ChatClient(Closing):
    """Chat completions from one model at ``base_url`` (OpenAI-compatible)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        cache_path: Path,
        mode: str = "replay",
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if not model:
            raise UserError("the chat client needs a model name (--model)")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.post = RecordedPost(
            self.base_url + "/chat/completions",
            cache_path,
            mode=mode,
            api_key_env=api_key_env,
            what="chat completion",
            timeout_s=timeout_s,
            **({"sleep": sleep} if sleep else {}),
        )

    @property
    def mode(self) -> str:
        return self.post.mode

    def body(
        self,
        messages: list[dict[str, Any]],
        *,
        seed: int | None = None,
        temperature: float | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """The request body (what the cache key is computed from)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if seed is not None:
            body["seed"] = seed
        if temperature is not None:
            body["temperature"] = temperature
        body.update({k: v for k, v in params.items() if v is not None})
        return body

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        seed: int | None = None,
        temperature: float | None = None,
        episode: str = "",
        **params: Any,
    ) -> ChatReply:
        """One completion of ``messages`` with the given seed and sampling parameters.

        ``tools`` (in ``params``) offers OpenAI-style function tools; ``episode`` names the
        episode in a replay miss.
        """
        body = self.body(messages, seed=seed, temperature=temperature, **params)
        label = f"model {self.model}" + (f", episode {episode}" if episode else "")
        sent = self.post.send(body, label=label)
        content, from_cache, key = sent.content, sent.from_cache, sent.request_hash
        try:
            parsed = _Completion.model_validate_json(content)
        except ValidationError as exc:
            raise UserError(
                f"{self.post.url}: malformed chat completion (request {key}): {exc}"
            ) from None
        if not parsed.choices:
            raise UserError(f"{self.post.url}: a chat completion without choices ({key})")
        choice = parsed.choices[0]
        text = choice.message.content or ""
        calls = [
            ToolCall(id=c.id or "", name=c.function.name, arguments=args, raw_arguments=raw)
            for c in choice.message.tool_calls or []
            for args, raw in [arguments_of(c.function.arguments)]
        ]
        source: ToolCallSource = "native" if calls else "none"
        offered = [t.get("function", {}).get("name", "") for t in params.get("tools") or []]
        if not calls and offered:
            calls = text_tool_calls(text, offered)
            source = "text" if calls else "none"
        sent_params = {k: v for k, v in body.items() if k not in ("model", "messages", "tools")}
        return ChatReply(
            text=text,
            model=parsed.model or self.model,
            requested_model=self.model,
            system_fingerprint=parsed.system_fingerprint,
            usage=parsed.usage.usage() if parsed.usage else Usage(),
            finish_reason=choice.finish_reason,
            request_hash=key,
            from_cache=from_cache,
            params=sent_params,
            tool_calls=calls,
            tool_call_source=source,
            attempts=sent.attempts,
            retried=list(sent.retried),
        )

    def close(self) -> None:
        self.post.close()
