"""The LLM command-line options shared by ``seeker run``, ``seeker calibrate`` and ``sgr run``,
and the one function that turns them into a metered chat client.

``--llm-model local:NAME`` names a model served by ``sgrgym llm serve --model NAME``: the base
URL defaults to that server's (``http://127.0.0.1:8080/v1``, or ``--base-url``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.errors import UserError

if TYPE_CHECKING:
    from sgrgym.llm.usage import CallMeter

LOCAL_PREFIX = "local:"
LOCAL_PORT = 8080


def add_llm_options(
    parser: argparse.ArgumentParser,
    model_flags: tuple[str, ...] = ("--llm-model",),
    temperature: float = 0.0,
    omit: tuple[str, ...] = (),
    description: str | None = None,
) -> argparse._ArgumentGroup:
    """The option group (returned, so a command may add its own options to it).

    ``omit``: flags the command already has with the same meaning (``sgr run`` shares
    ``--base-url``, ``--api-key-env`` and ``--jobs`` with its agent CLI options).
    """
    group = parser.add_argument_group("LLM (--agent llm / --estimator llm)", description)

    def option(*flags: str, **kwargs: Any) -> None:
        if not set(flags) & set(omit):
            group.add_argument(*flags, **kwargs)

    option(
        *model_flags,
        dest="llm_model",
        metavar="NAME",
        help="chat model name; local:NAME uses `sgrgym llm serve`",
    )
    option("--base-url", metavar="URL", help="OpenAI-compatible API base URL")
    option(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (never stored)",
    )
    option(
        "--temperature",
        type=float,
        default=temperature,
        metavar="T",
        help="sampling temperature (default %(default)s: ours, the papers give none)",
    )
    option("--top-p", type=float, metavar="P", help="nucleus sampling parameter")
    option("--max-tokens", type=int, metavar="N", help="reply length limit")
    option(
        "--llm-seed",
        type=int,
        metavar="N",
        help="seed sent with every request (default: the episode's seed)",
    )
    option(
        "--llm-cache",
        type=Path,
        metavar="FILE",
        help="recorded chat completions (requests-cache SQLite)",
    )
    option(
        "--llm-mode",
        choices=["record", "replay", "refresh"],
        default="replay",
        help="replay (offline, default), record (fill misses), refresh",
    )
    option(
        "--prices", type=Path, metavar="FILE", help="price table JSON (default: the packaged one)"
    )
    option(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="episodes run in parallel (default 1; results are identical)",
    )
    return group


@dataclass(frozen=True)
class LLMOptions:
    """What the LLM options say (a dataclass: building the command line imports no pydantic)."""

    model: str
    base_url: str
    cache: Path
    api_key_env: str = "OPENAI_API_KEY"
    mode: str = "replay"
    temperature: float | None = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
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


def llm_options(args: argparse.Namespace, what: str = "--agent llm") -> LLMOptions:
    model = getattr(args, "llm_model", None)
    if not model:
        raise UserError(f"{what} needs a model: --llm-model NAME (local:NAME for llm serve)")
    base_url = args.base_url
    if base_url is None and model.startswith(LOCAL_PREFIX):
        base_url = f"http://127.0.0.1:{LOCAL_PORT}/v1"
    if not base_url:
        raise UserError(f"{what} needs --base-url URL (an OpenAI-compatible API)")
    if args.llm_cache is None:
        raise UserError(f"{what} needs --llm-cache FILE (where model calls are recorded)")
    if getattr(args, "jobs", 1) < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    return LLMOptions(
        model=model,
        base_url=base_url,
        api_key_env=args.api_key_env or "OPENAI_API_KEY",
        cache=args.llm_cache,
        mode=args.llm_mode,
        temperature=args.temperature,
        top_p=getattr(args, "top_p", None),
        max_tokens=args.max_tokens,
        seed=getattr(args, "llm_seed", None),
        prices=getattr(args, "prices", None),
    )


def open_meter(options: LLMOptions) -> CallMeter:
    from sgrgym.llm.chat import ChatClient
    from sgrgym.llm.prices import load_prices
    from sgrgym.llm.usage import CallMeter as Meter

    prices = load_prices(options.prices)
    client = ChatClient(
        options.base_url,
        options.model,
        cache_path=options.cache,
        mode=options.mode,
        api_key_env=options.api_key_env,
    )
    return Meter(client, prices)
