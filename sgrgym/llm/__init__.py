"""OpenAI-compatible HTTP clients (chat completions, embeddings) recorded with requests-cache.

:mod:`sgrgym.llm.http` holds the one recorded JSON-over-HTTP session that every client uses
(cache key, record/replay/refresh modes, secrets kept out of the cache); :mod:`sgrgym.llm.chat`
is the chat-completions client on top of it.
"""
