"""The tasks Inspect AI finds through the ``inspect_ai`` entry point (``sgrgym/sgr_bench``,
``sgrgym/seeker_gym``)."""

from __future__ import annotations

from sgrgym.inspect.seeker_task import seeker_gym
from sgrgym.inspect.sgr_task import sgr_bench

__all__ = ["seeker_gym", "sgr_bench"]
