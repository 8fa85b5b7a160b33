"""Network guard: refuse every connection that does not stay on this machine.

sgrgym runs offline by default. Inside :func:`loopback_only`, a socket ``connect`` to any
address other than loopback (127.0.0.0/8, ::1) or a Unix socket raises
:class:`NetworkBlockedError` before a packet leaves the process.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class NetworkBlockedError(ConnectionError):
    """A non-loopback connection was attempted while the network guard was on."""


def is_loopback(address: Any) -> bool:
    """True for Unix-socket paths and loopback IP addresses (and ``localhost``)."""
    if isinstance(address, (str, bytes)):
        return True  # AF_UNIX path
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it would need resolving, which may leave the machine


@contextmanager
def loopback_only() -> Iterator[None]:
    """Within the block, connections that leave the machine raise NetworkBlockedError."""
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def check(address: Any) -> None:
        if not is_loopback(address):
            raise NetworkBlockedError(
                f"blocked a connection to {address!r}: sgrgym runs offline "
                "(only 127.0.0.1/::1 are allowed)"
            )

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return original_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = original_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = original_connect_ex  # type: ignore[method-assign]
