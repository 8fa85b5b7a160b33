"""The network guard lets loopback through and refuses everything else."""

from __future__ import annotations

import socket
import threading

import pytest

from sgrgym.core.netguard import NetworkBlockedError, is_loopback


def test_non_loopback_connection_is_refused() -> None:
    # The autouse fixture in conftest.py has the guard on for every test.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        with pytest.raises(NetworkBlockedError, match="sgrgym runs offline"):
            s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
        with pytest.raises(NetworkBlockedError):
            s.connect_ex(("example.org", 443))


def test_loopback_connection_works() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        accepted.append(conn.recv(5))
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"hello")
    thread.join(timeout=5)
    server.close()
    assert accepted == [b"hello"]


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (("127.0.0.1", 1), True),
        (("::1", 1, 0, 0), True),
        (("localhost", 1), True),
        ("/run/app.sock", True),
        (("10.0.0.1", 1), False),
        (("pypi.org", 443), False),
    ],
)
def test_is_loopback(address: object, expected: bool) -> None:
    assert is_loopback(address) is expected
