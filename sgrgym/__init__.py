"""sgrgym: offline, deterministic harness for SeekerGym and SGR-Bench.

The public API, imported lazily (``import sgrgym`` loads nothing heavy):

- :func:`make_seeker_env`: a SeekerGym environment (default: the demo corpus);
- :func:`make_sgr_env`: an SGR-Bench environment (default: the demo pack);
- :func:`open_sgr_world`: the SGR environment with its tasks and reference state paths;
- :func:`score_sgr_answer`: Item-F1, Row-F1 and P.O.A. of one answer to one SGR task;
- :class:`UserError`: what every sgrgym error a user can cause is (the CLI's exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sgrgym.core.version import __version__

if TYPE_CHECKING:
    from sgrgym.core.errors import UserError
    from sgrgym.seeker.make import make_env as make_seeker_env
    from sgrgym.sgr.make import make_env as make_sgr_env
    from sgrgym.sgr.make import open_world as open_sgr_world
    from sgrgym.sgr.score import score_answer as score_sgr_answer

__all__ = [
    "UserError",
    "__version__",
    "make_seeker_env",
    "make_sgr_env",
    "open_sgr_world",
    "score_sgr_answer",
]

_LAZY = {
    "UserError": ("sgrgym.core.errors", "UserError"),
    "make_seeker_env": ("sgrgym.seeker.make", "make_env"),
    "make_sgr_env": ("sgrgym.sgr.make", "make_env"),
    "open_sgr_world": ("sgrgym.sgr.make", "open_world"),
    "score_sgr_answer": ("sgrgym.sgr.score", "score_answer"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    return getattr(importlib.import_module(module), attribute)
