"""The settings of ``--executor ray`` (no Ray import here: :mod:`sgrgym.runs.ray_executor`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RayExecutor:
    """Where ``--executor ray`` runs episodes: the Ray cluster at ``address`` (``host:port``
    of a running head, or ``auto``), or, without one, a local cluster started for the run on
    127.0.0.1 with ``cpus`` CPUs (``--jobs``) and stopped after it. A task whose worker
    process dies is run again, up to ``max_retries`` times (Ray's task retries)."""

    address: str | None = None
    cpus: int = 1
    max_retries: int = 3
