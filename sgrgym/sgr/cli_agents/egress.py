"""The egress sandbox: an agent CLI may reach only the model endpoints the user names.

Each session runs in its own network, mount, PID, IPC and UTS namespaces (``unshare --net
--mount --pid --fork --mount-proc --ipc --uts``, needs root). The in-namespace half is the PID
namespace's first process: when it ends (the CLI exited, or the runner stopped it), the kernel
kills every process left in the session, ``setsid`` and SIGTERM-ignoring ones included, and the
session's ``/proc`` shows its own processes only (no host process to signal or enter). The
network namespace has only a loopback interface, so every connection to any other
address fails (no route), and names do not resolve (no DNS server is reachable). For each
allowed ``HOST:PORT`` a relay inside the namespace listens on ``HOST``'s address there (a
name gets its own loopback address, 127.0.1.N, through a hosts file mounted over
``/etc/hosts`` in the session's mount namespace only) and passes each connection through a
Unix socket (file system paths cross network namespaces) to a relay in the runner, which
connects to the real ``HOST:PORT``.
Bytes are relayed unchanged, so TLS to a paid API works end to end and the CLI keeps using the
endpoint's own URL. The MCP server runs inside the same namespace; it needs no network.

Run as a module (``python -m sgrgym.sgr.cli_agents.egress --forward ADDR:PORT=SOCKET ... --
COMMAND``) it is the in-namespace half: it brings the loopback up, mounts the hosts file,
starts the relays and runs the command, returning its exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from types import FrameType, TracebackType

from sgrgym.core.errors import UserError


def parse_host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) -> (host, port); a UserError otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--allow-host {text!r}: give HOST:PORT, e.g. api.example.com:443")
    return host.lower(), int(port)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _relay(accepted: socket.socket, connect: Callable[[], socket.socket]) -> None:
    try:
        upstream = connect()
    except OSError:
        accepted.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, accepted), daemon=True)
    back.start()
    _pump(accepted, upstream)
    back.join()
    accepted.close()
    upstream.close()


def _serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    while True:
        try:
            accepted, _ = listener.accept()
        except OSError:
            return  # closed
        threading.Thread(target=_relay, args=(accepted, connect), daemon=True).start()


class Egress:
    """The runner's half: Unix-socket relays to the allowed endpoints; wraps CLI commands."""

    def __init__(self, allow: Sequence[tuple[str, int]]) -> None:
        self.allow = list(dict.fromkeys(allow))
        self._tmp = ""
        self._listeners: list[socket.socket] = []
        self.sockets: dict[tuple[str, int], str] = {}

    @staticmethod
    def check() -> None:
        """Refuse clearly where the sandbox cannot work (not root, no unshare/ip)."""
        missing = [tool for tool in ("unshare", "ip", "mount") if shutil.which(tool) is None]
        if missing:
            raise UserError(
                f"the egress sandbox needs {', '.join(missing)} (util-linux, iproute2); install "
                "them or run without a sandbox (--no-egress-sandbox)"
            )
        if os.geteuid() != 0:
            raise UserError(
                "the egress sandbox needs root (network namespaces); run as root or without a "
                "sandbox (--no-egress-sandbox: the CLI can then reach any address)"
            )

    def __enter__(self) -> Egress:
        self.check()
        self._tmp = tempfile.mkdtemp(prefix="sgrgym-egress-")
        for number, (host, port) in enumerate(self.allow):
            path = os.path.join(self._tmp, f"{number}.sock")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(64)

            def connect(host: str = host, port: int = port) -> socket.socket:
                return socket.create_connection((host, port), timeout=None)

            threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()
            self._listeners.append(listener)
            self.sockets[(host, port)] = path
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for listener in self._listeners:
            listener.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside a fresh network and mount namespace with only the relays."""
        forwards = []
        for (host, port), path in self.sockets.items():
            forwards += ["--forward", f"{host}:{port}={path}"]
        inner = [sys.executable, "-m", "sgrgym.sgr.cli_agents.egress", *forwards, "--", *argv]
        return [
            "unshare",
            "--net",
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "--ipc",
            "--uts",
            "--propagation",
            "private",
            "--",
            *inner,
        ]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _inside(forwards: list[str], command: list[str]) -> int:
    """The in-namespace half (see the module docstring)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    names: dict[str, str] = {}  # host name -> its loopback address in the namespace
    for spec in forwards:
        target, _, path = spec.partition("=")
        host, port = parse_host_port(target)
        if not _is_ip(host):
            names.setdefault(host, f"127.0.1.{len(names) + 1}")
        address = names.get(host, host)
        if _is_ip(host) and not ipaddress.ip_address(host).is_loopback:
            prefix = "32" if ipaddress.ip_address(host).version == 4 else "128"
            subprocess.run(["ip", "addr", "add", f"{host}/{prefix}", "dev", "lo"], check=True)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(64)

        def connect(path: str = path) -> socket.socket:
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.connect(path)
            return unix

        threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()
    with tempfile.NamedTemporaryFile("w", prefix="sgrgym-hosts-", delete=False) as hosts:
        hosts.writelines(f"{address} {name}\n" for name, address in names.items())
        hosts.write("127.0.0.1 localhost\n::1 localhost\n")  # after: the first line wins
    subprocess.run(["mount", "--bind", hosts.name, "/etc/hosts"], check=True)
    os.unlink(hosts.name)  # the mount keeps the file
    child = subprocess.Popen(command)

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return child.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgrgym.sgr.cli_agents.egress")
    parser.add_argument("--forward", action="append", default=[], metavar="HOST:PORT=SOCKET")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    return _inside(args.forward, command)


if __name__ == "__main__":
    sys.exit(main())
