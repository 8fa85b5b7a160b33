"""Exported WACZ files in other tools: pywb loads and replays them, py-wacz validates them.

Neither tool is a dependency of sgrgym: each lives in its own virtualenv under
``benchmarks/out/`` (pywb from ``benchmarks/requirements-pywb.txt``, made by the replay
benchmark; py-wacz with ``pip install wacz==0.6.0``). The tests are skipped when a virtualenv
is absent.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from archive_helpers import DATE, response, write_warc
from site_checks import http_get

from sgrgym.snapshot.wacz import export_wacz, import_archives

ROOT = Path(__file__).resolve().parents[1]
PYWB = ROOT / "benchmarks" / "out" / "pywb-venv" / "bin"
WACZ = ROOT / "benchmarks" / "out" / "wacz-venv" / "bin"
SITE = "http://site.example"
PAGES = {
    f"{SITE}/": b"<html><title>Home</title><a href='/q?node=af%2fcd'>node</a></html>",
    f"{SITE}/q?node=af%2fcd": b"<html><title>Node</title>a percent-encoded query</html>",
    f"{SITE}/wiki/C%2B%2B": b"<html><title>C++</title>an encoded path</html>",
    f"{SITE}/untitled": b"<html><title></title>no title at all</html>",
}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wacz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("interop")
    source = write_warc(root / "pages.warc.gz", [response(u, b) for u, b in PAGES.items()])
    import_archives([source], root / "pages", fixed_date=DATE)
    return export_wacz(root / "pages", root / "pages.wacz").path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, target: str) -> tuple[int, bytes]:
    return http_get(f"http://127.0.0.1:{port}", target, timeout=30)


@pytest.fixture(scope="module")
def wayback(wacz: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if not (PYWB / "wayback").exists():
        pytest.skip(f"pywb is not installed in {PYWB.parent} (see benchmarks/)")
    root = tmp_path_factory.mktemp("pywb")
    manager = str(PYWB / "wb-manager")
    subprocess.run([manager, "init", "coll"], cwd=root, check=True, capture_output=True)
    added = subprocess.run(
        [manager, "add", "--unpack-wacz", "coll", str(wacz)],
        cwd=root,
        capture_output=True,
        text=True,
    )
    output = added.stdout + added.stderr
    assert added.returncode == 0 and "does not contain" not in output, output
    port = _free_port()
    log = (root / "wayback.log").open("wb")
    proc = subprocess.Popen(
        [str(PYWB / "wayback"), "-b", "127.0.0.1", "-p", str(port)],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(300):
            try:
                _get(port, "/")
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.mark.parametrize("url", sorted(PAGES))
def test_pywb_replays_every_exported_page(wayback: int, url: str) -> None:
    status, body = _get(wayback, f"/coll/20261130000000id_/{url}")
    assert (status, body) == (200, PAGES[url])


def test_py_wacz_validates_the_export(wacz: Path) -> None:
    if not (WACZ / "wacz").exists():
        pytest.skip(f"py-wacz is not installed in {WACZ.parent}")
    checked = subprocess.run(
        [str(WACZ / "wacz"), "validate", "-f", str(wacz)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
