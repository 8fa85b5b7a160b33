"""The LLM command-line options shared by ``seeker run``, ``seeker calibrate`` and ``sgr run``,
and the one function that turns them into a metered chat client.

``--llm-model local:NAME`` names a model served by ``sgrgym llm serve --model NAME``: the base
URL defaults to that server's (``http://127.0.0.1:8080/v1``, or ``--base-url``).

This module imports no pydantic (``sgrgym --help`` stays fast): the options model is
:class:`sgrgym.llm.settings.LLMOptions`, also reachable here as ``LLMOptions``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.core.argtypes import SEED, number_in, positive_int
from sgrgym.core.errors import UserError

if TYPE_CHECKING:
    from sgrgym.llm.chat import ChatClient
    from sgrgym.llm.settings import LLMOptions
    from sgrgym.llm.usage import CallMeter

LOCAL_PREFIX = "local:"
LOCAL_PORT = 8080


def add_llm_options(
    parser: argparse.ArgumentParser,
    model_flags: tuple[str, ...] = ("--llm-model",),
    temperature: float = 0.0,
    leave_out: tuple[str, ...] = (),
    description: str | None = None,
) -> argparse._ArgumentGroup:
    """The option group (returned, so a command may add its own options to it).

    ``leave_out`` names options a command has no use for, among ``--llm-seed`` (its protocol
    sets the seeds), ``--prices`` (it reports no cost) and ``--jobs`` (no parallel episodes),
    or already has with the same meaning: ``--base-url``, ``--api-key-env`` and ``--jobs``
    (``sgr run`` shares them with its agent CLI options; an unset ``--api-key-env`` then
    means ``OPENAI_API_KEY``).
    """
    allowed = {"--llm-seed", "--prices", "--jobs", "--base-url", "--api-key-env"}
    unknown = set(leave_out) - allowed
    if unknown:
        raise ValueError(f"add_llm_options cannot leave out {sorted(unknown)}")
    group = parser.add_argument_group("LLM (--agent llm / --estimator llm)", description)
    group.add_argument(
        *model_flags,
        dest="llm_model",
        metavar="NAME",
        help="chat model name; local:NAME uses `sgrgym llm serve`",
    )
    if "--base-url" not in leave_out:
        group.add_argument("--base-url", metavar="URL", help="OpenAI-compatible API base URL")
    if "--api-key-env" not in leave_out:
        group.add_argument(
            "--api-key-env",
            default="OPENAI_API_KEY",
            metavar="VAR",
            help="environment variable holding the API key (never stored)",
        )
    group.add_argument(
        "--temperature",
        type=number_in(0.0, 2.0),
        default=temperature,
        metavar="T",
        help="sampling temperature (default %(default)s: ours, the papers give none)",
    )
    group.add_argument(
        "--top-p",
        type=number_in(0.0, 1.0, low_open=True),
        metavar="P",
        help="nucleus sampling parameter",
    )
    group.add_argument("--max-tokens", type=positive_int, metavar="N", help="reply length limit")
    if "--llm-seed" not in leave_out:
        group.add_argument(
            "--llm-seed",
            type=SEED,
            metavar="N",
            help="seed sent with every request (default: the episode's seed)",
        )
    group.add_argument(
        "--llm-cache",
        type=Path,
        metavar="FILE",
        help="recorded chat completions (requests-cache SQLite)",
    )
    group.add_argument(
        "--llm-mode",
        choices=["record", "replay", "refresh"],
        default="replay",
        help="replay (offline, default), record (fill misses), refresh",
    )
    if "--prices" not in leave_out:
        group.add_argument(
            "--prices",
            type=Path,
            metavar="FILE",
            help="price table JSON (default: the packaged one)",
        )
    if "--jobs" not in leave_out:
        group.add_argument(
            "--jobs",
            type=int,
            default=1,
            metavar="N",
            help="episodes run in parallel (default 1; results are identical)",
        )
    return group


def __getattr__(name: str) -> Any:
    if name == "LLMOptions":
        from sgrgym.llm.settings import LLMOptions as Options

        return Options
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_base_url(model: str, base_url: str | None) -> str | None:
    """``base_url``, or for ``local:NAME`` the URL of ``sgrgym llm serve`` (its default port)."""
    if base_url is None and model.startswith(LOCAL_PREFIX):
        return f"http://127.0.0.1:{LOCAL_PORT}/v1"
    return base_url


def llm_options(args: argparse.Namespace, what: str = "--agent llm") -> LLMOptions:
    from sgrgym.llm.settings import LLMOptions as Options

    model = getattr(args, "llm_model", None)
    if not model:
        raise UserError(f"{what} needs a model: --model NAME (local:NAME for llm serve)")
    base_url = resolve_base_url(model, args.base_url)
    if not base_url:
        raise UserError(f"{what} needs --base-url URL (an OpenAI-compatible API)")
    if args.llm_cache is None:
        raise UserError(f"{what} needs --llm-cache FILE (where model calls are recorded)")
    if getattr(args, "jobs", 1) < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    return Options(
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


def open_client(options: LLMOptions) -> ChatClient:
    """The recorded chat client the options name (every LLM command opens it here)."""
    from sgrgym.llm.chat import ChatClient as Client

    return Client(
        options.base_url,
        options.model,
        cache_path=options.cache,
        mode=options.mode,
        api_key_env=options.api_key_env,
    )


def open_meter(options: LLMOptions) -> CallMeter:
    from sgrgym.llm.prices import load_prices
    from sgrgym.llm.usage import CallMeter as Meter

    return Meter(open_client(options), load_prices(options.prices))
