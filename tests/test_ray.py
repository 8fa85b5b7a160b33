"""``--executor ray``: episodes as Ray tasks on a local cluster (a head and a second node, both
on 127.0.0.1, one CPU each), written by the driver in episode order: the same files as
``--jobs 1`` (timings aside), a resumed run keeps the records already written, and a task
whose worker process dies is run again."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

# Before Ray is imported: no usage statistics, every address on the loopback interface.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is not installed (the `ray` extra)")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from run_files import folder_files, run_ok  # noqa: E402

from sgrgym.cli import main  # noqa: E402
from sgrgym.runs.parallel import RayExecutor, remote_map  # noqa: E402

DOCS = ["howto/auth-remote-user", "ref/models/fields"]
SGR_ORACLE = ["sgr", "run", "--agent", "oracle", "--limit", "6", "--quiet", "--json"]
SEEKER = [
    *("seeker", "run", "--agent", "sentences", "--steps", "3", "--seeds", "1"),
    *("--docs", *DOCS, "--quiet", "--json"),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Ray cluster of two nodes on 127.0.0.1 (one CPU each); its address."""
    made = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        made.add_node(num_cpus=1)
        made.wait_for_nodes()
        assert made.address.startswith("127.0.0.1:")
        yield made.address
    finally:
        made.shutdown()


def test_sgr_run_on_ray_writes_the_files_of_one_job(cluster: str, tmp_path: Path) -> None:
    run_ok(SGR_ORACLE, tmp_path / "local", "--jobs", "1")
    run_ok(SGR_ORACLE, tmp_path / "ray", "--executor", "ray", "--address", cluster)
    assert folder_files(tmp_path / "ray") == folder_files(tmp_path / "local")


def test_a_resumed_ray_run_keeps_the_records_written(cluster: str, tmp_path: Path) -> None:
    """A driver killed after two episodes: the folder has their records and no end marker; the
    Ray run resumes from them to the files of an uninterrupted run."""
    run_ok(SGR_ORACLE, tmp_path / "local", "--jobs", "1")
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "local", resumed)
    for name in ("complete.json", "scores.json"):
        (resumed / name).unlink()
    for name in ("answers.jsonl", "trajectories.jsonl", "timings.jsonl"):
        lines = (resumed / name).read_text().splitlines(keepends=True)
        (resumed / name).write_text("".join(lines[:2]))
    run_ok(SGR_ORACLE, resumed, "--executor", "ray", "--address", cluster)
    assert folder_files(resumed) == folder_files(tmp_path / "local")


def test_seeker_run_on_ray_writes_the_files_of_one_job(cluster: str, tmp_path: Path) -> None:
    run_ok(SEEKER, tmp_path / "local", "--jobs", "1")
    run_ok(SEEKER, tmp_path / "ray", "--executor", "ray", "--address", cluster, "--jobs", "2")
    assert folder_files(tmp_path / "ray") == folder_files(tmp_path / "local")


def _die_once(marker: str, item: int) -> int:
    """Item 2's first try kills its worker process (a lost worker, not an error)."""
    if item == 2 and not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)
    return item * 10


def test_a_task_whose_worker_dies_is_run_again(cluster: str, tmp_path: Path) -> None:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers can't import tests
    marker = tmp_path / "died"
    setup = partial(str, marker)
    results = list(remote_map(RayExecutor(address=cluster), setup, _die_once, range(6)))
    assert results == [0, 10, 20, 30, 40, 50]
    assert marker.exists()  # the first try did die


def test_agent_clis_are_refused_on_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sgr", "run", "--agent", "cli:claude-code", "--executor", "ray"]
    assert main([*argv, "--out", str(tmp_path / "out")]) != 0
    assert "--executor ray: --agent cli:claude-code" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_address_needs_the_ray_executor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SGR_ORACLE, "--address", "127.0.0.1:1", "--out", str(tmp_path / "out")]) != 0
    assert "--address: only with --executor ray" in capsys.readouterr().err
