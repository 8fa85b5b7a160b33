"""The settings of a recorded chat model, as ``--llm-*`` options give them (a pydantic model,
apart from :mod:`sgrgym.llm.options` so that building the CLI parser imports no pydantic)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class LLMOptions(BaseModel):
    """Which model, where, how it samples and where its calls are recorded."""

    model: str
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    cache: Path
    mode: str = "replay"
    temperature: float | None = 0.0
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    prices: Path | None = None

    def sampling(self) -> dict[str, float | int]:
        """The sampling parameters sent with every request (seed apart)."""
        params = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        return {k: v for k, v in params.items() if v is not None}
