"""SGR-Bench: tasks, answers and metrics, the replica sites, the environment, agents."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgrgym.sgr.make import make_env

__all__ = ["make_env"]


def __getattr__(name: str) -> Any:  # lazy: importing the package loads nothing heavy
    if name == "make_env":
        from sgrgym.sgr.make import make_env

        return make_env
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
