"""``--executor ray``: the ordered episode loop of :mod:`sgrgym.runs.parallel` on a Ray cluster.

Imported only when a run asks for Ray (``import sgrgym`` and the CLI never import ray). Each
item is one Ray task; a worker process builds the run's state (environment and agent) with the
run's ``setup`` the first time it gets one of the run's tasks and keeps it for the next ones.
The state is opened from the data home with the same open functions as on the driver, so every
pack, store, corpus and model file is verified by its sha256 on the worker too. Results come
back in the items' order, so the driver writes the same records as the local loop. A task whose
worker process is lost is run again (``max_retries``); an error raised by an episode is not
retried: it ends the run as it does locally, the pending tasks cancelled.

Ray is kept on this machine and quiet: its usage statistics are off
(``RAY_USAGE_STATS_ENABLED=0``), a local cluster has no dashboard and binds to 127.0.0.1, and
workers' output is not forwarded to the driver (whose standard output may be ``--json``).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import deque
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sgrgym.core.errors import UserError
from sgrgym.runs.executor import RayExecutor

Item = TypeVar("Item")
Result = TypeVar("Result")
State = TypeVar("State")

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_STATES: dict[str, Any] = {}  # per worker process: the state of the run it last served


def _quiet_environment(address: str | None) -> None:
    """Ray's settings that must be in place before it is imported: no usage statistics; the
    loopback address as this node's address unless the cluster is elsewhere."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    host = (address or "127.0.0.1").rsplit(":", 1)[0]
    if address is None or host in LOOPBACK:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # node IP: 127.0.0.1


def _import_ray(address: str | None) -> Any:
    _quiet_environment(address)
    try:
        import ray
    except ImportError as error:
        raise UserError(
            "--executor ray needs Ray: pip install 'sgrgym[ray]' (with -c constraints.txt)"
        ) from error
    return ray


def _worker_state(
    token: str, setup: Callable[[], Any], cwd: str, home: str | None
) -> Any:  # runs on the worker
    state = _STATES.get(token)
    if state is None:
        _STATES.clear()  # a worker serves one run at a time
        if home is not None:
            os.environ["SGRGYM_HOME"] = home
        if Path(cwd).is_dir():
            os.chdir(cwd)  # the driver's relative paths (and data home) mean the same here
        state = _STATES[token] = setup()
    return state


def _episode(
    token: str,
    setup: Callable[[], State],
    work: Callable[[State, Item], Result],
    item: Item,
    cwd: str,
    home: str | None,
) -> Result:  # runs on the worker
    return work(_worker_state(token, setup, cwd, home), item)


def connect(ray: Any, executor: RayExecutor) -> bool:
    """Connect this process to the executor's cluster, starting a local one without an
    address; whether this call connected (and so must disconnect)."""
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "logging_level": logging.WARNING,
        "log_to_driver": False,
        "configure_logging": True,
    }
    try:
        if executor.address is None:
            ray.init(
                address="local",  # a new cluster, never one found on the machine
                num_cpus=executor.cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                **common,
            )
        else:
            ray.init(address=executor.address, **common)
    except (ConnectionError, ValueError, RuntimeError) as error:
        where = executor.address or "a local cluster on 127.0.0.1"
        raise UserError(f"--executor ray: cannot connect to {where}: {error}") from error
    return True


def ray_ordered_map(
    executor: RayExecutor,
    setup: Callable[[], State],
    work: Callable[[State, Item], Result],
    items: Sequence[Item],
) -> Generator[Result, None, None]:
    """``work(state, item)`` for each item as Ray tasks, yielded in the order of ``items``; at
    most twice the cluster's CPUs in flight, so a run that ends early leaves little begun."""
    if not items:
        return
    ray = _import_ray(executor.address)
    started = connect(ray, executor)
    pending: deque[Any] = deque()
    try:
        remote = ray.remote(num_cpus=1, max_retries=executor.max_retries)(_episode)
        token = uuid.uuid4().hex
        setup_ref, work_ref = ray.put(setup), ray.put(work)
        cwd, home = os.getcwd(), os.environ.get("SGRGYM_HOME")
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", executor.cpus)))
        queue = iter(items)

        def submit() -> None:
            for item in queue:
                pending.append(remote.remote(token, setup_ref, work_ref, item, cwd, home))
                return

        for _ in range(window):
            submit()
        while pending:
            ref = pending.popleft()
            try:
                result = ray.get(ref)
            except ray.exceptions.RayTaskError as error:
                raise error.as_instanceof_cause() from None
            submit()
            yield result
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started:
            ray.shutdown()
