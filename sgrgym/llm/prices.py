"""Token prices (USD per million tokens) from a JSON table: the packaged one or ``--prices``.

Format: ``{"models": {"<name>": {"prompt": <usd>, "completion": <usd>}}}``. Reasoning tokens
are billed as completion tokens (they are part of ``completion_tokens`` where servers report
them). A model missing from the table costs 0 and is counted as unpriced, never guessed.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    about: str = ""
    models: dict[str, Price]
    sha256: str = ""  # of the file it was read from

    def price(self, *names: str) -> Price | None:
        """The first of ``names`` that the table lists."""
        for name in names:
            if name in self.models:
                return self.models[name]
        return None

    def cost(self, prompt_tokens: int, completion_tokens: int, *names: str) -> float | None:
        """USD for one call, or None when no name is priced."""
        price = self.price(*names)
        if price is None:
            return None
        return round((prompt_tokens * price.prompt + completion_tokens * price.completion) / 1e6, 9)


def _parse(raw: bytes, where: str) -> PriceTable:
    try:
        table = PriceTable.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        raise UserError(
            f"{where}: not a price table ({exc}); expected "
            '{"models": {"NAME": {"prompt": USD, "completion": USD}}}'
        ) from None
    return table.model_copy(update={"sha256": sha256_bytes(raw)})


def load_prices(path: Path | None = None) -> PriceTable:
    """The table at ``path`` (``--prices``), or the packaged one."""
    if path is None:
        raw = (resources.files("sgrgym.llm") / "data" / "prices.json").read_bytes()
        return _parse(raw, "sgrgym/llm/data/prices.json")
    if not path.is_file():
        raise UserError(f"{path}: no such price table (--prices)")
    return _parse(path.read_bytes(), str(path))
