"""What a run ran on: the part of every run card that is not the command's own options.

- the sgrgym version and, when sgrgym runs from a git checkout, the commit (``HEAD``);
- the Python version and implementation;
- every installed distribution with its version (``importlib.metadata``), sorted by name;
- the sha256 of every manifest, prompt and schema file the run used (:func:`file_hashes`).

Two runs with the same card ran the same code on the same inputs; a folder whose card differs
(another commit, an upgraded package, a rebuilt store) is another run and is refused on resume.
"""

from __future__ import annotations

import email
import platform
import subprocess
from collections.abc import Mapping
from email.message import Message
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.version import __version__

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class RunEnvironment(BaseModel):
    sgrgym_version: str
    git_commit: str | None  # None: not running from a git checkout
    python: str
    python_implementation: str
    packages: dict[str, str]  # distribution name (lower case) -> version


def git_commit(root: Path = _PACKAGE_ROOT) -> str | None:
    """The checkout's ``HEAD`` commit, or None when ``root`` is not a git checkout."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def _headers(dist: metadata.Distribution) -> Message:
    """The header fields of a distribution's metadata file, as ``dist.metadata`` reads them
    (the same file, the same parser), without parsing the long description after them."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    head = []
    for line in text.splitlines(keepends=True):
        if not line.strip("\r\n"):  # the blank line that ends the header fields
            break
        head.append(line)
    return email.message_from_string("".join(head))


def installed_packages() -> dict[str, str]:
    """Every installed distribution (lower-case name -> version), sorted by name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        fields = _headers(dist)
        name = fields["Name"]
        if name:
            found.setdefault(str(name).lower(), fields["Version"])
    return dict(sorted(found.items()))


@lru_cache(maxsize=1)
def run_environment() -> RunEnvironment:
    """This process' environment (computed once)."""
    return RunEnvironment(
        sgrgym_version=__version__,
        git_commit=git_commit(),
        python=platform.python_version(),
        python_implementation=platform.python_implementation(),
        packages=installed_packages(),
    )


def file_hashes(files: Mapping[str, Path]) -> dict[str, str]:
    """``{label: sha256}`` of each file; a missing file is an error naming it."""
    hashes = {}
    for label, path in sorted(files.items()):
        if not path.is_file():
            raise UserError(
                f"{path}: {label} not found; build it first (`sgrgym setup`, docs/setup.md)"
            )
        hashes[label] = sha256_file(path)[0]
    return hashes
